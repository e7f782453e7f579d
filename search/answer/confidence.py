"""Stage 5, confidence: how sure the short answer is, from a few measured features.

A logistic model over features of the winning value (its share of all candidate
weight, how many of the articles addressing the question state it, how much of the
question its best sentence states, its margin over the runner-up, how well its label
fits the asked type). Weights and the threshold live in ``confidence.json``, fitted
by ``scripts/fit_confidence.py``; below the threshold there is no short answer.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

from .agreement import Cluster
from .question import QuestionInfo, label_fit


@lru_cache(maxsize=1)
def params() -> dict[str, Any]:
    raw = resources.files("search.answer").joinpath("confidence.json").read_text(encoding="utf-8")
    return dict(json.loads(raw))


def features(q: QuestionInfo, clusters: list[Cluster], addressing: int) -> dict[str, float]:
    top = clusters[0]
    total = sum(c.score for c in clusters) or 1.0
    second = clusters[1].score if len(clusters) > 1 else 0.0
    best = max(top.articles.values(), key=lambda c: c.score)
    return {
        "share": top.score / total,
        "support_ratio": top.support / max(addressing, top.support, 1),
        "log_support": math.log1p(top.support),
        "rel": best.sent.rel,
        "margin": (top.score - second) / (top.score or 1.0),
        "fit": label_fit(q.atype, best.label),
        "dense": best.sent.dense,
        "near": best.near,
    }


def confidence(f: dict[str, float]) -> float:
    p = params()
    z = p["bias"] + sum(w * f.get(k, 0.0) for k, w in p["weights"].items())
    return 1.0 / (1.0 + math.exp(-z))


def threshold() -> float:
    return float(params()["threshold"])
