"""Serve one system's index in a fresh process and time its stages, round by round.

    python scripts/bench_serve.py {ours,bm25s-hnsw,txtai} --index DIR --questions FILE --models M

Run by scripts/bench.py. Loads the question encoder (the same for every system), then
prints ``{"open_s", "first_s", "model_s"}`` once the index is open and has answered one
question, then answers ``{"from": i, "to": j}`` lines on stdin (the
questions ``i:j``) with their per-stage times, and ``quit`` with the process's peak RSS.
All systems stay open together, and the parent gives each the same slice in turn, so the
machine's load falls on all alike.

Stages: encode (the question's vector), bm25, vector, rest (fusion, reranking, building
hits) and, for ``Engine.ask``, answer (the answer step) and facets. Ours is timed through
its public API: the embedder passed to ``Engine.open``, the backend reader's
``lexical_search``/``dense``/``facets`` and ``search.answer.build_answer``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from bench_models import query_embedder  # noqa: E402

DEPTH = 50  # each retriever's depth before fusion, as ours
K = 10
HNSW_EF_SEARCH = 64  # FAISS's default 16 loses too much recall on this corpus (#17)


class Clock:
    """Seconds per stage within the current call."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}

    def timed(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.t[stage] = self.t.get(stage, 0.0) + time.perf_counter() - t0

        return run


class TimedEmbedder:
    """The query embedder, its ``encode_query`` timed (everything else passed through)."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        self.inner = inner
        self.model_id, self.dim = inner.model_id, inner.dim
        self.backend = getattr(inner, "backend", "")
        self.encode_query = clock.timed("encode", inner.encode_query)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class TimedView:
    """A backend reader whose retrievers are timed (and the vector stage's top ids kept)."""

    def __init__(self, view: Any, clock: Clock) -> None:
        self._view = view
        self.top: list[str] = []
        self.lexical_search = clock.timed("bm25", view.lexical_search)
        self.dense = clock.timed("vector", self._dense)
        self.facets = clock.timed("facets", view.facets)

    def _dense(self, *args: Any, **kw: Any) -> Any:
        got = self._view.dense(*args, **kw)
        self.top = [pid for pid, _ in got[:K]]
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)


class Ours:
    def __init__(self, index: Path, encoder: Any) -> None:
        import search.answer
        from search.engine import Engine

        self.clock = Clock()
        self.engine = Engine.open(index, embedder=TimedEmbedder(encoder, self.clock))
        backend = self.engine._backend  # the one private name used: the engine's backend
        views: dict[int, TimedView] = {}
        reader = backend.reader

        def timed_reader() -> Any:
            v = reader()
            if id(v) not in views:  # one proxy per generation, so per-view caches still hit
                views.clear()
                views[id(v)] = TimedView(v, self.clock)
            return views[id(v)]

        backend.reader = timed_reader  # type: ignore[method-assign]
        self.views = views
        search.answer.build_answer = self.clock.timed("answer", search.answer.build_answer)

    def ask(self, q: str) -> dict[str, dict[str, float]]:
        out = {}
        for what, call in (
            ("hybrid", lambda: self.engine.search(q, k=K, mode="hybrid")),
            ("ask", lambda: self.engine.ask(q, k=5, mode="hybrid", facets=True)),  # as the faces ask
            ("ask_default", lambda: self.engine.ask(q, k=5, mode="hybrid")),  # the API's default
        ):
            self.clock.t = {}
            t0 = time.perf_counter()
            call()
            total = time.perf_counter() - t0
            st = dict(self.clock.t)
            # Ours encodes a hybrid question beside BM25 (Engine._encode_beside): the two
            # stages overlap, so their sum can pass the total; rest is what is left, if any.
            st["rest"] = max(0.0, total - sum(st.values()))
            st["total"] = total
            if what == "hybrid":  # the vector stage's top passages, for recall against exact
                st["top"] = next(iter(self.views.values())).top if self.views else []  # type: ignore[assignment]
            out[what] = st
        return out


class Bm25sHnsw:
    def __init__(self, index: Path, encoder: Any) -> None:
        import bm25s
        import faiss
        from bm25s.tokenization import Tokenizer
        from whoosh.lang.porter import stem

        faiss.omp_set_num_threads(1)  # one query at a time, like ours
        self.bm25 = bm25s.BM25.load(str(index / "bm25s"), load_corpus=True, mmap=True, show_progress=False)
        # The passages stay memory-mapped; detached so retrieve() returns row numbers.
        self.corpus, self.bm25.corpus = self.bm25.corpus, None
        self.tok = Tokenizer(stemmer=stem)
        self.tok.load_vocab(str(index / "bm25s"))
        self.tok.load_stopwords(str(index / "bm25s"))
        self.hnsw = faiss.read_index(str(index / "hnsw.faiss"))
        self.hnsw.hnsw.efSearch = HNSW_EF_SEARCH  # type: ignore[attr-defined]
        self.encoder = encoder

    def ask(self, q: str) -> dict[str, dict[str, float]]:
        import numpy as np

        t0 = time.perf_counter()
        v = self.encoder.encode_query(q)
        t1 = time.perf_counter()
        lex: list[tuple[int, float]] = []
        ids = self.tok.tokenize([q], update_vocab=False, return_as="ids", show_progress=False)
        if ids and ids[0]:
            rows, scores = self.bm25.retrieve(
                ids, k=min(DEPTH, self.hnsw.ntotal), show_progress=False, n_threads=1, return_as="tuple"
            )
            lex = [(int(r), float(s)) for r, s in zip(rows[0], scores[0])]
        t2 = time.perf_counter()
        dist, idx = self.hnsw.search(np.asarray(v, dtype=np.float32)[None, :], DEPTH)
        den = [(int(i), float(d)) for i, d in zip(idx[0], dist[0]) if i >= 0]
        t3 = time.perf_counter()
        fused: dict[int, float] = {}
        for ranked in (lex, den):  # reciprocal rank fusion, k=60: what a user would write
            for r, (row, _) in enumerate(ranked):
                fused[row] = fused.get(row, 0.0) + 1.0 / (60 + r + 1)
        top = sorted(fused, key=lambda row: -fused[row])[:K]
        _ = [self.corpus[row]["text"] for row in top]  # the passages a user shows
        t4 = time.perf_counter()
        st: dict[str, Any] = {"encode": t1 - t0, "bm25": t2 - t1, "vector": t3 - t2, "rest": t4 - t3}
        st["total"] = t4 - t0
        st["top"] = [int(i) for i in idx[0][:K] if i >= 0]  # rows, in the passages file's order
        return {"hybrid": st}


class Txtai:
    def __init__(self, index: Path, encoder: Any) -> None:
        import faiss
        from txtai import Embeddings

        faiss.omp_set_num_threads(1)
        self.clock = Clock()
        self.emb = Embeddings()
        self.emb.load(str(index), config={"transform": lambda texts: encoder.encode(list(texts))})
        # Search binds these per call, so patching the instance times every stage.
        self.emb.batchtransform = self.clock.timed("encode", self.emb.batchtransform)
        self.top: list[int] = []
        search = self.emb.ann.search

        def ann_search(*args: Any, **kw: Any) -> Any:
            got = search(*args, **kw)
            self.top = [int(i) for i, _ in got[0][:K]]  # rows, in the order indexed
            return got

        self.emb.ann.search = self.clock.timed("vector", ann_search)
        self.emb.scoring.batchsearch = self.clock.timed("bm25", self.emb.scoring.batchsearch)

    def ask(self, q: str) -> dict[str, dict[str, float]]:
        self.clock.t = {}
        t0 = time.perf_counter()
        self.emb.search(q, K)
        total = time.perf_counter() - t0
        st = dict(self.clock.t)
        st["rest"] = total - sum(st.values())
        st["total"] = total
        st["top"] = self.top  # type: ignore[assignment]
        return {"hybrid": st}


SYSTEMS: dict[str, Any] = {"ours": Ours, "bm25s-hnsw": Bm25sHnsw, "txtai": Txtai}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("system", choices=sorted(SYSTEMS))
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--models", default="replay")
    a = ap.parse_args()
    qs: list[str] = json.loads(a.questions.read_text())
    t0 = time.perf_counter()
    encoder = query_embedder(a.models)  # the same question encoder for every system
    encoder.encode_query("warm up")
    model_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    server = SYSTEMS[a.system](a.index, encoder)
    open_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    server.ask(qs[0])  # the first question touches the index
    first_s = time.perf_counter() - t0
    print(json.dumps({"open_s": open_s, "first_s": first_s, "model_s": model_s}), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        cmd = json.loads(line)
        got: dict[str, list[dict[str, float]]] = {}
        for q in qs[cmd["from"] : cmd["to"]]:
            for what, st in server.ask(q).items():
                got.setdefault(what, []).append(st)
        print(json.dumps(got), flush=True)
    out = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **rss_split()}
    print(json.dumps(out), flush=True)


def rss_split() -> dict[str, float]:
    """The resident set at the end, split: anonymous memory (the process's own) and
    file-backed pages (memory-mapped index files the queries touched: page cache the
    kernel can drop, which the peak RSS above counts too). Linux only; {} elsewhere."""
    keys = {"RssAnon": "rss_anon_mb", "RssFile": "rss_file_mb"}
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name in keys:
                    out[keys[name]] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return out


if __name__ == "__main__":
    main()
