"""BM25F scores from postings arrays: every match at once, or the top k with block-max pruning.

Scoring is Lucene's BM25 over BM25F's pseudo frequency, written exactly as whoosh
computes it (:mod:`search.lexical`): per posting ``ntf = tf / (1 - b + b * dl / avg)``
(plus ``w * tf_title / (...)`` over the title's own average), then ``(idf * qf) * ntf /
(ntf + k1)``, summed over the query's terms in query order. Both paths below use the
same per-term contributions and the same summation order (``np.bincount`` adds in array
order), so a pruned top k holds the very same floats as the exhaustive one.

Pruning (block-max over document windows, as in Mallia et al.'s block-max pruning for
learned sparse retrieval): document numbers are cut into windows of ``2**shift``. A
long list stores, per window, its largest pseudo frequency at a reference length and
``b`` (:mod:`search.lexical_postings`); :func:`bound_factor` scales that into a bound at
the query's average length and ``b``. A window's bound is the sum over query terms of
their bound in it (short lists: their exact maxima). Windows are scored in decreasing
bound; once the k-th best score exceeds the next window's bound, no unscored document
can enter the top k, and the rest are skipped. A filter or a deletion is a mask applied
while scoring, so the result is the best k that pass, never fewer than exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .lexical_postings import LENGTHS

#: A bound is inflated by this much so float rounding never makes it fall below a score.
SLACK = 1e-9
#: Windows in the first batch; each next batch is twice as large (fewer numpy calls
#: once the threshold is known, little wasted work before).
FIRST_BATCH = 16


class Postings(Protocol):
    n: int
    shift: int
    bound_b: float
    ref_avg: tuple[float, float]
    lens: np.ndarray
    woff: np.ndarray | None
    wmax: np.ndarray | None


@dataclass
class Params:
    """What one query needs besides the postings: BM25's constants and the averages."""

    k1: float
    b: float
    title_weight: float
    avg: tuple[float, float]  # average text and title length (deleted documents excluded)
    norm: tuple[np.ndarray, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        b = self.b
        # Per one-byte length code: the same expression the old per-posting path evaluated.
        self.norm = tuple(1 - b + b * LENGTHS / a for a in self.avg)  # type: ignore[assignment]


@dataclass
class SegmentQuery:
    """One segment's part of a query: the query's terms as ranges of CSR postings arrays.

    ``docs[lo[i]:hi[i]]`` (and ``tfx``, ``tft``) are the postings of the i-th query term
    this segment holds, in query order; ``rows[i]`` its row of window bounds, or -1.
    """

    seg: Postings
    base: int
    docs: np.ndarray
    tfx: np.ndarray
    tft: np.ndarray
    lo: np.ndarray  # int64
    hi: np.ndarray  # int64
    weight: np.ndarray  # idf * query frequency
    rows: np.ndarray  # int64
    mask: np.ndarray | None = None  # documents that may score (live and allowed), or all
    filtered: bool = False  # the mask holds a filter (not only deletions): skip windows it empties


def contributions(
    q: SegmentQuery, idx: np.ndarray, weight: np.ndarray, p: Params
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores of the postings ``idx`` (``weight``: their term's): (docs, scores, kept)."""
    docs, tfx, tft = q.docs[idx], q.tfx[idx], q.tft[idx]
    lens = q.seg.lens
    ntf = tfx / p.norm[0][lens[0][docs]]
    kept = np.ones(0, bool)
    if p.title_weight > 0:
        ntf = ntf + (p.title_weight * tft) / p.norm[1][lens[1][docs]]
    else:
        kept = tfx > 0  # with no title, a title-only posting is no match at all
        if not kept.all():
            docs, ntf, weight = docs[kept], ntf[kept], weight[kept]
    return docs.astype(np.int64), weight * ntf / (ntf + p.k1), kept


def bound_factor(b0: float, ref: float, b: float, avg: float) -> float:
    """The largest ``ntf(b, avg) / ntf(b0, ref)`` over all lengths (inf: no bound).

    ``(1 - b0 + b0 dl/ref) / (1 - b + b dl/avg)`` is monotone in ``dl``: its extremes are
    at ``dl = 0`` and ``dl -> inf``.
    """
    at_zero = (1 - b0) / (1 - b) if b < 1 else math.inf
    at_inf = (b0 * avg) / (b * ref) if b > 0 else math.inf
    return max(at_zero, at_inf) * (1 + SLACK)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(lo[i], hi[i])``."""
    n = hi - lo
    total = int(n.sum())
    if not total:
        return np.zeros(0, np.int64)
    return np.arange(total, dtype=np.int64) + np.repeat(lo - np.cumsum(n) + n, n)


def _run_starts(sorted_ids: np.ndarray) -> np.ndarray:
    """Index of the first element of each run of equal values."""
    starts = np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1
    return np.concatenate(([0], starts)) if len(sorted_ids) else starts


class _Plan:
    """One segment's windows: their bounds, and the exact scores of its short lists.

    Each document's score sums its short lists' terms, then its long lists' terms (each in
    query order), in every path: pruned and exhaustive results hold the same floats.
    """

    def __init__(self, q: SegmentQuery, p: Params) -> None:
        self.q = q
        s = q.seg
        self.nwin = max((s.n + (1 << s.shift) - 1) >> s.shift, 1)
        fx = bound_factor(s.bound_b, s.ref_avg[0], p.b, p.avg[0])
        ft = bound_factor(s.bound_b, s.ref_avg[1], p.b, p.avg[1]) if p.title_weight > 0 else 0.0
        bounded = math.isfinite(fx) and math.isfinite(ft) and s.wmax is not None
        is_long = (q.rows >= 0) if bounded else np.zeros(len(q.rows), bool)
        short = ~is_long
        # Short lists: scored whole now; their exact maxima bound their windows.
        n = q.hi[short] - q.lo[short]
        self.sd, self.sc, kept = contributions(
            q, _ranges(q.lo[short], q.hi[short]), np.repeat(q.weight[short], n), p
        )
        ub = np.zeros(self.nwin)
        if len(self.sd):
            term = np.repeat(np.arange(len(n)), n)
            if len(kept):
                term = term[kept]
            key = term * self.nwin + (self.sd >> s.shift)
            first = _run_starts(key)
            ub += np.bincount(
                key[first] % self.nwin, np.maximum.reduceat(self.sc, first), minlength=self.nwin
            )
        # Long lists: the stored window maxima, rescaled to this query's lengths and b.
        self.long = np.flatnonzero(is_long)
        if len(self.long):
            assert s.wmax is not None
            wm = s.wmax[q.rows[self.long]].astype(np.float64)  # (terms, 2, windows)
            ntf = fx * wm[:, 0]
            if p.title_weight > 0:
                ntf += (p.title_weight * ft) * wm[:, 1]
            ub += (q.weight[self.long][:, None] * ntf / (ntf + p.k1)).sum(axis=0)
        if q.filtered and q.mask is not None and s.n:
            starts = np.arange(0, s.n, 1 << s.shift)
            ub[: len(starts)][~np.logical_or.reduceat(q.mask, starts)] = 0.0
        self.ub = ub * (1 + SLACK)

    def score(self, wins: np.ndarray, p: Params) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores of every allowed matching document in windows ``wins`` (ascending)."""
        q = self.q
        shift = q.seg.shift
        low = (1 << shift) - 1
        slot = np.full(self.nwin, -1, dtype=np.int64)
        slot[wins] = np.arange(len(wins))
        sl = slot[self.sd >> shift]
        keep = sl >= 0
        idx = [(sl[keep] << shift) | (self.sd[keep] & low)]
        cs = [self.sc[keep]]
        if len(self.long):
            assert q.seg.woff is not None
            w = q.seg.woff[q.rows[self.long]]  # (terms, windows + 1), offsets within each list
            lo = q.lo[self.long][:, None] + w[:, wins]
            hi = q.lo[self.long][:, None] + w[:, wins + 1]
            n = (hi - lo).sum(axis=1)
            d, c, _ = contributions(q, _ranges(lo.ravel(), hi.ravel()), np.repeat(q.weight[self.long], n), p)
            idx.append((slot[d >> shift] << shift) | (d & low))
            cs.append(c)
        dense = np.bincount(np.concatenate(idx), weights=np.concatenate(cs), minlength=len(wins) << shift)
        hit = np.flatnonzero(dense)
        docs = (wins[hit >> shift].astype(np.int64) << shift) | (hit & low)
        scores = dense[hit]
        if q.mask is not None:
            keep = _allowed(q.mask, docs)
            docs, scores = docs[keep], scores[keep]
        return docs + q.base, scores


def top_k(
    segments: list[SegmentQuery], p: Params, k: int, stats: dict[str, int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` (score descending, then document number): ``(docnums, scores)``.

    ``stats``, when given, receives how many windows held a match and how many were scored.
    """
    plans = [_Plan(q, p) for q in segments]
    ubs, segs, wins = [], [], []
    for i, plan in enumerate(plans):
        w = np.flatnonzero(plan.ub > 0)
        ubs.append(plan.ub[w])
        segs.append(np.full(len(w), i, dtype=np.int64))
        wins.append(w)
    best_d, best_s = np.zeros(0, np.int64), np.zeros(0)
    if not ubs:
        return best_d, best_s
    ub, seg_of, win_of = np.concatenate(ubs), np.concatenate(segs), np.concatenate(wins)
    order = np.argsort(-ub, kind="stable")
    theta = -math.inf
    pos, size, scored = 0, FIRST_BATCH, 0
    while pos < len(order) and ub[order[pos]] >= theta:
        batch = order[pos : pos + size]
        batch = batch[ub[batch] >= theta]
        pos, size, scored = pos + size, size * 2, scored + len(batch)
        found_d, found_s = [best_d], [best_s]
        for i in np.unique(seg_of[batch]).tolist():
            d, sc = plans[i].score(np.sort(win_of[batch[seg_of[batch] == i]]), p)
            found_d.append(d)
            found_s.append(sc)
        best_d, best_s = _best(np.concatenate(found_d), np.concatenate(found_s), k)
        if len(best_d) >= k:
            theta = float(best_s[k - 1])
    if stats is not None:
        stats["windows"] = stats.get("windows", 0) + len(order)
        stats["scored"] = stats.get("scored", 0) + scored
    return best_d, best_s


def _best(docs: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if k < len(docs):
        # Keep everything scoring at least the k-th best (ties at the cut stay), then sort.
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        sel = np.flatnonzero(scores >= kth)
        docs, scores = docs[sel], scores[sel]
    order = np.lexsort((docs, -scores))[:k]
    return docs[order], scores[order]


def all_scores(segments: list[SegmentQuery], p: Params) -> tuple[np.ndarray, np.ndarray]:
    """Every matching allowed document: ``(docnums ascending, scores)``, the floats of :func:`top_k`."""
    docs, scores = [np.zeros(0, np.int64)], [np.zeros(0)]
    for q in segments:
        plan = _Plan(q, p)
        d, s = plan.score(np.flatnonzero(plan.ub > 0), p)
        docs.append(d)
        scores.append(s)
    return np.concatenate(docs), np.concatenate(scores)


def _allowed(mask: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """``mask[docs]`` where documents past the end of ``mask`` are not allowed."""
    if not len(docs) or int(docs.max()) < len(mask):
        return mask[docs]
    out = np.zeros(len(docs), dtype=bool)
    inside = docs < len(mask)
    out[inside] = mask[docs[inside]]
    return out
