"""Near-duplicate lookup for a whole write, in compact numpy runs (#17: a build that streams).

:class:`search.dedup.DuplicateFinder` keeps 64 Python dicts of lists, about 180 bytes a
document and band: 2.9 GB for 250,000 articles, most of a 1M-passage build's memory. This
index finds the same candidates (two stories share a band of their MinHash signature)
from sorted arrays, 8 bytes a document and band (a 32-bit hash of the band and the row),
and checks each candidate on all 128 minima, as the finder does. Documents come in
batches: a batch is looked up against every earlier batch at once (one ``searchsorted``
per run and band), and against its own earlier documents by sorting its band keys; the
candidates' similarities are computed together, and only a story with a candidate at the
threshold is then handled on its own, in order (a copy takes its original's group).

Documents already in the index (a write that adds to it) are held unindexed until a
batch is large enough to pay for sorting them: a small ``search add`` compares its few
articles' bands with every stored one directly, in a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .dedup import NUM_PERM, THRESHOLD

BANDS = 64
#: Direct comparisons (new documents x held ones) under which held documents stay unindexed.
DIRECT_BUDGET = 8_000_000
#: Up to this many new documents, held ones are compared band by band on their minima
#: directly: hashing every held signature's bands costs more than comparing them with a
#: few new ones (adding one article to 301,259 stored: 0.5 s of hashing against ~0.05 s).
FEW_NEW = 4
#: Candidate pairs compared per numpy step of :meth:`BandIndex.assign` (2 x 16 MiB gathered).
PAIRS_STEP = 32_768
#: Candidate pairs (before duplicates are dropped) gathered at once by :meth:`BandIndex.assign`:
#: more new documents at a time when each has few, one at a time when one has more.
PAIR_BUDGET = 1 << 20


# Odd 64-bit multipliers: a signature's 128 minima hash to one uint64 (equal signatures,
# exact copies, share it; a shared hash is checked minimum by minimum).
_MULT = np.random.default_rng(17).integers(0, 1 << 63, NUM_PERM, dtype=np.uint64) * np.uint64(2) + np.uint64(
    1
)


def signature_hashes(sigs: np.ndarray) -> np.ndarray:
    """uint64 [docs]: one hash of each whole signature."""
    with np.errstate(over="ignore"):
        return (np.asarray(sigs, dtype=np.uint64) * _MULT).sum(axis=1, dtype=np.uint64)


def band_keys(sigs: np.ndarray) -> np.ndarray:
    """uint32 [docs, BANDS]: a hash of each band (two minima) of each signature."""
    x = np.asarray(sigs, dtype=np.uint64).reshape(len(sigs), BANDS, NUM_PERM // BANDS)
    h = (x[:, :, 0] * np.uint64(0x9E3779B1) + x[:, :, 1] * np.uint64(0x85EBCA77)) & np.uint64(0xFFFFFFFF)
    return h.astype(np.uint32)


class BandIndex:
    """The stories seen so far; :meth:`assign` finds, for each new one, the story it copies."""

    def __init__(self, threshold: float = THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("the near-duplicate threshold must be in (0, 1]")
        self.threshold = threshold
        self.ids: list[str] = []
        self.groups: list[str] = []
        self._sigs = np.zeros((0, NUM_PERM), dtype=np.uint32)
        self._n = 0
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []  # (keys [BANDS, m] sorted per band, slots)
        self._held = np.zeros(0, dtype=np.int32)  # slots not in a run yet
        # Exact copies (identical signatures) form a class: only its first slot, the
        # representative, goes into the runs and the held comparisons, so a thousand copies
        # of one story cost a thousand lookups, not a million pairs (12 feeds of 3,000
        # identical items took over 20 minutes). The others are its members.
        self._rep = np.zeros(0, dtype=np.int64)  # per slot: its class's first slot
        self._by_hash: dict[int, int] = {}  # signature hash -> its first representative
        self._more: dict[int, list[int]] = {}  # the others, for two signatures of one hash
        self._members: dict[int, list[int]] = {}  # representative -> every slot of its class

    def _append(self, ids: Sequence[str], sigs: np.ndarray, groups: Sequence[str]) -> int:
        first = self._n
        need = first + len(ids)
        if need > len(self._sigs):
            bigger = np.zeros((max(need, 2 * len(self._sigs), 64), NUM_PERM), dtype=np.uint32)
            bigger[:first] = self._sigs[:first]
            self._sigs = bigger
        self._sigs[first:need] = sigs
        self.ids.extend(ids)
        self.groups.extend(groups)
        self._n = need
        reps = np.arange(first, need, dtype=np.int64)
        for j, h in enumerate(signature_hashes(self._sigs[first:need]).tolist()):
            slot = first + j
            known = [self._by_hash[h], *self._more.get(h, ())] if h in self._by_hash else []
            rep = next((r for r in known if np.array_equal(self._sigs[r], self._sigs[slot])), None)
            if rep is not None:
                reps[j] = rep
                self._members.setdefault(rep, [rep]).append(slot)
            elif known:
                self._more.setdefault(h, []).append(slot)
            else:
                self._by_hash[h] = slot
        self._rep = np.concatenate([self._rep, reps])
        return first

    def hold(self, ids: Sequence[str], sigs: np.ndarray, groups: Sequence[str]) -> None:
        """Stories already indexed (their groups known): compared with new ones, never checked."""
        if len(ids):
            first = self._append(ids, np.asarray(sigs, dtype=np.uint32).reshape(len(ids), NUM_PERM), groups)
            self._held = np.concatenate([self._held, np.arange(first, self._n, dtype=np.int32)])

    def _held_sigs(self) -> np.ndarray:
        """The held signatures: a view when they are one run of slots (as :meth:`hold` leaves them)."""
        h = self._held
        if bool((np.diff(h) == 1).all()):
            return self._sigs[int(h[0]) : int(h[-1]) + 1]
        return self._sigs[h]

    def _held_reps(self) -> np.ndarray:
        """The held slots that represent their class."""
        h = self._held
        return h[self._rep[h] == h]

    def _index_held(self) -> None:
        """Put the held stories' classes into a run (their copies stay members)."""
        if len(self._held):
            self._add_run(self._held_reps())
            self._held = np.zeros(0, dtype=np.int32)

    def _add_run(self, slots: np.ndarray) -> None:
        keys = band_keys(self._sigs[slots]).T  # [BANDS, m]
        order = np.argsort(keys, axis=1, kind="stable")
        self._runs.append((np.take_along_axis(keys, order, axis=1), slots[order]))
        # Size-tiered: merge while the newest run is at least half the one before it,
        # so there are O(log n) runs and each slot is re-sorted O(log n) times.
        while len(self._runs) >= 2 and self._runs[-1][0].shape[1] * 2 >= self._runs[-2][0].shape[1]:
            (k1, s1), (k2, s2) = self._runs[-2], self._runs[-1]
            k, s = np.concatenate([k1, k2], axis=1), np.concatenate([s1, s2], axis=1)
            order = np.argsort(k, axis=1, kind="stable")
            self._runs[-2:] = [(np.take_along_axis(k, order, axis=1), np.take_along_axis(s, order, axis=1))]

    def _bounds(self, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per run and band: its slots, and where each new document's key starts and ends in it."""
        out = []
        for run_keys, run_slots in self._runs:
            for band in range(BANDS):
                col = run_keys[band]
                lo = np.searchsorted(col, keys[:, band], side="left")
                hi = np.searchsorted(col, keys[:, band], side="right")
                out.append((run_slots[band], lo, hi))
        return out

    def _held_hits(self, keys: np.ndarray, sigs: np.ndarray) -> list[np.ndarray]:
        """Per new document, the held slots sharing a band with it: by the held stories'
        band keys, or, for a few new documents, minimum by minimum (the same test without
        hashing every held signature)."""
        held = self._held_reps()
        if not len(held):
            return []
        held_sigs = self._held_sigs() if len(held) == len(self._held) else self._sigs[held]
        if len(keys) > FEW_NEW:
            held_keys = band_keys(held_sigs)
            hits = [np.flatnonzero((held_keys == k).any(axis=1)) for k in keys]
        else:
            # A band is two uint32 minima: one uint64 compares both at once.
            held64 = np.ascontiguousarray(held_sigs).view(np.uint64)
            hits = [
                np.flatnonzero((held64 == np.ascontiguousarray(sig).view(np.uint64)).any(axis=1))
                for sig in sigs
            ]
        return [held[h].astype(np.int64) for h in hits]

    def assign(self, ids: Sequence[str], sigs: np.ndarray) -> list[tuple[str | None, float]]:
        """For each new story in order: (the group of the story it copies, or None; similarity).

        Each is compared with every story before it, in earlier batches and in this one,
        then added with its group (the copied story's group, or its own id).

        The candidates (stories sharing a band) and their similarities are found for many
        new stories at once in numpy (as many as ``PAIR_BUDGET`` candidate pairs allow);
        only a story with a candidate at the threshold is then looked at on its own, in
        order, since a copy takes its original's group (#17: a Python step per story and
        band cost more than the rest of the lookup).
        """
        if not len(ids):
            return []
        sigs = np.asarray(sigs, dtype=np.uint32).reshape(len(ids), NUM_PERM)
        keys = band_keys(sigs)
        if len(self._held) * len(ids) > DIRECT_BUDGET:
            self._index_held()
        held = self._held_hits(keys, sigs)
        bounds = self._bounds(keys)
        first_new = self._n
        self._append(ids, sigs, list(ids))  # each group is set below, in order
        total = self._n
        slots = np.arange(first_new, total, dtype=np.int64)
        rep = self._rep[first_new:total]
        copy = rep != slots  # an exact copy of an earlier story: its class answers for it
        fresh = np.flatnonzero(~copy)
        later, earlier = _batch_pairs(keys[fresh])
        later, earlier = fresh[later], fresh[earlier]
        per_doc = sum((hi - lo for _, lo, hi in bounds), np.zeros(len(ids), dtype=np.int64))
        if held:
            per_doc += np.fromiter(map(len, held), dtype=np.int64, count=len(held))
        # A copy whose class holds no earlier story under another id is compared as a new
        # story with the batch's others too (the stored ones it meets through the runs).
        alone = [
            i
            for i in np.flatnonzero(copy).tolist()
            if self._member(int(rep[i]), first_new + i, ids[i]) is None
        ]
        chosen: dict[int, tuple[int, float]] = {}
        for a, b in _spans(per_doc, PAIR_BUDGET):
            codes = []
            for run_slots, lo, hi in bounds:
                hit = np.flatnonzero(hi[a:b] > lo[a:b])
                if len(hit):
                    doc, pos = _ranges(hit + a, lo[a:b][hit], hi[a:b][hit])
                    codes.append(doc * total + run_slots[pos])
            codes += [i * total + held[i] for i in range(a, b) if held and len(held[i])]
            mine = (later >= a) & (later < b)
            codes.append(later[mine] * total + earlier[mine] + first_new)
            span = np.arange(a, b)
            codes.append(span[copy[a:b]] * total + rep[a:b][copy[a:b]])
            for i in alone:
                if a <= i < b:
                    before = fresh[fresh < i]
                    near = before[(keys[before] == keys[i]).any(axis=1)]
                    codes.append(i * total + near + first_new)
            self._choose(ids, sigs, np.unique(np.concatenate(codes)), total, chosen, first_new)
        out: list[tuple[str | None, float]] = []
        for i, doc_id in enumerate(ids):
            group: str | None = None
            best = 0.0
            if i in chosen:
                slot_i, best = chosen[i]
                group = self.groups[slot_i]  # an earlier story: its group is set already
            self.groups[first_new + i] = group or doc_id
            out.append((group, best))
        self._add_run(slots[~copy].astype(np.int32))
        return out

    def _member(self, rep: int, before: int, doc_id: str) -> int | None:
        """The first slot of ``rep``'s class, before slot ``before``, under an id other than
        ``doc_id``: the story a copy of that class takes its group from (all of a class are
        equally similar to anything, so the first one a story may join wins, as it would
        among all of them)."""
        for m in self._members.get(rep, [rep]):
            if m >= before:
                return None
            if self.ids[m] != doc_id:
                return m
        return None

    def _choose(
        self,
        ids: Sequence[str],
        sigs: np.ndarray,
        code: np.ndarray,
        total: int,
        chosen: dict[int, tuple[int, float]],
        first_new: int,
    ) -> None:
        """For each new document among the pairs ``code`` (document * total + slot, sorted),
        the most similar other story at the threshold (the lowest slot among equals). A slot
        stands for its class: when it is under the document's own id, the class's first
        other story before the document stands in, at the same similarity."""
        doc, slot = code // total, code % total
        sims = np.empty(len(code), dtype=np.float64)
        for lo in range(0, len(code), PAIRS_STEP):
            d, s = doc[lo : lo + PAIRS_STEP], slot[lo : lo + PAIRS_STEP]
            sims[lo : lo + PAIRS_STEP] = (self._sigs[s] == sigs[d]).mean(axis=1)
        near = np.flatnonzero(sims >= self.threshold)
        d_near, s_near, sim_near = doc[near], slot[near], sims[near]
        extra = [
            (d, m, sim)
            for d, s, sim in zip(d_near.tolist(), s_near.tolist(), sim_near.tolist())
            if self.ids[s] == ids[d]
            and s in self._members
            and (m := self._member(s, first_new + d, ids[d])) is not None
        ]
        if extra:
            d_near = np.concatenate([d_near, np.array([e[0] for e in extra], dtype=np.int64)])
            s_near = np.concatenate([s_near, np.array([e[1] for e in extra], dtype=np.int64)])
            sim_near = np.concatenate([sim_near, np.array([e[2] for e in extra])])
        order = np.lexsort((s_near, -sim_near, d_near))
        for d, s, sim in zip(d_near[order].tolist(), s_near[order].tolist(), sim_near[order].tolist()):
            if d not in chosen and self.ids[s] != ids[d]:
                chosen[d] = (s, sim)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _ranges(owner: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``owner[i]`` repeated and the positions ``lo[i] .. hi[i] - 1``, for all i, flattened."""
    n = hi - lo
    first = np.cumsum(n) - n
    return np.repeat(owner, n), np.arange(int(n.sum())) - np.repeat(first - lo, n)


def _spans(counts: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive documents ``[a, b)`` whose counts add up to at most ``budget`` (or one document)."""
    out = []
    a, acc = 0, 0
    for i, c in enumerate(counts.tolist()):
        if acc and acc + c > budget:
            out.append((a, i))
            a, acc = i, 0
        acc += c
    out.append((a, len(counts)))
    return out


def _batch_pairs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(later, earlier) for every two documents of a batch sharing a band key, each pair once.

    Each band's keys are sorted (stably, so equal keys keep document order) and compared
    with the keys ``d`` places on, for d = 1, 2, ... until no two are equal: in a sorted
    column, keys equal ``d + 1`` apart are equal ``d`` apart too.
    """
    n = len(keys)
    order = np.argsort(keys, axis=0, kind="stable")
    ordered = np.take_along_axis(keys, order, axis=0)
    pairs: list[np.ndarray] = []
    for d in range(1, n):
        rows, bands = np.nonzero(ordered[d:] == ordered[:-d])
        if not len(rows):
            break
        pairs.append(np.unique(order[rows + d, bands].astype(np.int64) * n + order[rows, bands]))
    code = np.unique(_joined(pairs))
    return code // max(n, 1), code % max(n, 1)
