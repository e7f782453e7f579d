"""Stage 1, the learned fallback of the question's answer type.

The table's rules (``question_types.json``) name the type of most questions. A form they
were not written for ("how early did Miller score", "what was the shoot-out score",
"wenger new contract until when") falls through to "sentence", which gets no short answer
at all. This is a multinomial logistic regression over the question's words and word
pairs, fitted by ``scripts/fit_qtype.py`` on the training questions' labelled types
(``qtype.json``); it is asked only when no rule matched, and its guess is taken only when
it clears the probability the fit chose for accuracy on such questions out of fold.
Plain dictionary lookups: no model is loaded on the query path.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any

_TOKEN = re.compile(r"\d+(?:[-–]\d+)+|[a-z]+(?:'[a-z]+)?|\d+")


def features(question: str) -> list[str]:
    """The question's words, its word pairs and its first two words, lower case with one
    apostrophe; numbers are one shape ("#", "#-#"). The fit and the query path both read
    the question through this."""
    low = question.lower().replace("’", "'")
    words = ["#-#" if "-" in w or "–" in w else "#" if w.isdigit() else w for w in _TOKEN.findall(low)]
    feats = [f"w:{w}" for w in words]
    feats += [f"b:{a}_{b}" for a, b in zip(words, words[1:])]
    if words:
        feats.append("first:" + "_".join(words[:2]))
    feats.append("box" if "?" not in low and not low.rstrip().endswith(".") else "asked")
    return feats


@lru_cache(maxsize=1)
def model() -> dict[str, Any] | None:
    try:
        raw = resources.files("search.answer").joinpath("qtype.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return dict(json.loads(raw))


def probabilities(question: str) -> dict[str, float]:
    """Each labelled type's probability for the question."""
    m = model()
    if m is None:
        return {}
    classes: list[str] = m["classes"]
    z = list(m["bias"])
    weights: dict[str, list[float]] = m["weights"]
    for f in features(question):
        w = weights.get(f)
        if w is not None:
            z = [a + b for a, b in zip(z, w)]
    top = max(z)
    e = [math.exp(v - top) for v in z]
    s = sum(e)
    return {c: v / s for c, v in zip(classes, e)}


def guess(question: str) -> str | None:
    """The answer type a question no rule typed asks for, or None when the model is not
    sure enough or its likeliest label names no typed answer ("other", "reason")."""
    m = model()
    if m is None:
        return None
    p = probabilities(question)
    best = max(p, key=lambda c: p[c])
    typ = m["types"].get(best)
    return str(typ) if typ and p[best] >= float(m["min_prob"]) else None
