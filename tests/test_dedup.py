"""Batched MinHash gives exactly the signatures of the one-article-at-a-time code (#17).

The references below are the old ``search.dedup.shingles`` and ``signature``: a stored
index's signatures must not change, or a new article would no longer match its copy.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import dedup

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
