"""The bulk postings path writes the very bytes whoosh writes itself (#17 item 5)."""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from whoosh import fields, index
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.filedb.filestore import FileStorage

from search import lexical_writer as lw
from search.lexical_bulk import MemoryPool, add_document, fast_writer
from search.lexical_postings import SUFFIX

WORDS = [f"w{i}" for i in range(300)] + ["é", "naïve", "straße", "x" * 40, "über", "日本"]


def _old_schema() -> fields.Schema:
    # An index made before pid stopped being indexed, plus a field whoosh analyses itself
    # (positions, its standard analyzer): the generic path, beside the bulk one.
    return fields.Schema(
        pid=fields.ID(stored=True),
        doc_id=fields.ID(stored=False),
        text=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
        title=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
        note=fields.TEXT(stored=True),
    )


def _docs(seed: int, n: int, note: bool) -> list[dict[str, Any]]:
    r = random.Random(seed)
    out = []
    for i in range(n):
        vocab = WORDS[: r.randint(1, len(WORDS))]
        k = r.choice([0, 1, 5, 60, 400]) if i % 7 else 3000  # some terms far past one block
        doc = {
            "pid": f"p{seed}-{i}",
            "doc_id": f"d{seed}-{i // 3}" if i % 11 else "",
            "text": " ".join(r.choice(vocab) for _ in range(k)),
            "title": " ".join(r.choice(WORDS) for _ in range(r.randint(0, 6))),
        }
        if note:
            doc["note"] = "The Quick brown fox, again and AGAIN."[: r.randint(0, 30)]
        out.append(doc)
    return out


def _build(path: Path, schema: fields.Schema, fast: bool, batches: int, optimize: bool) -> list[Any]:
    path.mkdir(parents=True)
    index.create_in(str(path), schema, indexname="MAIN")
    note = "note" in schema.names()
    for b in range(batches):
        ix = index.FileIndex(FileStorage(str(path)), indexname="MAIN")
        w = ix.writer()
        if fast:
            assert fast_writer(w)
        for d in _docs(b, 400 if b == 0 else 30, note):
            (add_document if fast else type(w).add_document)(w, **d)
        if b in (3, 6):  # deletes in a big and in a small segment, merged away later
            w.delete_by_term("doc_id", "d0-5")
            w.delete_by_term("doc_id", f"d{b - 2}-2")
        w.commit(optimize=optimize and b == batches - 1)
    return list(index.FileIndex(FileStorage(str(path)), indexname="MAIN")._segments())


def _files(path: Path, seg: Any) -> list[tuple[str, str]]:
    """A compound segment's files, named without the segment's random id, by content."""
    store = seg.open_compound_file(FileStorage(str(path)))
    out = []
    for name in store.list():
        f = store.open_file(name)
        out.append((name.replace(seg.segment_id(), "ID"), hashlib.sha1(f.read()).hexdigest()))
        f.close()
    return sorted(out)


@pytest.mark.parametrize("schema", [lw.make_schema, _old_schema], ids=["schema", "old-schema"])
@pytest.mark.parametrize("batches,optimize", [(1, False), (12, False), (5, True)])
def test_bulk_segments_are_whooshs_bytes(tmp_path: Path, schema: Any, batches: int, optimize: bool) -> None:
    ours = _build(tmp_path / "ours", schema(), True, batches, optimize)
    whoosh = _build(tmp_path / "whoosh", schema(), False, batches, optimize)
    assert [s.doc_count_all() for s in ours] == [s.doc_count_all() for s in whoosh]
    assert [s.deleted_count() for s in ours] == [s.deleted_count() for s in whoosh]
    if batches == 12:
        assert len(ours) < batches  # whoosh's merges ran, through the pool's generic path
    for a, b in zip(ours, whoosh):
        got, want = _files(tmp_path / "ours", a), _files(tmp_path / "whoosh", b)
        assert {n for n, _ in got} >= {"ID.pst", "ID.trm", "ID._stored.col"}
        assert got == want


def test_pool_keeps_a_posting_its_format_cannot_derive() -> None:
    # A weight no frequency explains (a boosted posting) is kept as it came, in order.
    pool = MemoryPool(lw.make_schema())
    pool.add_counts("text", 3, {"goal": 2})
    pool.add(("text", b"goal", 1, 7.5, b"\x00\x00\x00\x01"))
    docs, weights, _, values = pool.postings("text", b"goal")
    assert docs.tolist() == [1, 3]
    assert weights.tolist() == [7.5, 2.0]
    assert values == [b"\x00\x00\x00\x01", b"\x00\x00\x00\x02"]
    assert list(pool.iter_postings()) == [
        ("text", b"goal", 1, 7.5, b"\x00\x00\x00\x01"),
        ("text", b"goal", 3, 2.0, b"\x00\x00\x00\x02"),
    ]


def test_arrays_from_the_pool_are_the_decoded_ones(tmp_path: Path) -> None:
    # A segment's numpy postings, written from the postings it was just written from,
    # equal the ones decoded back from whoosh's blocks (merged segments included).
    src = tmp_path / "lex"
    lw.create(src)
    for b in range(8):
        w = lw.LexicalWriter(src)
        assert w._fast
        for d in _docs(b, 300 if b == 0 else 25, False):
            w.add(d["pid"], d["doc_id"], d["text"], d["title"])
        w.commit()
    made = sorted(p for p in src.iterdir() if SUFFIX in p.name)
    assert made
    redo = tmp_path / "redo"
    shutil.copytree(src, redo)
    for p in redo.iterdir():
        if SUFFIX in p.name:
            p.unlink()
    assert lw.ensure_arrays(redo, index.FileIndex(FileStorage(str(redo)), indexname="MAIN")) >= 1
    for p in made:
        q = redo / p.name
        if p.suffix == ".npy":
            assert np.array_equal(np.load(p), np.load(q)), p.name
        else:
            assert p.read_bytes() == q.read_bytes(), p.name


def test_a_pool_past_its_limit_spills_and_writes_the_same(tmp_path: Path) -> None:
    # A write bigger than the pool's memory spills sorted runs to disk and merges them
    # back: the segment is still whoosh's bytes, and the runs are gone after the commit.
    def build(path: Path, limit_mb: float | None) -> list[Any]:
        lw.create(path)
        w = lw.LexicalWriter(path)
        if limit_mb is not None:
            w._writer.pool.limit = limit_mb * 2**20
        for d in _docs(1, 600, False):
            w.add(d["pid"], d["doc_id"], d["text"], d["title"])
        spilled = sum(len(r) for r in w._writer.pool.runs.values())
        w.commit()
        assert not [p for p in path.iterdir() if p.name.startswith("pool-")]
        return [spilled, *index.FileIndex(FileStorage(str(path)), indexname="MAIN")._segments()]

    small, *ours = build(tmp_path / "small", 0.05)
    none, *whole = build(tmp_path / "whole", None)
    assert small >= 6 and none == 0
    for a, b in zip(ours, whole, strict=True):
        assert _files(tmp_path / "small", a) == _files(tmp_path / "whole", b)
    for p in (tmp_path / "whole").iterdir():
        if SUFFIX in p.name and p.suffix == ".npy":
            assert np.array_equal(
                np.load(p), np.load(tmp_path / "small" / p.name.replace(*_seg(whole, ours)))
            )


def _seg(a: list[Any], b: list[Any]) -> tuple[str, str]:
    return a[0].segment_id(), b[0].segment_id()
