"""Writing whoosh's postings in bulk: the same segment files, without whoosh's per-posting Python.

whoosh adds a document by running each field's analyzer, pickling every posting into an
external-sort pool, and at commit merging the sorted runs back and handing the codec one
posting at a time. In a bulk build that was two thirds of the time without the model
(#17 item 5): 48 s of a 70 s build of 20k passages (~2.4M postings) under cProfile; a
100k build went 194 s -> 86 s with this module alone.

Our fields' text is analysed already (``search.text``: space-separated terms), so
:class:`MemoryPool` counts each document's terms itself and holds every term's postings
as two compact arrays (document numbers and frequencies: 8 bytes a posting). At commit
:func:`write_postings` hands the codec whole blocks, filled in the postings writer's own
buffers and written by its own block writer: the bytes are the ones whoosh writes itself
(``tests/test_lexical_bulk.py`` compares the files). Only fields whose analyzer and format
it knows take this path (space-separated terms with frequencies, whole-value IDs); any
other field, and whoosh's own merges, add postings one by one, into the same pool.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import formats
from whoosh.analysis import IDTokenizer, RegexTokenizer
from whoosh.codec.whoosh3 import W3Codec, W3FieldWriter
from whoosh.system import pack_uint
from whoosh.writing import SegmentWriter

_SPACE_SEPARATED = r"[^ \t\r\n]+"  # whoosh's SpaceSeparatedTokenizer
_split = re.compile(_SPACE_SEPARATED).findall
_COMPACT = (formats.Frequency, formats.Existence)  # a posting is its frequency: weight and value follow


#: Postings one writer's pool holds in memory before spilling them to disk (whoosh's own
#: pool: 128 MB of pickled tuples; ours ~9 bytes a posting, so ~15M postings). A write has
#: two writers (passages and documents). At 1M passages 256 MB each measured a 1.6 GB
#: lexical process; at 64 MB its memory stays flat at ~160 MB from 300k passages on.
POOL_MB = 128.0


class _Run:
    """One field's spilled postings: its terms in byte order, and each term's documents
    and frequencies contiguous in two files, read back a term at a time (``pread``: not
    memory-mapped, so reading them all back does not grow the process's resident set)."""

    def __init__(self, path: Path, terms: list[bytes], off: np.ndarray) -> None:
        self.terms, self.off = terms, off
        self._docs = os.open(f"{path}.docs", os.O_RDONLY)
        self._freqs = os.open(f"{path}.freqs", os.O_RDONLY)

    @classmethod
    def write(cls, path: Path, field: dict[bytes, tuple[array, array]]) -> _Run:
        terms = sorted(field)
        off = np.zeros(len(terms) + 1, dtype=np.int64)
        with open(f"{path}.docs", "wb") as fd, open(f"{path}.freqs", "wb") as ff:
            for i, t in enumerate(terms):
                ids, freqs = field[t]
                fd.write(ids)
                ff.write(freqs)
                off[i + 1] = off[i] + len(ids)
        return cls(path, terms, off)

    def get(self, tbytes: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        i = bisect_left(self.terms, tbytes)
        if i == len(self.terms) or self.terms[i] != tbytes:
            return None
        a, n = int(self.off[i]) * 4, int(self.off[i + 1] - self.off[i]) * 4
        return (
            np.frombuffer(os.pread(self._docs, n, a), dtype=np.uint32),
            np.frombuffer(os.pread(self._freqs, n, a), dtype=np.uint32),
        )

    def close(self) -> None:
        os.close(self._docs)
        os.close(self._freqs)


def _kind(field: Any) -> str | None:
    """How a field's terms are counted here: "words" (space-separated, frequencies), "id"
    (the whole value, presence), or None (whoosh's own analysis)."""
    if not field.indexed or field.separate_spelling() or field.vector or field.column_type:
        return None
    ana, fmt = field.analyzer, field.format
    if type(fmt) is formats.Frequency and isinstance(ana, RegexTokenizer):
        if ana.expression.pattern == _SPACE_SEPARATED and not ana.gaps:
            return "words"
    if type(fmt) is formats.Existence and type(ana) is IDTokenizer:
        return "id"
    return None


class MemoryPool:
    """whoosh's posting pool (``add``, ``iter_postings``, ``cleanup``) held in memory:
    per field and term, the document numbers and frequencies as arrays.

    A posting from whoosh's generic path (a merge of older segments) is kept the same way
    when its weight and value are the ones its format derives from its frequency, as every
    posting of our fields' formats is; any other is kept as it came (``exact``)."""

    def __init__(self, schema: Any, folder: Path | None = None, limit_mb: float = POOL_MB) -> None:
        self.schema = schema
        self.terms: dict[str, dict[bytes, tuple[array, array]]] = {}
        self.exact: dict[tuple[str, bytes], list[tuple[int, float, bytes]]] = {}
        self.runs: dict[str, list[_Run]] = {}  # spilled postings, oldest first
        self.folder, self.limit = folder, limit_mb * 2**20
        self._dir: Path | None = None
        self._postings = self._terms = 0  # held in memory, for the size estimate
        self._spilled = 0

    def full(self) -> bool:
        # ~8 bytes a posting in the arrays, ~250 a term (its key, two arrays, a dict slot).
        return self.folder is not None and 8 * self._postings + 250 * self._terms > self.limit

    def spill(self) -> None:
        """Write the postings held in memory to disk, a run per field (sorted terms, their
        postings contiguous, memory-mapped back): a write of any size holds at most
        ``limit_mb`` of postings, as whoosh's own pool does."""
        if self._dir is None:
            assert self.folder is not None
            self._dir = Path(tempfile.mkdtemp(prefix="pool-", dir=self.folder))
        for fieldname, field in self.terms.items():
            if field:
                self._spilled += 1
                path = self._dir / f"{self._spilled}-{fieldname}"
                self.runs.setdefault(fieldname, []).append(_Run.write(path, field))
                field.clear()
        self._postings = self._terms = 0

    def release(self) -> None:
        """Drop everything, spilled runs included."""
        self.terms.clear()
        self.exact.clear()
        for runs in self.runs.values():
            for run in runs:
                run.close()
        self.runs.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def fields(self) -> list[str]:
        return sorted(self.terms)

    def term_list(self, fieldname: str) -> list[bytes]:
        """The field's terms, in byte order (whoosh's)."""
        got = set(self.terms.get(fieldname, ()))
        got.update(t for f, t in self.exact if f == fieldname)
        for run in self.runs.get(fieldname, ()):
            got.update(run.terms)
        return sorted(got)

    def _field(self, fieldname: str) -> dict[bytes, tuple[array, array]]:
        field = self.terms.get(fieldname)
        if field is None:
            field = self.terms[fieldname] = {}
        return field

    def _lists(self, fieldname: str, tbytes: bytes) -> tuple[array, array]:
        field = self._field(fieldname)
        got = field.get(tbytes)
        if got is None:
            got = field[tbytes] = (array("I"), array("I"))
            self._terms += 1
        return got

    def add_counts(self, fieldname: str, docnum: int, counts: dict[str, int]) -> None:
        """One document's terms of one field, each with its frequency."""
        field = self._field(fieldname)
        get = field.get  # inlined _lists: this runs once per posting
        before = len(field)
        for term, freq in counts.items():
            tbytes = term.encode("utf-8")
            got = get(tbytes)
            if got is None:
                got = field[tbytes] = (array("I"), array("I"))
            got[0].append(docnum)
            got[1].append(freq)
        self._terms += len(field) - before
        self._postings += len(counts)

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, tbytes, docnum, weight, vbytes = item
        fmt = self.schema[fieldname].format
        freq = fmt.decode_frequency(vbytes) if vbytes else 1
        if type(fmt) in _COMPACT and weight == _weight(fmt, freq) and (vbytes or b"") == _encode(fmt, freq):
            ids, freqs = self._lists(fieldname, tbytes)
            ids.append(docnum)
            freqs.append(freq)
        else:
            self._field(fieldname)
            self.exact.setdefault((fieldname, tbytes), []).append((docnum, weight, vbytes or b""))
        self._postings += 1
        if self.full():
            self.spill()

    def postings(
        self, fieldname: str, tbytes: bytes
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[bytes] | None]:
        """A term's document numbers, weights (as whoosh's pool holds them), frequencies
        and values (None: derived from the frequencies), in document order."""
        fmt = self.schema[fieldname].format
        parts = [got for run in self.runs.get(fieldname, ()) if (got := run.get(tbytes)) is not None]
        held = self.terms.get(fieldname, {}).get(tbytes)
        if held is not None and len(held[0]):
            parts.append((np.frombuffer(held[0], np.uint32), np.frombuffer(held[1], np.uint32)))
        if len(parts) == 1:
            docs, fr = parts[0]
        elif parts:
            docs, fr = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        else:
            docs, fr = np.zeros(0, np.uint32), np.zeros(0, np.uint32)
        weights = _weights(fmt, fr)
        extra = self.exact.get((fieldname, tbytes))
        if not extra:
            if len(docs) > 1 and not np.all(docs[1:] >= docs[:-1]):
                order = np.argsort(docs, kind="stable")
                return docs[order], weights[order], fr[order], None
            return docs, weights, fr, None
        rows = [(int(d), float(w), _encode(fmt, int(f))) for d, w, f in zip(docs, weights, fr)] + extra
        rows.sort(key=lambda r: r[0])
        return (
            np.array([r[0] for r in rows], np.uint32),
            np.array([r[1] for r in rows], np.float64),
            np.zeros(0, np.uint32),
            [r[2] for r in rows],
        )

    def iter_postings(self) -> Iterator[tuple[str, bytes, int, float, bytes]]:
        """Every posting in whoosh's order (field, term, document), as its pool yields them."""
        for fieldname in self.fields():
            fmt = self.schema[fieldname].format
            for tbytes in self.term_list(fieldname):
                docs, weights, freqs, values = self.postings(fieldname, tbytes)
                if values is None:
                    values = [_encode(fmt, int(f)) for f in freqs]
                for d, w, v in zip(docs.tolist(), weights.tolist(), values):
                    yield fieldname, tbytes, d, w, v

    def cleanup(self) -> None:
        """whoosh calls this once the segment is written; the postings are kept for the
        segment's arrays (``lexical_writer.ensure_arrays``), and go with the writer."""


def _encode(fmt: Any, freq: int) -> bytes:
    # The value a compact format stores: Frequency the count, Existence nothing.
    return pack_uint(freq) if type(fmt) is formats.Frequency else b""


def _weight(fmt: Any, freq: int) -> float:
    # whoosh's formats: Frequency weighs a term by its count, Existence by the boost alone.
    return float(freq) * fmt.field_boost if type(fmt) is formats.Frequency else fmt.field_boost


def _weights(fmt: Any, freqs: np.ndarray) -> np.ndarray:
    if type(fmt) is formats.Frequency:
        return freqs.astype(np.float64) * fmt.field_boost
    return np.full(len(freqs), fmt.field_boost, dtype=np.float64)


def fast_writer(writer: Any, folder: Path | None = None) -> bool:
    """Give a whoosh SegmentWriter a :class:`MemoryPool` and the block-at-a-time commit
    when its codec is whoosh 3's (whose buffers :func:`write_postings` fills); True if it did.
    ``folder``: where the pool spills postings past :data:`POOL_MB` (None: it never does)."""
    if type(writer) is not SegmentWriter or type(writer.codec) is not W3Codec:
        return False
    writer.pool.cleanup()
    writer.pool = MemoryPool(writer.schema, folder)
    writer._bulk_kinds = {name: _kind(writer.schema[name]) for name in writer.schema.names()}

    def _flush_segment() -> None:
        writer.perdocwriter.close()
        pdr = writer.per_document_reader() if writer.codec.length_stats else None
        write_postings(writer.fieldwriter, writer.pool, pdr, writer.docnum)
        writer.fieldwriter.close()
        if pdr:
            pdr.close()

    writer._flush_segment = _flush_segment
    return True


def add_document(writer: Any, **values: Any) -> None:
    """``writer.add_document(**values)`` for a writer :func:`fast_writer` prepared: the same
    stored fields and lengths, with each known field's terms counted here."""
    writer._check_state()
    schema, pdw, pool = writer.schema, writer.perdocwriter, writer.pool
    kinds = writer._bulk_kinds
    docnum = writer.docnum
    pdw.start_doc(docnum)
    try:
        for name in sorted(n for n in values if not n.startswith("_")):
            value = values[name]
            if value is None:
                continue
            field = schema[name]
            length = 0
            if field.indexed:
                kind = kinds.get(name)
                if kind == "words":
                    counts = Counter(_split(value))
                    pool.add_counts(name, docnum, counts)
                    if field.scorable:
                        length = sum(counts.values())
                elif kind == "id":
                    pool.add_counts(name, docnum, {value: 1})
                    length = 1 if field.scorable else 0
                else:  # whoosh's own analysis: what SegmentWriter.add_document does
                    for tbytes, freq, weight, vbytes in field.index(value):
                        if field.scorable:
                            length += freq
                        pool.add((name, tbytes, docnum, weight, vbytes))
            pdw.add_field(name, field, value if field.stored else None, length)
            if field.column_type:
                pdw.add_column_value(name, field.column_type, field.to_column_value(value))
    except Exception:
        pdw.cancel_doc()
        raise
    pdw.finish_doc()
    writer._added = True
    writer.docnum += 1
    if pool.full():
        pool.spill()


def write_postings(fw: W3FieldWriter, pool: MemoryPool, lengths: Any, ndocs: int) -> None:
    """Every posting of ``pool`` through ``fw``, a block at a time: each block's ids,
    weights, values and length range are set in the postings writer's buffers as its
    ``add_posting`` would leave them, and written by its own ``_write_block`` (the last
    one by ``finish_term``, as whoosh does)."""
    for fieldname in pool.fields():
        field = pool.schema[fieldname]
        fmt = field.format
        fw.start_field(fieldname, field)
        pw = fw._postwriter
        limit = pw._blocklimit
        lens = np.zeros(max(ndocs, 1), dtype=np.int64)
        if lengths is not None:
            lens[:ndocs] = [lengths.doc_field_length(d, fieldname) or 0 for d in range(ndocs)]
        # A derived value is a fixed-size one (Frequency's 4-byte count, or Existence's none),
        # which the block writer joins into one string: a block's values are given as that
        # string, cut from all of the term's at once.
        size = fmt.fixed_value_size() if type(fmt) in _COMPACT else None
        for tbytes in pool.term_list(fieldname):
            docs, weights, freqs, values = pool.postings(fieldname, tbytes)
            blob = freqs.astype(">u4").tobytes() if values is None and size else b""
            fw.start_term(tbytes)
            dl = lens[docs]
            for at in range(0, len(docs), limit):
                if at:
                    pw._write_block()
                end = at + limit
                pw._ids = array("I", docs[at:end].tobytes())
                pw._weights = array("f", weights[at:end].astype(np.float32).tobytes())
                if values is not None:
                    pw._values = [v for v in values[at:end] if v]
                else:
                    pw._values = [blob[at * size : end * size]] if size else []
                top = float(weights[at:end].max())
                pw._maxweight = top if top > 0 else 0
                nz = dl[at:end]
                nz = nz[nz > 0]
                pw._minlength = int(nz.min()) if len(nz) else None
                pw._maxlength = int(nz.max()) if len(nz) else 0
            fw.finish_term()
        fw.finish_field()
