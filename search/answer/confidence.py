"""Stage 5, confidence: how sure the short answer is, from the ranker's probabilities.

A logistic model over the winning value's probability (:mod:`.ranker`), its margin
over the runner-up, its support and how much of the question its sentence states. Weights and the threshold live in ``confidence.json``, fitted by
``scripts/fit_answer.py`` on question sets one may tune on; the threshold is the lowest
confidence whose short answers kept precision 0.9 there. Below it there is no short answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

FEATURES = (
    "point",
    "p1",
    "margin",
    "support_ratio",
    "log_support",
    "lex",
    "dense",
    "evidence",
    "agree",
    "near",
    "fit",
    "strict",
    "focus",
    "votes",
    "log_votes",
    "rival",
)


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
        **{k: top.get(k, 0.0) for k in FEATURES[3:]},
    }


def confidence(f: dict[str, float]) -> float:
    p = params()
    z = p["bias"] + sum(w * f.get(k, 0.0) for k, w in sorted(p["weights"].items()))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def threshold() -> float:
    return float(params()["threshold"])
