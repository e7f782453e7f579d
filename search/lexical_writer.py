"""Writing the lexical index: whoosh segments, their deletion corrections, their postings arrays.

A commit writes whoosh's segments, then the numpy postings of every segment that has none
(:func:`ensure_arrays`; the format is :mod:`search.lexical_postings`'s).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import fields, index
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.codec.base import Segment
from whoosh.filedb.filestore import FileStorage
from whoosh.reading import SegmentReader
from whoosh.util import IDCHARS

from .lexical_bulk import MemoryPool, add_document, fast_writer
from .lexical_postings import (
    BOUND_B,
    FIELDS,
    FORMAT,
    SUFFIX,
    block_postings,
    has_arrays,
    merge_fields,
    reference_avg,
    segment_lengths,
    term_hash,
    term_max,
)
from .lexical_stats import DOCS, Corrections, SegmentCorrection, corrections_file, segment_names

# whoosh names each new segment from Python's global ``random``: a program that seeds it
# (a simulation, a test) identically before two writes makes whoosh reuse a segment name
# and fail. Segment names come from the operating system's randomness instead.
_SEGMENT_IDS = random.SystemRandom()


def _segment_id(cls: Any, size: int = 16) -> str:
    return "".join(_SEGMENT_IDS.choice(IDCHARS) for _ in range(size))


Segment._random_id = classmethod(_segment_id)  # type: ignore[method-assign,assignment]


def make_schema() -> fields.Schema:
    """The passages' (and documents') whoosh fields. ``pid`` is stored, never indexed: a
    search reads it back but nothing looks a passage up by it (deletes go by ``doc_id``),
    and as an indexed ID field each passage added a term, its postings and a term-info
    record: ~150 bytes a passage, 18 MB at 100k (#17 item 4). An index created before keeps
    the schema it recorded, with ``pid`` indexed too, and is read the same way."""
    return fields.Schema(
        pid=fields.STORED(),
        doc_id=fields.ID(stored=False),
        text=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
        title=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
    )


def create(path: Path) -> None:
    """Create an empty lexical index in ``path``: the passages' and the documents' (``docs``)."""
    path.mkdir(parents=True, exist_ok=True)
    for name in ("MAIN", DOCS):
        index.create_in(str(path), make_schema(), indexname=name)
        Corrections().save(path / corrections_file(name))


def _decode_lengths_once(writer: Any) -> None:
    """whoosh's commit looks a document's field length up once per posting it writes (a
    column read and a byte decode each: a tenth of a bulk build); decode each document's
    once instead, with whoosh's own reader, so the segment written is the same."""
    make = writer.per_document_reader

    def per_document_reader() -> Any:
        pdr = make()
        look, n = pdr.doc_field_length, pdr.doc_count_all()
        cols: dict[str, list[Any]] = {}

        def doc_field_length(docnum: int, fieldname: str, default: int = 0) -> Any:
            col = cols.get(fieldname)
            if col is None:
                col = cols[fieldname] = [look(d, fieldname, default) for d in range(n)]
            return col[docnum]

        pdr.doc_field_length = doc_field_length
        return pdr

    writer.per_document_reader = per_document_reader


class LexicalWriter:
    """Adds and deletes passages in a whoosh directory that no reader is using.

    The caller gives each writer a private copy of the directory (hard links: whoosh
    never rewrites a file in place), so readers of the old copy are untouched.
    """

    def __init__(self, path: Path, indexname: str = "MAIN", arrays: bool = True) -> None:
        self.path = Path(path)
        self.indexname = indexname
        self.arrays = arrays
        self._ix = index.FileIndex(FileStorage(str(self.path)), indexname=indexname)
        self._writer = self._ix.writer()
        _decode_lengths_once(self._writer)
        self._fast = fast_writer(self._writer, self.path)  # postings counted and written in bulk
        self._corr = Corrections.load(self.path / corrections_file(indexname))
        self._added = 0

    def delete_doc(self, doc_id: str, analysed_texts: dict[str, str | tuple[str, str]]) -> int:
        """Delete every passage of ``doc_id``; ``analysed_texts`` maps passage id → indexed
        text, or → (indexed text, indexed title)."""
        w = self._writer
        searcher = w.searcher()
        n = 0
        for docnum in list(searcher.document_numbers(doc_id=doc_id)):
            if w.is_deleted(docnum):
                continue
            pid = searcher.stored_fields(docnum)["pid"]
            seg, _ = w._segment_and_docnum(docnum)
            got = analysed_texts.get(pid, "")
            text, title = (got, "") if isinstance(got, str) else got
            terms, tterms = text.split(), title.split()
            c = self._corr.segments.setdefault(seg.segment_id(), SegmentCorrection())
            c.docs += 1
            c.length += len(terms)
            c.df.update(set(terms))
            c.title_length += len(tterms)
            c.title_df.update(set(tterms))
            w.delete_document(docnum)
            n += 1
        return n

    def add(self, pid: str, doc_id: str, analysed_text: str, analysed_title: str = "") -> None:
        add = add_document if self._fast else type(self._writer).add_document
        add(self._writer, pid=pid, doc_id=doc_id, text=analysed_text, title=analysed_title)
        self._added += 1

    def commit(self, optimize: bool = False, merge: bool = True) -> None:
        # The segment this commit writes, and the postings it is written from (merged ones too).
        pools = {self._writer.newsegment.segment_id(): self._writer.pool} if self._fast else {}
        try:
            self._writer.commit(optimize=optimize, merge=merge)
            # Corrections of segments that a merge rewrote are no longer needed.
            live = set(segment_names(index.FileIndex(FileStorage(str(self.path)), indexname=self.indexname)))
            self._corr.segments = {k: v for k, v in self._corr.segments.items() if k in live}
            self._corr.save(self.path / corrections_file(self.indexname))
            if self.arrays:
                # The new (or merged) segments' postings as arrays: queries never decode whoosh blocks.
                ix = index.FileIndex(FileStorage(str(self.path)), indexname=self.indexname)
                ensure_arrays(self.path, ix, pools)
        finally:
            self._release()

    def _release(self) -> None:
        if self._fast:
            self._writer.pool.release()  # and any postings it spilled to disk

    def cancel(self) -> None:
        try:
            self._writer.cancel()
        except Exception:  # pragma: no cover
            pass
        self._release()


#: Postings decoded and held at once while a segment's arrays are written (~40 bytes
#: each): a segment of any size is written in bounded memory.
WRITE_CHUNK = 2_000_000


class _Sink:
    """Appends one array's values to a raw file, then turns it into a ``.npy`` in the
    narrowest unsigned type that holds them (chunk by chunk: bounded memory)."""

    def __init__(self, path: Path, dtype: type) -> None:
        self.path, self.dtype, self.n, self.max = path, np.dtype(dtype), 0, 0
        self.raw = Path(f"{path}.raw")
        self._f = open(self.raw, "wb")

    def append(self, a: np.ndarray) -> None:
        if len(a):
            self._f.write(np.ascontiguousarray(a, dtype=self.dtype).tobytes())
            self.n += len(a)
            self.max = max(self.max, int(a.max()))

    def finish(self, narrow: bool = True, dtype: Any = None) -> None:
        """``narrow``: the narrowest unsigned type; else ``dtype``, else the raw one."""
        self._f.close()
        dtype = np.dtype(dtype or self.dtype)
        if narrow:
            dtype = next(
                np.dtype(t)
                for t in (np.uint8, np.uint16, np.uint32, np.uint64)
                if self.max <= np.iinfo(t).max
            )
        if not self.n:
            _save(self.path, np.zeros(0, dtype))
        else:
            # Read and written a chunk at a time, not memory-mapped: mapping both files made
            # their pages count in the writer's resident set (~0.7 GB at 1M passages).
            header = {
                "descr": np.lib.format.dtype_to_descr(dtype),
                "fortran_order": False,
                "shape": (self.n,),
            }
            with open(self.raw, "rb") as src, open(self.path, "wb") as out:
                np.lib.format.write_array_header_1_0(out, header)
                for _ in range(0, self.n, WRITE_CHUNK):
                    np.fromfile(src, dtype=self.dtype, count=WRITE_CHUNK).astype(dtype).tofile(out)
        self.raw.unlink()


def write_segment(directory: Path, reader: Any, pool: MemoryPool | None = None) -> None:
    """Write one whoosh segment's postings as arrays beside it (see the module docstring).

    Terms go in the order of their hash (the dictionary's order); each is decoded from
    whoosh's blocks (or taken from ``pool``, the postings the segment was just written
    from: the same values, without decoding them back), its text and title postings
    merged, and appended to the arrays in chunks of about WRITE_CHUNK postings.
    """
    segid = reader.segment().segment_id()
    prefix = f"{directory / segid}{SUFFIX}"
    n = reader.doc_count_all()
    lens = segment_lengths(reader)
    ref = reference_avg(lens)
    terms_reader = reader._terms
    fmt = {name: reader.schema[name].format for name in FIELDS}
    in_field: dict[str, set[bytes]] = {name: set() for name in FIELDS}
    if pool is not None:
        for name in FIELDS:
            in_field[name].update(pool.term_list(name))
    else:
        for fieldname, tbytes in terms_reader.terms():
            if fieldname in in_field:
                in_field[fieldname].add(tbytes)
    vocab = sorted(in_field["text"] | in_field["title"])
    hashes = np.array([term_hash(t.decode("utf-8")) for t in vocab], dtype=np.uint64)
    order = np.argsort(hashes, kind="stable")
    vocab = [vocab[i] for i in order]
    sinks = {
        name: _Sink(Path(f"{prefix}.{name}.npy"), dt)
        for name, dt in (("docs", np.int32), ("tfx", np.uint32), ("tpos", np.int64), ("ttf", np.uint32))
    }
    off = np.zeros(len(vocab) + 1, dtype=np.int64)
    dftext = np.zeros(len(vocab), dtype=np.int32)
    tmax = np.zeros((len(vocab), 2), dtype=np.float32)
    chunk: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    first = held = 0

    def decode(field: str, tbytes: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        if tbytes not in in_field[field]:
            return None
        if pool is not None:  # what whoosh reads back: float32 weights, ascending documents
            docs, weights, _, _ = pool.postings(field, tbytes)
            return docs.astype(np.int32), weights.astype(np.float32).astype(np.float64)
        info = terms_reader.term_info(field, tbytes)
        return block_postings(reader._codec.postings_reader(terms_reader._postfile, info, fmt[field]))

    def flush(upto: int) -> None:
        """Write the held terms ``first:upto``: their postings, df and largest pseudo frequency."""
        nonlocal chunk, first, held
        if chunk:
            docs, tfx, tft = (np.concatenate([c[i] for c in chunk]) for i in range(3))
            starts = off[first:upto] - off[first]
            dftext[first:upto] = np.add.reduceat(tfx > 0, starts)  # no list is empty (whoosh keeps none)
            tmax[first:upto] = term_max(starts, docs, tfx, tft, lens, ref)
            titled = np.flatnonzero(tft)
            for name, a in (
                ("docs", docs),
                ("tfx", tfx),
                ("tpos", titled + off[first]),
                ("ttf", tft[titled]),
            ):
                sinks[name].append(a)
        chunk, first, held = [], upto, 0

    try:
        for i, tbytes in enumerate(vocab):
            docs, tfx, tft = merge_fields(decode("text", tbytes), decode("title", tbytes))
            chunk.append((docs, tfx, tft))
            off[i + 1] = off[i] + len(docs)
            held += len(docs)
            if held >= WRITE_CHUNK:
                flush(i + 1)
        flush(len(vocab))
        sinks["docs"].finish(narrow=False)
        sinks["tfx"].finish()
        sinks["tpos"].finish(narrow=False, dtype=np.int32 if sinks["tpos"].max < 2**31 else np.int64)
        sinks["ttf"].finish()
    finally:
        for sink in sinks.values():
            sink.raw.unlink(missing_ok=True)
    toff = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in vocab], out=toff[1:])
    keys = _Sink(Path(f"{prefix}.pkeys.npy"), np.uint8)
    koff = np.zeros(n + 1, dtype=np.int64)
    try:
        for start in range(0, n, 65536):
            got = [
                str(reader._perdoc.stored_fields(i).get("pid", "")).encode("utf-8")
                for i in range(start, min(start + 65536, n))
            ]
            np.cumsum([len(k) for k in got], out=koff[start + 1 : start + 1 + len(got)])
            koff[start + 1 : start + 1 + len(got)] += koff[start]
            keys.append(np.frombuffer(b"".join(got), dtype=np.uint8))
        keys.finish(narrow=False)
    finally:
        keys.raw.unlink(missing_ok=True)
    arrays: dict[str, np.ndarray] = {
        "keys": hashes[order],
        "tblob": np.frombuffer(b"".join(vocab), dtype=np.uint8),
        "toff": toff,
        "off": off,
        "dftext": dftext,
        "tmax": tmax,
        "lens": lens,
        "pkoff": koff,
    }
    for name, a in arrays.items():
        _save(Path(f"{prefix}.{name}.npy"), a)
    meta = {
        "format": FORMAT,
        "docs": n,
        "terms": len(vocab),
        "postings": int(off[-1]),
        "bound_b": BOUND_B,
        "reference_avg": list(ref),
    }
    tmp = Path(f"{prefix}.json.tmp")
    tmp.write_text(json.dumps(meta), encoding="utf-8")
    os.replace(tmp, f"{prefix}.json")


def _save(path: Path, a: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.save(f, np.ascontiguousarray(a), allow_pickle=False)


def ensure_arrays(directory: Path, ix: Any, pools: dict[str, MemoryPool] | None = None) -> int:
    """Write arrays for every segment of a whoosh index that has none; how many were written.

    Which segments lack arrays is read from the table of contents, and only those
    segments are opened: whoosh's index reader loads every segment's term index (0.36 s
    at 1M passages, on every commit)."""
    missing = [s for s in ix._segments() if s.doc_count_all() and not has_arrays(directory, s.segment_id())]
    schema = ix.schema if missing else None
    for seg in missing:  # each segment's own reader: not every segment's term index
        with SegmentReader(ix.storage, schema, seg) as leaf:
            write_segment(directory, leaf, (pools or {}).get(seg.segment_id()))
    return len(missing)
