"""The reference backend: sentence-transformers itself, on torch.

:class:`SentenceTransformerEmbedder` is what the ONNX export is checked against and
what ``"auto"`` falls back to when no export can be made. Importing
sentence-transformers (and torch) costs ~4 s, so it happens only when one is made;
calls are serialised with a lock, as torch modules are not documented as thread-safe.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from search.embed_base import (
    DIM,
    MODEL_ID,
    Progress,
    _check_batch_size,
    _check_texts,
    _length_order,
    model_path,
)
from search.errors import MissingExtraError


class SentenceTransformerEmbedder:
    """The reference: sentence-transformers itself (torch; ~4 s to import)."""

    backend = "sentence-transformers"

    def __init__(self, device: str = "cpu") -> None:
        path = model_path()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingExtraError(
                "the sentence-transformers backend needs it: pip install sentence-transformers"
            ) from e
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never ask the hub
        self.model = SentenceTransformer(path, device=device)
        self.model_id = MODEL_ID
        # renamed in sentence-transformers 5; the old name warns there
        get_dim = (
            getattr(self.model, "get_embedding_dimension", None)
            or self.model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim() or DIM)
        self._lock = threading.Lock()  # torch modules are not documented as thread-safe

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        _check_texts(texts)
        _check_batch_size(batch_size)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = _length_order([len(t) for t in texts])
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            with self._lock:
                vecs = self.model.encode(
                    [texts[i] for i in idx],
                    batch_size=batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            out[idx] = vecs
            if progress is not None:
                progress(len(idx))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise ValueError(f"the query is {type(text).__name__}, expected str")
        return self.encode([text])[0]

    def info(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "backend": self.backend,
            "dim": self.dim,
            "max_seq_length": int(self.model.max_seq_length or 256),
            "min_cosine_vs_reference": 1.0,
            "max_abs_diff_vs_reference": 0.0,
        }
