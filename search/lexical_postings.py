"""BM25 postings as numpy arrays beside each whoosh segment, written once at commit.

A query used to decode each term's posting blocks from whoosh's segment files (pickled,
zlib-compressed, delta-coded tuples: ~25-45 ms a query at 1M passages the first time a
long list is touched). A whoosh segment never changes once written, so at commit every
new segment gets its postings written beside it, and a reader memory-maps them:

    MAIN_<segid>.bm25.json           the segment's format and reference lengths (written last)
    MAIN_<segid>.bm25.keys.npy       uint64 hash of each term (text or title), ascending: the dictionary
    MAIN_<segid>.bm25.tblob.npy      the terms' UTF-8 bytes in that order, ``toff`` their offsets (checks a hash)
    MAIN_<segid>.bm25.off.npy        int64 CSR offsets of each term's postings
    MAIN_<segid>.bm25.dftext.npy     int32 documents holding the term in the text (whoosh's doc_frequency)
    MAIN_<segid>.bm25.tmax.npy       float32 (terms, 2) the list's largest text / title pseudo frequency
    MAIN_<segid>.bm25.docs.npy       int32 segment-local document numbers, ascending per term
    MAIN_<segid>.bm25.tfx.npy        term frequency in the text (0: the term is only in the title)
    MAIN_<segid>.bm25.tpos/ttf.npy   the postings with a title frequency (~6% of a passage's,
                                     none of a document's): position in ``docs``, frequency
    MAIN_<segid>.bm25.lens.npy       uint8 (2, n) whoosh's one-byte field lengths (text, title) per document
    MAIN_<segid>.bm25.pkeys/pkoff.npy  the stored key (passage or document id) of each document

The two fields share one posting list per term (BM25F sums them before saturating). Term
frequencies and lengths are stored, not scores: the average lengths move with every
commit and delete, and scores must equal whoosh's to 1e-9 (float32 impacts could not).
``tmax`` is each list's largest pseudo frequency ``tf / (1 - b + b dl / avg)`` at a
reference ``b`` and average length; :mod:`search.impacts` turns it into an upper bound of
the term's score at any average length and ``b`` (MaxScore's per-term bound).

Whoosh stays the source of truth: deletions are read from its table of contents, a merge
writes a new segment (and gets arrays of its own), and whoosh's clean-up removes a
merged segment's files with it (they carry its name). No pickle: ``np.save`` and
``np.load(mmap_mode="r", allow_pickle=False)``. A segment without arrays (an index
written before them) is read through :class:`WhooshSegment`, the old decoding path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from whoosh.reading import TermNotFound
from whoosh.util.numeric import byte_to_length

FIELDS = ("text", "title")
FORMAT = 1
#: The ``b`` the stored maxima assume (with the segment's own average lengths); another
#: ``b`` or average rescales them (see impacts.bound_factor).
BOUND_B = 0.4
#: whoosh's one-byte length code, decoded.
LENGTHS = np.array([byte_to_length(i) for i in range(256)], dtype=np.float64)
SUFFIX = ".bm25"


class TermPostings(NamedTuple):
    """One term's postings in one segment (views over the arrays, or decoded from whoosh)."""

    docs: np.ndarray  # int32, segment-local, ascending
    tfx: np.ndarray  # frequency in the text (0: only in the title)
    tpos: np.ndarray  # which postings have a title frequency (positions in docs, ascending)
    ttf: np.ndarray  # and that frequency
    tmax: tuple[float, float]  # largest text / title pseudo frequency at the reference b and lengths
    df_text: int  # documents with the term in the text, deleted ones included (as whoosh counts)


def term_hash(text: str) -> int:
    """A stable 64-bit key for a term (the dictionary's sort key; every hit is checked)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def block_postings(m: Any) -> tuple[np.ndarray, np.ndarray]:
    """All postings of one whoosh leaf matcher, block by block: (docnums, frequencies)."""
    ids: list[np.ndarray] = []
    tfs: list[np.ndarray] = []
    while m.is_active():
        m._read_ids()
        m._read_weights()
        ids.append(np.asarray(m._ids, dtype=np.int32))
        tfs.append(np.asarray(m._weights, dtype=np.float64))
        m._next_block()
    if not ids:
        return np.zeros(0, np.int32), np.zeros(0, np.float64)
    return np.concatenate(ids), np.concatenate(tfs)


def merge_fields(
    x: tuple[np.ndarray, np.ndarray] | None, t: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One posting list from a term's text and title postings: (docs, tf text, tf title)."""
    empty = (np.zeros(0, np.int32), np.zeros(0, np.float64))
    xd, xf = x or empty
    td, tf = t or empty
    if not len(td):
        return xd, xf, np.zeros(len(xd))
    if not len(xd):
        return td, np.zeros(len(td)), tf
    docs = np.union1d(xd, td).astype(np.int32)
    tfx = np.zeros(len(docs))
    tft = np.zeros(len(docs))
    tfx[np.searchsorted(docs, xd)] = xf
    tft[np.searchsorted(docs, td)] = tf
    return docs, tfx, tft


def segment_lengths(reader: Any) -> np.ndarray:
    """whoosh's one-byte field lengths of every document of a segment: uint8 (2, n)."""
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield

    n = reader.doc_count_all()
    out = np.zeros((len(FIELDS), n), dtype=np.uint8)
    for i, name in enumerate(FIELDS):
        col = reader._perdoc._cached_reader(_lenfield(name), LENGTHS_COLUMN)
        if col is not None and col._count:
            buf = col._dbfile.get(col._basepos, min(col._count, n))
            out[i, : len(buf)] = np.frombuffer(buf, dtype=np.uint8)
    return out


def dead_docs(segment: Any) -> np.ndarray | None:
    """Deleted documents of a whoosh segment (bool over its document numbers), or None."""
    if not segment.has_deletions():
        return None
    dead = np.zeros(segment.doc_count_all(), dtype=bool)
    dead[np.fromiter(segment.deleted_docs(), dtype=np.int64)] = True
    return dead


def reference_avg(lens: np.ndarray) -> tuple[float, float]:
    return tuple(max(float(LENGTHS[row].mean()) if len(row) else 1.0, 1.0) for row in lens)  # type: ignore[return-value]


def _round_up32(v: np.ndarray) -> np.ndarray:
    """float32 no smaller than each float64 (a bound must stay a bound)."""
    f = v.astype(np.float32)
    low = f.astype(np.float64) < v
    f[low] = np.nextafter(f[low], np.float32(np.inf))
    return f


def term_max(
    off: np.ndarray,
    docs: np.ndarray,
    tfx: np.ndarray,
    tft: np.ndarray,
    lens: np.ndarray,
    ref: tuple[float, float],
) -> np.ndarray:
    """Each list's largest text and title pseudo frequency (at BOUND_B and ``ref``), rounded up.

    ``off``: where each list starts in ``docs`` (none empty).
    """
    out = np.zeros((len(off), 2), dtype=np.float32)
    if len(docs):
        for f, tf in enumerate((tfx, tft)):
            ntf = tf / (1 - BOUND_B + BOUND_B * LENGTHS[lens[f][docs]] / ref[f])
            out[:, f] = _round_up32(np.maximum.reduceat(ntf, off))
    return out


def has_arrays(directory: Path, segid: str) -> bool:
    return (directory / f"{segid}{SUFFIX}.json").exists()


class SegmentPostings:
    """One segment's postings arrays, memory-mapped (nothing is decoded at query time)."""

    def __init__(self, directory: Path, segid: str) -> None:
        prefix = f"{directory / segid}{SUFFIX}"
        meta = json.loads(Path(f"{prefix}.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{prefix}.json: postings format {meta.get('format')}, expected {FORMAT}")

        def load(name: str) -> np.ndarray:
            # A plain ndarray over the map: slicing a np.memmap costs ~4 us in Python overhead.
            return np.load(f"{prefix}.{name}.npy", mmap_mode="r", allow_pickle=False).view(np.ndarray)

        self.n = int(meta["docs"])
        self.bound_b = float(meta["bound_b"])
        self.ref_avg = (float(meta["reference_avg"][0]), float(meta["reference_avg"][1]))
        self._keys, self._tblob, self._toff = load("keys"), load("tblob"), load("toff")
        self._off, self._dftext, self._tmax = load("off"), load("dftext"), load("tmax")
        self._docs, self._tfx, self._tpos, self._ttf = load("docs"), load("tfx"), load("tpos"), load("ttf")
        # Lengths are gathered per posting: read into memory (2 bytes a document).
        self.lens = np.array(load("lens"))
        self._pkeys, self._pkoff = load("pkeys"), load("pkoff")

    def _find(self, text: str) -> int:
        h = np.uint64(term_hash(text))
        want = text.encode("utf-8")
        i = int(np.searchsorted(self._keys, h))
        while i < len(self._keys) and self._keys[i] == h:
            if self._tblob[self._toff[i] : self._toff[i + 1]].tobytes() == want:
                return i
            i += 1
        return -1

    def term(self, text: str) -> TermPostings | None:
        i = self._find(text)
        if i < 0:
            return None
        lo, hi = int(self._off[i]), int(self._off[i + 1])
        tx, tt = self._tmax[i].tolist()
        return TermPostings(
            self._docs[lo:hi], self._tfx[lo:hi], *self._title(lo, hi), (tx, tt), int(self._dftext[i])
        )

    def _title(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        # Keys of the array's own dtype: searchsorted casts both sides to a common type,
        # and int64 keys made it copy the whole int32 array first (4.5 ms at 1M passages).
        a, b = np.searchsorted(self._tpos, np.array([lo, hi], dtype=self._tpos.dtype))
        return self._tpos[a:b].astype(np.int64) - lo, self._ttf[a:b]

    def key(self, docnum: int) -> str:
        return self._pkeys[self._pkoff[docnum] : self._pkoff[docnum + 1]].tobytes().decode("utf-8")

    def keys(self) -> list[str]:
        raw = self._pkeys.tobytes()
        off = self._pkoff.tolist()
        return [raw[off[i] : off[i + 1]].decode("utf-8") for i in range(self.n)]


class WhooshSegment:
    """The same interface over whoosh's own blocks, decoded per term on first use (no
    arrays on disk: an index written before them; also the old path, for benchmarks)."""

    def __init__(self, reader: Any) -> None:
        self._r = reader
        self.n = reader.doc_count_all()
        self.bound_b = BOUND_B
        self.lens = segment_lengths(reader)
        self.ref_avg = reference_avg(self.lens)

    def term(self, text: str) -> TermPostings | None:
        got: list[tuple[np.ndarray, np.ndarray] | None] = []
        for name in FIELDS:
            try:
                m = self._r.postings(name, text)
            except TermNotFound:
                got.append(None)
                continue
            got.append(block_postings(getattr(m, "child", m)))  # deletions are masked by the caller
        if got[0] is None and got[1] is None:
            return None
        docs, tfx, tft = merge_fields(got[0], got[1])
        tx, tt = term_max(np.zeros(1, np.int64), docs, tfx, tft, self.lens, self.ref_avg)[0].tolist()
        titled = np.flatnonzero(tft)
        return TermPostings(docs, tfx, titled, tft[titled], (tx, tt), int(np.count_nonzero(tfx)))

    def key(self, docnum: int) -> str:
        return str(self._r.stored_fields(docnum).get("pid", ""))

    def keys(self) -> list[str]:
        return [self.key(i) for i in range(self.n)]


def open_segment(
    directory: Path, segment: Any, reader: Callable[[Any], Any], arrays: bool = True
) -> SegmentPostings | WhooshSegment:
    """A whoosh segment's postings: its arrays, or (none, or ``arrays`` False) its blocks
    through ``reader(segment)``."""
    segid = segment.segment_id()
    if arrays and has_arrays(directory, segid):
        return SegmentPostings(directory, segid)
    return WhooshSegment(reader(segment))
