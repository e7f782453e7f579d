"""The ANN index of large segments (#17): recall against brute force, filters and liveness,
the recorded choice kept by later segments, and each vector stored once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from search import ann
from search import vectors as vx
from search.ann import AnnSpec
from search.vector_codes import as_float32

pytest.importorskip("faiss")


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _clustered(rng: np.random.Generator, n: int, d: int = 48, latent: int = 8) -> np.ndarray:
    """Unit vectors with far fewer degrees of freedom than dimensions, like text
    embeddings (noise in all 48 would be harder for any ANN than MiniLM vectors are)."""
    basis = rng.standard_normal((latent, d))
    return _unit(rng.standard_normal((n, latent)) @ basis + 0.05 * rng.standard_normal((n, d)))


def _queries(rng: np.random.Generator, x: np.ndarray, n: int) -> np.ndarray:
    return _unit(
        x[rng.integers(0, len(x), n)] + 0.4 * rng.standard_normal((n, x.shape[1])).astype(np.float32)
    )


def _segment(
    tmp_path: Path, x: np.ndarray, spec: AnnSpec, live: np.ndarray | None = None
) -> vx.VectorSegment:
    npy = tmp_path / "seg-000001.npy"
    vx.save_vectors(npy, x)
    recorded = vx.write_ann(npy, spec=spec)
    assert recorded is not None and recorded.kind == spec.kind
    live = np.ones(len(x), dtype=bool) if live is None else live
    seg = vx.VectorSegment("seg-000001", vx.load_vectors(npy), live, ann=recorded)
    assert seg.search_method == "ann"
    return seg


def _recall(got: np.ndarray, want: np.ndarray) -> float:
    return len(set(got.tolist()) & set(want.tolist())) / len(want)


SPECS = [vx.DEFAULT_ANN, AnnSpec("ivf", "SQ8", nprobe=32), AnnSpec("ivf-hnsw", "SQ8", nprobe=32)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.kind)
def test_recall_against_brute_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: AnnSpec) -> None:
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    rng = np.random.default_rng(11)
    x = _clustered(rng, 6000)
    seg = _segment(tmp_path, x, spec)
    exact = vx.VectorSegment("e", x, np.ones(len(x), dtype=bool))
    hits = []
    for q in _queries(rng, x, 60):
        got_s, got = seg.search(q, 10)
        want_s, want = exact.search(q, 10)
        hits.append(_recall(got[0], want[0]))
        # candidates are re-scored on the stored rows (int8 codes decoded to float32): exact
        # inner products of what is stored, best first, and within 5e-3 of float32's
        assert seg.vectors.dtype == np.int8
        stored = as_float32(seg.vectors[got[0]])
        np.testing.assert_allclose(got_s[0], stored @ q, atol=1e-6)
        np.testing.assert_allclose(got_s[0], x[got[0]] @ q, atol=5e-3)
        assert list(got_s[0]) == sorted(got_s[0], reverse=True)
    assert np.mean(hits) >= 0.95


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.kind)
def test_filters_and_liveness_inside_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: AnnSpec
) -> None:
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    rng = np.random.default_rng(12)
    x = _clustered(rng, 8000)
    live = rng.random(len(x)) > 0.3
    seg = _segment(tmp_path, x, spec, live)
    exact = vx.VectorSegment("e", x, live)
    # the exact path scores the stored rows: int8 codes, which may swap near-ties of the floats
    stored = vx.VectorSegment("st", as_float32(seg.vectors), live)
    wide = rng.random(len(x)) < 0.5  # 2,800 allowed live rows: searched inside the index
    narrow = rng.random(len(x)) < 0.05  # a few hundred: scored exactly
    assert (wide & live).sum() > vx.EXACT_ALLOWED_ROWS >= (narrow & live).sum()
    hits: dict[str, list[float]] = {"live": [], "wide": [], "narrow": [], "narrow_stored": []}
    for q in _queries(rng, x, 40):
        for name, allowed in (("live", None), ("wide", wide), ("narrow", narrow)):
            _, got = seg.search(q, 10, allowed)
            _, want = exact.search(q, 10, allowed)
            if name == "narrow":
                hits["narrow_stored"].append(_recall(got[0], stored.search(q, 10, allowed)[1][0]))
            rows = got[0]
            assert (rows >= 0).all() and len(set(rows.tolist())) == 10
            assert live[rows].all(), "a removed row came back"
            if allowed is not None:
                assert allowed[rows].all(), "a filtered-out row came back"
            hits[name].append(_recall(rows, want[0]))
    assert np.mean(hits["live"]) >= 0.95 and np.mean(hits["wide"]) >= 0.95
    assert np.mean(hits["narrow_stored"]) == 1.0  # the exact path, over the stored rows
    assert np.mean(hits["narrow"]) >= 0.98


def test_a_narrow_filter_never_returns_fewer_than_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    monkeypatch.setattr(vx, "EXACT_ALLOWED_ROWS", 0)  # through the index, however few pass
    rng = np.random.default_rng(13)
    x = _clustered(rng, 4000)
    seg = _segment(tmp_path, x, vx.DEFAULT_ANN)
    exact = vx.VectorSegment("e", x, np.ones(len(x), dtype=bool))
    for n_allowed in (30, 6):
        allowed = np.zeros(len(x), dtype=bool)
        allowed[rng.choice(len(x), n_allowed, replace=False)] = True
        for q in _queries(rng, x, 10):
            _, got = seg.search(q, 10, allowed)
            _, want = exact.search(q, 10, allowed)
            assert len(got[0]) == min(10, n_allowed) and (got[0] >= 0).all() and allowed[got[0]].all()
            if n_allowed < 10:  # fewer than k pass: every one of them, in exact order
                assert got[0].tolist() == want[0].tolist()


def test_reader_uses_the_recorded_parameters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    x = _clustered(np.random.default_rng(14), 3000)
    npy = tmp_path / "seg-000001.npy"
    vx.save_vectors(npy, x)
    built = vx.write_ann(npy, spec=AnnSpec("hnsw", "SQ8", ef_search=24))
    assert built is not None
    seen: list[AnnSpec] = []
    real = ann.search_params
    monkeypatch.setattr(
        ann, "search_params", lambda spec, *a, **kw: seen.append(spec) or real(spec, *a, **kw)
    )
    recorded = AnnSpec("hnsw", "SQ8", ef_search=99)
    seg = vx.VectorSegment("s", vx.load_vectors(npy), np.ones(len(x), dtype=bool), ann=recorded)
    seg.search(x[0], 5)
    assert seen[-1].ef_search == 99
    # Without a record, the parameters saved in the file; a record of another kind
    # (the file replaced by hand) is ignored the same way.
    for record in (None, AnnSpec("ivf", "SQ8", nprobe=3)):
        seg = vx.VectorSegment("s", vx.load_vectors(npy), np.ones(len(x), dtype=bool), ann=record)
        seg.search(x[0], 5)
        assert seen[-1].kind == "hnsw" and seen[-1].ef_search == 24


def test_each_vector_is_stored_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ANN file holds codes (a byte a dimension) and its graph or lists, no float copy;
    the rows it re-scores from are int8 codes (a byte a dimension)."""
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    rng = np.random.default_rng(15)
    dim, n = 384, 3000
    x = _clustered(rng, n, d=dim)
    for spec in SPECS:
        npy = tmp_path / f"{spec.kind}.npy"
        vx.save_vectors(npy, x)
        vx.write_ann(npy, spec=spec)
        floats = n * dim * 4
        size = vx.ann_path(npy).stat().st_size
        assert floats // 4 <= npy.stat().st_size < floats // 4 + 4096
        assert size < 0.5 * floats, f"{spec.kind}: {size / n:.0f} bytes a vector in the ANN file"
    # the old layout, for contrast: an IVF-Flat file is a second full copy
    old = tmp_path / "old.npy"
    vx.save_vectors(old, x)
    vx.write_ann(old, spec=AnnSpec("ivf", "Flat"))
    assert vx.ann_path(old).stat().st_size > n * dim * 4


def test_spec_round_trip_and_bad_values() -> None:
    s = AnnSpec("ivf-hnsw", "SQ8", nlist_scale=8.0, nprobe=24)
    assert AnnSpec.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert AnnSpec.from_dict({**s.to_dict(), "from_a_newer_version": 1}) == s
    assert AnnSpec.from_dict(None) is None
    r = s.resolved(100_000)
    assert r.nlist == round(8 * 100_000**0.5) and r.nprobe == 24
    assert r.factory() == f"IVF{r.nlist}_HNSW32,SQ8"
    with pytest.raises(ValueError, match="unknown ANN kind"):
        AnnSpec("lsh")
    with pytest.raises(ValueError, match="unknown ANN codes"):
        AnnSpec("hnsw", "PQ")
    with pytest.raises(ValueError, match="ef_search must be positive"):
        AnnSpec(ef_search=0)


# ----------------------------------------------------------------------------- the engine


def _write_articles(folder: Path, rng: np.random.Generator, n: int, prefix: str) -> Path:
    words = "goal winner header minute keeper striker penalty corner referee offside save cross".split()
    folder.mkdir(parents=True)
    for i in range(n):
        body = " ".join(f"{' '.join(rng.choice(words, 8))} {prefix}{i}w{j}." for j in range(3))
        (folder / f"{prefix}{i}.txt").write_text(f"{prefix} report {i}\n\n{body}\n", encoding="utf-8")
    return folder


def _manifest(root: Path) -> dict:
    gen = (root / "CURRENT").read_text().strip()
    return json.loads((root / gen / "manifest.json").read_text())


def test_segments_added_later_keep_the_recorded_choice(
    hash_engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index records its ANN spec once; adds and LSM merges build with it even after
    the default changes; a rebuild (``index``, ``reindex``) takes the new default."""
    from search.backends import local_write as local

    def default(spec: AnnSpec) -> None:
        monkeypatch.setattr(vx, "DEFAULT_ANN", spec)
        monkeypatch.setattr(local, "DEFAULT_ANN", spec)

    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1)
    default(AnnSpec("ivf", "SQ8", nlist_scale=1.0, nprobe=4))
    rng = np.random.default_rng(16)
    root = hash_engine.path
    hash_engine.add([_write_articles(tmp_path / "a", rng, 20, "a")])
    m = _manifest(root)
    assert m["ann"]["kind"] == "ivf" and m["ann"]["nprobe"] == 4
    default(AnnSpec("hnsw", "SQ8", ef_search=40))
    for i in range(local.MERGE_FANOUT + 1):  # enough writes for an LSM merge
        hash_engine.add([_write_articles(tmp_path / f"b{i}", rng, 2, f"b{i}x")])
    m = _manifest(root)
    assert m["ann"]["kind"] == "ivf"
    assert len(m["segments"]) < local.MERGE_FANOUT + 2, "no merge happened"
    gen = root / (root / "CURRENT").read_text().strip()
    recorded_for_index = AnnSpec.from_dict(m["ann"])
    assert recorded_for_index is not None
    for s in m["segments"]:
        assert AnnSpec.from_dict(s["ann"]) == recorded_for_index.resolved(s["rows"])
        assert ann.kind_of(ann.read(gen / f"{s['name']}.faiss")) == "ivf"
    # the reader searches each segment with the spec its manifest entry records
    assert hash_engine.search("winner header", k=5, mode="dense")
    recorded = {s["name"]: AnnSpec.from_dict(s["ann"]) for s in m["segments"]}
    segs = hash_engine._backend.reader().vector_segments
    assert segs and all(vs.ann == recorded[vs.name] and vs.search_method == "ann" for vs in segs)
    hash_engine.index([tmp_path / "a"])
    m = _manifest(root)
    assert m["ann"]["kind"] == "hnsw" and all(s["ann"]["kind"] == "hnsw" for s in m["segments"])
