"""Immutable segments: passage vectors and the articles written with them, read lazily.

A segment is what one write (or one merge) adds; it is never modified, so index
generations share it through hard links and a process loads it once. Files of
segment ``seg-N`` (plain numpy and bytes, no pickle):

``.npy``          [rows, dim] passage vectors (:mod:`search.vectors`), memory-mapped: int8
                  codes when the segment has an ANN index (its rows only re-score
                  candidates), float32 otherwise (older indexes: float16 or float32;
                  :mod:`search.vector_codes`)
``.faiss``        its ANN index, when the segment is large enough (:mod:`search.vectors`)
``.store.bin``    per article: its text (UTF-8), then a JSON record of what a document
                  record shows, then a JSON record of its entities (flat integers, and its
                  sentence spans only when its passages' do not give them:
                  ``local_segment_format.enrichment``; an older index: both as lists),
                  each zlib-compressed behind a 0xFF byte (the record: 0xFE, with a preset
                  dictionary of its keys) when that is shorter; an older index has some or
                  all of them as they are. Each of the three is read back through
                  ``local_segment_format.unpack``, which tells by that first byte
``.store.npy``    int64 [docs + 1, 5]: where each article's text, record and enrichment start
                  in ``.store.bin``, its first passage row and its first sentence; the last
                  row holds the ends
``.spans.npy``    int32 [rows, 2] passage spans in article coordinates
``.sents.npy``    int32 [n, 2] sentence spans of the passages; ``.sentoff.npy`` int64
                  [rows + 1] where each passage's sentences start
``.minhash.npy``  uint16 [docs, 128] near-duplicate signatures, each minimum's low 16 bits
                  (:func:`search.dedup.narrow`; an older index: uint32, narrowed when
                  compared), or [docs, 0]
``.sentvec.npy``  int8 [sentences, dim] the articles' sentence vectors, in article order:
                  codes of unit vectors, read back re-normalised (:mod:`search.vector_codes`;
                  an older index's float16 rows are read as they are)
``.sentmap.npy``  int32 [sentences], when rows repeat: ``.sentvec.npy`` then holds each
                  distinct row once (in order of first use) and sentence i's is row
                  ``sentmap[i]``; written only when that takes fewer bytes (no file: row i)
``.ents.npy``     int32 [m] the people and teams each passage names (codes, by passage row),
                  ``.entoff.npy`` int64 [rows + 1], ``.ents.json`` the codes' [group, name]

Nothing but these arrays' headers is read when a segment opens: an article's text and
records are read (``pread``) when a query asks for them, and a small LRU keeps the
articles a query is reading, so a serving process holds no article objects for the
corpus (a million passages opened in milliseconds instead of seconds and gigabytes).
Segments are written and merged by :mod:`.local_segment_write`; the numbers both sides
agree on (the columns of ``.store.npy``, the suffixes) are in :mod:`.local_segment_format`.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexFormatError
from ..types import Article
from ..vector_codes import decode_unit
from ..vectors import Rows, load_vectors
from .local_segment_format import ENRICH, RECORD, ROW, SENT, TEXT, passage_sentences, read_enrichment, unpack

# Re-exported: every public name this module had before the write side moved out (a patch of
# COPY_BYTES takes effect on local_segment_write, where merges read it).
from .local_segment_format import RECORD_FIELDS as RECORD_FIELDS
from .local_segment_format import SEGMENT_SUFFIXES as SEGMENT_SUFFIXES
from .local_segment_write import COPY_BYTES as COPY_BYTES
from .local_segment_write import facet_entities as facet_entities
from .local_segment_write import merge_segments as merge_segments
from .local_segment_write import remove_segment as remove_segment
from .local_segment_write import write_segment as write_segment

#: Articles and texts kept decoded per segment: a query reads at most a few dozen
#: articles (the answer stage reads 20), and the same stories come back question after question.
ARTICLE_CACHE = 256
TEXT_CACHE = 1024


def mapped(path: str | Path) -> np.ndarray:
    """A .npy file memory-mapped, as a plain ndarray view (indexing a ``np.memmap`` runs
    Python hooks on every access: ~3x slower for the scalar reads a query makes).

    Read-ahead is off: a query touches scattered rows, and the kernel's read-ahead
    would map (and count in the process's RSS) pages around each of them.
    """
    m = np.load(path, mmap_mode="r", allow_pickle=False)
    mm = getattr(m, "_mmap", None)
    if mm is not None and hasattr(mmap, "MADV_RANDOM"):
        mm.madvise(mmap.MADV_RANDOM)
    return m.view(np.ndarray)


class _LRU:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)


class Segment:
    """One segment, opened: arrays memory-mapped, articles read from disk when asked for."""

    def __init__(self, gen_dir: Path, name: str) -> None:
        base = f"{gen_dir / name}"
        self.name = name
        self.vectors = load_vectors(gen_dir / f"{name}.npy")

        def arr(suffix: str) -> np.ndarray:
            return mapped(f"{base}{suffix}")

        try:
            self.offsets = arr(".store.npy")
            self._file = open(f"{base}.store.bin", "rb", buffering=0)  # noqa: SIM115 (closed with the segment)
            self._size = os.fstat(self._file.fileno()).st_size  # written once, never grows
        except FileNotFoundError:
            if Path(f"{base}.docs.jsonl").exists():
                raise IndexFormatError(
                    f"{base} is a segment of an older index format: rebuild with `search reindex`"
                ) from None
            raise
        self.spans = arr(".spans.npy")
        self.sents = arr(".sents.npy")
        self.sentoff = arr(".sentoff.npy")
        self.minhash = arr(".minhash.npy")
        self.sentvec = Rows(f"{base}.sentvec.npy")
        # Rows equal byte for byte stored once: sentence i is row sentmap[i] (no map: row i).
        self.sentmap = arr(".sentmap.npy") if Path(f"{base}.sentmap.npy").exists() else None
        # Everything is opened now (maps and small reads), nothing later by path: a
        # generation's directory may be removed while a reader still holds its segments.
        self._entoff = arr(".entoff.npy")
        self._entcodes = arr(".ents.npy")
        self._entvocab_raw = Path(f"{base}.ents.json").read_bytes()
        self._ents: tuple[np.ndarray, np.ndarray, list[tuple[str, str]]] | None = None
        self.n_docs = len(self.offsets) - 1
        self.rows = int(self.offsets[-1, ROW])
        if len(self.spans) != len(self.vectors) or self.rows != len(self.vectors):
            raise IndexFormatError(
                f"{base}: {len(self.spans)} passages but {len(self.vectors)} vectors: rebuild with `search reindex`"
            )
        self._texts = _LRU(TEXT_CACHE)
        self._articles = _LRU(ARTICLE_CACHE)
        self._entities = _LRU(TEXT_CACHE)
        self.facet_cache: dict[str, Any] = {}

    def close(self) -> None:
        self._file.close()

    def __del__(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()

    # -- rows and documents ------------------------------------------------------------
    def row_start(self, d: int) -> int:
        return int(self.offsets[d, ROW])

    def doc_of_row(self, row: int) -> int:
        """The article (ordinal in this segment) a passage row belongs to."""
        return int(np.searchsorted(self.offsets[:, ROW], row, side="right")) - 1

    def pid(self, row: int) -> str:
        d = self.doc_of_row(row)
        return f"{self.record(d)['id']}#{row - self.row_start(d)}"

    # -- reading from disk ---------------------------------------------------------------
    def _read(self, start: int, end: int) -> bytes:
        # Damaged offsets would ask for any length (a MemoryError, which is not the index's
        # state): a range outside the file is damage, reported as such by the read guard.
        if not 0 <= start <= end <= self._size:
            raise ValueError(f"a stored range {start}:{end} is outside the {self._size}-byte store")
        return os.pread(self._file.fileno(), end - start, start)

    def text(self, d: int) -> str:
        """Article ``d``'s whole text (one read, cached)."""
        got = self._texts.get(d)
        if got is None:
            a, b = int(self.offsets[d, TEXT]), int(self.offsets[d, RECORD])
            got = unpack(self._read(a, b)).decode("utf-8", "surrogatepass")
            self._texts.put(d, got)
        return got  # type: ignore[no-any-return]

    def record(self, d: int) -> dict[str, Any]:
        """Article ``d``'s record: id, title, source, url, dates, path, hash, metadata, added, duplicate_of."""
        a, b = int(self.offsets[d, RECORD]), int(self.offsets[d, ENRICH])
        return json.loads(unpack(self._read(a, b)))  # type: ignore[no-any-return]

    def article(self, d: int) -> Article:
        """Article ``d`` whole: text, record, entities, sentence spans and vectors (cached)."""
        got = self._articles.get(d)
        if got is not None:
            return got  # type: ignore[no-any-return]
        a, b, c, e = (
            int(x) for x in self.offsets[d, [TEXT, RECORD, ENRICH]].tolist() + [self.offsets[d + 1, TEXT]]
        )
        raw = self._read(a, e)
        text = self._texts.get(d)  # a search read the passages' texts before their articles
        if text is None:
            text = unpack(raw[: b - a]).decode("utf-8", "surrogatepass")
            self._texts.put(d, text)
        rec = json.loads(unpack(raw[b - a : c - a]))
        enr = json.loads(unpack(raw[c - a :]))
        art = Article.from_dict({**rec, "text": text})
        # The enrichment as write_segment wrote it (local_segment_format.enrichment: flat
        # integers, sentences from the passages' unless written; an older index's lists
        # tupled as they are), without from_dict's per-field conversion.
        r0, r1 = int(self.offsets[d, ROW]), int(self.offsets[d + 1, ROW])
        art.entities, art.sentences, art.roles = read_enrichment(  # type: ignore[assignment]
            enr, lambda: passage_sentences(self.sents[int(self.sentoff[r0]) : int(self.sentoff[r1])].tolist())
        )
        s0, s1 = int(self.offsets[d, SENT]), int(self.offsets[d + 1, SENT])
        if s1 - s0 == len(art.sentences) and self.sentvec.ndim == 2 and self.sentvec.shape[1]:
            art.sentence_vectors = decode_unit(self.sentence_rows(s0, s1))
        self._articles.put(d, art)
        return art

    def article_entities(self, d: int) -> list[tuple[int, int, str]]:
        """Article ``d``'s stored entities alone (start, end, label; cached): what the search
        head's evidence of the asked kind reads (search.rerank_typed), without the record and
        the sentence vectors that :meth:`article` decodes."""
        art = self._articles.get(d)
        if art is not None:
            return art.entities  # type: ignore[no-any-return]
        got = self._entities.get(d)
        if got is None:
            a, b = int(self.offsets[d, ENRICH]), int(self.offsets[d + 1, TEXT])
            got = read_enrichment(json.loads(unpack(self._read(a, b))), list)[0]
            self._entities.put(d, got)
        return got  # type: ignore[no-any-return]

    def sentence_rows(self, s0: int, s1: int) -> np.ndarray:
        """Sentences ``s0:s1``'s vector rows as stored (codes; an older index's floats)."""
        if self.sentmap is None:
            return self.sentvec[s0:s1]
        return self.sentvec.gather(np.asarray(self.sentmap[s0:s1]))

    def sentences(self, row: int) -> list[tuple[int, int]]:
        lo, hi = int(self.sentoff[row]), int(self.sentoff[row + 1])
        return [(int(a), int(b)) for a, b in self.sents[lo:hi].tolist()]

    def entities(self) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
        """The facet entities: (offsets by passage row, codes, vocabulary code -> (group, name))."""
        if self._ents is None:
            vocab = json.loads(self._entvocab_raw)
            self._ents = (self._entoff, self._entcodes, [(g, n) for g, n in vocab])
        return self._ents
