"""Fusing ranked lists: reciprocal rank fusion and convex combination of scores.

Fusion only merges ranked lists of ids; it knows nothing of whoosh or FAISS.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

# RRF's constant: 60 is the value of Cormack, Clarke & Büttcher (SIGIR 2009), chosen
# there on TREC runs and still the default of Elasticsearch, OpenSearch and Milvus.
# It flattens the head of each list, so one retriever's rank 1 cannot outvote
# agreement between both retrievers a few ranks lower.
RRF_K = 60

# Weight of the lexical side in convex fusion. Near 0.5 did best on SciFact and SQuAD
# when this was measured (see DESIGN.md); tune only on dev/train data.
CONVEX_ALPHA = 0.5


class Fusion(str, Enum):
    RRF = "rrf"
    CONVEX = "convex"

    @classmethod
    def from_str(cls, value: str) -> Fusion:
        try:
            return cls(value.lower())
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown fusion {value!r}: choose one of {choices}") from None


class Mode(str, Enum):
    HYBRID = "hybrid"
    BM25 = "bm25"
    DENSE = "dense"

    @classmethod
    def from_str(cls, value: str) -> Mode:
        try:
            return cls(value.lower())
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown mode {value!r}: choose one of {choices}") from None


Ranked = Sequence[tuple[str, float]]  # (id, score), best first


def rrf(
    lists: Sequence[Ranked], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``sum_i w_i / (k + rank_i)`` with ranks from 1."""
    if k < 0:
        raise ValueError("the RRF constant must be non-negative")
    w = list(weights) if weights is not None else [1.0] * len(lists)
    scores: dict[str, float] = {}
    for lst, wi in zip(lists, w):
        for rank, (doc, _) in enumerate(lst, start=1):
            scores[doc] = scores.get(doc, 0.0) + wi / (k + rank)
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def minmax(lst: Ranked) -> dict[str, float]:
    """Scores scaled to [0, 1] within the list; a list of equal scores maps to 1."""
    if not lst:
        return {}
    vals = [s for _, s in lst]
    lo, hi = min(vals), max(vals)
    if hi - lo <= 1e-12:
        return {d: 1.0 for d, _ in lst}
    return {d: (s - lo) / (hi - lo) for d, s in lst}


def convex(lexical: Ranked, dense: Ranked, alpha: float = CONVEX_ALPHA) -> list[tuple[str, float]]:
    """``alpha * minmax(lexical) + (1 - alpha) * minmax(dense)``; missing scores count 0."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be between 0 and 1")
    a, b = minmax(lexical), minmax(dense)
    ids = set(a) | set(b)
    scores = {d: alpha * a.get(d, 0.0) + (1 - alpha) * b.get(d, 0.0) for d in ids}
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))
