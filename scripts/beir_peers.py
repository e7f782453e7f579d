"""The hand-rolled peers scripts/beir.py runs beside the engine, on the same corpus and queries.

* bm25s: Lucene BM25 (k1=0.9, b=0.4, Pyserini's defaults), Porter stemmer, Lucene's English
  stop words, whole documents (title + text);
* dense: sentence-transformers all-MiniLM-L6-v2 + FAISS flat, whole documents (title +
  text, truncated by the model at 256 word pieces);
* convex: min-max convex fusion of those two, its weight chosen on the train split.

That is what an engineer writes in an afternoon; the engine must beat it.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from search.fusion import convex

Run = dict[str, list[tuple[str, float]]]  # query id -> ranked (doc id, score)


def drop_self(run: Run) -> Run:
    """BEIR's evaluator ignores a retrieved document whose id is the query's."""
    return {q: [(d, s) for d, s in lst if d != q] for q, lst in run.items()}


class _Porter:
    def stemWords(self, words: list[str]) -> list[str]:  # noqa: N802  bm25s's expected name
        from whoosh.lang.porter import stem

        return [stem(w) for w in words]


def bm25s_run(corpus: list[dict[str, Any]], queries: dict[str, str]) -> tuple[Run, dict[str, float]]:
    import bm25s

    from search.text import STOP_WORDS

    ids = [d["_id"] for d in corpus]
    texts = [(d.get("title") or "") + " " + d["text"] for d in corpus]
    stop = sorted(STOP_WORDS)  # Lucene's English stop set, as Pyserini
    t0 = time.perf_counter()
    tok = bm25s.tokenize(texts, stopwords=stop, stemmer=_Porter(), show_progress=False)
    model = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    model.index(tok, show_progress=False)
    build = time.perf_counter() - t0
    run: Run = {}
    times: list[float] = []
    k = min(101, len(ids))
    for qid, text in queries.items():
        t1 = time.perf_counter()
        qt = bm25s.tokenize([text], stopwords=stop, stemmer=_Porter(), show_progress=False)
        if not qt.ids or not qt.ids[0]:
            run[qid] = []
            continue
        docs, scores = model.retrieve(qt, k=k, show_progress=False, n_threads=1)
        times.append(time.perf_counter() - t1)
        run[qid] = [(ids[int(i)], float(s)) for i, s in zip(docs[0], scores[0]) if float(s) > 0]
    return drop_self(run), {"build_s": build, "ms_p50": statistics.median(times or [0.0]) * 1000}


def st_faiss_run(
    corpus: list[dict[str, Any]], queries: dict[str, str], work: Path, fingerprint: str
) -> tuple[Run, dict[str, float]]:
    """Plain sentence-transformers + FAISS flat over whole documents (title + text)."""
    import faiss

    from search.embed import SentenceTransformerEmbedder

    ids = [d["_id"] for d in corpus]
    st = SentenceTransformerEmbedder()
    cache = work / f"peer-st-docs-{fingerprint}.npy"
    enc_s = 0.0
    if cache.exists():
        vecs = np.load(cache, allow_pickle=False)
    else:
        t0 = time.perf_counter()
        vecs = st.model.encode(
            [(d.get("title") or "") + " " + d["text"] for d in corpus],
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
        ).astype(np.float32)
        enc_s = time.perf_counter() - t0
        np.save(cache, vecs, allow_pickle=False)
    index = faiss.IndexFlatIP(vecs.shape[1])
    index.add(vecs)
    run: Run = {}
    times: list[float] = []
    k = min(101, len(ids))
    for qid, text in queries.items():
        t1 = time.perf_counter()
        q = st.model.encode([text], normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
        scores, rows = index.search(q, k)
        times.append(time.perf_counter() - t1)
        run[qid] = [(ids[int(r)], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]
    return drop_self(run), {"encode_s": enc_s, "ms_p50": statistics.median(times or [0.0]) * 1000}


def fuse(lex: Run, den: Run, alpha: float, depth: int = 100) -> Run:
    return {q: convex(lex[q][:depth], den.get(q, [])[:depth], alpha=alpha) for q in lex}
