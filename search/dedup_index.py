"""Near-duplicate lookup for a whole write, in compact numpy runs (#17: a build that streams).

:class:`search.dedup.DuplicateFinder` keeps 64 Python dicts of lists, about 180 bytes a
document and band: 2.9 GB for 250,000 articles, most of a 1M-passage build's memory. This
index finds the same candidates (two stories share a band of their MinHash signature)
from sorted arrays, 8 bytes a document and band (a 32-bit hash of the band and the row),
and checks each candidate on all 128 minima, as the finder does. Documents come in
batches: a batch is looked up against every earlier batch at once (one ``searchsorted``
per run and band), and against its own earlier documents one by one.

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

    def _index_held(self) -> None:
        if len(self._held):
            self._add_run(self._held)
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

    def _indexed_candidates(self, keys: np.ndarray) -> list[np.ndarray]:
        """Per new document, the slots of indexed stories sharing a band with it."""
        found: list[list[np.ndarray]] = [[] for _ in range(len(keys))]
        for run_keys, run_slots in self._runs:
            for band in range(BANDS):
                col = run_keys[band]
                lo = np.searchsorted(col, keys[:, band], side="left")
                hi = np.searchsorted(col, keys[:, band], side="right")
                for i in np.flatnonzero(hi > lo).tolist():
                    found[i].append(run_slots[band, lo[i] : hi[i]])
        return [np.concatenate(f).astype(np.int64) if f else np.zeros(0, np.int64) for f in found]

    def assign(self, ids: Sequence[str], sigs: np.ndarray) -> list[tuple[str | None, float]]:
        """For each new story in order: (the group of the story it copies, or None; similarity).

        Each is compared with every story before it, in earlier batches and in this one,
        then added with its group (the copied story's group, or its own id).
        """
        sigs = np.asarray(sigs, dtype=np.uint32).reshape(len(ids), NUM_PERM)
        keys = band_keys(sigs)
        if len(self._held) * len(ids) > DIRECT_BUDGET:
            self._index_held()
        indexed = self._indexed_candidates(keys)
        held_sigs = self._held_sigs() if len(self._held) else None
        few = len(ids) <= FEW_NEW
        held_keys = band_keys(held_sigs) if held_sigs is not None and not few else None
        held64 = np.ascontiguousarray(held_sigs).view(np.uint64) if held_sigs is not None and few else None
        first_new = self._n
        local: list[dict[int, list[int]]] = [{} for _ in range(BANDS)]
        out: list[tuple[str | None, float]] = []
        for i, (doc_id, sig) in enumerate(zip(ids, sigs)):
            parts = [indexed[i]]
            if held_keys is not None:
                hit = np.flatnonzero((held_keys == keys[i]).any(axis=1))
                parts.append(self._held[hit])
            elif held64 is not None:
                # The same test as the band keys (a band's minima all equal), without hashing.
                # A band is two uint32 minima: one uint64 compares both at once.
                same = held64 == np.ascontiguousarray(sig, dtype=np.uint32).view(np.uint64)
                parts.append(self._held[np.flatnonzero(same.any(axis=1))])
            near = {j for band, k in zip(local, keys[i].tolist()) for j in band.get(k, ())}
            if near:
                parts.append(np.fromiter(near, dtype=np.int64, count=len(near)) + first_new)
            cand = np.unique(np.concatenate(parts)) if len(parts) > 1 or len(parts[0]) else parts[0]
            group: str | None = None
            best = 0.0
            if len(cand):
                sims = (self._sigs[cand] == sig[None, :]).mean(axis=1)
                for j in np.argsort(-sims, kind="stable").tolist():
                    if sims[j] < self.threshold:
                        break
                    slot = int(cand[j])
                    if self.ids[slot] != doc_id:
                        group, best = self.groups[slot], float(sims[j])
                        break
            self._append([doc_id], sig[None, :], [group or doc_id])
            for band, k in zip(local, keys[i].tolist()):
                band.setdefault(k, []).append(i)
            out.append((group, best))
        if len(ids):
            self._add_run(np.arange(first_new, first_new + len(ids), dtype=np.int32))
        return out
