"""Writing whoosh's postings in bulk: the same segment files, without whoosh's per-posting Python.

whoosh adds a document by running each field's analyzer, pickling every posting into an
external-sort pool, and at commit merging the sorted runs back and handing the codec one
posting at a time. In a bulk build that was two thirds of the time without the model
(#17 item 5): 48 s of a 70 s build of 20k passages, for ~2.4M postings.

Our fields' text is analysed already (``search.text``: space-separated terms), so
:class:`MemoryPool` counts each document's terms itself and holds every term's postings
as two compact arrays (document numbers and frequencies: 8 bytes a posting). At commit
:func:`write_postings` hands the codec whole blocks, filled in the postings writer's own
buffers and written by its own block writer: the bytes are the ones whoosh writes itself
(``tests/test_lexical_bulk.py`` compares the files). Only fields whose analyzer and format
it knows take this path (space-separated terms with frequencies, whole-value IDs); any
other field, and whoosh's own merges, add postings one by one as before.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
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

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.terms: dict[str, dict[bytes, tuple[array, array]]] = {}
        self.exact: dict[tuple[str, bytes], list[tuple[int, float, bytes]]] = {}
        self.fieldnames: set[str] = set()

    def _field(self, fieldname: str) -> dict[bytes, tuple[array, array]]:
        field = self.terms.get(fieldname)
        if field is None:
            field = self.terms[fieldname] = {}
            self.fieldnames.add(fieldname)
        return field

    def _lists(self, fieldname: str, tbytes: bytes) -> tuple[array, array]:
        field = self._field(fieldname)
        got = field.get(tbytes)
        if got is None:
            got = field[tbytes] = (array("I"), array("I"))
        return got

    def add_counts(self, fieldname: str, docnum: int, counts: Iterable[tuple[str, int]]) -> None:
        field = self._field(fieldname)
        get = field.get  # inlined _lists: this runs once per posting
        for term, freq in counts:
            tbytes = term.encode("utf-8")
            got = get(tbytes)
            if got is None:
                got = field[tbytes] = (array("I"), array("I"))
            got[0].append(docnum)
            got[1].append(freq)

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, tbytes, docnum, weight, vbytes = item
        fmt = self.schema[fieldname].format
        freq = fmt.decode_frequency(vbytes) if vbytes else 1
        if type(fmt) in _COMPACT and weight == _weight(fmt, freq) and (vbytes or b"") == _encode(fmt, freq):
            ids, freqs = self._lists(fieldname, tbytes)
            ids.append(docnum)
            freqs.append(freq)
        else:
            self._lists(fieldname, tbytes)
            self.exact.setdefault((fieldname, tbytes), []).append((docnum, weight, vbytes or b""))

    def postings(
        self, fieldname: str, tbytes: bytes
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[bytes] | None]:
        """A term's document numbers, weights (as whoosh's pool holds them), frequencies
        and values (None: derived from the frequencies), in document order."""
        ids, freqs = self.terms[fieldname][tbytes]
        fmt = self.schema[fieldname].format
        docs = np.frombuffer(ids, dtype=np.uint32) if len(ids) else np.zeros(0, np.uint32)
        fr = np.frombuffer(freqs, dtype=np.uint32) if len(freqs) else np.zeros(0, np.uint32)
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
        for fieldname in sorted(self.terms):
            fmt = self.schema[fieldname].format
            for tbytes in sorted(self.terms[fieldname]):
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


def fast_writer(writer: Any) -> bool:
    """Give a whoosh SegmentWriter a :class:`MemoryPool` and the block-at-a-time commit
    when its codec is whoosh 3's (whose buffers :func:`write_postings` fills); True if it did."""
    if type(writer) is not SegmentWriter or type(writer.codec) is not W3Codec:
        return False
    writer.pool.cleanup()
    writer.pool = MemoryPool(writer.schema)
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
                    pool.add_counts(name, docnum, counts.items())
                    if field.scorable:
                        length = sum(counts.values())
                elif kind == "id":
                    pool.add_counts(name, docnum, [(value, 1)])
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


def write_postings(fw: W3FieldWriter, pool: MemoryPool, lengths: Any, ndocs: int) -> None:
    """Every posting of ``pool`` through ``fw``, a block at a time: each block's ids,
    weights, values and length range are set in the postings writer's buffers as its
    ``add_posting`` would leave them, and written by its own ``_write_block`` (the last
    one by ``finish_term``, as whoosh does)."""
    for fieldname in sorted(pool.terms):
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
        for tbytes in sorted(pool.terms[fieldname]):
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
