"""FAISS search against brute-force numpy, with removed rows masked out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from search.vectors import VectorSegment, load_vectors, save_vectors, search_segments


def _unit(rng: np.random.Generator, n: int, d: int = 32) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_matches_brute_force_with_mask() -> None:
    rng = np.random.default_rng(0)
    a, b = _unit(rng, 300), _unit(rng, 120)
    live_a = rng.random(300) > 0.3
    live_b = np.ones(120, dtype=bool)
    segs = [VectorSegment("a", a, live_a), VectorSegment("b", b, live_b)]
    for _ in range(20):
        q = _unit(rng, 1)[0]
        got = search_segments(segs, q, 10)
        cand = [(float(a[i] @ q), "a", i) for i in np.flatnonzero(live_a)] + [
            (float(b[i] @ q), "b", i) for i in range(120)
        ]
        cand.sort(key=lambda t: -t[0])
        assert [(s, r) for _, s, r in got] == [(s, r) for _, s, r in cand[:10]]
        assert [x for x, _, _ in got] == pytest.approx([x for x, _, _ in cand[:10]], abs=1e-5)
        assert all(live_a[r] for _, s, r in got if s == "a")


def test_all_dead_and_small_segments() -> None:
    rng = np.random.default_rng(1)
    dead = VectorSegment("d", _unit(rng, 5), np.zeros(5, dtype=bool))
    small = VectorSegment("s", _unit(rng, 3), np.ones(3, dtype=bool))
    got = search_segments([dead, small], _unit(rng, 1)[0], 10)
    assert len(got) == 3 and {s for _, s, _ in got} == {"s"}


def test_round_trip(tmp_path: Path) -> None:
    x = _unit(np.random.default_rng(2), 7)
    save_vectors(tmp_path / "v.npy", x)
    assert np.array_equal(load_vectors(tmp_path / "v.npy"), x)
    assert not list(tmp_path.glob("*.tmp"))
