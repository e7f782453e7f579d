"""Stage 5, confidence: how sure the short answer is, from the ranker's probabilities.

Boosted trees (``confidence_trees.json``, run with numpy by :mod:`search.trees`) over the
winning value's probability (:mod:`.ranker`), its pointwise probability, its margin over
the runner-up, how many values competed, and the winner's own ranker features: its
support across articles, how much of the question its sentence states, how well its
entity answers the asked type. ``confidence.json`` holds the threshold; both are fitted by
``scripts/fit_answer.py`` on question sets one may tune on, and the threshold is the lowest
confidence whose out-of-fold short answers kept precision 0.9 there. Below it there is no
short answer.

Trees replaced a logistic model over 16 of these features: out of fold on the 1,515
training questions they rank right answers higher at every coverage (precision at
coverage 0.3: 0.930 and 0.930 over two fold assignments against 0.921 and 0.910; at 0.4:
0.889 and 0.896 against 0.863 and 0.871). A weighted sum cannot say "a large margin
counts only when the sentence states the question's words".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from ..trees import load
from .ranker import FEATURES as RANKER_FEATURES

TREES = "confidence_trees.json"
# What the trees read: the ranker's view of the winner against the others, then the
# winner's own ranker features (:data:`.ranker.FEATURES`, under their names).
FEATURES = ("point", "p1", "margin", "share", "p2", "values", *RANKER_FEATURES)


@lru_cache(maxsize=1)
def params() -> dict[str, Any]:
    raw = resources.files("search.answer").joinpath("confidence.json").read_text(encoding="utf-8")
    return dict(json.loads(raw))


def features(probs: Sequence[float], top: dict[str, float], point: float) -> dict[str, float]:
    """``probs``: the ranker's probability of each value, best first; ``top``: the winner's
    ranker features (how many articles state it, how much of the question its sentence says);
    ``point``: a pointwise model's probability that the winner is right, on its own (the
    softmax says how it compares with the others, not how good the best of them is)."""
    p1 = probs[0] if probs else 0.0
    p2 = probs[1] if len(probs) > 1 else 0.0
    return {
        "point": point,
        "p1": p1,
        "margin": p1 - p2,
        "share": p1 / (sum(probs) or 1.0),
        "p2": p2,
        "values": float(len(probs)),
        **{k: top.get(k, 0.0) for k in RANKER_FEATURES},
    }


def confidence(f: dict[str, float]) -> float:
    trees = load("search.answer", TREES)
    if trees is None:  # the package ships them; a build without them answers nothing short
        return 0.0
    return float(trees.proba([f])[0])


def threshold(football: bool = True) -> float:
    """The confidence a short answer needs: fitted on football questions, and for a corpus
    that is not football (:func:`search.vocab.is_football`) on other sports'
    (``threshold_other``, ``scripts/fit_threshold.py``), where the same confidence is right
    less often."""
    p = params()
    return float(p["threshold"] if football else p.get("threshold_other", p["threshold"]))
