"""How a segment keeps its vectors and articles on disk (#17 item 4): sentence vectors as
int8 codes, passage vectors of a segment with an ANN index as float16, an article's parts
compressed; and files an older version wrote (float16 sentence vectors, float32 passage
vectors, parts as they are) still read and merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_store import article, tagger

from search import vectors as vx
from search.backends import local_write
from search.backends.local_segment_format import PACKED, pack, unpack
from search.embed import HashEmbedder
from search.engine import Engine
from search.types import Article
from search.vector_codes import decode_unit, encode_unit


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def test_int8_codes_round_trip_within_a_small_cosine_error() -> None:
    rng = np.random.default_rng(3)
    basis = rng.standard_normal((16, 384))  # few degrees of freedom, like text embeddings
    x = _unit(rng.standard_normal((2000, 16)) @ basis + 0.1 * rng.standard_normal((2000, 384)))
    x[7] = 0.0  # a sentence without a vector
    codes = encode_unit(x)
    assert codes.dtype == np.int8 and codes.shape == x.shape
    assert (np.abs(codes).max(axis=1)[np.arange(len(x)) != 7] == 127).all()
    back = decode_unit(codes)
    assert back.dtype == np.float32 and not back[7].any()
    norms = np.linalg.norm(np.delete(back, 7, axis=0), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-6)
    q = _unit(rng.standard_normal((50, 16)) @ basis)
    err = np.abs(back @ q.T - x @ q.T)
    assert err.max() < 0.005 and err.mean() < 0.001
    # decoded codes encode to the same codes: a merge copies or re-encodes alike
    assert np.array_equal(encode_unit(back), codes)
    # float rows (an older file) are read as stored
    old = x.astype(np.float16)
    assert decode_unit(old) is old


def test_float16_rescoring_equals_float32_within_tolerance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ANN file, its candidates re-scored from float16 rows (the new format) or from
    float32 rows (an older index): the same rows, scores within 1e-3."""
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    rng = np.random.default_rng(4)
    basis = rng.standard_normal((8, 64))
    x = _unit(rng.standard_normal((5000, 8)) @ basis + 0.05 * rng.standard_normal((5000, 64)))
    half, full = tmp_path / "seg-000001.npy", tmp_path / "old" / "seg-000001.npy"
    full.parent.mkdir()
    vx.save_vectors(half, x)
    vx.save_vectors(full, x, np.float32)
    assert vx.load_vectors(half).dtype == np.float16 and vx.load_vectors(full).dtype == np.float32
    spec = vx.write_ann(half)  # built from the float16 file, a chunk at a time
    assert spec is not None
    vx.ann_path(full).write_bytes(vx.ann_path(half).read_bytes())
    live = np.ones(len(x), dtype=bool)
    segs = [vx.VectorSegment("s", vx.load_vectors(p), live, ann=spec) for p in (half, full)]
    assert all(s.search_method == "ann" for s in segs)
    same = 0
    for q in _unit(x[rng.integers(0, len(x), 40)] + 0.3 * rng.standard_normal((40, 64))):
        (s16, r16), (s32, r32) = (s.search(q, 10) for s in segs)
        np.testing.assert_allclose(s16, s32, atol=1e-3)
        np.testing.assert_allclose(s32[0], x[r32[0]] @ q, atol=1e-5)
        same += len(set(r16[0].tolist()) & set(r32[0].tolist()))
    assert same >= 0.98 * 40 * 10  # only near-ties may swap at the tenth place


def _rewrite_as_older_version(gen: Path) -> None:
    """Rewrite a generation's files as the version before this format wrote them: sentence
    vectors float16, passage vectors float32, an article's text and records uncompressed."""
    for f in gen.glob("seg-*.sentvec.npy"):
        np.save(f, decode_unit(np.load(f)).astype(np.float16))
    for f in gen.glob("seg-*.npy"):
        if f.name.count(".") == 1:  # seg-N.npy: the passage vectors
            np.save(f, np.load(f).astype(np.float32))
    for f in gen.glob("seg-*.store.npy"):
        off, data = np.load(f), f.with_suffix(".bin").read_bytes()
        out, new = bytearray(), off.copy()
        for d in range(len(off) - 1):
            ends = [*off[d, :3].tolist(), int(off[d + 1, 0])]
            new[d, :3] = [
                len(out) + sum(len(unpack(data[a:b])) for a, b in zip(ends[:i], ends[1 : i + 1]))
                for i in range(3)
            ]
            out += b"".join(unpack(data[a:b]) for a, b in zip(ends, ends[1:]))
        new[-1, :3] = len(out)
        assert len(out) > len(data)  # the new format had compressed parts
        f.with_suffix(".bin").write_bytes(bytes(out))
        np.save(f, new)


def _approx(obj: Any) -> Any:
    """``obj`` with every float compared within 1e-3 (scores read float16 rows in one index)."""
    if isinstance(obj, float):
        return pytest.approx(obj, abs=1e-3)
    if isinstance(obj, dict):
        return {k: _approx(v) for k, v in obj.items()}
    return [_approx(v) for v in obj] if isinstance(obj, list) else obj


def _corpus(n: int, offset: int = 0) -> list[Article]:
    rng = np.random.default_rng(7 + offset)
    return [article(i + offset, rng) for i in range(n)]


def _build(path: Path, batches: list[list[Article]], older_first: bool) -> None:
    for i, b in enumerate(batches):
        with Engine.open(path, create=True, embedder=HashEmbedder(), tagger=tagger) as e:
            e.add(b)
        if i == 0 and older_first:
            _rewrite_as_older_version(path / (path / "CURRENT").read_text().strip())


def test_an_older_index_reads_and_merges_into_the_new_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write's files rewritten as the older version wrote them; a second write
    merges them with a new segment into one with an ANN index. Searches, documents and
    sentence vectors agree with an index written in the new format throughout."""
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 50)  # both writes get an ANN index
    monkeypatch.setattr(local_write, "MERGE_FANOUT", 2)
    batches = [_corpus(60), _corpus(60, offset=100)]
    new, old = tmp_path / "new", tmp_path / "old"

    def seen(path: Path, step: int) -> tuple[list[Any], dict[str, np.ndarray]]:
        with Engine.open(path, embedder=HashEmbedder()) as e:
            hits: list[Any] = [
                [h.passage.id for h in e.search(q, k=8, mode=m)]
                for q in ("penalty header", "keeper derby corner", "Player12 Scored")
                for m in ("dense", "hybrid")
            ]
            docs = [e.get_document(a.id) for b in batches[:step] for a in b]
            hits += [(d.id, d.title, d.text, d.metadata, d.entities, d.sentences) for d in docs]
            hits += [e.passages_of(d.id) for d in docs]
            hits.append(_approx({**e.ask("who scored the penalty").to_dict(), "took_ms": 0}))
            vecs = {d.id: np.asarray(d.sentence_vectors, np.float32) for d in docs}
        return hits, vecs

    for step in (1, 2):  # older files read as they are; then merged with a new segment
        _build(new, batches[step - 1 : step], older_first=False)
        _build(old, batches[step - 1 : step], older_first=step == 1)
        gen = old / (old / "CURRENT").read_text().strip()
        sentvec = {np.load(f).dtype for f in gen.glob("seg-*.sentvec.npy")}
        assert sentvec == ({np.dtype(np.float16)} if step == 1 else {np.dtype(np.int8)})
        passage = {np.load(f).dtype for f in gen.glob("seg-*.npy") if f.name.count(".") == 1}
        assert passage == ({np.dtype(np.float32)} if step == 1 else {np.dtype(np.float16)})
        assert len(list(gen.glob("seg-*.faiss"))) == 1
        (want_hits, want_vecs), (got_hits, got_vecs) = seen(new, step), seen(old, step)
        assert got_hits == want_hits
        assert got_vecs.keys() == want_vecs.keys() and len(got_vecs) == 60 * step
        for d in want_vecs:
            np.testing.assert_allclose(got_vecs[d], want_vecs[d], atol=2e-3)
    segments = json.loads((gen / "manifest.json").read_text())["segments"]
    assert len(segments) == 1 and segments[0]["rows"] > 150 and "ann" in segments[0]
    name = segments[0]["name"]
    assert np.load(gen / f"{name}.npy").dtype == np.float16 and (gen / f"{name}.faiss").exists()


def test_an_article_part_is_compressed_when_that_is_shorter() -> None:
    text = ("Lautaro Martinez headed home the winner in the 92nd minute. " * 20).encode()
    packed = pack(text)
    assert packed[0] == PACKED and len(packed) < len(text) / 4 and unpack(packed) == text
    for raw in (b"", b'{"id":"a"}', "Été à Zürich".encode(), np.random.default_rng(0).bytes(500)):
        assert pack(raw) == raw and unpack(raw) == raw  # too short, or nothing to gain: as it is
    # an uncompressed part never starts with the marker: UTF-8 text and JSON cannot
    assert all(PACKED not in s.encode("utf-8", "surrogatepass")[:1] for s in ("\udcff", "\xff", "{"))
