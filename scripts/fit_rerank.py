"""Fit the trees that order the search head (search/data/rerank_trees*.json).

    python scripts/fit_rerank.py INDEX:QUESTIONS.jsonl [INDEX:QUESTIONS.jsonl ...] [--dry-run] [--fold-seeds 2]
    python scripts/fit_rerank.py --statements --beir BEIR_FOLDER:INDEX [--dry-run]

The first form fits the classifier trees for questions (``rerank_trees.json``) on questions
with evidence strings; with ``--football`` it fits the LambdaRank trees for questions on a
football corpus instead (``rerank_trees_football.json``: search/rerank_learned.py says why
two), over the head's features and the answer type's evidence (search/rerank_typed.py). ``--folds DIR`` also writes each fold's trees, for scripts/fit_answer.py --heads. The second fits the trees for statements (``rerank_trees_statements.json``:
claims, headlines, keywords; search/rerank_learned.py says why two) on a BEIR folder's
*train* qrels, through the index ``scripts/beir.py`` built for it
(``/tmp/beir-<name>/index``): a passage is relevant when its document is.

Only pass question sets you may tune on (dev, scripts/questions/*.jsonl, the training
sets in scripts/questions/train/, SciFact's train split), never the fresh held-out sets
or a test split: they must measure, not fit.

Each question runs through `search`'s own path (hybrid); at the reranker, the feature
row (search/rerank_learned.py: FEATURES) of each candidate the trees order is recorded with whether
its passage holds one of the question's evidence strings. Then:

1. out of fold (the questions split in 5 folds, per fold seed), how often the head's
   first passage is relevant under the hand-set order and under the trees;
2. the trees on every question, written with search/trees.py's export.

The statements' and the football questions' trees are LightGBM's LambdaRank (``LGBMRanker``): they learn to put a
relevant passage above the query's other candidates, which is what ordering a head needs; a
query with no relevant candidate, which teaches no order, is left out. The other questions' trees
are scikit-learn's HistGradientBoostingClassifier, each question weighing the same. The query path
runs them from the JSON with numpy (search/trees.py's ``export_lightgbm``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import read_jsonl, read_qrels  # noqa: E402

from search import rerank_learned, rerank_typed, trees  # noqa: E402
from search.engine import Engine  # noqa: E402
from search.evaluate import read_questions, relevant  # noqa: E402
from search.fusion import doc_of  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "search" / "data" / rerank_learned.TREES
# The statements' LambdaRank trees. Out of fold, offline on the recorded heads (two fold
# assignments): SciFact train nDCG@10 0.7718 and 0.7647 against the classifier trees'
# (CLASSIFIER) 0.7606 and 0.7588; on the football training questions, first passage
# relevant for 1,148 and 1,150 of 1,402 against 1,132 and 1,128 (not shipped for
# questions: search/rerank_learned.py says why). 40 rows a leaf with truncation at 10 gave
# 0.7749 and 0.7611, 1,145 and 1,133.
PARAMS = {
    "n_estimators": 200,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_child_samples": 100,
    "lambdarank_truncation_level": 20,
}
# one question: its rows and whether each candidate's passage is relevant
Rows = tuple[str, np.ndarray, np.ndarray]


# The columns the trees are fitted on: the football questions' trees also read the answer
# type's evidence (search/rerank_typed.py says why); main() sets them.
COLUMNS: tuple[str, ...] = rerank_learned.FEATURES


class _Hand:
    """Stands in for the trees while recording: keeps the hand-set order, and asks for the
    columns being fitted."""

    @property
    def features(self) -> tuple[str, ...]:
        return COLUMNS

    def proba(self, rows: list[dict[str, float]]) -> np.ndarray:
        return np.array([r["hand"] for r in rows])


Seen = list[tuple[list[dict[str, float]], list[str]]]


def recording() -> Seen:
    """Record each head's feature rows and passage ids, the hand-set order kept."""
    seen: Seen = []
    real = rerank_learned.features

    def record(*args: Any, **kw: Any) -> list[dict[str, float]]:
        rows = real(*args, **kw)
        seen.append((rows, [pid for pid, _ in args[2]]))
        return rows

    rerank_learned.features = record  # type: ignore[assignment]
    rerank_learned.load = lambda package, name: _Hand()  # type: ignore[assignment,misc,return-value]
    return seen


def matrix(rows: list[dict[str, float]]) -> np.ndarray:
    return np.array([[r[k] for k in COLUMNS] for r in rows])


def collect_beir(pairs: list[str]) -> list[Rows]:
    """Rows from a BEIR folder's train split: a passage is relevant when its document is."""
    seen = recording()
    out: list[Rows] = []
    for pair in pairs:
        data, index = (Path(x) for x in pair.split(":", 1))
        queries = {d["_id"]: d["text"] for d in read_jsonl(data / "queries.jsonl")}
        qrels = {
            qid: {doc for doc, grade in judged.items() if grade > 0}
            for qid, judged in read_qrels(data / "qrels" / "train.tsv").items()
        }
        with Engine.open(str(index)) as e:
            for qid in (q for q in queries if qrels.get(q)):
                seen.clear()
                e.search(queries[qid], k=10, mode="hybrid")
                if seen:
                    rows, pids = seen[-1]
                    y = np.array([doc_of(pid) in qrels[qid] for pid in pids], float)
                    out.append((f"{data.name}/{qid}", matrix(rows), y))
        print(f"{pair}: {len(out)} queries so far", file=sys.stderr)
    return out


def collect(pairs: list[str]) -> list[Rows]:
    out: list[Rows] = []
    seen = recording()
    for pair in pairs:
        index, path = pair.split(":", 1)
        with Engine.open(index) as e:
            view = e._backend.reader()
            for q in read_questions(path):
                if not q.evidence:
                    continue
                seen.clear()
                e.search(q.question, k=10, mode="hybrid")
                if not seen:
                    continue
                rows, pids = seen[-1]
                texts = [view.passage(pid) for pid in pids]
                y = np.array([p is not None and relevant(p.text, q.evidence) for p in texts], float)
                out.append((f"{Path(path).stem}/{q.id}", matrix(rows), y))
        print(f"{pair}: {len(out)} questions so far", file=sys.stderr)
    return out


CLASSIFIER = {"max_iter": 100, "learning_rate": 0.1, "max_leaf_nodes": 15, "min_samples_leaf": 100}


def fit_classifier(qs: list[Rows]) -> Any:
    """The classifier trees that order the head for questions (rerank_trees.json): each
    question weighs the same."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    x = np.vstack([q[1] for q in qs])
    y = np.concatenate([q[2] for q in qs])
    w = np.concatenate([np.full(len(q[2]), 1.0 / len(q[2])) for q in qs])
    model = HistGradientBoostingClassifier(**CLASSIFIER, l2_regularization=1.0, random_state=0)
    return model.fit(x, y, sample_weight=w)


def fit(qs: list[Rows]) -> Any:
    import lightgbm

    keep = [q for q in qs if len(q[2]) > 1 and q[2].any()]
    x = np.vstack([q[1] for q in keep])
    y = np.concatenate([q[2] for q in keep]).astype(int)
    model = lightgbm.LGBMRanker(objective="lambdarank", random_state=0, n_jobs=1, verbose=-1, **PARAMS)
    return model.fit(x, y, group=[len(q[2]) for q in keep])


def first_right(qs: list[Rows], model: Any = None) -> int:
    hand = COLUMNS.index("hand")
    right = 0
    for _, x, y in qs:
        if model is None:
            score = x[:, hand]
        elif hasattr(model, "predict_proba"):
            score = model.predict_proba(x)[:, 1]
        else:
            score = model.predict(x)
        right += int(y[int(np.argmax(score))])
    return right


def export(model: Any, qs: list[Rows], where: str) -> dict[str, Any]:
    """The trees as search/trees.py reads them, with what they were fitted on."""
    if hasattr(model, "predict_proba"):
        doc = (
            "Boosted trees (a classifier) over the search head's features: the probability that a "
            f"passage holds the answer, which orders the head for {where} "
            f"(search/rerank_learned.py). Written by scripts/fit_rerank.py with "
            f"{CLASSIFIER}; run by search/trees.py."
        )
        data = trees.export(model, COLUMNS, doc)
    else:
        doc = (
            "LambdaRank trees over the search head's features: a score (its logistic shown as the "
            f"hit's score) that orders the head for {where} (search/rerank_learned.py). "
            f"Written by scripts/fit_rerank.py with {PARAMS}; run by search/trees.py."
        )
        data = trees.export_lightgbm(model, COLUMNS, doc)
    data["fitted_on"] = sorted({q[0].split("/")[0] for q in qs})
    return data


def split(qs: list[Rows], groups: dict[str, str], seed: int) -> list[np.ndarray]:
    """Five folds of question indexes, at random by ``seed``: whole groups (``--by-article``:
    the questions about one article) when ``groups`` names them, else single questions."""
    if not groups:  # by question: the folds of earlier fits, unchanged
        return np.array_split(np.random.default_rng(seed).permutation(len(qs)), 5)
    keys = [groups.get(q[0], q[0]) for q in qs]
    order = sorted(set(keys))
    parts = np.array_split(np.random.default_rng(seed).permutation(len(order)), 5)
    at = {order[j]: i for i, part in enumerate(parts) for j in part.tolist()}
    return [np.array([j for j, k in enumerate(keys) if at[k] == i], dtype=int) for i in range(5)]


def write_folds(folder: Path, name: str, models: list[Any], folds: list[np.ndarray], qs: list[Rows]) -> None:
    """Each fold's trees (fitted on the other folds) and which fold each question is in:
    scripts/fit_answer.py --heads records a question's head with trees that never saw it."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, (model, fold) in enumerate(zip(models, folds)):
        held = set(fold.tolist())
        data = export(model, [q for j, q in enumerate(qs) if j not in held], f"fold {i}")
        (folder / f"fold{i}.json").write_text(
            json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8"
        )
    of = {qs[j][0]: i for i, fold in enumerate(folds) for j in fold.tolist()}
    (folder / "folds.json").write_text(json.dumps({"file": name, "folds": of}) + "\n", encoding="utf-8")
    print(f"wrote {len(models)} fold trees for {name} to {folder}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="*", help="INDEX:QUESTIONS.jsonl")
    ap.add_argument("--beir", action="append", default=[], help="BEIR_FOLDER:INDEX (its train qrels)")
    ap.add_argument(
        "--statements", action="store_true", help="write the trees for queries that are not questions"
    )
    ap.add_argument(
        "--football",
        action="store_true",
        help="write the LambdaRank trees for questions on a football corpus (rerank_trees_football.json)",
    )
    ap.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    ap.add_argument("--fold-seeds", type=int, default=2)
    ap.add_argument(
        "--by-article",
        action="store_true",
        help="folds by the article that answers a question (fit_answer.py's article_groups), not by question",
    )
    ap.add_argument(
        "--folds",
        type=Path,
        help="also write fold seed 0's out-of-fold trees here (for fit_answer.py --heads)",
    )
    args = ap.parse_args()
    if not args.pairs and not args.beir:
        ap.error("give INDEX:QUESTIONS.jsonl pairs or --beir BEIR_FOLDER:INDEX")
    global COLUMNS
    if args.football:
        COLUMNS = rerank_learned.FEATURES + rerank_typed.TYPED
    qs = collect(args.pairs) + collect_beir(args.beir)
    fitter = fit if (args.statements or args.football) else fit_classifier
    if args.statements:
        name, where = rerank_learned.STATEMENT_TREES, "queries that are not questions"
    elif args.football:
        name, where = rerank_learned.FOOTBALL_TREES, "questions on a football corpus"
    else:
        name, where = rerank_learned.TREES, "questions"
    print(f"{len(qs)} questions; a relevant passage in the head for {sum(int(q[2].any()) for q in qs)}")
    print(f"hand-set order: first passage relevant for {first_right(qs)}")
    groups: dict[str, str] = {}
    if args.by_article:
        from fit_answer import article_groups

        groups = article_groups(args.pairs)
    for seed in range(args.fold_seeds):
        folds = split(qs, groups, seed)
        right = 0
        models = []
        for fold in folds:
            held = set(fold.tolist())
            models.append(fitter([q for i, q in enumerate(qs) if i not in held]))
            right += first_right([qs[i] for i in fold], models[-1])
        print(f"trees, out of fold (fold seed {seed}): first passage relevant for {right}")
        if seed == 0 and args.folds is not None:
            write_folds(args.folds, name, models, folds, qs)
    if args.dry_run:
        return
    out = OUT.with_name(name)
    out.write_text(json.dumps(export(fitter(qs), qs, where), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
