"""How a segment keeps its vectors and articles on disk (#17 item 4): sentence vectors as
int8 codes, each distinct row once; passage vectors of a segment with an ANN index as int8
codes; an article's text, record and enrichment compressed; and files older versions wrote
(float16 sentence vectors one row a sentence, float32 or float16 passage vectors, parts as
they are) still read and merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_store import article, tagger

from search import dedup
from search import vectors as vx
from search.backends import local_write
from search.backends.local_segment_format import (
    PACKED,
    PACKED_RECORD,
    enrichment,
    pack,
    pack_record,
    passage_sentences,
    read_enrichment,
    unpack,
)
from search.dedup_index import BandIndex
from search.embed import HashEmbedder
from search.engine import Engine
from search.types import Article
from search.vector_codes import (
    as_float32,
    as_stored,
    decode_unit,
    encode_unit,
    row_digests,
    shared_rows,
    worth_sharing,
)


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


@pytest.mark.parametrize(("dtype", "atol"), [(np.int8, 5e-3), (np.float16, 1e-3)], ids=["int8", "float16"])
def test_rescoring_from_stored_codes_equals_float32_within_tolerance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dtype: Any, atol: float
) -> None:
    """One ANN file, its candidates re-scored from int8 codes (the new format), float16 rows
    (the format before) or float32 rows (an older index): the same rows but for near-ties,
    scores within ``atol``."""
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    rng = np.random.default_rng(4)
    basis = rng.standard_normal((8, 64))
    x = _unit(rng.standard_normal((5000, 8)) @ basis + 0.05 * rng.standard_normal((5000, 64)))
    small, full = tmp_path / "seg-000001.npy", tmp_path / "old" / "seg-000001.npy"
    full.parent.mkdir()
    vx.save_vectors(small, x, None if dtype == np.int8 else dtype)  # int8: the default
    vx.save_vectors(full, x, np.float32)
    assert vx.load_vectors(small).dtype == dtype and vx.load_vectors(full).dtype == np.float32
    spec = vx.write_ann(small)  # built from the stored rows, decoded a chunk at a time
    assert spec is not None
    vx.ann_path(full).write_bytes(vx.ann_path(small).read_bytes())
    live = np.ones(len(x), dtype=bool)
    segs = [vx.VectorSegment("s", vx.load_vectors(p), live, ann=spec) for p in (small, full)]
    assert all(s.search_method == "ann" for s in segs)
    same = 0
    for q in _unit(x[rng.integers(0, len(x), 40)] + 0.3 * rng.standard_normal((40, 64))):
        (s16, r16), (s32, r32) = (s.search(q, 10) for s in segs)
        np.testing.assert_allclose(s16, s32, atol=atol)
        np.testing.assert_allclose(s32[0], x[r32[0]] @ q, atol=1e-5)
        same += len(set(r16[0].tolist()) & set(r32[0].tolist()))
    assert same >= 0.97 * 40 * 10  # only near-ties may swap at the tenth place
    # the exact path over allowed rows and a segment without its ANN file decode the codes too
    allowed = rng.random(len(x)) < 0.02
    q = x[3]
    (sa, ra), (sb, rb) = (s.search(q, 10, allowed) for s in segs)
    assert ra[0].tolist() == rb[0].tolist() and np.allclose(sa, sb, atol=atol)
    plain = vx.VectorSegment("p", vx.load_vectors(small), live, ann_file=None)
    plain.ann_file = None
    assert plain.search(q, 1)[1][0, 0] == 3


def test_stored_rows_convert_between_dtypes() -> None:
    rng = np.random.default_rng(5)
    x = _unit(rng.standard_normal((20, 32)))
    codes = as_stored(x, np.dtype(np.int8))
    assert codes.dtype == np.int8 and np.array_equal(codes, encode_unit(x))
    assert as_stored(codes, np.dtype(np.int8)) is codes  # a merge copies codes as they are
    back = as_stored(codes, np.dtype(np.float32))
    assert back.dtype == np.float32 and np.abs(back - x).max() < 0.01
    assert as_stored(x.astype(np.float16), np.dtype(np.float32)).dtype == np.float32
    assert as_float32(x) is x and np.array_equal(as_float32(codes), decode_unit(codes))


@pytest.mark.parametrize("in_memory", [0, 1 << 20], ids=["read", "in-memory"])
def test_rows_gather_reads_rows_in_the_order_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: int
) -> None:
    monkeypatch.setattr(vx, "GATHER_IN_MEMORY", in_memory)
    rng = np.random.default_rng(6)
    x = rng.integers(-127, 128, (300, 12)).astype(np.int8)
    np.save(tmp_path / "r.npy", x)
    rows = vx.Rows(tmp_path / "r.npy")
    for idx in ([], [5], [7, 7, 3], list(range(40, 60)), rng.integers(0, 300, 50).tolist(), [299, 0]):
        got = rows.gather(np.asarray(idx, dtype=np.int64))
        assert got.shape == (len(idx), 12) and np.array_equal(got, x[idx])


def test_shared_rows_store_each_distinct_row_once() -> None:
    rng = np.random.default_rng(8)
    base = rng.integers(-127, 128, (30, 16)).astype(np.int8)
    x = base[rng.integers(0, 30, 400)]
    x[10] = x[11] ^ 1  # differs in one bit from a row: never shared with it
    first, rowmap = shared_rows(row_digests(x))
    assert (np.diff(first) > 0).all() and len(first) == len(np.unique(x, axis=0))
    assert np.array_equal(x[first][rowmap], x) and rowmap.dtype == np.int32
    assert rowmap[first].tolist() == list(range(len(first)))  # stored in order of first use
    assert worth_sharing(400, len(first), 16) and not worth_sharing(400, 399, 16)


def _rewrite_as_older_version(gen: Path, passages: Any = np.float32) -> None:
    """Rewrite a generation's files as an older version wrote them: sentence vectors
    float16, one row a sentence (no shared rows), passage vectors ``passages`` (float32, or
    float16 as the version before this one wrote an ANN segment's), an article's parts
    uncompressed."""
    for f in gen.glob("seg-*.sentvec.npy"):
        rows = np.load(f)
        m = f.with_name(f.name.replace(".sentvec.", ".sentmap."))
        if m.exists():
            rows = rows[np.load(m)]
            m.unlink()
        np.save(f, decode_unit(rows).astype(np.float16))
    for f in gen.glob("seg-*.npy"):
        if f.name.count(".") == 1:  # seg-N.npy: the passage vectors
            np.save(f, decode_unit(np.load(f)).astype(passages))
    for f in gen.glob("seg-*.store.npy"):
        off, data = np.load(f), f.with_suffix(".bin").read_bytes()
        base = str(f)[: -len(".store.npy")]
        sents, sentoff = np.load(f"{base}.sents.npy"), np.load(f"{base}.sentoff.npy")
        out, new = bytearray(), off.copy()
        for d in range(len(off) - 1):
            ends = [*off[d, :3].tolist(), int(off[d + 1, 0])]
            parts = [unpack(data[a:b]) for a, b in zip(ends, ends[1:])]
            r0, r1 = int(off[d, 3]), int(off[d + 1, 3])
            derived = passage_sentences(sents[sentoff[r0] : sentoff[r1]].tolist())
            ents, spans, _ = read_enrichment(json.loads(parts[2]), lambda d=derived: d)
            old = {"entities": [list(e) for e in ents], "sentences": [list(x) for x in spans]}
            parts[2] = json.dumps(old, ensure_ascii=False, separators=(",", ":")).encode()
            new[d, :3] = [len(out) + sum(len(p) for p in parts[:i]) for i in range(3)]
            out += b"".join(parts)
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


def _build(path: Path, batches: list[list[Article]], older_first: bool, passages: Any = np.float32) -> None:
    for i, b in enumerate(batches):
        with Engine.open(path, create=True, embedder=HashEmbedder(), tagger=tagger) as e:
            e.add(b)
        if i == 0 and older_first:
            _rewrite_as_older_version(path / (path / "CURRENT").read_text().strip(), passages)


@pytest.mark.parametrize("passages", [np.float32, np.float16], ids=["float32", "float16"])
def test_an_older_index_reads_and_merges_into_the_new_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passages: Any
) -> None:
    """The first write's files rewritten as an older version wrote them; a second write
    merges them with a new segment into one with an ANN index. Searches, documents and
    sentence vectors agree with an index written in the new format throughout."""
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 50)  # both writes get an ANN index
    monkeypatch.setattr(local_write, "MERGE_FANOUT", 2)
    batches = [_corpus(60), _corpus(60, offset=100)]
    batches[1][:3] = _copies(batches[0][:3])  # stories filed twice: rows shared across members
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
        _build(old, batches[step - 1 : step], older_first=step == 1, passages=passages)
        gen = old / (old / "CURRENT").read_text().strip()
        sentvec = {np.load(f).dtype for f in gen.glob("seg-*.sentvec.npy")}
        assert sentvec == ({np.dtype(np.float16)} if step == 1 else {np.dtype(np.int8)})
        passage = {np.load(f).dtype for f in gen.glob("seg-*.npy") if f.name.count(".") == 1}
        assert passage == ({np.dtype(passages)} if step == 1 else {np.dtype(np.int8)})
        assert len(list(gen.glob("seg-*.faiss"))) == 1
        (want_hits, want_vecs), (got_hits, got_vecs) = seen(new, step), seen(old, step)
        assert got_hits == want_hits
        assert got_vecs.keys() == want_vecs.keys() and len(got_vecs) == 60 * step
        for d in want_vecs:
            np.testing.assert_allclose(got_vecs[d], want_vecs[d], atol=2e-3)
    segments = json.loads((gen / "manifest.json").read_text())["segments"]
    assert len(segments) == 1 and segments[0]["rows"] > 150 and "ann" in segments[0]
    name = segments[0]["name"]
    assert np.load(gen / f"{name}.npy").dtype == np.int8 and (gen / f"{name}.faiss").exists()
    # the copies' sentence rows are stored once in the merged segment, in both indexes
    for path in (new, old):
        g = path / (path / "CURRENT").read_text().strip()
        rowmap, stored = np.load(g / f"{name}.sentmap.npy"), np.load(g / f"{name}.sentvec.npy")
        assert len(stored) == len(np.unique(stored, axis=0)) < len(rowmap)


def _copies(articles: list[Article]) -> list[Article]:
    return [Article(id=f"{a.id}-copy", title=f"{a.title} (copy)", text=a.text) for a in articles]


def test_sentence_rows_repeated_in_a_write_are_stored_once(tmp_path: Path) -> None:
    """Articles that repeat sentences (a story filed twice, a line every report carries)
    keep one row per distinct sentence vector and a map; every article reads back exactly
    the vectors it reads with the map expanded (one row a sentence, as before), and a write
    without repeats writes no map."""
    line = " Follow the match live on the site."
    arts = [Article(id=a.id, title=a.title, text=a.text + line) for a in _corpus(20)]
    arts += _copies(arts[:5])
    path = tmp_path / "a"
    with Engine.open(path, create=True, embedder=HashEmbedder(), tagger=tagger) as e:
        e.add(arts)

    def vectors() -> dict[str, np.ndarray]:
        with Engine.open(path, embedder=HashEmbedder()) as e:
            docs = [e.get_document(a.id) for a in arts]
            return {d.id: np.asarray(d.sentence_vectors) for d in docs if d is not None}

    got = vectors()
    gen = path / (path / "CURRENT").read_text().strip()
    (mapfile,) = gen.glob("seg-*.sentmap.npy")
    rowmap, stored = np.load(mapfile), np.load(str(mapfile).replace(".sentmap.", ".sentvec."))
    # the line's repeats and the copies' rows are stored once
    assert len(stored) == len(np.unique(stored, axis=0)) <= len(rowmap) - 19
    np.save(str(mapfile).replace(".sentmap.", ".sentvec."), stored[rowmap])
    mapfile.unlink()
    want = vectors()
    assert got.keys() == want.keys() and len(got) == 25
    for d in want:
        assert got[d].dtype == np.float32 and np.array_equal(got[d], want[d])
    for a, c in zip(arts[:5], arts[-5:]):
        assert np.array_equal(got[a.id], got[c.id])
    with Engine.open(tmp_path / "b", create=True, embedder=HashEmbedder(), tagger=tagger) as e:
        e.add(_corpus(3))
    gen = tmp_path / "b" / (tmp_path / "b" / "CURRENT").read_text().strip()
    assert not list(gen.glob("*.sentmap.npy")) and list(gen.glob("*.sentvec.npy"))


def test_an_article_record_is_compressed_with_the_schema_dictionary() -> None:
    rec = {f: None for f in ("id", "title", "source", "url", "published", "published_ts", "path")}
    rec.update(id="bbc/123", title="Messi scores twice", source="BBC Sport", content_hash="ab" * 16)
    raw = json.dumps(rec, separators=(",", ":")).encode()
    packed = pack_record(raw)
    assert packed[0] == PACKED_RECORD and len(packed) < 0.7 * len(raw) and unpack(packed) == raw
    assert len(packed) < len(pack(raw))  # the dictionary pays for records this short
    for raw in (b"", b'{"id":"a"}'):
        assert pack_record(raw) == raw and unpack(raw) == raw


def test_new_segments_store_texts_and_records_compressed(tmp_path: Path) -> None:
    arts = _corpus(12)
    with Engine.open(tmp_path / "i", create=True, embedder=HashEmbedder(), tagger=tagger) as e:
        e.add(arts)
        docs = [e.get_document(a.id) for a in arts]
    assert [(d.id, d.text) for d in docs if d] == [(a.id, a.text) for a in arts]
    gen = tmp_path / "i" / (tmp_path / "i" / "CURRENT").read_text().strip()
    (store,) = gen.glob("seg-*.store.npy")
    off, data = np.load(store), store.with_suffix(".bin").read_bytes()
    heads = {data[int(off[d, c])] for d in range(len(off) - 1) for c in range(3)}
    assert heads == {PACKED, PACKED_RECORD}  # texts and enrichments 0xFF, records 0xFE


def test_an_enrichment_is_written_as_flat_integers_and_read_back() -> None:
    ents = [(0, 5, "PERSON"), (12, 19, "ORG"), (12, 30, "EVENT"), (40, 44, "PERSON")]
    derived = [(0, 10), (11, 35), (36, 50)]
    enr = json.loads(json.dumps(enrichment(ents, [list(x) for x in derived], derived)))
    assert enr == {"l": ["PERSON", "ORG", "EVENT"], "e": [0, 5, 0, 12, 7, 1, 0, 18, 2, 28, 4, 0]}
    assert read_enrichment(enr, lambda: derived) == (ents, derived, [])
    roles = ["nsubj score", "pobj", "dobj beat", "nsubj score"]  # one per entity, each kind once
    enr = json.loads(json.dumps(enrichment(ents, [list(x) for x in derived], derived, roles)))
    assert enr["rl"] == ["nsubj score", "pobj", "dobj beat"] and enr["r"] == [0, 1, 2, 0]
    assert read_enrichment(enr, lambda: derived) == (ents, derived, roles)
    other = [(0, 10), (11, 50)]  # spans the passages do not give: written out
    enr = json.loads(json.dumps(enrichment([], other, derived)))
    assert enr["s"] == [[0, 10], [11, 50]] and read_enrichment(enr, lambda: derived) == ([], other, [])
    old = {"entities": [list(e) for e in ents], "sentences": [list(x) for x in other]}  # older index
    assert read_enrichment(old, lambda: derived) == (ents, other, [])
    assert passage_sentences([[11, 35], [0, 10], [11, 35], [36, 50]]) == derived


def test_narrow_signatures_find_the_same_copies() -> None:
    """Minima compared and stored as their low 16 bits (half the bytes) mark the same
    copies as the full 32 bits; a similarity moves by a minimum at most, and rarely."""
    rng = np.random.default_rng(9)
    words = [f"w{i}" for i in range(400)]
    base = [" ".join(rng.choice(words, 90)) for _ in range(40)]
    texts = []
    for i in range(240):  # copies with a few words changed, and unrelated stories
        t = base[int(rng.integers(0, 40))].split()
        for _ in range(int(rng.integers(0, 8))):
            t[int(rng.integers(0, len(t)))] = str(rng.choice(words))
        texts.append(" ".join(t) if i % 3 else " ".join(rng.choice(words, 90)))
    full = np.stack([dedup.signature(t) for t in texts])
    small = dedup.narrow(full)
    assert small.dtype == np.uint16 and np.array_equal(small, full & 0xFFFF)
    found = []
    for sigs in (full, small):
        index = BandIndex()
        found.append([g for g, _ in index.assign([f"d{i}" for i in range(len(texts))], sigs)])
    assert found[0] == found[1] and sum(g is not None for g in found[0]) > 80
    sim = (full[:, None, :] == full[None, :, :]).mean(axis=2)
    sim16 = (small[:, None, :] == small[None, :, :]).mean(axis=2)
    # a pair's minimum agrees by chance in its low 16 bits once in 65,536 tries
    assert np.abs(sim16 - sim).max() <= 2 / 128 and np.abs(sim16 - sim).mean() < 1e-4


def test_an_older_index_with_full_signatures_still_finds_copies(tmp_path: Path) -> None:
    """Signatures an older version stored (uint32, full minima) are narrowed when compared:
    a copy of a stored story is marked in a later write, and the merged segment keeps
    uint16 minima."""
    arts = _corpus(30)
    path = tmp_path / "i"
    with Engine.open(path, create=True, embedder=HashEmbedder(), tagger=tagger) as e:
        e.add(arts)
    gen = path / (path / "CURRENT").read_text().strip()
    for f in gen.glob("seg-*.minhash.npy"):  # as the older version wrote it
        assert np.load(f).dtype == np.uint16
        np.save(f, np.stack([dedup.signature(a.text) for a in arts]))
    copy = Article(id="copy-of-3", title="Another headline", text=arts[3].text)
    with Engine.open(path, embedder=HashEmbedder(), tagger=tagger) as e:
        report = e.add([copy])
        assert report.duplicates == {"copy-of-3": arts[3].id}
        e.add(_corpus(2, offset=500))
    gen = path / (path / "CURRENT").read_text().strip()
    assert {np.load(f).dtype for f in gen.glob("seg-*.minhash.npy")} <= {
        np.dtype(np.uint16),
        np.dtype(np.uint32),
    }
