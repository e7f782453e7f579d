"""Batched MinHash gives exactly the signatures of the one-article-at-a-time code (#17).

The references below are the old ``search.dedup.shingles`` and ``signature``: a stored
index's signatures must not change, or a new article would no longer match its copy.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import dedup, dedup_index
from search.dedup_index import BandIndex, band_keys

P = (1 << 31) - 1
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def ref_shingles(text: str, n: int = dedup.SHINGLE) -> np.ndarray:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        grams = [" ".join(words)] if words else []
    else:
        grams = [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    return np.unique(
        np.fromiter((zlib.crc32(g.encode("utf-8")) for g in grams), dtype=np.uint64, count=len(grams))
    )


def ref_signature(text: str) -> np.ndarray:
    x = ref_shingles(text) % np.uint64(P)
    if len(x) == 0:
        return np.full(dedup.NUM_PERM, np.iinfo(np.uint32).max, dtype=np.uint32)
    h = (dedup._A[:, None] * x[None, :] + dedup._B[:, None]) % np.uint64(P)
    return h.min(axis=1).astype(np.uint32)


TEXTS = [
    "",
    "   ",
    "!!! ... ---",
    "one",
    "two words",
    "exactly five words right here",
    "six words here, one more: go",
    "the same five word phrase the same five word phrase the same five word phrase",
    "Lautaro Martinez headed home the winner in stoppage time. Argentina beat England 2-1.",
    "snake_case and __dunder__ words_split by underscores",
    "Zlatan Ibrahimović, Łukasz Piszczek, Ødegaard and Müller — ΟΔΟΣ ΟΔΥΣΣΕΥΣ İstanbul straße",
    "中文 日本語のテキスト 한국어 ١٢٣ ⚽ 🏆 ﬁnal ①②",
    " ".join(f"w{i}" for i in range(5000)),  # more shingles than one numpy step
]


@pytest.mark.parametrize("text", TEXTS)
def test_shingles_and_signature_equal_the_reference(text: str) -> None:
    got = dedup.shingles(text)
    assert got.dtype == np.uint64 and got.tolist() == ref_shingles(text).tolist()
    sig = dedup.signature(text)
    assert sig.dtype == np.uint32 and sig.tolist() == ref_signature(text).tolist()


@pytest.mark.parametrize("step", [1, 3, 64, dedup._STEP])
def test_a_batch_equals_each_text_alone(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    # Small steps put step boundaries inside articles and several articles in one step.
    monkeypatch.setattr(dedup, "_STEP", step)
    texts = TEXTS[:-1] + ["", "a b c d e f g h"] * 3
    got = dedup.signatures(texts)
    assert got.dtype == np.uint32 and got.shape == (len(texts), dedup.NUM_PERM)
    assert got.tolist() == [ref_signature(t).tolist() for t in texts]
    assert dedup.signatures([]).shape == (0, dedup.NUM_PERM)


def test_the_modular_reduction_is_exact_at_its_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values whose hash is 0 or p - 1 under some permutation, and the extremes of x."""
    a, b = dedup._A.astype(object), dedup._B.astype(object)
    edge = [0, 1, 2, P - 2, P - 1]
    for k in range(0, dedup.NUM_PERM, 9):
        inv = pow(int(a[k]), -1, P)
        edge += [(-int(b[k])) * inv % P, (P - 1 - int(b[k])) * inv % P, (P - int(b[k]) - 2) * inv % P]
    rng = np.random.default_rng(7)
    x = np.array(edge + rng.integers(0, P, 3000).tolist(), dtype=np.uint64)
    counts = np.array([1] * len(edge) + [0, 1000, 0, 0, 2000, 0], dtype=np.int64)
    want = np.full((len(counts), dedup.NUM_PERM), np.iinfo(np.uint32).max, dtype=np.uint32)
    at = 0
    for i, c in enumerate(counts.tolist()):
        if c:
            h = (dedup._A[:, None] * x[None, at : at + c] + dedup._B[:, None]) % np.uint64(P)
            want[i] = h.min(axis=1)
        at += c
    assert (want[: len(edge)] == 0).any()  # the zero-hash values are there
    for step in (5, dedup._STEP):
        monkeypatch.setattr(dedup, "_STEP", step)
        assert dedup._min_hashes(x, counts).tolist() == want.tolist()


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.text(max_size=120), max_size=6))
def test_property_batched_signatures_equal_the_reference(texts: list[str]) -> None:
    assert dedup.signatures(texts).tolist() == [ref_signature(t).tolist() for t in texts]
    for t in texts:
        assert dedup.shingles(t).tolist() == ref_shingles(t).tolist()


# --- the band index: the whole batch at once equals one story at a time ----------------


class RefBandIndex(BandIndex):
    """``BandIndex.assign`` as it was: one new story at a time, in-batch bands in dicts, every
    story (copies too) in the runs."""

    def _index_held(self) -> None:
        if len(self._held):
            self._add_run(self._held)
            self._held = np.zeros(0, dtype=np.int32)

    def _indexed_candidates(self, keys: np.ndarray) -> list[np.ndarray]:
        found: list[list[np.ndarray]] = [[] for _ in range(len(keys))]
        for run_keys, run_slots in self._runs:
            for band in range(dedup_index.BANDS):
                col = run_keys[band]
                lo = np.searchsorted(col, keys[:, band], side="left")
                hi = np.searchsorted(col, keys[:, band], side="right")
                for i in np.flatnonzero(hi > lo).tolist():
                    found[i].append(run_slots[band, lo[i] : hi[i]])
        return [np.concatenate(f).astype(np.int64) if f else np.zeros(0, np.int64) for f in found]

    def assign(self, ids: Sequence[str], sigs: np.ndarray) -> list[tuple[str | None, float]]:
        sigs = np.asarray(sigs, dtype=np.uint32).reshape(len(ids), dedup.NUM_PERM)
        keys = band_keys(sigs)
        if len(self._held) * len(ids) > dedup_index.DIRECT_BUDGET:
            self._index_held()
        indexed = self._indexed_candidates(keys)
        held_sigs = self._held_sigs() if len(self._held) else None
        few = len(ids) <= dedup_index.FEW_NEW
        held_keys = band_keys(held_sigs) if held_sigs is not None and not few else None
        held64 = np.ascontiguousarray(held_sigs).view(np.uint64) if held_sigs is not None and few else None
        first_new = self._n
        local: list[dict[int, list[int]]] = [{} for _ in range(dedup_index.BANDS)]
        out: list[tuple[str | None, float]] = []
        for i, (doc_id, sig) in enumerate(zip(ids, sigs)):
            parts = [indexed[i]]
            if held_keys is not None:
                parts.append(self._held[np.flatnonzero((held_keys == keys[i]).any(axis=1))])
            elif held64 is not None:
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


def _family_signatures(rng: np.random.Generator, n: int) -> tuple[list[str], np.ndarray]:
    """Signatures in families: each a fresh one, an exact copy, or an earlier one with some
    minima changed (similarities around the threshold, many ties), a few ids reused and a
    few all-0xFFFFFFFF (empty) signatures; minima from a small range, so bands collide."""
    sigs = np.zeros((n, dedup.NUM_PERM), dtype=np.uint32)
    ids = []
    for i in range(n):
        r = rng.random()
        if i == 0 or r < 0.3:
            sigs[i] = rng.integers(0, 50, dedup.NUM_PERM)
        elif r < 0.35:
            sigs[i] = np.iinfo(np.uint32).max
        else:
            parent = int(rng.integers(0, i))
            sigs[i] = sigs[parent]
            k = int(rng.choice([0, 0, 40, 64, 76, 77, 78, 90, 110]))
            sigs[i, rng.choice(dedup.NUM_PERM, k, replace=False)] = rng.integers(0, 50, k)
            if rng.random() < 0.1:  # a story written again under its id
                ids.append(ids[parent])
                continue
        ids.append(f"d{rng.integers(0, i)}" if i and rng.random() < 0.05 else f"d{i}")
    return ids, sigs


@pytest.mark.parametrize("seed", range(6))
def test_band_index_assign_equals_one_story_at_a_time(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids, sigs = _family_signatures(rng, 700)
    if seed % 2:  # tiny steps: many spans of new documents, many similarity steps
        monkeypatch.setattr(dedup_index, "PAIR_BUDGET", int(rng.integers(1, 50)))
        monkeypatch.setattr(dedup_index, "PAIRS_STEP", int(rng.integers(1, 20)))
    if seed % 3 == 2:  # held stories indexed as soon as a batch comes
        monkeypatch.setattr(dedup_index, "DIRECT_BUDGET", 10)
    new, ref = BandIndex(), RefBandIndex()
    held = int(rng.integers(0, 100)) if seed else 0
    groups = [f"g{i % 7}" for i in range(held)]
    for index in (new, ref):
        index.hold(ids[:held], sigs[:held], groups)
    at, copies = held, 0
    for size in itertools.cycle([1, 2, 3, 4, 5, 0, 60, 200, 1, 4]):
        if at >= len(ids):
            break
        got = new.assign(ids[at : at + size], sigs[at : at + size])
        assert got == ref.assign(ids[at : at + size], sigs[at : at + size]), at
        copies += sum(g is not None for g, _ in got)
        at += size
    assert new.ids == ref.ids and new.groups == ref.groups
    assert copies > 200


def test_band_index_compares_stories_sharing_a_band_several_apart() -> None:
    """a, b, c share one band; b is no copy of a, c is of a but not of b: c must see a
    although b sits between them in that band's sorted keys."""
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 16, dedup.NUM_PERM).astype(np.uint32)
    b = rng.integers(0, 1 << 16, dedup.NUM_PERM).astype(np.uint32)
    b[:2] = a[:2]  # band 0 shared, similarity 2/128
    c = a.copy()
    c[64:] = rng.integers(0, 1 << 16, 64)  # similarity to a 0.5, to b 2/128
    ids, sigs = ["a", "b", "c"], np.stack([a, b, c])
    want = [(None, 0.0), (None, 0.0), ("a", 0.5)]
    assert BandIndex().assign(ids, sigs) == RefBandIndex().assign(ids, sigs) == want


def test_band_index_never_groups_a_story_with_its_own_id() -> None:
    rng = np.random.default_rng(2)
    s = rng.integers(0, 1 << 16, (1, dedup.NUM_PERM)).astype(np.uint32)
    for index in (BandIndex(), RefBandIndex()):
        index.hold(["x"], s, ["x"])
        want = [(None, 0.0), ("x", 1.0), ("x", 1.0)]
        assert index.assign(["x", "y", "x"], np.concatenate([s, s, s])) == want


@pytest.mark.parametrize("seed", range(4))
def test_band_index_with_many_exact_copies_equals_one_story_at_a_time(seed: int) -> None:
    """Classes of identical signatures (only their first slot indexed) choose as the
    reference does among all of them: ids reused within a class, held copies, copies of
    copies, near copies of a class whose first story has the new story's id."""
    rng = np.random.default_rng(100 + seed)
    base = [rng.integers(0, 40, dedup.NUM_PERM).astype(np.uint32) for _ in range(6)]
    ids, rows = [], []
    for i in range(500):
        k = int(rng.integers(0, len(base)))
        sig = base[k].copy()
        if rng.random() < 0.3:  # a near copy
            n = int(rng.choice([10, 30, 60]))
            sig[rng.choice(dedup.NUM_PERM, n, replace=False)] = rng.integers(0, 40, n)
        rows.append(sig)
        ids.append(f"s{k}-{int(rng.integers(0, 4))}" if rng.random() < 0.5 else f"d{i}")
    sigs = np.stack(rows)
    new, ref = BandIndex(), RefBandIndex()
    held = int(rng.integers(0, 80))
    for index in (new, ref):
        index.hold(ids[:held], sigs[:held], ids[:held])
    at = held
    for size in itertools.cycle([1, 3, 50, 2, 120, 4]):
        if at >= len(ids):
            break
        got = new.assign(ids[at : at + size], sigs[at : at + size])
        assert got == ref.assign(ids[at : at + size], sigs[at : at + size]), at
        at += size
    assert new.groups == ref.groups


def test_identical_copies_cost_pairs_in_proportion_to_their_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 copies of one story (a feed repeating one item) are compared with the class's
    first story, not with each other: about one candidate pair each, not millions."""
    pairs: list[int] = []
    real = BandIndex._choose

    def spy(self: BandIndex, ids: Any, sigs: Any, code: np.ndarray, *rest: Any) -> None:
        pairs.append(len(code))
        real(self, ids, sigs, code, *rest)

    monkeypatch.setattr(BandIndex, "_choose", spy)
    sig = np.random.default_rng(3).integers(0, 1 << 16, (1, dedup.NUM_PERM)).astype(np.uint32)
    index = BandIndex()
    n = 3000
    out = index.assign([f"item{i}" for i in range(n // 2)], np.repeat(sig, n // 2, axis=0))
    out += index.assign([f"item{i}" for i in range(n // 2, n)], np.repeat(sig, n // 2, axis=0))
    assert out[0] == (None, 0.0) and all(g == ("item0", 1.0) for g in out[1:])
    assert sum(pairs) <= 2 * n


def test_a_copy_under_its_class_id_is_compared_with_the_other_stories() -> None:
    """A story written again under its id, identical to the first: its class gives it no
    other story, so it is compared with the rest as any new story is (a near copy in the same
    batch, or one stored before), as the reference does."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 1 << 16, dedup.NUM_PERM).astype(np.uint32)
    y = x.copy()
    y[:12] = rng.integers(0, 1 << 16, 12)  # a near copy of x
    cases = [
        ([], ["a", "b", "a"], [x, y, x]),  # all in one batch
        (["a"], ["b", "a"], [y, x]),  # x held
        (["b"], ["a", "a"], [x, x]),  # y held (its signature below)
    ]
    for held_ids, new_ids, new_sigs in cases:
        held_sigs = [x] if held_ids == ["a"] else [y] if held_ids else []
        got = []
        for index in (BandIndex(), RefBandIndex()):
            if held_ids:
                index.hold(held_ids, np.stack(held_sigs), held_ids)
            got.append(index.assign(new_ids, np.stack(new_sigs)))
        assert got[0] == got[1], (held_ids, got)
        group, sim = got[0][-1]
        assert group is not None and sim < 1.0  # the near copy, not its own first version


def test_signatures_sharing_a_hash_stay_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every signature given one hash: classes are still told apart minimum by minimum."""
    monkeypatch.setattr(dedup_index, "signature_hashes", lambda sigs: np.zeros(len(sigs), dtype=np.uint64))
    test_band_index_with_many_exact_copies_equals_one_story_at_a_time(0)
