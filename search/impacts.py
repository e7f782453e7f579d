"""BM25F scores from postings arrays: every match at once, or the top k with MaxScore pruning.

Scoring is Lucene's BM25 over BM25F's pseudo frequency, written as whoosh computes it
(:mod:`search.lexical`): per posting ``ntf = tf / (1 - b + b * dl / avg)`` (plus ``w *
tf_title / (...)`` over the title's own average), then ``(idf * qf) * ntf / (ntf + k1)``.
A document's score sums its terms in one fixed order, the terms' upper bounds descending
(ties in query order), in every path: the pruned top k holds the very same floats as the
exhaustive one.

Pruning is MaxScore (Turtle & Flood 1995), term at a time. Each term has an upper bound
on what it adds to any score: its weight times the saturation of its list's largest
pseudo frequency (stored per list at a reference length and ``b``,
:mod:`search.lexical_postings`; :func:`bound_factor` rescales it). Terms are read in
decreasing bound into a dense accumulator. Once the bounds of the terms not yet read sum
below the k-th best score already certain (a lower bound of the final k-th), a document
none of the read terms matched cannot enter the top k: those "non-essential" terms, the
long lists of common words, are never scanned; they are looked up (binary search) only
for the candidates that could still reach the top k. A filter or a deletion is a mask
applied before the threshold is taken, so the result is the best k that pass, never
fewer than exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .lexical_postings import LENGTHS, TermPostings

#: A bound is inflated by this much so float rounding never makes it fall below a score.
SLACK = 1e-9
#: Queries holding fewer postings than this are scored whole (no pruning): its machinery
#: costs more numpy calls than a short read saves.
EXHAUSTIVE_BELOW = 8192
#: A filter passing fewer documents than the query's postings over this is applied first:
#: its documents are looked up in every list. A look-up costs about 1.3 postings read
#: (measured at 400k passages) and a query has ~6 terms, so this costs under half a full
#: read of the lists, against MaxScore's ~30% that a selective filter pushes towards 100%.
FILTER_FIRST = 16


class Postings(Protocol):
    n: int
    bound_b: float
    ref_avg: tuple[float, float]
    lens: np.ndarray


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
class Term:
    """One query term: its weight (idf times query frequency) and its postings per segment."""

    weight: float
    parts: list[tuple[int, TermPostings]]  # (segment index, postings)


@dataclass
class Query:
    """A query over every segment of one index, as :func:`top_k` and :func:`all_scores` take it."""

    segments: list[tuple[Postings, int]]  # (postings, first global document number)
    terms: list[Term]  # in query order
    n_docs: int
    lens: np.ndarray  # uint8 (2, n_docs): every segment's field length codes, end to end
    mask: np.ndarray | None = None  # global documents that may score (live and allowed), or all
    filtered: bool = False  # the mask holds a filter, not only deletions


def _shares(
    docs: np.ndarray,
    tfx: np.ndarray,
    title: tuple[np.ndarray, np.ndarray] | None,
    lens: np.ndarray,
    weight: float,
    p: Params,
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of postings: ``docs`` index ``lens``; ``title`` (positions among the
    postings, frequencies) where a posting's document has the term in its title."""
    ntf = tfx / p.norm[0][lens[0][docs]]
    if p.title_weight <= 0:
        hit = tfx > 0  # with no title, a title-only posting is no match at all
        if not hit.all():
            docs, ntf = docs[hit], ntf[hit]
    elif title is not None and len(title[0]):
        pos, tf = title
        ntf[pos] += (p.title_weight * tf) / p.norm[1][lens[1][docs[pos]]]
    return docs, weight * ntf / (ntf + p.k1)


def _titled(t: Term, p: Params) -> bool:
    return p.title_weight > 0 and any(tp.tmax[1] > 0 for _, tp in t.parts)


def contributions(q: Query, t: Term, p: Params) -> tuple[np.ndarray, np.ndarray]:
    """One term's score in every document it matches, over all segments at once (global
    document numbers): a dozen numpy calls a term rather than a dozen a segment.

    The document numbers come back as ``np.intp``: they index the accumulator and the
    length codes several times a term, and numpy converts an int32 index array to intp
    on every fancy index (a scatter of 60k shares into the 1M-document accumulator took
    0.52 ms with the stored int32 numbers and 0.14 ms with intp, #17)."""
    parts = [tp for _, tp in t.parts]
    bases = [q.segments[s][1] for s, _ in t.parts]
    title: tuple[np.ndarray, np.ndarray] | None = None
    if len(parts) == 1:
        docs, tfx = parts[0].docs.astype(np.intp) + bases[0], parts[0].tfx
        if _titled(t, p):
            title = parts[0].tpos, parts[0].ttf
    else:
        sizes = [len(tp.docs) for tp in parts]
        docs = np.concatenate([tp.docs for tp in parts], dtype=np.intp)
        docs += np.repeat(np.array(bases, dtype=np.intp), sizes)
        tfx = np.concatenate([tp.tfx for tp in parts])
        if _titled(t, p):
            starts = np.cumsum([0, *sizes[:-1]])
            title = (
                np.concatenate([tp.tpos + start for tp, start in zip(parts, starts)]),
                np.concatenate([tp.ttf for tp in parts]),
            )
    return _shares(docs, tfx, title, q.lens, t.weight, p)


def bound_factor(b0: float, ref: float, b: float, avg: float) -> float:
    """The largest ``ntf(b, avg) / ntf(b0, ref)`` over all lengths (inf: no bound).

    ``(1 - b0 + b0 dl/ref) / (1 - b + b dl/avg)`` is monotone in ``dl``: its extremes are
    at ``dl = 0`` and ``dl -> inf``.
    """
    at_zero = (1 - b0) / (1 - b) if b < 1 else math.inf
    at_inf = (b0 * avg) / (b * ref) if b > 0 else math.inf
    return max(at_zero, at_inf)


def term_bound(factors: tuple[float, float], tp: TermPostings, weight: float, p: Params) -> float:
    """An upper bound on the term's score in any document of a segment (``factors``: its
    :func:`bound_factor` for the text and the title)."""
    ntf = factors[0] * tp.tmax[0]
    if p.title_weight > 0:
        ntf += p.title_weight * factors[1] * tp.tmax[1]
    if not math.isfinite(ntf):
        return math.inf
    return weight * ntf / (ntf + p.k1) * (1 + SLACK)


def _order(q: Query, p: Params) -> tuple[list[int], list[float]]:
    """Terms by decreasing bound (ties in query order), and the bounds."""
    factors = [
        (
            bound_factor(seg.bound_b, seg.ref_avg[0], p.b, p.avg[0]),
            bound_factor(seg.bound_b, seg.ref_avg[1], p.b, p.avg[1]),
        )
        for seg, _ in q.segments
    ]
    ub = [max((term_bound(factors[s], tp, t.weight, p) for s, tp in t.parts), default=0.0) for t in q.terms]
    return sorted(range(len(ub)), key=lambda i: (-ub[i], i)), ub


def kth_largest(x: np.ndarray, k: int) -> float:
    """The k-th largest value of ``x`` (-inf when it has fewer), exactly.

    A full partition costs ~8 ns an element; a long array is first cut at a value a
    strided sample says about 4k elements clear (one comparison pass), and only those
    are partitioned: exact whenever at least k clear the cut, else the full partition.
    A deep k (the facets' entity sample, 16,384 of a few hundred thousand matches) samples
    every fourth element for a cut about 2k clear (500k matches: 4.5 -> 2.1 ms, #17).
    """
    n = len(x)
    if n < k:
        return -math.inf
    step = n // (16 * k)
    r = max(4 * k // step, 4) if step else 0
    if step < 4 and n >= 1 << 16 and 8 * k <= n:
        step, r = 4, max(k // 2, 4)
    if step >= 4:
        sample = x[::step]
        r = min(r, len(sample))
        cut = np.partition(sample, len(sample) - r)[len(sample) - r]
        top = x[x >= cut]
        if len(top) >= k:
            return float(np.partition(top, len(top) - k)[len(top) - k])
    return float(np.partition(x, n - k)[n - k])


def top_k(
    q: Query, p: Params, k: int, acc: np.ndarray | None = None, stats: dict[str, int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` (score descending, then document number): ``(docnums, scores)``.

    ``acc``: zeros over at least ``q.n_docs`` documents, left zero again (a buffer kept
    between queries, as zeroing 8 MB a query at 1M passages would cost ~1 ms).

    ``stats``, when given, receives how many postings the terms hold, how many were read,
    and how many candidates were looked up in the lists left unread.
    """
    order, ub = _order(q, p)
    if not order:
        return np.zeros(0, np.int32), np.zeros(0)
    postings = sum(len(tp.docs) for t in q.terms for _, tp in t.parts)
    if postings <= EXHAUSTIVE_BELOW:
        # Short lists: reading them all takes fewer numpy calls than pruning them.
        docs, scores = all_scores(q, p, order)
        if stats is not None:
            stats["postings"] = stats.get("postings", 0) + postings
            stats["read"] = stats.get("read", 0) + postings
        return _best(docs, scores, k)
    acc = np.zeros(q.n_docs) if acc is None else acc
    if q.mask is not None and q.filtered:
        allowed = np.flatnonzero(q.mask)
        if len(allowed) * FILTER_FIRST < postings:
            # Few documents pass the filter: look every term up for them alone (Lucene's
            # leap-frog), rather than read lists whose documents the filter mostly drops.
            looked = 0
            try:
                for ti in order:
                    looked += _look_up(q, p, q.terms[ti], allowed, acc)
                scores = acc[allowed]
                hit = scores > 0
                return _best(allowed[hit], scores[hit], k)
            finally:
                acc[allowed] = 0.0
                if stats is not None:
                    stats["looked_up"] = stats.get("looked_up", 0) + looked
                    stats["filter_first"] = stats.get("filter_first", 0) + 1
    rest = [sum(ub[i] for i in order[j + 1 :]) for j in range(len(order))]
    seen: list[np.ndarray] = []  # each matched document once, in the order first met
    partial: np.ndarray | None = None
    theta = -math.inf  # a k-th best score certain to be reached: a lower bound of the final one
    read = looked = 0
    essential = len(order)
    try:
        for j, ti in enumerate(order):
            t = q.terms[ti]
            d, c = contributions(q, t, p)
            if j == 0:
                seen.append(d)
                acc[d] = c  # nothing there yet
            else:
                had = acc[d]
                seen.append(d[had == 0])  # shares are positive: 0 is unmet
                acc[d] = had + c  # no document twice within one term: a plain scatter
            read += sum(len(tp.docs) for _, tp in t.parts)
            if j + 1 < len(order) and rest[j] < sum(ub[i] for i in order[: j + 1]):
                # The terms left could be too weak to matter: is the certain k-th above them?
                cand, partial = _partial_sums(seen, q.mask, acc)
                theta = max(theta, kth_largest(partial, k))
                if rest[j] < theta:
                    essential = j + 1
                    break
        else:  # every term read: nothing left to prune by
            cand, partial = _seen(seen, q.mask), None
        # (A break kept the matched documents and their partial sums for the first pruning
        # below: one concatenation and one gather over them fewer.)
        try:
            for j in range(essential - 1, len(order) if essential < len(order) else 0):
                if j >= essential:
                    looked += _look_up(q, p, q.terms[order[j]], cand, acc)
                    partial = acc[cand]
                    theta = max(theta, kth_largest(partial, k))
                # Whatever the terms not yet added bring is at most rest: below theta, out.
                assert partial is not None
                cand = cand[partial + rest[j] >= theta]
                if j == essential - 1:
                    cand = np.sort(cand, kind="stable")  # a few ascending runs: timsort merges them
                    if stats is not None:
                        stats["candidates"] = stats.get("candidates", 0) + len(cand)
            return _best(cand, acc[cand], k)
        finally:
            for d in seen:
                acc[d] = 0.0
    finally:
        if stats is not None:
            stats["postings"] = stats.get("postings", 0) + sum(
                len(tp.docs) for t in q.terms for _, tp in t.parts
            )
            stats["read"] = stats.get("read", 0) + read
            stats["looked_up"] = stats.get("looked_up", 0) + looked
            stats["terms"] = stats.get("terms", 0) + len(order)
            stats["essential"] = stats.get("essential", 0) + essential


def _seen(seen: list[np.ndarray], mask: np.ndarray | None) -> np.ndarray:
    docs = np.concatenate(seen)
    return docs if mask is None else docs[mask[docs]]


def _partial_sums(
    seen: list[np.ndarray], mask: np.ndarray | None, acc: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The matched documents that may score, and their partial sums so far: the k-th best
    of these is a certain k-th (every final score is at least its partial sum).

    (Making the best partial sums whole by look-ups to raise it further was measured
    slower overall: 0.89x without it at 200k passages.)
    """
    docs = _seen(seen, mask)
    return docs, acc[docs]


def _look_up(q: Query, p: Params, t: Term, cand: np.ndarray, acc: np.ndarray) -> int:
    """Add one term's scores to the candidates (ascending global docnums); how many were sought.

    Few candidates in a long list: binary search. Many: one pass over the list, keeping
    the postings of candidates (cheaper than a search each once there are about one per
    eight postings).
    """
    looked = 0
    title = _titled(t, p)
    bases = np.array([base for _, base in q.segments] + [q.n_docs], dtype=cand.dtype)
    cuts = np.searchsorted(cand, bases)
    for s, tp in t.parts:
        seg, base = q.segments[s]
        want = cand[cuts[s] : cuts[s + 1]] - base
        if not len(want) or not len(tp.docs):
            continue
        looked += len(want)
        if len(want) * 8 < len(tp.docs):
            # In the list's dtype: mixed dtypes would copy the whole list to compare.
            pos = np.searchsorted(tp.docs, want.astype(tp.docs.dtype, copy=False))
            pos[pos == len(tp.docs)] = 0
            found = pos[tp.docs[pos] == want]
        else:
            wanted = np.zeros(seg.n, dtype=bool)
            wanted[want] = True
            found = np.flatnonzero(wanted[tp.docs])
        sub = None
        if title and len(tp.tpos):  # the found postings that have a title frequency
            i = np.minimum(np.searchsorted(tp.tpos, found), len(tp.tpos) - 1)
            has = np.flatnonzero(tp.tpos[i] == found)
            sub = has, tp.ttf[i[has]]
        d, c = _shares(tp.docs[found].astype(np.intp), tp.tfx[found], sub, seg.lens, t.weight, p)
        acc[d + base] += c  # intp, as contributions(): an int32 index is converted each time
    return looked


def _best(docs: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if k < len(docs):
        # Keep everything scoring at least the k-th best (ties at the cut stay), then sort.
        sel = np.flatnonzero(scores >= kth_largest(scores, k))
        docs, scores = docs[sel], scores[sel]
    order = np.lexsort((docs, -scores))[:k]
    return docs[order], scores[order]


def all_scores(q: Query, p: Params, order: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every matching allowed document: ``(docnums ascending, scores)``, the floats of :func:`top_k`."""
    order = _order(q, p)[0] if order is None else order
    ids_parts: list[np.ndarray] = []
    c_parts: list[np.ndarray] = []
    for ti in order:
        d, c = contributions(q, q.terms[ti], p)
        ids_parts.append(d)
        c_parts.append(c)
    if not ids_parts:
        return np.zeros(0, np.int64), np.zeros(0)
    ids, cs = np.concatenate(ids_parts), np.concatenate(c_parts)
    # bincount adds each document's shares in array order: the terms' order above.
    if len(ids) * 8 >= q.n_docs:
        # Long lists: a dense accumulator over every document is linear; sorting is not.
        dense = np.bincount(ids, weights=cs, minlength=q.n_docs)
        # Non-zero found through a bool array: np.nonzero over a million float64s takes
        # ~4 ms, the comparison and a bool nonzero ~0.6 ms (#17); the same documents.
        docs = np.flatnonzero(dense != 0)
        scores = dense[docs]
    else:
        docs, inverse = np.unique(ids, return_inverse=True)
        scores = np.bincount(inverse, weights=cs, minlength=len(docs))
    if q.mask is not None:
        keep = q.mask[docs]
        docs, scores = docs[keep], scores[keep]
    return docs, scores
