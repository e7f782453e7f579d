"""Retrieval quality on a BEIR-layout folder, through the engine's whole default path.

    python scripts/beir.py --data ../shared/data/scifact [--json] [--no-peers] [--work /tmp/beir]

The corpus (``corpus.jsonl``: ``_id``, ``title``, ``text``) is written as the JSONL the
engine ingests (id, title, text) and indexed the way a user's folder is: ingest, chunk,
encode (title + passage), whoosh (text and title fields, the document-level index),
vectors. Every test query (``qrels/test.tsv``) is then asked through ``Engine.search``
with default settings (fusion, document signal, sentence reranker and its switch
included), in each mode. A document's rank is its best passage's (MaxP). Reported:
nDCG@10 (linear gain, log2 discount, ideal from the qrels, as trec_eval / pytrec_eval) and
recall@100; like BEIR's evaluator, a retrieved document whose id equals the query id is
dropped. Progress bars (with an ETA) go to stderr, the per-stage times into the table.

Peers, in the same run (``--no-peers`` skips them): bm25s (Lucene BM25, k1=0.9, b=0.4,
Porter stemmer, whole documents, title + text); plain sentence-transformers + FAISS flat
over whole documents (title + text); and the hand-rolled hybrid an engineer would write,
min-max convex fusion of those two, with its weight chosen on the *train* split
(``qrels/train.tsv``), never on test.

The index is cached in ``--work`` (rebuilt when missing or of another size), so a rerun
only queries. ``--json`` prints exactly one line::

    {"dataset": "scifact", "bm25": {"ndcg@10": .., "recall@100": ..}, "dense": {..}, "hybrid": {..}, ..}
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import machine  # noqa: E402  (scripts/ is on sys.path)

from search.fusion import convex  # noqa: E402

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


def bar(total: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit="q" if desc.startswith("search") else "it",
        file=sys.stderr,
        mininterval=2.0,
        dynamic_ncols=True,
    )


def open_index(work: Path, corpus: list[dict[str, Any]]) -> tuple[Any, dict[str, float]]:
    """The engine over the corpus, built once into ``work`` through ingest → index, and reused."""
    from search.engine import Engine
    from search.errors import IndexFormatError
    from search.ingest import load

    path = work / "index"
    stages: dict[str, float] = {}
    if path.exists():
        try:
            e = Engine.open(path)
            if e.manifest().get("counts", {}).get("documents") == len(corpus):
                return e, stages
            e.close()
        except IndexFormatError as err:
            log(f"rebuilding: {err}")
        import shutil

        shutil.rmtree(path)
    src = work / "corpus.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for d in corpus:
            rec = {"id": d["_id"], "title": d.get("title") or "", "text": d["text"]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    t0 = time.perf_counter()
    articles, problems = load([src])
    stages["ingest_s"] = time.perf_counter() - t0
    if problems:
        log(f"{len(problems)} ingest problems, first: {problems[0]}")
    e = Engine.open(path, create=True)
    pbar: Any = None
    enc: list[float] = []

    def progress(stage: str, done: int, total: int) -> None:
        nonlocal pbar
        if pbar is None:
            pbar = bar(total, f"index: {stage} passages")
            enc.append(time.perf_counter())
        pbar.update(done - pbar.n)
        if done == total:
            enc.append(time.perf_counter())

    t1 = time.perf_counter()
    rep = e.add(articles, reset=True, progress=progress)
    if pbar is not None:
        pbar.close()
    total = time.perf_counter() - t1
    stages["encode_s"] = enc[-1] - enc[0] if len(enc) >= 2 else 0.0
    stages["chunk_and_write_s"] = total - stages["encode_s"]
    log(f"indexed {len(articles)} articles as {rep.passages} passages in {total:.1f} s")
    return e, stages


def engine_run(e: Any, queries: dict[str, str], mode: str, k: int = 100) -> tuple[Run, float]:
    """The engine's ranking per query (``Engine.search``, default settings), as documents (MaxP)."""
    run: Run = {}
    times: list[float] = []
    pb = bar(len(queries), f"search {mode}")
    for qid, text in queries.items():
        t0 = time.perf_counter()
        hits = e.search(text, k=k, mode=mode)
        times.append(time.perf_counter() - t0)
        docs: dict[str, float] = {}
        for h in hits:
            for d in [h.passage.doc_id, *h.duplicates]:  # a collapsed copy ranks with its story
                docs.setdefault(d, -float(len(docs)))
        run[qid] = list(docs.items())
        pb.update(1)
    pb.close()
    return drop_self(run), statistics.median(times) * 1000


def fuse(lex: Run, den: Run, alpha: float, depth: int = 100) -> Run:
    return {q: convex(lex[q][:depth], den.get(q, [])[:depth], alpha=alpha) for q in lex}


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
    ap.add_argument("--work", type=Path, default=None, help="cache folder (default /tmp/beir-<name>)")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--no-peers", action="store_true", help="skip bm25s, dense and convex peers")
    ap.add_argument("--modes", default="hybrid,bm25,dense", help="engine modes to run")
    args = ap.parse_args()

    work = args.work or Path(f"/tmp/beir-{args.data.name}")
    corpus = read_jsonl(args.data / "corpus.jsonl")
    all_queries = {str(q["_id"]): q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    test = read_qrels(args.data / "qrels" / "test.tsv")
    train_path = args.data / "qrels" / "train.tsv"
    train = read_qrels(train_path) if train_path.exists() else {}
    q_test = {q: all_queries[q] for q in test if q in all_queries}
    q_train = {q: all_queries[q] for q in train if q in all_queries}
    work.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    e, stages = open_index(work, corpus)
    n_passages = e.stats()["passages"]
    rows: list[tuple[str, dict[str, float], str]] = []
    for mode in args.modes.split(","):
        t = time.perf_counter()
        run, p50 = engine_run(e, q_test, mode)
        stages[f"search_{mode}_s"] = time.perf_counter() - t
        rows.append((mode, evaluate(run, test), f"engine default path, {p50:.1f} ms/query p50"))
    e.close()

    peers: list[tuple[str, dict[str, float], str]] = []
    if not args.no_peers:
        queries = {**q_test, **q_train}
        t = time.perf_counter()
        b_run, b_t = bm25s_run(corpus, queries)
        s_run, s_t = st_faiss_run(corpus, queries, work)
        stages["peers_s"] = time.perf_counter() - t
        peers.append(("bm25s (lucene, whole docs)", evaluate(b_run, test), f"{b_t['ms_p50']:.2f} ms/query"))
        peers.append(
            (
                "dense: sentence-transformers + FAISS flat (whole docs)",
                evaluate(s_run, test),
                f"{s_t['ms_p50']:.2f} ms/query",
            )
        )
        alpha, best = 0.5, -1.0
        if train:
            for a in [round(x * 0.05, 2) for x in range(2, 19)]:
                sc = evaluate(fuse(b_run, s_run, a), train)["ndcg@10"]
                if sc > best:
                    alpha, best = a, sc
        peers.append(
            (
                f"convex bm25s + dense (alpha={alpha}, chosen on train)",
                evaluate(fuse(b_run, s_run, alpha), test),
                "min-max convex fusion",
            )
        )
    stages["total_s"] = time.perf_counter() - t0

    out = {"dataset": args.data.name, **{name: m for name, m, _ in rows}}
    if args.json:
        out["peers"] = {n: m for n, m, _ in peers}
        out["stages"] = {k: round(v, 2) for k, v in stages.items()}
        print(json.dumps(out))
        return
    print(
        f"## BEIR {args.data.name}: {len(q_test)} test queries, {len(corpus)} documents, {n_passages} passages\n"
    )
    print(f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d')}.\n")
    print("| run | nDCG@10 | recall@100 | note |")
    print("|---|---|---|---|")
    for name, m, note in rows + peers:
        print(f"| {name} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {note} |")
    print("\nStages: " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))


if __name__ == "__main__":
    main()
