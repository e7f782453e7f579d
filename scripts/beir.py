"""Retrieval quality on any BEIR-layout folder, through the engine's whole default path.

    python scripts/beir.py --data ../shared/data/scifact [--split test] [--work DIR] [--json]

The folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (query id, document id, grade; a header line
is skipped). The corpus is written as the JSONL the engine ingests (id, title, text) and
indexed the way a user's folder is: ingest, chunk, NER, encode (headline + passage, and
each sentence), index (whoosh text and title fields, the document-level index, vectors).
Every query of the split is then asked through ``Engine.search`` with default settings
(fusion, document signal, sentence signals, reranker and the football switch included), in
each mode. A document's rank is its best passage's (MaxP). Reported: nDCG@10 (linear gain,
log2 discount, ideal from the qrels, as trec_eval / pytrec_eval) and recall@100; like
BEIR's evaluator, a retrieved document whose id equals the query id is dropped.

Beside the engine, in the same run (``--no-peers`` skips them): bm25s, sentence-transformers
+ FAISS flat, and min-max convex fusion of the two with its weight chosen on the train
split (``qrels/train.tsv``, when the folder has one and it is not the split reported).

Progress bars with an ETA go to stderr; the per-stage times (ingest, chunk, NER, encode,
index, search per mode) are printed under the table. Reruns are quick: the index is kept
in ``--work`` (rebuilt when the corpus or the index format changed), and the models'
outputs are cached there by text (scripts/beir_cache.py), so even a rebuild encodes
nothing twice. ``--rebuild`` forces a rebuild; ``--no-cache`` ignores the caches.
``--json`` prints exactly one line::

    {"dataset": "scifact", "split": "test", "hybrid": {"ndcg@10": .., "recall@100": ..}, ..,
     "peers": {..}, "stages": {..}}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from beir_peers import Run, bm25s_run, drop_self, fuse, st_faiss_run  # noqa: E402
from machine import machine  # noqa: E402

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
            if i == 0 and not parts[-1].lstrip("-").isdigit():
                continue  # the header (query-id, corpus-id, score)
            if len(parts) < 3:
                continue
            out.setdefault(parts[0], {})[parts[1]] = int(parts[-1])
    return out


def check_folder(data: Path, split: str) -> None:
    """One line saying what is missing, rather than a traceback, for a folder that is not BEIR's."""
    need = [data / "corpus.jsonl", data / "queries.jsonl", data / "qrels" / f"{split}.tsv"]
    missing = [str(p) for p in need if not p.is_file()]
    if missing:
        splits = sorted(p.stem for p in (data / "qrels").glob("*.tsv")) if (data / "qrels").is_dir() else []
        hint = (
            f" (this folder has the splits: {', '.join(splits)}; choose one with --split)" if splits else ""
        )
        sys.exit(f"Error: {data} is not a BEIR-layout folder: missing {', '.join(missing)}{hint}")


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
    qs = [q for q in qrels if any(r > 0 for r in qrels[q].values())]
    return {
        "ndcg@10": round(statistics.fmean(ndcg_at(run.get(q, []), qrels[q]) for q in qs), 4),
        "recall@100": round(statistics.fmean(recall_at(run.get(q, []), qrels[q]) for q in qs), 4),
    }


# ----------------------------------------------------------------------------- engine


def bar(total: int, desc: str, unit: str = "it") -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, mininterval=2.0, dynamic_ncols=True)


def fingerprint(corpus: list[dict[str, Any]]) -> str:
    h = hashlib.sha1()
    for d in corpus:
        h.update(json.dumps([d["_id"], d.get("title") or "", d["text"]]).encode("utf-8"))
    return h.hexdigest()[:16]


def open_index(
    work: Path, corpus: list[dict[str, Any]], rebuild: bool = False, cache: bool = True
) -> tuple[Any, dict[str, float]]:
    """The engine over the corpus, built once into ``work`` through ingest → index, and reused."""
    from search.engine import Engine
    from search.errors import IndexFormatError, IndexMissingError

    path = work / "index"
    stamp = work / "corpus.sha1"
    fp = fingerprint(corpus)
    stages: dict[str, float] = {}
    if path.exists() and not rebuild and stamp.is_file() and stamp.read_text().strip() == fp:
        try:
            e = Engine.open(path)
            if e.manifest().get("counts", {}).get("documents"):
                log(f"reusing the index in {path} (--rebuild to build it again)")
                return e, stages
            e.close()
        except (IndexFormatError, IndexMissingError) as err:
            log(f"rebuilding: {err}")
    if path.exists():
        shutil.rmtree(path)
    src = work / "corpus.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for d in corpus:
            rec = {"id": str(d["_id"]), "title": d.get("title") or "", "text": d["text"]}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    from search.chunk import chunk, segment
    from search.embed import get_embedder
    from search.engine import CHUNK_OVERLAP, CHUNK_TARGET
    from search.enrich import tag
    from search.ingest import load

    t0 = time.perf_counter()
    articles, problems = load([src])
    stages["ingest_s"] = time.perf_counter() - t0
    if problems:
        log(f"{len(problems)} ingest problems, first: {problems[0]}")
    # The engine chunks inside its write; the same calls, timed apart, give the chunk stage.
    t0 = time.perf_counter()
    for a in articles:
        chunk(a.id, a.text, target_chars=CHUNK_TARGET, overlap=CHUNK_OVERLAP)
        segment(a.text)
    stages["chunk_s"] = time.perf_counter() - t0
    embedder: Any = "auto"
    tagger: Any = None
    bars: dict[str, Any] = {}
    if cache:
        from beir_cache import CachedEmbedder, CachedTagger

        embedder = CachedEmbedder(get_embedder("auto"), work, bar)
        tagger = CachedTagger(tag, work, lambda n: bars["ner"].update(n) if "ner" in bars else None)
    e = Engine.open(path, create=True, embedder=embedder, tagger=tagger)

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            for b in bars.values():
                b.close()
            bars[stage] = bar(total, f"index: {stage}", "article" if stage == "ner" else "passage")
        bars[stage].update(done - bars[stage].n)

    rep = e.add(articles, reset=True, progress=progress)
    for b in bars.values():
        b.close()
    stages["ner_s"] = rep.stages.get("ner", 0.0)
    stages["encode_s"] = rep.stages.get("encode", 0.0)
    stages["index_s"] = max(rep.stages.get("rest", 0.0) - stages["chunk_s"], 0.0)
    if cache:
        log(f"embedding cache: {embedder.hits} texts reused, {embedder.misses} encoded")
    log(f"indexed {len(articles)} articles as {rep.passages} passages in {rep.took_s:.1f} s")
    e.close()
    stamp.write_text(fp + "\n")
    return Engine.open(path), stages


def engine_run(e: Any, queries: dict[str, str], mode: str, k: int = 100) -> tuple[Run, float]:
    """The engine's ranking per query (``Engine.search``, default settings), as documents (MaxP)."""
    run: Run = {}
    times: list[float] = []
    pb = bar(len(queries), f"search {mode}", "query")
    for qid, text in queries.items():
        t0 = time.perf_counter()
        try:
            hits = e.search(text, k=k, mode=mode)
        except Exception as err:  # a query the engine refuses (no words) retrieves nothing
            log(f"query {qid}: {err}")
            hits = []
        times.append(time.perf_counter() - t0)
        docs: dict[str, float] = {}
        for h in hits:
            for d in [h.passage.doc_id, *h.duplicates]:  # a collapsed copy ranks with its story
                docs.setdefault(d, -float(len(docs)))
        run[qid] = list(docs.items())
        pb.update(1)
    pb.close()
    return drop_self(run), statistics.median(times or [0.0]) * 1000


# ----------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"), help="a BEIR-layout folder")
    ap.add_argument("--split", default="test", help="the qrels file to report (qrels/<split>.tsv)")
    ap.add_argument("--work", type=Path, default=None, help="cache folder (default /tmp/beir-<name>)")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--no-peers", action="store_true", help="skip the bm25s, dense and convex peers")
    ap.add_argument("--modes", default="hybrid,bm25,dense", help="engine modes to run")
    ap.add_argument("--rebuild", action="store_true", help="build the index again even if it is cached")
    ap.add_argument("--no-cache", action="store_true", help="encode and tag without the model caches")
    args = ap.parse_args()

    check_folder(args.data, args.split)
    work = args.work or Path(f"/tmp/beir-{args.data.resolve().name}")
    corpus = read_jsonl(args.data / "corpus.jsonl")
    all_queries = {str(q["_id"]): q["text"] for q in read_jsonl(args.data / "queries.jsonl")}
    qrels = read_qrels(args.data / "qrels" / f"{args.split}.tsv")
    train_path = args.data / "qrels" / "train.tsv"
    train = read_qrels(train_path) if train_path.is_file() and args.split != "train" else {}
    q_eval = {q: all_queries[q] for q in qrels if q in all_queries}
    q_train = {q: all_queries[q] for q in train if q in all_queries}
    work.mkdir(parents=True, exist_ok=True)
    started = machine()

    t0 = time.perf_counter()
    e, stages = open_index(work, corpus, args.rebuild, not args.no_cache)
    n_passages = e.stats()["passages"]
    rows: list[tuple[str, dict[str, float], str]] = []
    for mode in args.modes.split(","):
        t = time.perf_counter()
        run, p50 = engine_run(e, q_eval, mode)
        stages[f"search_{mode}_s"] = time.perf_counter() - t
        rows.append((f"ours, {mode}", evaluate(run, qrels), f"engine default path, {p50:.1f} ms/query p50"))
    e.close()

    peers: list[tuple[str, dict[str, float], str]] = []
    if not args.no_peers:
        queries = {**q_eval, **q_train}
        t = time.perf_counter()
        b_run, b_t = bm25s_run(corpus, queries)
        s_run, s_t = st_faiss_run(corpus, queries, work, fingerprint(corpus))
        stages["peers_s"] = time.perf_counter() - t
        peers.append(
            ("bm25s (Lucene BM25, whole docs)", evaluate(b_run, qrels), f"{b_t['ms_p50']:.2f} ms/query")
        )
        peers.append(
            (
                "dense: sentence-transformers + FAISS flat (whole docs)",
                evaluate(s_run, qrels),
                f"{s_t['ms_p50']:.2f} ms/query",
            )
        )
        alpha, best, how = 0.5, -1.0, "alpha 0.5: no train split to choose it on"
        if train:
            for a in [round(x * 0.05, 2) for x in range(2, 19)]:
                sc = evaluate(fuse(b_run, s_run, a), train)["ndcg@10"]
                if sc > best:
                    alpha, best = a, sc
            how = "alpha chosen on train"
        peers.append(
            (f"convex bm25s + dense (alpha={alpha})", evaluate(fuse(b_run, s_run, alpha), qrels), how)
        )
    stages["total_s"] = time.perf_counter() - t0

    if args.json:
        out: dict[str, Any] = {"dataset": args.data.resolve().name, "split": args.split}
        out.update({name.removeprefix("ours, "): m for name, m, _ in rows})
        out["peers"] = {n: m for n, m, _ in peers}
        out["stages"] = {k: round(v, 2) for k, v in stages.items()}
        print(json.dumps(out))
        return
    print(
        f"## BEIR {args.data.resolve().name} ({args.split}): {len(q_eval)} queries, "
        f"{len(corpus)} documents, {n_passages} passages\n"
    )
    print(f"Machine: {started}. Date: {time.strftime('%Y-%m-%d')}.\n")
    print("| run | nDCG@10 | recall@100 | note |")
    print("|---|---|---|---|")
    for name, m, note in rows + peers:
        print(f"| {name} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {note} |")
    print("\nStages (s): " + ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in stages.items()))


if __name__ == "__main__":
    main()
