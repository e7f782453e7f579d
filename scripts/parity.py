"""Local and Milvus backends side by side: the same articles, vectors, signals and fusion.

    python scripts/parity.py --local /tmp/dev-index --questions ../shared/eval/dev.jsonl
    python scripts/parity.py --local /tmp/beir-scifact/index --beir ../shared/data/scifact --docs 1500

Copies a local index into Milvus Lite (``--milvus``, default beside the local index):
the same articles, passages, sentence spans and the *same vectors*, so the dense sides
are identical and any difference comes from BM25 (Milvus's analyzer and scoring) and
the document signal. Then asks every question on both, in each mode, and prints
hit@1 / recall@5 / mrr@10 per backend (for ``--questions``) or nDCG@10 (for ``--beir``,
over the test queries whose judged documents are in the copied subset), and overlap@10:
the share of the local top 10 that Milvus's top 10 holds.

``--docs N`` copies only the first N documents plus every document judged for a test
query (Milvus Lite writes ~100 passages a second). ``--feedback on|off`` forces the
pseudo-relevance feedback round (:mod:`search.feedback`) on both backends; ``auto`` (the
default) leaves it to the engine (off on football corpora such as dev's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from beir import ndcg_at, read_jsonl, read_qrels  # noqa: E402

from search.backends import WriteBatch  # noqa: E402
from search.engine import Engine  # noqa: E402
from search.evaluate import read_questions, relevant  # noqa: E402
from search.vector_codes import as_float32  # noqa: E402


def copy_to_milvus(local: Engine, uri: Path, ids: list[str] | None) -> Engine:
    snap = local._backend.snap
    m = Engine.open(uri, create=True, backend="milvus", uri=str(uri), embedder=local._embedder_spec)
    if m.stats()["documents"]:
        return m
    docs = [d for d in snap.all_docs() if ids is None or d.id in ids]
    for i in range(0, len(docs), 200):
        batch = WriteBatch(reset=i == 0)
        for rec in docs[i : i + 200]:
            seg_name, start, n = snap.loc(rec.id)  # type: ignore[misc]
            seg = snap.segments[seg_name]
            art = snap.article(rec.id)
            assert art is not None
            batch.articles.append(art)
            batch.passages.append(local.passages_of(rec.id))
            batch.vectors.append(as_float32(seg.vectors[start : start + n]))
            batch.sentences.append(
                [
                    [tuple(x) for x in seg.sents[seg.sentoff[r] : seg.sentoff[r + 1]].tolist()]
                    for r in range(start, start + n)
                ]
            )
            batch.duplicate_of.append(rec.duplicate_of)
            batch.minhash.append("")
        m._backend.write(batch)
        print(f"  copied {min(i + 200, len(docs))}/{len(docs)} documents", file=sys.stderr, flush=True)
    return m


def overlap(a: list[str], b: list[str], k: int = 10) -> float:
    return len(set(a[:k]) & set(b[:k])) / max(min(k, len(a)), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--local", type=Path, required=True)
    ap.add_argument("--milvus", type=Path, default=None)
    ap.add_argument("--questions", type=Path)
    ap.add_argument("--beir", type=Path)
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--modes", default="hybrid,bm25,dense")
    ap.add_argument("--feedback", choices=("auto", "on", "off"), default="auto")
    args = ap.parse_args()

    local = Engine.open(args.local)
    ids = None
    queries: list[tuple[str, str, Any]] = []
    if args.beir:
        qrels = read_qrels(args.beir / "qrels" / "test.tsv")
        allq = {str(q["_id"]): q["text"] for q in read_jsonl(args.beir / "queries.jsonl")}
        if args.docs:
            judged = {d for r in qrels.values() for d in r}
            first = [d.id for d in sorted(local.documents(), key=lambda d: d.id)[: args.docs]]
            ids = set(first) | judged
            qrels = {q: r for q, r in qrels.items() if set(r) <= ids}
        queries = [(q, allq[q], qrels[q]) for q in qrels if q in allq]
    else:
        queries = [(q.id, q.question, q.evidence) for q in read_questions(args.questions)]
    uri = args.milvus or args.local.parent / f"{args.local.name}-milvus.db"
    milvus = copy_to_milvus(local, uri, sorted(ids) if ids is not None else None)
    if ids is not None:  # the local side over the same subset, so both rank the same documents
        sub = args.local.parent / f"{args.local.name}-subset"
        if not sub.exists():
            le = Engine.open(sub, create=True, embedder=local._embedder_spec)
            snap = local._backend.snap
            batch = WriteBatch(reset=True)
            for rec in [d for d in snap.all_docs() if d.id in ids]:
                seg_name, start, n = snap.loc(rec.id)  # type: ignore[misc]
                seg = snap.segments[seg_name]
                art = snap.article(rec.id)
                assert art is not None
                batch.articles.append(art)
                batch.passages.append(local.passages_of(rec.id))
                batch.vectors.append(as_float32(seg.vectors[start : start + n]))
                batch.sentences.append(
                    [
                        [tuple(x) for x in seg.sents[seg.sentoff[r] : seg.sentoff[r + 1]].tolist()]
                        for r in range(start, start + n)
                    ]
                )
                batch.duplicate_of.append(rec.duplicate_of)
                batch.minhash.append("")
            le._backend.write(batch)
            le.close()
        local.close()
        local = Engine.open(sub)
    feedback = {"auto": None, "on": True, "off": False}[args.feedback]
    local.feedback = milvus.feedback = feedback
    out: dict[str, Any] = {
        "queries": len(queries),
        "documents": milvus.stats()["documents"],
        "feedback": args.feedback,
    }
    for mode in args.modes.split(","):
        per: dict[str, list[float]] = {}
        for qid, text, gold in queries:
            tops = {}
            for name, e in (("local", local), ("milvus", milvus)):
                hits = e.search(text, k=10, mode=mode)
                tops[name] = [h.passage.id for h in hits]
                if args.beir:
                    docs = list(dict.fromkeys(h.passage.doc_id for h in hits if h.passage.doc_id != qid))
                    per.setdefault(f"{name} ndcg@10", []).append(ndcg_at([(d, 0.0) for d in docs], gold))
                else:
                    first = next((i for i, h in enumerate(hits) if relevant(h.passage.text, gold)), None)
                    per.setdefault(f"{name} hit@1", []).append(float(first == 0))
                    per.setdefault(f"{name} recall@5", []).append(float(first is not None and first < 5))
                    per.setdefault(f"{name} mrr@10", []).append(1 / (first + 1) if first is not None else 0.0)
            per.setdefault("overlap@10", []).append(overlap(tops["local"], tops["milvus"]))
        out[mode] = {k: round(statistics.fmean(v), 4) for k, v in per.items()}
    local.close()
    milvus.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
