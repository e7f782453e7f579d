"""The ONNX backend: all-MiniLM-L6-v2 run by onnxruntime, tokenised by ``tokenizers``, no torch.

:class:`OnnxEmbedder` loads an ONNX file (the cached fp32 export, or the shipped int8
one) with sleeping idle threads, and :class:`_Tokenizer` drives the model's
``tokenizer.json`` as sentence-transformers does (lower-casing, truncation at
``max_seq_length``, padding to the longest text of a batch); the output is pooled by
attention mask and L2-normalised, as sentence-transformers pools it. onnxruntime and
tokenizers are imported only when an embedder is made.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from search.embed_base import (
    DIM,
    MODEL_ID,
    Progress,
    _check_batch_size,
    _check_texts,
    _length_order,
    _normalise,
    model_path,
)
from search.errors import MissingExtraError, SearchError


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


#: Intra-op threads of the session that encodes questions (see OnnxEmbedder.__init__).
QUERY_THREADS = 1


def _default_threads() -> int:
    env = os.environ.get("SEARCH_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


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
        self._ort = ort
        self._threads = threads or _default_threads()
        self.onnx_file = str(onnx_file)
        # Questions run on a session of their own with one thread; batches get every core
        # (loaded on the first batch). A question of ~10 tokens gains little from a second
        # thread (3.8 ms -> 4.3 ms alone with one), and the engine encodes it beside BM25
        # on the other core, where a second ONNX thread only competes with BM25: at 1M
        # passages, alternating processes, one thread gave a BM25 stage of 4.0-4.5 ms
        # against 4.4-6.3 ms, and hybrid 8.8-10.6 ms against 10.0-12.1 ms (#17).
        self._session = self._load(QUERY_THREADS)
        self._batch_session: Any = None
        self._batch_lock = threading.Lock()
        t2 = time.perf_counter()
        self.load_seconds = {"tokenizer": t1 - t0, "session": t2 - t1}
        self._inputs = {i.name for i in self._session.get_inputs()}
        width = self._session.get_outputs()[0].shape[-1]
        self.dim = width if isinstance(width, int) else DIM
        self.model_id = model_id
        self.backend = backend
        self._meta = dict(meta or {})

    def _load(self, threads: int) -> Any:
        """An inference session over the model file with ``threads`` intra-op threads."""
        ort = self._ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: a spinning thread steals the other
        # core from the rest of the query (BM25, fusion) and from other requests. Measured
        # in the engine at 102k passages: hybrid p50 16.5 -> 15.0 ms, p95 26.1 -> 24.7 ms.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            return ort.InferenceSession(self.onnx_file, sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own untyped errors
            raise SearchError(f"cannot load the ONNX model {self.onnx_file}: {e}") from e

    def _batches(self, n: int, batch_size: int) -> Any:
        """The session for ``n`` texts: every core, loaded once on the first write of more
        than one batch. A single batch (one article added in place) runs on the question's
        session rather than wait ~0.4 s for a second one to load."""
        if self._threads <= QUERY_THREADS or (n <= batch_size and self._batch_session is None):
            return self._session
        with self._batch_lock:
            if self._batch_session is None:
                self._batch_session = self._load(self._threads)
            return self._batch_session

    def _run(self, ids: np.ndarray, mask: np.ndarray, session: Any = None) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = (session or self._session).run(None, feed)[0]
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
        session = self._batches(len(texts), batch_size)
        for start in range(0, len(texts), block):
            seqs = self._tok.encode(texts[start : start + block])
            order = _length_order([len(s) for s in seqs])
            for b in range(0, len(order), batch_size):
                idx = order[b : b + batch_size]
                ids, mask = self._tok.pad([seqs[i] for i in idx])
                out[start + idx] = self._run(ids, mask, session)
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
