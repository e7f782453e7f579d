from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from search.fusion import Fusion, Mode, convex, minmax, rrf


def test_rrf_matches_formula() -> None:
    a = [("x", 9.0), ("y", 5.0), ("z", 1.0)]
    b = [("y", 0.9), ("w", 0.8)]
    got = dict(rrf([a, b], k=60))
    assert got["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert got["x"] == pytest.approx(1 / 61)
    assert got["w"] == pytest.approx(1 / 62)
    assert got["z"] == pytest.approx(1 / 63)
    assert [d for d, _ in rrf([a, b], k=60)][0] == "y"


def test_rrf_constant_zero_and_negative() -> None:
    assert rrf([[("a", 1.0)]], k=0) == [("a", 1.0)]
    with pytest.raises(ValueError, match="non-negative"):
        rrf([[("a", 1.0)]], k=-1)


def test_minmax_and_convex() -> None:
    assert minmax([("a", 3.0), ("b", 1.0), ("c", 2.0)]) == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert minmax([("a", 2.0), ("b", 2.0)]) == {"a": 1.0, "b": 1.0}
    assert minmax([]) == {}
    fused = dict(convex([("a", 10.0), ("b", 0.0)], [("b", 0.9), ("c", 0.1)], alpha=0.5))
    assert fused == {"a": 0.5, "b": 0.5, "c": 0.0}
    with pytest.raises(ValueError, match="alpha"):
        convex([], [], alpha=1.5)


def test_enums_list_choices() -> None:
    assert Mode.from_str("BM25") is Mode.BM25
    assert Fusion.from_str("convex") is Fusion.CONVEX
    with pytest.raises(ValueError, match="choose one of hybrid, bm25, dense"):
        Mode.from_str("sparse")
    with pytest.raises(ValueError, match="choose one of rrf, convex"):
        Fusion.from_str("max")


ranked = st.lists(st.tuples(st.text("abcdefgh", min_size=1, max_size=3), st.floats(0, 100)), max_size=12).map(
    lambda xs: sorted(dict(xs).items(), key=lambda t: -t[1])
)


@given(ranked, ranked)
def test_rrf_is_order_independent(a, b) -> None:
    assert rrf([a, b]) == rrf([b, a])


@given(ranked, ranked)
def test_convex_symmetric_at_half(a, b) -> None:
    x = dict(convex(a, b, 0.5))
    y = dict(convex(b, a, 0.5))
    assert x.keys() == y.keys()
    for key in x:
        assert x[key] == pytest.approx(y[key])
