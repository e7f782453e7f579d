"""Retrieval quality on a BEIR dataset (SciFact), through the engine's own index and retrievers.

    python scripts/beir.py --data ../shared/data/scifact [--json] [--peers] [--work /tmp/beir]

Indexes the corpus as articles (id = ``_id``, title, text; the text indexed is
``title + "\\n\\n" + text``, as BEIR and Pyserini index "title + text", because the engine
chunks and indexes an article's text only) with the real model, then, for every test
query (``qrels/test.tsv``), asks the index's lexical and dense retrievers (the backend the
engine itself uses, analysed with the engine's own ``query_terms``) for their top
passages. A document's score is its best passage's (MaxP). Reported: nDCG@10 (linear gain,
log2 discount, ideal from the qrels, as trec_eval / pytrec_eval) and recall@100, for bm25,
dense and hybrid. Like BEIR's evaluator, a retrieved document whose id equals the query
id is dropped.

Hybrid fuses the two document lists (each cut at ``--fuse-depth`` documents) with the
engine's own :mod:`search.fusion` functions: RRF(60) and convex min-max fusion. The convex
weight ``alpha`` is chosen on the *train* split (``qrels/train.tsv``), never on test; the
``hybrid`` of the JSON line is the fusion chosen there (``--fusion`` overrides).

``--peers`` adds, in the same run: bm25s (Lucene BM25, k1=0.9, b=0.4, Porter stemmer,
whole documents) and plain sentence-transformers + FAISS flat over whole documents.

The index is cached in ``--work`` (rebuilt when missing), so a rerun only queries.
``--json`` prints exactly one line::

    {"dataset": "scifact", "bm25": {"ndcg@10": .., "recall@100": ..}, "dense": {..}, "hybrid": {..}}
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import machine  # noqa: E402  (scripts/ is on sys.path)

from search import engine as engine_mod  # noqa: E402
from search.fusion import convex, rrf  # noqa: E402
from search.text import analyze, query_terms  # noqa: E402
from search.types import Article  # noqa: E402

Run = dict[str, list[tuple[str, float]]]  # query id -> ranked (doc id, score)
Qrels = dict[str, dict[str, int]]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> Qrels:
    out: Qrels = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and parts[0] == "query-id":
                continue
            if len(parts) < 3:
                continue
            out.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return out


# ----------------------------------------------------------------------------- metrics


def ndcg_at(run: list[tuple[str, float]], rels: dict[str, int], k: int = 10) -> float:
    """nDCG@k with linear gain (trec_eval/pytrec_eval's definition)."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, (d, _) in enumerate(run[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(run: list[tuple[str, float]], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant & {d for d, _ in run[:k]}) / len(relevant)


def evaluate(run: Run, qrels: Qrels) -> dict[str, float]:
    qs = [q for q in qrels if q in run]
    return {
        "ndcg@10": round(statistics.fmean(ndcg_at(run[q], qrels[q]) for q in qs), 4),
        "recall@100": round(statistics.fmean(recall_at(run[q], qrels[q]) for q in qs), 4),
    }


def drop_self(run: Run) -> Run:
    return {q: [(d, s) for d, s in lst if d != q] for q, lst in run.items()}


# ----------------------------------------------------------------------------- engine


def open_index(work: Path, corpus: list[dict[str, Any]], target: int | None) -> Any:
    """The engine over the corpus, built once into ``work`` and reused."""
    from search.engine import Engine

    if target is not None:
        engine_mod.CHUNK_TARGET = target  # an experiment: the manifest records the setting
    path = work / f"index-{engine_mod.CHUNK_TARGET}"
    if path.exists():
        e = Engine.open(path)
        if e.manifest().get("counts", {}).get("documents") == len(corpus):
            return e
        e.close()
        import shutil

        shutil.rmtree(path)
    e = Engine.open(path, create=True)
    arts = [
        Article(id=d["_id"], title=d.get("title") or "", text=(d.get("title") or "") + "\n\n" + d["text"])
        for d in corpus
    ]
    t0 = time.perf_counter()
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 15 or done == total:
            last[0] = time.perf_counter()
            log(f"  {stage} {done}/{total} ({time.perf_counter() - t0:.0f} s)")

    rep = e.add(arts, reset=True, progress=progress)
    log(f"indexed {len(arts)} articles as {rep.passages} passages in {rep.took_s:.1f} s")
    return e


def max_p(passages: Sequence[tuple[str, float]], doc_of: Callable[[str], str]) -> list[tuple[str, float]]:
    """Document ranking from a passage ranking: a document scores its best passage."""
    best: dict[str, float] = {}
    for pid, s in passages:
        d = doc_of(pid)
        if d not in best or s > best[d]:
            best[d] = s
    return sorted(best.items(), key=lambda t: (-t[1], t[0]))


def engine_runs(
    e: Any, queries: dict[str, str], depth: int, analyser: str = "query"
) -> tuple[Run, Run, dict[str, float]]:
    backend = e._backend
    doc_of = lambda pid: pid.rsplit("#", 1)[0]  # noqa: E731  passage ids are f"{doc_id}#{n}"
    lex: Run = {}
    den: Run = {}
    t_lex: list[float] = []
    t_den: list[float] = []
    emb = e.embedder
    for qid, text in queries.items():
        terms = query_terms(text) if analyser == "query" else analyze(text)
        t0 = time.perf_counter()
        lex[qid] = max_p(backend.lexical(terms, depth), doc_of)
        t1 = time.perf_counter()
        vec = emb.encode_query(text)
        den[qid] = max_p(backend.dense(vec, depth), doc_of)
        t2 = time.perf_counter()
        t_lex.append(t1 - t0)
        t_den.append(t2 - t1)
    timing = {"bm25_ms_p50": statistics.median(t_lex) * 1000, "dense_ms_p50": statistics.median(t_den) * 1000}
    return drop_self(lex), drop_self(den), timing


def fuse(lex: Run, den: Run, how: str, alpha: float, depth: int) -> Run:
    out: Run = {}
    for q in lex:
        a, b = lex[q][:depth], den.get(q, [])[:depth]
        out[q] = rrf([a, b]) if how == "rrf" else convex(a, b, alpha=alpha)
    return out


# ----------------------------------------------------------------------------- peers


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
    for qid, text in queries.items():
        t1 = time.perf_counter()
        qt = bm25s.tokenize([text], stopwords=stop, stemmer=_Porter(), show_progress=False)
        docs, scores = model.retrieve(qt, k=101, show_progress=False, n_threads=1)
        times.append(time.perf_counter() - t1)
        run[qid] = [(ids[int(i)], float(s)) for i, s in zip(docs[0], scores[0]) if float(s) > 0]
    return drop_self(run), {"build_s": build, "ms_p50": statistics.median(times) * 1000}


def st_faiss_run(
    corpus: list[dict[str, Any]], queries: dict[str, str], work: Path
) -> tuple[Run, dict[str, float]]:
    """Plain sentence-transformers + FAISS flat over whole documents (title + text)."""
    import faiss

    from search.embed import SentenceTransformerEmbedder

    ids = [d["_id"] for d in corpus]
    st = SentenceTransformerEmbedder()
    cache = work / "peer-st-docs.npy"
    enc_s = float("nan")
    if cache.exists():
        vecs = np.load(cache)
    else:
        t0 = time.perf_counter()
        vecs = st.model.encode(
            [(d.get("title") or "") + " " + d["text"] for d in corpus],
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
        ).astype(np.float32)
        enc_s = time.perf_counter() - t0
        np.save(cache, vecs)
    index = faiss.IndexFlatIP(vecs.shape[1])
    index.add(vecs)
    run: Run = {}
    times: list[float] = []
    for qid, text in queries.items():
        t1 = time.perf_counter()
        q = st.model.encode([text], normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
        scores, rows = index.search(q, 101)
        times.append(time.perf_counter() - t1)
        run[qid] = [(ids[int(r)], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0]
    return drop_self(run), {"encode_s": enc_s, "ms_p50": statistics.median(times) * 1000}


# ----------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/beir-scifact"))
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--peers", action="store_true", help="also run bm25s and sentence-transformers + FAISS")
    ap.add_argument("--depth", type=int, default=1000, help="passages each retriever returns")
    ap.add_argument("--fuse-depth", type=int, default=100, help="documents of each list that are fused")
    ap.add_argument("--fusion", default="tuned", help="tuned (on train), rrf, or convex:ALPHA")
    ap.add_argument("--chunk-target", type=int, default=None, help="experiment: passage size in characters")
    ap.add_argument(
        "--analyser",
        choices=["query", "index"],
        default="query",
        help="query: the engine's query_terms; index: the indexing analyser",
    )
    args = ap.parse_args()

    corpus = read_jsonl(args.data / "corpus.jsonl")
    all_queries = {str(q["_id"]): q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    test = read_qrels(args.data / "qrels" / "test.tsv")
    train_path = args.data / "qrels" / "train.tsv"
    train = read_qrels(train_path) if train_path.exists() else {}
    q_test = {q: all_queries[q] for q in test if q in all_queries}
    q_train = {q: all_queries[q] for q in train if q in all_queries}
    args.work.mkdir(parents=True, exist_ok=True)

    e = open_index(args.work, corpus, args.chunk_target)
    n_passages = e.stats()["passages"]
    lex, den, timing = engine_runs(e, q_test, args.depth, args.analyser)
    rows: list[tuple[str, dict[str, float]]] = [("bm25", evaluate(lex, test)), ("dense", evaluate(den, test))]

    # Fusion weight: chosen on train only.
    choice = ("rrf", 0.0)
    tuning: dict[str, float] = {}
    if args.fusion == "tuned" and q_train:
        lex_tr, den_tr, _ = engine_runs(e, q_train, args.depth, args.analyser)
        best = ("rrf", 0.0)
        best_score = evaluate(fuse(lex_tr, den_tr, "rrf", 0, args.fuse_depth), train)["ndcg@10"]
        tuning["rrf"] = best_score
        for a in [round(x * 0.05, 2) for x in range(4, 17)]:
            s = evaluate(fuse(lex_tr, den_tr, "convex", a, args.fuse_depth), train)["ndcg@10"]
            tuning[f"convex:{a}"] = s
            if s > best_score:
                best, best_score = ("convex", a), s
        choice = best
    elif args.fusion.startswith("convex"):
        choice = ("convex", float(args.fusion.split(":", 1)[1]) if ":" in args.fusion else 0.5)
    hybrid = evaluate(fuse(lex, den, choice[0], choice[1], args.fuse_depth), test)
    label = "rrf" if choice[0] == "rrf" else f"convex alpha={choice[1]}"
    rows.append(("hybrid", hybrid))
    extra = [
        ("hybrid rrf(60)", evaluate(fuse(lex, den, "rrf", 0, args.fuse_depth), test)),
        ("hybrid convex 0.5", evaluate(fuse(lex, den, "convex", 0.5, args.fuse_depth), test)),
    ]
    peers: list[tuple[str, dict[str, float], str]] = []
    if args.peers:
        b_run, b_t = bm25s_run(corpus, q_test)
        peers.append(("bm25s (lucene, whole docs)", evaluate(b_run, test), f"{b_t['ms_p50']:.2f} ms/query"))
        s_run, s_t = st_faiss_run(corpus, q_test, args.work)
        peers.append(
            (
                "sentence-transformers + FAISS flat (whole docs)",
                evaluate(s_run, test),
                f"{s_t['ms_p50']:.2f} ms/query",
            )
        )
    e.close()

    out = {"dataset": args.data.name, **{name: m for name, m in rows}}
    if args.json:
        print(json.dumps(out))
        log(
            json.dumps(
                {
                    "fusion": label,
                    "tuning_train_ndcg@10": tuning,
                    "passages": n_passages,
                    "extra": dict((n, m) for n, m in extra),
                    "peers": {n: m for n, m, _ in peers},
                    "timing": timing,
                }
            )
        )
        return
    print(
        f"## BEIR {args.data.name}: {len(q_test)} test queries, {len(corpus)} documents, {n_passages} passages\n"
    )
    print(
        f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d')}. "
        f"Hybrid = {label} (chosen on the train split).\n"
    )
    print("| run | nDCG@10 | recall@100 | note |")
    print("|---|---|---|---|")
    notes = {
        "bm25": f"engine whoosh BM25, MaxP, {timing['bm25_ms_p50']:.1f} ms/query p50",
        "dense": f"engine ONNX MiniLM + vectors, MaxP, {timing['dense_ms_p50']:.1f} ms/query p50",
        "hybrid": label,
    }
    for name, m in rows + extra:
        print(f"| {name} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {notes.get(name, '')} |")
    for name, m, note in peers:
        print(f"| {name} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {note} |")
    if tuning:
        print("\nTrain-split nDCG@10 by fusion: " + ", ".join(f"{k} {v:.4f}" for k, v in tuning.items()))


if __name__ == "__main__":
    main()
