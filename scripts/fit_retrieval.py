"""Fit the retrieval constants on training data: BEIR train qrels or `search eval` questions.

    python scripts/fit_retrieval.py --beir ../shared/data/scifact --index /tmp/beir-scifact/index
    python scripts/fit_retrieval.py --questions ../shared/eval/dev.jsonl --index /tmp/dev-index

Runs the engine's own ``search`` with one constant changed at a time and prints one
metric line per setting. Fit on SciFact *train* and on dev only: never on SciFact test,
held-out or ``scripts/questions``. Stages (``--stage``, comma-separated):

* ``lexical``: the title weight of BM25F and the document-level weight (bm25 mode);
* ``bm25``: BM25's k1 and b (bm25 and hybrid mode);
* ``fusion``: RRF, convex and per-query-confidence fusion at several weights, reranker on
  and off (hybrid mode, at the lexical constants given by ``--at`` or the first of each);
* ``rerank``: the reranker's sentence-by-meaning weight (``--dense-weights``), and off;
* ``rules``: the football vocabulary forced on, off, and the corpus switch, each with the
  reranker on and off (hybrid and bm25 mode).
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

from search import fusion as fusion_mod  # noqa: E402
from search import rerank as rerank_mod  # noqa: E402
from search.engine import Engine  # noqa: E402
from search.evaluate import read_questions, relevant  # noqa: E402
from search.fusion import Fusion  # noqa: E402

MIN_DOCS = fusion_mod.DOC_MIN_DOCS
DENSE_WEIGHT = rerank_mod.DENSE_SENTENCE_WEIGHT


def setup(
    e: Any,
    tw: float,
    dw: float,
    fusion: str,
    alpha: float,
    rerank: bool,
    football: bool | None = True,
    fit_doc_weight: bool = False,
) -> None:
    e.football = football  # the rules forced on (fit), off, or None: the corpus switch
    e._backend.snap.lexical.title_weight = tw
    fusion_mod.DOC_WEIGHT = dw
    # The lexical stage fits the weight itself (the corpus-size switch off); later stages
    # run the engine as it ships.
    fusion_mod.DOC_MIN_DOCS = 0 if fit_doc_weight else MIN_DOCS
    e.fusion = Fusion.from_str(fusion)
    e.alpha = alpha
    e.rerank = rerank


def beir_score(
    e: Any, queries: dict[str, str], qrels: dict[str, dict[str, int]], mode: str
) -> dict[str, float]:
    vals = []
    for qid, text in queries.items():
        docs: list[str] = []
        for h in e.search(text, k=30, mode=mode):
            for d in [h.passage.doc_id, *h.duplicates]:
                if d not in docs and d != qid:
                    docs.append(d)
        vals.append(ndcg_at([(d, 0.0) for d in docs], qrels[qid]))
    return {"ndcg@10": round(statistics.fmean(vals), 4)}


def dev_score(e: Any, questions: list[Any], mode: str) -> dict[str, float]:
    h1 = r5 = mrr = 0.0
    for q in questions:
        hits = e.search(q.question, k=10, mode=mode)
        first = next((i for i, h in enumerate(hits) if relevant(h.passage.text, q.evidence)), None)
        h1 += first == 0
        r5 += first is not None and first < 5
        mrr += 1 / (first + 1) if first is not None else 0
    n = len(questions)
    return {"hit@1": round(h1 / n, 4), "recall@5": round(r5 / n, 4), "mrr": round(mrr / n, 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--beir", type=Path, help="BEIR folder: fit on qrels/train.tsv")
    ap.add_argument("--questions", type=Path, help="a `search eval` JSONL file")
    ap.add_argument("--stage", default="lexical,fusion")
    ap.add_argument("--tw", default="0,0.5,1,2")
    ap.add_argument("--dw", default="0,0.25,0.5,1")
    ap.add_argument("--alphas", default="0.3,0.4,0.5,0.6,0.7")
    ap.add_argument(
        "--at",
        default=f"{fusion_mod.TITLE_WEIGHT},{fusion_mod.DOC_WEIGHT}",
        help="lexical constants for the later stages: TW,DW (default: the engine's)",
    )
    ap.add_argument(
        "--fusion",
        default=f"{fusion_mod.DEFAULT_FUSION}:{fusion_mod.CONVEX_ALPHA}",
        help="fusion for the bm25, rerank and rules stages: NAME:ALPHA (default: the engine's)",
    )
    ap.add_argument("--reranks", default="1,0", help="fusion stage: reranker on (1) and/or off (0)")
    ap.add_argument("--dense-weights", default="0,0.5,1,2", help="rerank stage: sentence-by-meaning weights")
    ap.add_argument("--k1", default="0.6,0.9,1.2", help="bm25 stage")
    ap.add_argument("--b", default="0.3,0.4,0.6,0.75", help="bm25 stage")
    args = ap.parse_args()

    e = Engine.open(args.index)
    cache: dict[str, Any] = {}
    enc = e.embedder.encode_query

    def encode_query(text: str) -> Any:
        if text not in cache:
            cache[text] = enc(text)
        return cache[text]

    e.embedder.encode_query = encode_query
    if args.beir:
        qrels = read_qrels(args.beir / "qrels" / "train.tsv")
        allq = {str(q["_id"]): q["text"] for q in read_jsonl(args.beir / "queries.jsonl")}
        qs = {q: allq[q] for q in qrels if q in allq}

        def score(mode: str) -> dict[str, float]:
            return beir_score(e, qs, qrels, mode)
    else:
        questions = read_questions(args.questions)

        def score(mode: str) -> dict[str, float]:
            return dev_score(e, questions, mode)

    tws = [float(x) for x in args.tw.split(",")]
    dws = [float(x) for x in args.dw.split(",")]
    if "lexical" in args.stage:
        for tw in tws:
            for dw in dws:
                setup(e, tw, dw, "rrf", 0.5, True, None, fit_doc_weight=True)
                print(json.dumps({"stage": "lexical", "tw": tw, "dw": dw, **score("bm25")}), flush=True)
    tw, dw = (float(x) for x in args.at.split(","))
    f, a = args.fusion.split(":")
    if "fusion" in args.stage:
        runs = [("rrf", 0.5)] + [
            (f, float(a)) for f in ("convex", "confidence") for a in args.alphas.split(",")
        ]
        for rr in [x == "1" for x in args.reranks.split(",")]:
            for f, a in runs:
                setup(e, tw, dw, f, a, rr, None)
                row = {"stage": "fusion", "tw": tw, "dw": dw, "fusion": f, "alpha": a, "rerank": rr}
                print(json.dumps({**row, **score("hybrid")}), flush=True)
    if "bm25" in args.stage:
        snap = e._backend.snap
        for k1 in (float(x) for x in args.k1.split(",")):
            for b in (float(x) for x in args.b.split(",")):
                for lex in (snap.lexical, snap.doc_lexical):
                    lex.k1, lex.b = k1, b
                setup(e, tw, dw, f, float(a), True, None)
                row = {"stage": "bm25", "k1": k1, "b": b}
                print(json.dumps({**row, "bm25": score("bm25"), "hybrid": score("hybrid")}), flush=True)
        for lex in (snap.lexical, snap.doc_lexical):
            lex.k1, lex.b = 0.9, 0.4
    if "rerank" in args.stage:  # the reranker's sentence-by-meaning evidence, and no reranker
        for w in [float(x) for x in args.dense_weights.split(",")] + [None]:
            setup(e, tw, dw, f, float(a), w is not None, None)
            rerank_mod.DENSE_SENTENCE_WEIGHT = w or 0.0
            row = {"stage": "rerank", "fusion": args.fusion, "dense_weight": w, "rerank": w is not None}
            print(json.dumps({**row, **score("hybrid")}), flush=True)
        rerank_mod.DENSE_SENTENCE_WEIGHT = DENSE_WEIGHT
    if "rules" in args.stage:  # the football rules on and off, and the corpus switch
        for rr in (True, False):
            for fb in (True, False, None):
                setup(e, tw, dw, f, float(a), rr, fb)
                row = {"stage": "rules", "fusion": args.fusion, "football": fb, "rerank": rr}
                print(json.dumps({**row, **score("hybrid"), **{"bm25": score("bm25")}}), flush=True)
    e.close()


if __name__ == "__main__":
    main()
