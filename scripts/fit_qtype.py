"""Fit the learned fallback of the question's answer type (search/answer/qtype.py).

    python scripts/fit_qtype.py QUESTIONS.jsonl [QUESTIONS.jsonl ...] [--accuracy 0.85]

Only pass question sets you may tune on (scripts/questions/train/ and the older sets),
never the fresh held-out sets. Each question's labelled ``type`` (person, team, number,
score, minute, date, place, time, reason, other) is the target. The model is asked only
when no rule of question_types.json matched, so the probability it needs is chosen on
those questions: out of fold, with questions about one article kept in one fold (the
sets ask the same fact in several words), the lowest probability at which the guesses
that name a typed answer are right at least ``--accuracy`` of the time.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from search.answer import qtype  # noqa: E402
from search.answer.question import rule_type  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "search" / "answer" / "qtype.json"
# labelled type -> the engine's answer type; the others stay untyped ("sentence")
TYPES = {
    "person": "person",
    "team": "team",
    "number": "number",
    "score": "score",
    "minute": "minute",
    "date": "date",
    "place": "place",
}
LABELS = ("person", "team", "number", "score", "minute", "date", "place", "time", "reason", "other")


def read(paths: list[str]) -> list[tuple[str, str, str]]:
    rows = []
    for p in paths:
        for line in open(p, encoding="utf-8"):
            d = json.loads(line)
            if d.get("type") in LABELS:
                doc = (d.get("doc") or ["none:" + d["id"]])[0]
                rows.append((d["question"], d["type"], "seeds" if "_" in doc else doc))
    return rows


def matrix(texts: list[str], vocab: dict[str, int]) -> Any:
    from scipy.sparse import lil_matrix

    x = lil_matrix((len(texts), len(vocab)))
    for i, t in enumerate(texts):
        for f in qtype.features(t):
            if f in vocab:
                x[i, vocab[f]] = 1.0
    return x.tocsr()


def fit(texts: list[str], labels: list[str], c: float, min_df: int) -> tuple[Any, dict[str, int]]:
    from sklearn.linear_model import LogisticRegression

    counts: dict[str, int] = {}
    for t in texts:
        for f in set(qtype.features(t)):
            counts[f] = counts.get(f, 0) + 1
    vocab = {f: i for i, f in enumerate(sorted(f for f, n in counts.items() if n >= min_df))}
    clf = LogisticRegression(C=c, max_iter=2000).fit(matrix(texts, vocab), labels)
    return clf, vocab


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions", nargs="+")
    ap.add_argument("--accuracy", type=float, default=0.85)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--min-df", type=int, default=3)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--show", type=int, default=40, help="print the N surest guesses taken")
    args = ap.parse_args()
    rows = read(args.questions)
    texts = [r[0].lower() for r in rows]
    labels = [r[1] for r in rows]
    fold = np.array([zlib.crc32(r[2].encode()) % args.folds for r in rows])
    untyped = np.array([rule_type(r[0]) == "sentence" for r in rows])
    prob = np.zeros(len(rows))
    pred = [""] * len(rows)
    for f in range(args.folds):
        tr = np.flatnonzero(fold != f)
        clf, vocab = fit([texts[i] for i in tr], [labels[i] for i in tr], args.c, args.min_df)
        te = np.flatnonzero(fold == f)
        p = clf.predict_proba(matrix([texts[i] for i in te], vocab))
        for j, i in enumerate(te):
            k = int(np.argmax(p[j]))
            prob[i], pred[i] = float(p[j][k]), str(clf.classes_[k])
    acc = np.mean([p == y for p, y in zip(pred, labels)])
    print(f"{len(rows)} questions; out of fold, the likeliest label is right for {acc:.3f}")
    cand = [i for i in np.flatnonzero(untyped) if pred[i] in TYPES]
    print(f"{int(untyped.sum())} questions no rule types; {len(cand)} of them guessed a typed answer")
    order = sorted(cand, key=lambda i: -prob[i])
    min_prob = 1.0
    right = 0
    for n, i in enumerate(order, 1):
        right += pred[i] == labels[i]
        if right / n >= args.accuracy:
            min_prob = prob[i]
    taken = [i for i in cand if prob[i] >= min_prob]
    good = sum(pred[i] == labels[i] for i in taken)
    print(
        f"probability needed {min_prob:.3f}: {len(taken)} typed, {good} right ({good / max(len(taken), 1):.3f})"
    )
    for i in sorted(taken, key=lambda i: -prob[i])[: args.show]:
        print(
            f"  {'ok ' if pred[i] == labels[i] else 'BAD'} {prob[i]:.2f} {pred[i]:7s} {labels[i]:7s} {rows[i][0][:90]}"
        )
    if args.dry_run:
        return
    clf, vocab = fit(texts, labels, args.c, args.min_df)
    classes = [str(c) for c in clf.classes_]
    weights = {
        f: [round(float(w), 3) for w in clf.coef_[:, j]]
        for f, j in vocab.items()
        if np.abs(clf.coef_[:, j]).max() >= 0.05
    }
    out = {
        "_doc": "The learned fallback of the answer type (search/answer/qtype.py), fitted by "
        "scripts/fit_qtype.py on the training questions' labelled types; asked only when no rule "
        "of question_types.json matched. 'types' maps a label to the engine's answer type; "
        "'min_prob' is the probability a guess needs.",
        "classes": classes,
        "types": TYPES,
        "min_prob": round(float(min_prob), 4),
        "bias": [round(float(b), 4) for b in clf.intercept_],
        "weights": weights,
    }
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(weights)} features)")


if __name__ == "__main__":
    main()
