"""Fit the answer stages' weights: evidence.json, ranker.json, confidence.json and its trees.

    python scripts/fit_answer.py INDEX:QUESTIONS.jsonl [INDEX:QUESTIONS.jsonl ...] [--precision 0.9]
    python scripts/fit_answer.py ... --dry-run --fold-seeds 6   # judge a change: mean and range over 6 fold assignments
    python scripts/fit_answer.py ... --keep-evidence   # refit the ranker and confidence only

Only pass question sets you may tune on (dev, scripts/questions/*.jsonl, the training
sets in scripts/questions/train/), never the fresh held-out sets: they must measure,
not fit.

For each question the answer stages run as `search ask` runs them. Then:

1. evidence (search/answer/evidence.py): a logistic regression over each usable
   sentence's features, on whether the sentence states an accepted answer;
2. the stages run again with those weights, and every candidate value gets its feature
   row (search/answer/ranker.py); a value is right when an accepted answer is in it.
   The ranker, LambdaRank trees over the rows (LightGBM, ranker_rank.json; a logistic
   choice model is still fitted into ranker.json as the fallback, and a pointwise one for
   the confidence), is fitted with the questions split into folds, so every question also
   gets an out-of-fold ranking, as a question the ranker never saw would;
3. the confidence, boosted trees over the out-of-fold winner's probability, margin and
   ranker features (confidence_trees.json), is fitted on whether that winner was right; its
   threshold is the lowest confidence at which the short answers given keep the asked
   precision, a question no article answers counting as wrong whenever it gets one (the
   median of that threshold over bootstrap resamples of the questions, as it is noisy);
4. the ranker is refitted on every question, and the files are written;
5. the quote's model: LambdaRank trees over the sentence features, whose softmax picks
   the sentence quoted when there is no short answer; out of fold first, then on every
   question (pick_rank.json).
   LightGBM and scikit-learn fit the trees; the query path runs them from the JSON with
   numpy (search/trees.py).

Refit the head first (scripts/fit_rerank.py --football --folds DIR) and pass --heads DIR, so
each question's head comes from trees that never saw it. This rewrites confidence.json
without ``threshold_other``: run scripts/fit_threshold.py after it, on other sports' questions.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pickle
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from search import rerank_learned  # noqa: E402
from search import trees as trees_mod  # noqa: E402
from search.answer import (  # noqa: E402
    decide,  # noqa: E402
    evidence,
    ranker,
)
from search.engine import ANSWER_DEPTH, Engine  # noqa: E402
from search.evaluate import normalise, read_questions  # noqa: E402

conf_mod = importlib.import_module("search.answer.confidence")  # the package exports a function of that name
TEXTS: dict[str, tuple[str, list[str], list[str]]] = {}  # for --show
OBJECTIVE = "choice"  # or "pointwise": --objective
HERE = Path(__file__).resolve().parent.parent / "search" / "answer"
# id, value rows, value right, answerable, sentence rows, sentence states an answer
Question = tuple[str, list[dict[str, float]], list[bool], bool, list[dict[str, float]], list[bool]]
# --heads: the head trees' file name and, per question id, trees fitted without it
HEADS: tuple[str, dict[str, Any]] | None = None


def read_heads(folder: Path) -> tuple[str, dict[str, Any]]:
    """The out-of-fold head trees scripts/fit_rerank.py --folds wrote: the file they stand
    in for, and each question's trees (fitted on the folds it is not in)."""
    spec = json.loads((folder / "folds.json").read_text(encoding="utf-8"))
    models = {}
    for f in sorted(set(spec["folds"].values())):
        models[f] = trees_mod.Trees(json.loads((folder / f"fold{f}.json").read_text(encoding="utf-8")))
    return spec["file"], {qid: models[f] for qid, f in spec["folds"].items()}


def collect(pairs: list[str], picks: Any = None) -> list[Question]:
    """Every question's rows. ``picks`` (question id -> trees) sets the quote's model each
    question's sentences are picked with, so that the values' "pick" features come from a
    model that never saw the question (:func:`stacked`)."""
    out: list[Question] = []
    shipped = evidence.load
    shipped_head = rerank_learned.load
    for pair in pairs:
        index, path = pair.split(":", 1)
        with Engine.open(index) as e:
            for q in read_questions(path):
                qid = f"{Path(path).stem}/{q.id}"
                if picks is not None:
                    model = picks(qid)
                    evidence.load = lambda package, name, m=model: (
                        m if name == evidence.PICK_RANK else shipped(package, name)
                    )
                if HEADS is not None and qid in HEADS[1]:
                    # the head ordered by trees that never saw the question, as a new one's is
                    rerank_learned.load = lambda package, name, m=HEADS[1][qid]: (  # type: ignore[misc]
                        m if name == HEADS[0] else shipped_head(package, name)
                    )
                hits, vec = e._search(q.question, ANSWER_DEPTH, "hybrid", None)
                rerank_learned.load = shipped_head
                d = decide(q.question, hits, e, vec)
                gold = [normalise(a) for a in q.answers]
                right = [any(g in normalise(cl.text) for g in gold) for cl in d.clusters]
                states = [any(g in normalise(s.text) for g in gold) for s in d.usable]
                evidence.load = shipped
                out.append((qid, d.rows, right, bool(q.answers), d.sent_rows, states))
                TEXTS[out[-1][0]] = (q.question, [cl.text for cl in d.clusters], q.answers)
        print(f"{pair}: {len(out)} questions so far", file=sys.stderr)
    return out


def _standard(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mu, sd = x.mean(0), x.std(0) + 1e-9
    return (x - mu) / sd, mu, sd


def logistic(x: np.ndarray, y: np.ndarray, w8: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """A weighted, L2-regularised logistic regression (L-BFGS), in raw feature units."""
    z, mu, sd = _standard(x)
    w8 = w8 / w8.sum()

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        t = z @ w + b
        nll = float(w8 @ (np.logaddexp(0, t) - y * t))
        g = (1 / (1 + np.exp(-t)) - y) * w8
        return nll + 0.5 * l2 * float(w @ w), np.r_[z.T @ g + l2 * w, g.sum()]

    theta = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B").x
    w, b = theta[:-1] / sd, float(theta[-1])
    return w, b - float(w @ mu)


def choice(x: np.ndarray, y: np.ndarray, group: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """A conditional logit: within each group (one question's values or sentences), the
    softmax of the scores should fall on the right rows. It learns to rank the rows of one
    question against each other, which is what picking one of them needs; a pointwise fit
    would also spend its weights telling easy questions from hard ones."""
    z, _mu, sd = _standard(x)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, len(y)])
    n = len(starts)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        t = z @ w
        m = np.repeat(np.maximum.reduceat(t, starts), sizes)
        e = np.exp(t - m)
        tot = np.add.reduceat(e, starts)
        ey = e * y
        toty = np.add.reduceat(ey, starts)
        nll = float(np.sum(np.log(tot) - np.log(toty))) / n
        g = z.T @ (e / np.repeat(tot, sizes) - ey / np.repeat(toty, sizes)) / n
        return nll + 0.5 * l2 * float(w @ w), g + l2 * w

    w = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x
    return w / sd, 0.0


def fit_rows(
    groups: list[tuple[list[dict[str, float]], list[bool]]],
    names: tuple[str, ...],
    l2: float,
    objective: str = "",
) -> tuple[np.ndarray, float]:
    """Fit the rows of every group (see :func:`choice`); each group weighs the same."""
    if (objective or OBJECTIVE) == "choice":
        xs, ys, gs = [], [], []
        for i, (rows, right) in enumerate(groups):
            if len(rows) < 2 or not any(right):
                continue  # nothing to choose between, or nothing right to choose
            for r, ok in zip(rows, right):
                xs.append([r[k] for k in names])
                ys.append(float(ok))
                gs.append(i)
        return choice(np.array(xs), np.array(ys), np.array(gs), l2)
    xs, ys, ws = [], [], []
    for rows, right in groups:
        for r, ok in zip(rows, right):
            xs.append([r[k] for k in names])
            ys.append(float(ok))
            ws.append(1.0 / len(rows))
    return logistic(np.array(xs), np.array(ys), np.array(ws), l2)


def fit_ranker(qs: list[Question], l2: float, objective: str = "") -> tuple[np.ndarray, float]:
    return fit_rows([(q[1], q[2]) for q in qs], ranker.FEATURES, l2, objective)


def probs(
    rows: list[dict[str, float]],
    w: np.ndarray,
    b: float,
    names: tuple[str, ...] = ranker.FEATURES,
    objective: str = "",
) -> np.ndarray:
    """Each row's probability: the softmax within the question for a choice model."""
    if not rows:
        return np.zeros(0)
    x = np.array([[r[k] for k in names] for r in rows])
    z = x @ w + b
    if (objective or OBJECTIVE) == "choice":
        e = np.exp(z - z.max())
        return np.asarray(e / e.sum())
    return np.asarray(1 / (1 + np.exp(-z)))


def folds(ids: list[str], k: int, seed: int = 0) -> np.ndarray:
    """Each question's fold, from its id ("set/id"), or its article with ``--by-article``
    (:data:`GROUPS`), and ``seed``: the same whatever order the sets are given in. Out-of-fold
    figures move with the assignment alone (on 1,515 questions, top-1 by about +-5 and
    coverage by about +-0.02), so a change worth a few questions is judged over several
    assignments (``--fold-seeds``)."""
    return np.array([zlib.crc32(f"{seed}:{GROUPS.get(i, i)}".encode()) % k for i in ids])


# --by-article: each question's group for the folds (:func:`article_groups`).
GROUPS: dict[str, str] = {}
# A corpus of fewer articles than this is one story told by several outlets (the seeds).
SMALL_CORPUS = 20


def article_groups(pairs: list[str]) -> dict[str, str]:
    """Each question's group for ``--by-article``: the article that answers it (the first of
    its ``doc``), or the whole corpus when that holds fewer than :data:`SMALL_CORPUS`
    articles. The training sets ask about the same 270 articles again and again, so out of
    fold by question a fact asked in one set is often fitted on through another set's
    question. By article, nothing about the held-out article is fitted on: what a new corpus
    sees. On the 3,017 questions of 2026-12-07 (three assignments), coverage at precision 0.9
    is 0.29 (0.26 to 0.32) that way against 0.44 by question, the first value right 1,566
    against 1,645 of 2,757; more capacity in the trees (31 or 63 leaves) gained 0.02 to 0.03
    by question and nothing by article, so it was not taken."""
    groups: dict[str, str] = {}
    for pair in pairs:
        index, path = pair.split(":", 1)
        with Engine.open(index) as e:
            small = int(e.stats()["documents"]) < SMALL_CORPUS
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            qid = f"{Path(path).stem}/{d['id']}"
            docs = d.get("doc") or []
            groups[qid] = f"corpus:{index}" if small else f"{index}:{docs[0]}" if docs else qid
    return groups


# The LambdaRank trees of the quote (pick_rank.json) and of the values (ranker_rank.json).
# Out of fold on the training questions (3 fold assignments) they beat what they replaced:
# the quote states the answer for 1,063 of 1,402 against about 1,028, the first value is
# right for 839 against 804.5. 400 trees of 7 leaves at rate 0.03 (and no truncation) lost:
# 1,036 and 813 offline.
RANK_TREES = {
    "n_estimators": 200,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_child_samples": 40,
    "lambdarank_truncation_level": 10,
}
# The confidence's trees. Chosen out of fold on the training questions (precision at
# coverage 0.3 / 0.4, two fold assignments): 0.930, 0.930 / 0.889, 0.896; 100 trees of 7
# leaves at rate 0.05 gave 0.912, 0.925 / 0.884, 0.884; the logistic model they replace
# 0.921, 0.910 / 0.863, 0.871.
CONF_TREES = {
    "max_iter": 200,
    "learning_rate": 0.05,
    "max_leaf_nodes": 15,
    "min_samples_leaf": 40,
    "l2_regularization": 1.0,
}


def conf_trees(x: np.ndarray, y: np.ndarray) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=0, **CONF_TREES).fit(x, y)


def lambdarank(groups: list[tuple[list[dict[str, float]], list[bool]]], names: tuple[str, ...]) -> Any:
    """LambdaRank trees that order each group's rows (one question's sentences or values),
    right ones first; a group with nothing right to put first teaches nothing and is left out."""
    import lightgbm

    xs: list[list[float]] = []
    ys: list[int] = []
    sizes: list[int] = []
    for rows, right in groups:
        if len(rows) < 2 or not any(right):
            continue
        xs += [[r[k] for k in names] for r in rows]
        ys += [int(v) for v in right]
        sizes.append(len(rows))
    model = lightgbm.LGBMRanker(objective="lambdarank", random_state=0, n_jobs=1, verbose=-1, **RANK_TREES)
    return model.fit(np.array(xs), np.array(ys), group=sizes)


def ranked(model: Any, rows: list[dict[str, float]], names: tuple[str, ...]) -> np.ndarray:
    """The softmax of the model's scores over one question's rows."""
    if not rows:
        return np.zeros(0)
    z = model.predict(np.array([[r[k] for k in names] for r in rows]))
    e = np.exp(z - z.max())
    return np.asarray(e / e.sum())


def write_rank(model: Any, names: tuple[str, ...], name: str, what: str, qs: list[Question]) -> None:
    doc = (
        f"LambdaRank trees over {what}: their softmax over one question's rows. Written by "
        f"scripts/fit_answer.py with {RANK_TREES}; run by search/trees.py."
    )
    data = trees_mod.export_lightgbm(model, names, doc)
    data["fitted_on"] = sorted({q[0].split("/")[0] for q in qs})
    (HERE / name).write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def fit_pick(qs: list[Question], args: argparse.Namespace) -> None:
    """The quote's model: out of fold, how often the quoted sentence states the answer
    with the choice model alone and with the LambdaRank trees; then the trees on every
    question, written to pick_rank.json."""
    fold = folds([q[0] for q in qs], args.folds)
    alone = both = 0
    for f in range(args.folds):
        train = [(q[4], q[5]) for q, k in zip(qs, fold) if k != f]
        w, b = fit_rows(train, evidence.FEATURES, args.l2)
        model = lambdarank(train, evidence.FEATURES)
        for i in np.flatnonzero(fold == f):
            q = qs[i]
            if q[3] and q[4]:
                alone += q[5][int(np.argmax(probs(q[4], w, b, evidence.FEATURES)))]
                both += q[5][int(np.argmax(ranked(model, q[4], evidence.FEATURES)))]
    answerable = sum(1 for q in qs if q[3])
    print(
        f"quote: out-of-fold, the quoted sentence states the answer for {alone}/{answerable} "
        f"with the choice model, {both} with the LambdaRank trees"
    )
    if not args.dry_run:
        model = lambdarank([(q[4], q[5]) for q in qs], evidence.FEATURES)
        write_rank(
            model,
            evidence.FEATURES,
            evidence.PICK_RANK,
            "the sentence features (search/answer/evidence.py)",
            qs,
        )
        trees_mod.load.cache_clear()


def stacked(pairs: list[str], qs: list[Question], args: argparse.Namespace, seed: int) -> list[Question]:
    """The rows again, each question's sentences picked by a quote model fitted on the other
    folds of assignment ``seed``: what a new question's values see. Picks from a model that
    saw the question would be near perfect, and a ranker fitted on them would lean on "pick"
    far more than new questions bear out."""
    fold = folds([q[0] for q in qs], args.folds, seed)
    models = {}
    for f in range(args.folds):
        model = lambdarank([(q[4], q[5]) for q, k in zip(qs, fold) if k != f], evidence.FEATURES)
        models[f] = trees_mod.Trees(trees_mod.export_lightgbm(model, evidence.FEATURES, ""))
    at = dict(zip([q[0] for q in qs], fold))
    return collect(pairs, lambda qid: models[int(at[qid])])


def fit_evidence(qs: list[Question], args: argparse.Namespace) -> None:
    """Stage 2b first: candidates inherit the sentence probabilities, so the ranker is
    fitted on the values these weights produce."""
    fold = folds([q[0] for q in qs], args.folds)
    right = 0
    for f in range(args.folds):
        w, b = fit_rows([(q[4], q[5]) for q, k in zip(qs, fold) if k != f], evidence.FEATURES, args.l2)
        for i in np.flatnonzero(fold == f):
            q = qs[i]
            if q[3] and q[4]:
                right += q[5][int(np.argmax(probs(q[4], w, b, evidence.FEATURES)))]
    answerable = sum(1 for q in qs if q[3])
    reachable = sum(1 for q in qs if q[3] and any(q[5]))
    print(
        f"evidence: out-of-fold, the most probable sentence states the answer for {right}/{answerable} ({reachable} have one)"
    )
    w, b = fit_rows([(q[4], q[5]) for q in qs], evidence.FEATURES, args.l2)
    pw, pb = fit_rows([(q[4], q[5]) for q in qs], evidence.FEATURES, args.l2, "pointwise")
    for k, v in sorted(zip(evidence.FEATURES, w), key=lambda t: -abs(t[1])):
        print(f"  {k:14s} {v:+.3f}")
    if not args.dry_run:
        e = dict(evidence.params())
        e["weights"] = {k: round(float(v), 4) for k, v in zip(evidence.FEATURES, w)}
        e["bias"] = round(float(b), 4)
        e["objective"] = OBJECTIVE
        e["pointwise"] = {
            "weights": {k: round(float(v), 4) for k, v in zip(evidence.FEATURES, pw)},
            "bias": round(float(pb), 4),
        }
        e["fitted_on"] = sorted({q[0].split("/")[0] for q in qs})
        (HERE / "evidence.json").write_text(json.dumps(e, indent=2) + "\n", encoding="utf-8")
        evidence.params.cache_clear()


def fit_confidence(
    qs: list[Question],
    oof: list[np.ndarray],
    point: list[np.ndarray],
    args: argparse.Namespace,
    seed: int = 0,
    quiet: bool = False,
) -> tuple[Any, float, dict[str, float]]:
    """Step 3: the confidence over the out-of-fold winners, and its threshold; also the
    out-of-fold coverage and precision it gives, and precision at coverage 0.3 and 0.5."""
    feats, ys, ids = [], [], []
    for q, p, pp in zip(qs, oof, point):
        if not len(p):
            continue
        order = np.argsort(-p, kind="stable")
        f = conf_mod.features([float(p[i]) for i in order], q[1][int(order[0])], float(pp[order[0]]))
        feats.append([f[k] for k in conf_mod.FEATURES])
        ys.append(float(q[3] and q[2][int(order[0])]))
        ids.append((q[0], int(order[0])))
    x, y = np.array(feats), np.array(ys)
    # The threshold is chosen on out-of-fold confidences too, as new questions would get them.
    c = np.zeros(len(y))
    cfold = folds([qid for qid, _ in ids], args.folds, seed)
    for f in range(args.folds):
        c[cfold == f] = conf_trees(x[cfold != f], y[cfold != f]).predict_proba(x[cfold == f])[:, 1]
    model = conf_trees(x, y)
    order = np.argsort(-c, kind="stable")
    # Near the asked precision the curve is flat, so the lowest threshold that keeps it jumps
    # with a question or two; the median of that rule over bootstrap resamples is steadier.
    rng = np.random.default_rng(0)
    picks = [
        _threshold(c[s], y[s], args) for s in (rng.integers(0, len(y), len(y)) for _ in range(args.boot))
    ]
    threshold = float(np.median(picks)) if args.boot else _threshold(c, y, args)
    shown = int((c >= threshold).sum())
    good = int(y[c >= threshold].sum())
    for j in order[: args.show]:
        qid, top = ids[j]
        text, values, answers = TEXTS.get(qid, ("", [], []))
        print(
            f"  {'ok ' if y[j] else 'BAD'} {c[j]:.3f} {qid} {text[:60]!r} -> {values[top] if values else ''!r} want {answers[:2]}"
        )
    curve = [
        (cov, float(y[order[: max(1, round(cov * len(qs)))]].mean())) for cov in (0.1, 0.2, 0.3, 0.4, 0.5)
    ]
    figures = {
        "coverage": shown / len(qs),
        "precision": good / max(shown, 1),
        **{f"precision@{cov:.1f}": pr for cov, pr in curve},
    }
    if not quiet:
        print("precision at coverage:", ", ".join(f"{cov:.1f}: {pr:.3f}" for cov, pr in curve))
        print(
            f"confidence: threshold {threshold:.4f}; out of fold, {shown}/{len(qs)} questions get a short "
            f"answer ({shown / len(qs):.3f} coverage), {good} right ({good / max(shown, 1):.3f} precision)"
        )
    return model, threshold, figures


def out_of_fold(
    qs: list[Question], args: argparse.Namespace, seed: int = 0
) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """Every question's ranking by rankers fitted on the other folds (the choice model's and
    a pointwise model's, for the confidence), and how many answerable ones it gets right."""
    fold = folds([q[0] for q in qs], args.folds, seed)
    oof: list[np.ndarray] = [np.zeros(0)] * len(qs)
    point: list[np.ndarray] = [np.zeros(0)] * len(qs)
    for f in range(args.folds):
        train = [q for q, k in zip(qs, fold) if k != f]
        model = lambdarank([(q[1], q[2]) for q in train], ranker.FEATURES)
        pw, pb = fit_ranker(train, args.l2, "pointwise")
        for i in np.flatnonzero(fold == f):
            oof[i] = ranked(model, qs[i][1], ranker.FEATURES)
            point[i] = probs(qs[i][1], pw, pb, objective="pointwise")
    top1 = sum(1 for q, p in zip(qs, oof) if q[3] and len(p) and q[2][int(np.argmax(p))])
    return oof, point, top1


def spread(by_seed: dict[int, list[Question]], args: argparse.Namespace) -> None:
    """The out-of-fold figures over ``--fold-seeds`` assignments of questions to folds: their
    mean and range, which is what a change must beat to count."""
    rows = []
    for seed in range(args.fold_seeds):
        qs = by_seed[seed]
        oof, point, top1 = out_of_fold(qs, args, seed)
        figures = fit_confidence(qs, oof, point, args, seed, quiet=True)[2]
        rows.append({"top-1": float(top1), **figures})
    for key in rows[0]:
        vals = [r[key] for r in rows]
        fmt = ".1f" if key == "top-1" else ".3f"
        print(
            f"over {len(rows)} fold assignments, {key}: mean {np.mean(vals):{fmt}} "
            f"(min {min(vals):{fmt}}, max {max(vals):{fmt}})"
        )


def _threshold(c: np.ndarray, y: np.ndarray, args: argparse.Namespace) -> float:
    """The lowest confidence at which the short answers given keep the asked precision."""
    order = np.argsort(-c, kind="stable")
    threshold, right = 1.0, 0
    for i, j in enumerate(order, 1):
        right += int(y[j])
        if right / i >= args.precision and i >= args.min_shown:
            threshold = float(c[j])
    return threshold


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="*", help="INDEX:QUESTIONS.jsonl")
    ap.add_argument("--precision", type=float, default=0.9)
    ap.add_argument("--l2", type=float, default=0.01)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--dry-run", action="store_true", help="report, write nothing")
    ap.add_argument(
        "--keep-evidence",
        action="store_true",
        help="keep evidence.json as it is; fit only the ranker and the confidence",
    )
    ap.add_argument(
        "--keep-pick", action="store_true", help="keep pick_trees.json (the quote's trees) as it is"
    )
    ap.add_argument("--min-shown", type=int, default=10, help="ignore the noisy top of the precision curve")
    ap.add_argument("--boot", type=int, default=200, help="bootstrap resamples for the threshold (0: none)")
    ap.add_argument("--show", type=int, default=0, help="print the N most confident questions")
    ap.add_argument("--objective", choices=["choice", "pointwise"], default="choice")
    ap.add_argument(
        "--fold-seeds",
        type=int,
        default=1,
        help="also report the out-of-fold figures over N assignments of questions to folds (mean, range)",
    )
    ap.add_argument(
        "--by-article",
        action="store_true",
        help="folds by the article that answers a question, not by question: what a new corpus sees",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        help="keep every question's rows in this file, and read them from it when it exists: "
        "for --dry-run trials of the ranker and the confidence (stale once the stages change)",
    )
    ap.add_argument(
        "--heads",
        type=Path,
        help="record each question's search head with out-of-fold trees (a folder fit_rerank.py --folds wrote)",
    )
    args = ap.parse_args()
    global OBJECTIVE, HEADS
    OBJECTIVE = args.objective
    if args.heads is not None:
        HEADS = read_heads(args.heads)
    if args.by_article:
        GROUPS.update(article_groups(args.pairs))
    if args.cache is not None and args.cache.exists():
        with args.cache.open("rb") as fh:
            qs, by_seed, texts = pickle.load(fh)
        TEXTS.update(texts)
        print(f"rows read from {args.cache}: {len(qs)} questions", file=sys.stderr)
    else:
        qs = collect(args.pairs)
    if not args.keep_evidence:
        fit_evidence(qs, args)
    if not args.keep_pick:
        fit_pick(qs, args)
    if args.cache is None or not args.cache.exists():
        # The values the new sentence weights give, each question's quote picked out of fold.
        by_seed = {seed: stacked(args.pairs, qs, args, seed) for seed in range(args.fold_seeds)}
        if args.cache is not None:
            with args.cache.open("wb") as fh:
                pickle.dump((qs, by_seed, TEXTS), fh)
    qs = by_seed[0]
    # 2. out-of-fold rankings
    answerable = [q for q in qs if q[3]]
    oof, point, top1 = out_of_fold(qs, args)
    print(f"out-of-fold top-1: {top1}/{len(answerable)} answerable questions")
    conf_model, threshold, _ = fit_confidence(qs, oof, point, args)
    if args.fold_seeds > 1:
        spread(by_seed, args)
    # 4. the final ranker, on every question
    w, b = fit_ranker(qs, args.l2)
    pw, pb = fit_ranker(qs, args.l2, "pointwise")
    values = lambdarank([(q[1], q[2]) for q in qs], ranker.FEATURES)
    top1_in = sum(
        1 for q in answerable if q[1] and q[2][int(np.argmax(ranked(values, q[1], ranker.FEATURES)))]
    )
    print(f"in-sample top-1: {top1_in}/{len(answerable)} (the LambdaRank trees)")
    for k, v in sorted(zip(ranker.FEATURES, w), key=lambda t: -abs(t[1])):
        print(f"  {k:14s} {v:+.3f}")
    if args.dry_run:
        return
    r = dict(ranker.params())
    r["weights"] = {k: round(float(v), 4) for k, v in zip(ranker.FEATURES, w)}
    r["bias"] = round(float(b), 4)
    r["objective"] = OBJECTIVE
    r["pointwise"] = {
        "weights": {k: round(float(v), 4) for k, v in zip(ranker.FEATURES, pw)},
        "bias": round(float(pb), 4),
    }
    r["fitted_on"] = sorted({q[0].split("/")[0] for q in qs})
    (HERE / "ranker.json").write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
    write_rank(values, ranker.FEATURES, ranker.RANK, "the value features (search/answer/ranker.py)", qs)
    doc = (
        "Boosted trees over the winning value's ranker view and features: the confidence of a "
        f"short answer (search/answer/confidence.py). Written by scripts/fit_answer.py with {CONF_TREES}; "
        "run by search/trees.py."
    )
    data = trees_mod.export(conf_model, conf_mod.FEATURES, doc)
    data["fitted_on"] = r["fitted_on"]
    (HERE / conf_mod.TREES).write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    cp = {
        "_doc": conf_mod.params()["_doc"],
        "threshold": round(threshold, 4),
        "precision": args.precision,
        "fitted_on": r["fitted_on"],
    }
    (HERE / "confidence.json").write_text(json.dumps(cp, indent=2) + "\n", encoding="utf-8")
    print("wrote", HERE / "ranker.json", HERE / conf_mod.TREES, "and", HERE / "confidence.json")


if __name__ == "__main__":
    main()
