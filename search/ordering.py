"""Result order: relevance (the default), ``newest`` first, or ``recency`` (relevance decayed by age).

``newest`` orders every passage that matches the question's words (after the filters)
by publication date, newest first, undated last; among passages of the same date the
more relevant comes first (its fused score when it is among the fused candidates, else
its BM25 score, below those). In ``dense`` mode no passage "matches" by words, so the
dense candidates are put in date order.

``recency`` multiplies each candidate's relevance (scaled to the best one) by
``0.5 ** (age / half_life)``, age counted from the newest candidate: an article one
half-life older needs twice the relevance to rank level. Undated passages follow every
dated one, in relevance order. Where the age is counted from does not change the
order (each score is scaled by the same factor), so an archive ranks as a live feed does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum

from .errors import QueryError

DEFAULT_HALF_LIFE_DAYS = 30.0
DAY = 86_400.0


class Sort(str, Enum):
    RELEVANCE = "relevance"
    NEWEST = "newest"
    RECENCY = "recency"

    @classmethod
    def from_str(cls, value: str | Sort) -> Sort:
        if isinstance(value, Sort):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise QueryError(f"unknown sort {value!r}: choose {', '.join(s.value for s in cls)}") from None


def check_half_life(days: float) -> float:
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not math.isfinite(days) or days <= 0:
        raise QueryError(f"half_life must be a positive number of days, not {days!r}")
    return float(days)


def newest(
    dated: list[tuple[str, float | None, float]], fused: list[tuple[str, float]]
) -> list[tuple[str, float]]:
    """Matching passages ``(pid, timestamp, bm25)`` newest first, relevance breaking ties."""
    rel = dict(fused)

    def key(t: tuple[str, float | None, float]) -> tuple[float, int, float, str]:
        pid, ts, bm25 = t
        known = pid in rel
        return (
            -(ts if ts is not None else -math.inf),
            0 if known else 1,
            -(rel[pid] if known else bm25),
            pid,
        )

    return [(pid, rel.get(pid, bm25)) for pid, _, bm25 in sorted(dated, key=key)]


def by_date(fused: list[tuple[str, float]], ts_of: Callable[[str], float | None]) -> list[tuple[str, float]]:
    """Candidates in date order, newest first, relevance breaking ties (dense mode's ``newest``)."""
    order = {pid: i for i, (pid, _) in enumerate(fused)}

    def key(t: tuple[str, float]) -> tuple[float, int]:
        ts = ts_of(t[0])
        return (-(ts if ts is not None else -math.inf), order[t[0]])

    return sorted(fused, key=key)


def recency(
    fused: list[tuple[str, float]], ts_of: Callable[[str], float | None], half_life_days: float
) -> list[tuple[str, float]]:
    """Candidates by relevance times ``0.5 ** (age / half_life)``: ``(pid, blended score)``."""
    if not fused:
        return []
    best = max(s for _, s in fused)
    low = min(s for _, s in fused)
    span = best - low if best > low else 1.0
    stamps = {pid: ts_of(pid) for pid, _ in fused}
    dated = [t for t in stamps.values() if t is not None]
    ref = max(dated) if dated else 0.0
    half = half_life_days * DAY
    scored: list[tuple[tuple[int, float, int], str, float]] = []
    for i, (pid, s) in enumerate(fused):
        rel = (s - low) / span if best > low else 1.0
        rel = 0.05 + 0.95 * rel  # the least relevant candidate still decays, not zeroes
        ts = stamps[pid]
        if ts is None:
            scored.append(((1, -rel, i), pid, 0.0))
            continue
        # ordered in log space: a short half-life underflows 0.5 ** age to 0 for every
        # older article, which would leave their order to chance instead of to age
        log_blend = math.log(rel) - math.log(2) * (ref - ts) / half
        scored.append(((0, -log_blend, i), pid, math.exp(log_blend)))
    scored.sort(key=lambda t: t[0])
    return [(pid, b) for _, pid, b in scored]
