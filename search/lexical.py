"""BM25 over passages with whoosh, exact under incremental adds and removes.

Passages are analysed by :mod:`search.text` and stored pre-analysed, so the whoosh
schema holds only whoosh's own space tokenizer (whoosh pickles the schema into its
table of contents; keeping our classes out of it keeps old indexes loadable).

Whoosh marks deleted documents but keeps them in its collection statistics (document
frequency, total field length) until a merge rewrites their segment. To keep BM25
scores equal to a fresh build after any sequence of adds and removes, the writer
records, per whoosh segment, what the deleted documents contributed; the scorer
subtracts it. A merge that rewrites a segment drops its deleted documents, and its
correction with it.

Scoring is Lucene's BM25 (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``), the variant
behind Pyserini's published BEIR figures, with its defaults k1=0.9, b=0.4.

Two fields per passage, ``text`` and ``title`` (the article's headline, repeated on each
of its passages), scored as BM25F (Robertson, Zaragoza & Taylor 2004): each field's term
frequency is length-normalised by its own average, the title's weighted by
``title_weight``, and the sum saturates once (``k1``); df counts a passage that holds the
term in either field. Unlike a weighted sum of per-field BM25 (Pyserini's "multifield",
0.665 on SciFact against 0.679 flat), a headline word cannot score twice as much as the
same word in the text, so weight 1 is close to indexing "title + text" flat. A second
whoosh index in the same directory (``indexname="docs"``) holds one entry per article
(title + whole text), for the document-level signal (:func:`search.fusion.with_documents`).

Queries take a fast path (:meth:`LexicalIndex.search`): whoosh's own searcher scores one
matching document at a time in Python (about 48 ms a query over 100k passages), so the
index reads each query term's posting blocks straight from whoosh's segment files into
numpy arrays (cached per term: segments are immutable) and scores every matching
document at once. The formula, statistics, deletion corrections and tie order (score,
then document number) are whoosh's; :meth:`LexicalIndex.search_whoosh` keeps whoosh's
own path as the reference the tests compare against.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import fields, index, scoring
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.codec.base import Segment
from whoosh.filedb.filestore import FileStorage
from whoosh.reading import TermNotFound
from whoosh.util import IDCHARS
from whoosh.util.numeric import byte_to_length

from .fusion import TITLE_WEIGHT

log = logging.getLogger(__name__)

FIELD = "text"
TITLE = "title"
DOCS = "docs"  # whoosh indexname of the document-level index, beside the passages' MAIN
CORRECTIONS_FILE = "corrections.json"
#: Decoded postings kept per index (docnum, frequency and length: 24 bytes each):
#: every term of a few hundred queries over 100k passages, ~100 MB at most.
POSTINGS_CACHE = 4_000_000

# whoosh names each new segment from Python's global ``random``: a program that seeds it
# (a simulation, a test) identically before two writes makes whoosh reuse a segment name
# and fail. Segment names come from the operating system's randomness instead.
_SEGMENT_IDS = random.SystemRandom()


def _segment_id(cls: Any, size: int = 16) -> str:
    return "".join(_SEGMENT_IDS.choice(IDCHARS) for _ in range(size))


Segment._random_id = classmethod(_segment_id)  # type: ignore[method-assign,assignment]


def make_schema() -> fields.Schema:
    return fields.Schema(
        pid=fields.ID(stored=True, unique=True),
        doc_id=fields.ID(stored=False),
        text=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
        title=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
    )


@dataclass
class SegmentCorrection:
    """What deleted documents still contribute to one whoosh segment's statistics."""

    docs: int = 0
    length: int = 0
    df: Counter[str] = field(default_factory=Counter)
    title_length: int = 0
    title_df: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "docs": self.docs,
            "length": self.length,
            "df": dict(self.df),
            "title_length": self.title_length,
            "title_df": dict(self.title_df),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SegmentCorrection:
        def counts(x: dict[str, Any]) -> Counter[str]:
            return Counter({k: int(v) for k, v in x.items()})

        return cls(
            int(d["docs"]),
            int(d["length"]),
            counts(d["df"]),
            int(d.get("title_length", 0)),
            counts(d.get("title_df", {})),
        )


@dataclass
class Corrections:
    """Per-segment corrections, summed for the segments an index reader holds."""

    segments: dict[str, SegmentCorrection] = field(default_factory=dict)

    def total(self, live_segments: Iterable[str]) -> SegmentCorrection:
        out = SegmentCorrection()
        for name in live_segments:
            c = self.segments.get(name)
            if c:
                out.docs += c.docs
                out.length += c.length
                out.df.update(c.df)
                out.title_length += c.title_length
                out.title_df.update(c.title_df)
        return out

    def save(self, path: Path) -> None:
        data = {k: v.to_dict() for k, v in self.segments.items()}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Corrections:
        if not path.exists():
            return cls()
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls({k: SegmentCorrection.from_dict(v) for k, v in data.items()})


class ExactBM25(scoring.WeightingModel):
    """Lucene BM25 whose collection statistics exclude deleted documents."""

    def __init__(self, correction: SegmentCorrection, k1: float = 0.9, b: float = 0.4) -> None:
        self.correction = correction
        self.k1 = k1
        self.b = b
        self._idf: dict[str, float] = {}
        self._avgfl: float | None = None

    def supports_block_quality(self) -> bool:
        return True

    def stats(self, searcher: Any, text: str) -> tuple[float, float]:
        # A whoosh searcher, or (on the fast path, which never imports whoosh.searching)
        # the index reader itself: both answer the same collection statistics.
        parent = searcher.get_parent() if hasattr(searcher, "get_parent") else searcher
        if self._avgfl is None:
            n = max(parent.doc_count(), 1)
            self._avgfl = max((parent.field_length(FIELD) - self.correction.length) / n, 1e-9)
        idf = self._idf.get(text)
        if idf is None:
            n = parent.doc_count()
            df = max(parent.doc_frequency(FIELD, text) - self.correction.df.get(text, 0), 0)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            self._idf[text] = idf
        return idf, self._avgfl

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: float = 1) -> Any:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        idf, avgfl = self.stats(searcher, text)
        return _BM25Scorer(searcher, fieldname, text, idf * qf, avgfl, self.k1, self.b)


class _BM25Scorer(scoring.WeightLengthScorer):
    def __init__(
        self, searcher: Any, fieldname: str, text: str, idf: float, avgfl: float, k1: float, b: float
    ):
        self.idf = idf
        self.avgfl = avgfl
        self.k1 = k1
        self.b = b
        self.setup(searcher, fieldname, text)

    def _score(self, weight: float, length: float) -> float:
        k1, b = self.k1, self.b
        return self.idf * weight / (weight + k1 * (1 - b + b * length / self.avgfl))


def _segment_names(ix: Any) -> list[str]:
    return [s.segment_id() for s in ix._segments()]


def _corrections_file(indexname: str) -> str:
    return CORRECTIONS_FILE if indexname == "MAIN" else f"corrections-{indexname}.json"


class LexicalIndex:
    """A read-only view of one whoosh index (passages, or ``indexname="docs"``), one reader kept open."""

    def __init__(
        self,
        path: Path,
        k1: float = 0.9,
        b: float = 0.4,
        indexname: str = "MAIN",
        title_weight: float = TITLE_WEIGHT,
    ) -> None:
        self.path = Path(path)
        self.indexname = indexname
        self.title_weight = title_weight
        self._ix = index.open_dir(str(self.path), indexname=indexname, readonly=True)
        corr = Corrections.load(self.path / _corrections_file(indexname))
        self._reader = self._ix.reader()
        # A published generation's directory never changes, so its table of
        # contents names exactly the segments this reader holds.
        self.correction = corr.total(_segment_names(self._ix))
        self.k1, self.b = k1, b
        # whoosh's Searcher (and whoosh.query, ~50 ms of a cold start to import) only
        # for the reference path; the fast path reads through self._reader.
        self._whoosh_searcher: Any = None
        self._leaf_data: list[tuple[Any, int, dict[str, np.ndarray], np.ndarray]] | None = None
        self._cache: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._df_either: dict[str, int] = {}
        self._title_avg: float | None = None
        self._cached = 0
        self._pids: dict[int, str] = {}

    def _weighting(self) -> ExactBM25:
        return ExactBM25(self.correction, self.k1, self.b)

    def doc_count(self) -> int:
        return int(self._reader.doc_count())

    @property
    def _stats(self) -> ExactBM25:
        # One per generation: its idf cache stays valid because a generation never changes
        # (looking a term up in every whoosh segment cost ~0.5 ms a term at 100k passages).
        st = self.__dict__.get("_stats_cache")
        if st is None:
            st = self.__dict__["_stats_cache"] = self._weighting()
        return st

    def idf(self, text: str) -> float:
        """The BM25(F) idf of one term, from the same exact statistics the scorer uses."""
        if self.title_weight <= 0:
            return self._stats.stats(self._reader, text)[0]
        return self._idf_either(text)

    def _idf_either(self, text: str) -> float:
        """idf where df counts passages holding the term in the text or the title (BM25F)."""
        df = self._df_either.get(text)
        if df is None:
            ids = self._postings(text)[0]
            tids = self._postings(text, TITLE)[0]
            df = self._df_either[text] = len(ids) + int((~_matched(ids, tids)[1]).sum())
        n = self._reader.doc_count()
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _avg_title(self) -> float:
        if self._title_avg is None:
            n = max(self._reader.doc_count(), 1)
            total = self._reader.field_length(TITLE) - self.correction.title_length
            self._title_avg = max(total / n, 1e-9)
        return self._title_avg

    # -- the fast path -----------------------------------------------------------------
    def _leaves(self) -> list[tuple[Any, int, dict[str, np.ndarray], np.ndarray]]:
        """Per whoosh segment: (reader, first docnum, lengths per field, deleted mask)."""
        if self._leaf_data is None:
            from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield

            table = np.array([byte_to_length(i) for i in range(256)], dtype=np.float64)
            out = []
            for r, base in self._reader.leaf_readers():
                n = r.doc_count_all()
                if n == 0:
                    continue  # whoosh's EmptyReader (an index with no documents yet)
                lengths = {}
                for name in (FIELD, TITLE):
                    col = r._perdoc._cached_reader(_lenfield(name), LENGTHS_COLUMN)
                    raw = np.zeros(n, dtype=np.uint8)
                    if col is not None and col._count:
                        buf = col._dbfile.get(col._basepos, min(col._count, n))
                        raw[: len(buf)] = np.frombuffer(buf, dtype=np.uint8)
                    lengths[name] = table[raw]
                dead = np.zeros(n, dtype=bool)
                if r.has_deletions():
                    dead[np.fromiter(r.deleted_docs_set, dtype=np.int64)] = True
                out.append((r, int(base), lengths, dead))
            self._leaf_data = out
        return self._leaf_data

    def _postings(self, text: str, name: str = FIELD) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Live postings of a term in one field: (docnums ascending, frequencies, lengths)."""
        key = (name, text)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache[key] = self._cache.pop(key)  # most recently used goes last
            return hit
        ids_parts: list[np.ndarray] = []
        tf_parts: list[np.ndarray] = []
        len_parts: list[np.ndarray] = []
        for r, base, field_lengths, dead in self._leaves():
            lengths = field_lengths[name]
            try:
                m = r.postings(name, text)
            except TermNotFound:
                continue
            m = getattr(m, "child", m)  # whoosh wraps deletions in a FilterMatcher: masked below
            # Whole blocks at a time (W3LeafMatcher's block arrays), not one posting at a time.
            while m.is_active():
                m._read_ids()
                m._read_weights()
                ids = np.asarray(m._ids, dtype=np.int64)
                tf = np.asarray(m._weights, dtype=np.float64)
                keep = ~dead[ids]
                if not keep.all():
                    ids, tf = ids[keep], tf[keep]
                ids_parts.append(ids + base)
                tf_parts.append(tf)
                len_parts.append(lengths[ids])
                m._next_block()
        if ids_parts:
            out = (np.concatenate(ids_parts), np.concatenate(tf_parts), np.concatenate(len_parts))
        else:
            out = (np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.float64))
        self._cache[key] = out
        self._cached += len(out[0])
        while self._cached > POSTINGS_CACHE and len(self._cache) > 1:
            old = self._cache.pop(next(iter(self._cache)))
            self._cached -= len(old[0])
        return out

    def _n_docs(self) -> int:
        leaves = self._leaves()
        return max((base + len(dead) for _, base, _, dead in leaves), default=0)

    def _ntf(self, text: str, title_weight: float) -> tuple[np.ndarray, np.ndarray]:
        """BM25F's pseudo term frequency of one term: (docnums, sum over fields of w * tf / norm)."""
        b = self.b
        ids, tf, dl = self._postings(text)
        avg = self._stats.stats(self._reader, text)[1]
        ntf = tf / (1 - b + b * dl / avg)
        if title_weight <= 0:
            return ids, ntf
        tids, ttf, tl = self._postings(text, TITLE)
        if not len(tids):
            return ids, ntf
        tntf = title_weight * ttf / (1 - b + b * tl / self._avg_title())
        pos, hit = _matched(ids, tids)
        ntf = ntf.copy()
        ntf[pos[hit]] += tntf[hit]
        return np.concatenate([ids, tids[~hit]]), np.concatenate([ntf, tntf[~hit]])

    def _pid(self, docnum: int) -> str:
        pid = self._pids.get(docnum)
        if pid is None:
            pid = self._pids[docnum] = self._reader.stored_fields(docnum)["pid"]
        return pid

    def search(
        self,
        terms: list[str],
        limit: int,
        expansions: list[str] | None = None,
        expansion_weight: float = 0.5,
        title_weight: float | None = None,
        allow: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """Top passages for already-analysed query terms, as ``(passage_id, score)``.

        ``expansions`` are related terms (see :mod:`search.vocab`) that count at
        ``expansion_weight`` of a term the user typed. With ``title_weight`` 0 (or no
        titles) scores and order equal :meth:`search_whoosh` (tested); ties go to the
        lower document number, as in whoosh. ``allow`` (bool over whoosh document
        numbers, see :meth:`docnum_keys`) is a filter: only those documents score, so
        the result is the best ``limit`` of them. Collection statistics stay those of the
        whole index: a filter selects, it does not re-weigh (Lucene's filter context).
        """
        if not terms or limit <= 0:
            return []
        docs, scores = self.scores(terms, expansions, expansion_weight, title_weight, allow)
        if limit < len(docs):
            # Keep everything scoring at least the limit-th best (ties at the cut stay), then sort.
            kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
            sel = np.flatnonzero(scores >= kth)
            docs, scores = docs[sel], scores[sel]
        order = np.lexsort((docs, -scores))[:limit]
        return [(self._pid(int(d)), float(s)) for d, s in zip(docs[order].tolist(), scores[order].tolist())]

    def docnum_keys(self) -> list[str | None]:
        """The stored key (passage id, or document id in the ``docs`` index) of every whoosh
        document number, None where deleted: how a filter over documents becomes ``allow``."""
        keys: list[str | None] = [None] * self._n_docs()
        for docnum, stored in self._reader.iter_docs():
            keys[docnum] = stored.get("pid")
        return keys

    def scores(
        self,
        terms: list[str],
        expansions: list[str] | None = None,
        expansion_weight: float = 0.5,
        title_weight: float | None = None,
        allow: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every matching (and allowed) document: ``(docnums ascending, BM25F scores)``."""
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        if not terms:
            return empty
        tw = self.title_weight if title_weight is None else title_weight
        weights: dict[str, float] = {t: float(c) for t, c in Counter(terms).items()}
        for t in expansions or []:
            weights.setdefault(t, expansion_weight)
        stats = self._stats
        k1 = self.k1
        ids_parts: list[np.ndarray] = []
        score_parts: list[np.ndarray] = []
        for text, qf in weights.items():
            ids, ntf = self._ntf(text, tw)
            if not len(ids):
                continue
            idf = self._idf_either(text) if tw > 0 else stats.stats(self._reader, text)[0]
            ids_parts.append(ids)
            score_parts.append((idf * qf) * ntf / (ntf + k1))
        if not ids_parts:
            return empty
        postings = sum(len(x) for x in ids_parts)
        n_docs = self._n_docs()
        if len(ids_parts) == 1:
            docs, scores = ids_parts[0], score_parts[0]
        elif postings * 8 >= n_docs:
            # Long lists: a dense accumulator over every document is linear; sorting is not.
            dense = np.bincount(
                np.concatenate(ids_parts), weights=np.concatenate(score_parts), minlength=n_docs
            )
            docs = np.flatnonzero(dense)
            scores = dense[docs]
        else:
            docs, inverse = np.unique(np.concatenate(ids_parts), return_inverse=True)
            scores = np.bincount(inverse, weights=np.concatenate(score_parts), minlength=len(docs))
        if allow is not None:
            keep = allow[docs] if len(allow) >= n_docs else _allowed(allow, docs)
            docs, scores = docs[keep], scores[keep]
        return docs, scores

    def search_whoosh(
        self, terms: list[str], limit: int, expansions: list[str] | None = None, expansion_weight: float = 0.5
    ) -> list[tuple[str, float]]:
        """The same ranking through whoosh's own searcher: the reference (slow: Python per posting)."""
        if not terms or limit <= 0:
            return []
        from whoosh import query
        from whoosh.searching import Searcher

        if self._whoosh_searcher is None:
            self._whoosh_searcher = Searcher(self._reader, weighting=self._weighting(), fromindex=self._ix)
        counts = Counter(terms)
        clauses = [query.Term(FIELD, t, boost=float(c)) for t, c in counts.items()]
        clauses += [query.Term(FIELD, t, boost=expansion_weight) for t in expansions or [] if t not in counts]
        q = query.Or(clauses)
        # A searcher caches idf per term; a fresh weighting per query keeps that cache
        # small while the reader (and its open files) stays shared.
        s = self._whoosh_searcher
        s.weighting = self._weighting()
        results = s.search(q, limit=limit)
        return [(hit["pid"], float(hit.score)) for hit in results]

    def score_all(self, terms: list[str]) -> dict[str, float]:
        """Every matching passage's score (for tests against a reference)."""
        return dict(self.search(terms, limit=max(self.doc_count(), 1)))

    def close(self) -> None:
        try:
            # A searcher closes its reader with it.
            (self._whoosh_searcher or self._reader).close()
        except Exception:  # pragma: no cover - closing is best effort
            pass


def _allowed(allow: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """``allow[docs]`` where documents past the end of ``allow`` are not allowed."""
    out = np.zeros(len(docs), dtype=bool)
    inside = docs < len(allow)
    out[inside] = allow[docs[inside]]
    return out


def _matched(ids: np.ndarray, tids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted docnum arrays: where each of ``tids`` sits in ``ids``, and whether it is there."""
    pos = np.searchsorted(ids, tids)
    if not len(ids):
        return pos, np.zeros(len(tids), dtype=bool)
    return pos, ids[np.minimum(pos, len(ids) - 1)] == tids


def create(path: Path) -> None:
    """Create an empty lexical index in ``path``: the passages' and the documents' (``docs``)."""
    path.mkdir(parents=True, exist_ok=True)
    for name in ("MAIN", DOCS):
        index.create_in(str(path), make_schema(), indexname=name)
        Corrections().save(path / _corrections_file(name))


class LexicalWriter:
    """Adds and deletes passages in a whoosh directory that no reader is using.

    The caller gives each writer a private copy of the directory (hard links: whoosh
    never rewrites a file in place), so readers of the old copy are untouched.
    """

    def __init__(self, path: Path, indexname: str = "MAIN") -> None:
        self.path = Path(path)
        self.indexname = indexname
        self._ix = index.FileIndex(FileStorage(str(self.path)), indexname=indexname)
        self._writer = self._ix.writer()
        self._corr = Corrections.load(self.path / _corrections_file(indexname))
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
        self._writer.add_document(pid=pid, doc_id=doc_id, text=analysed_text, title=analysed_title)
        self._added += 1

    def commit(self, optimize: bool = False, merge: bool = True) -> None:
        self._writer.commit(optimize=optimize, merge=merge)
        # Corrections of segments that a merge rewrote are no longer needed.
        live = set(_segment_names(index.FileIndex(FileStorage(str(self.path)), indexname=self.indexname)))
        self._corr.segments = {k: v for k, v in self._corr.segments.items() if k in live}
        self._corr.save(self.path / _corrections_file(self.indexname))

    def cancel(self) -> None:
        try:
            self._writer.cancel()
        except Exception:  # pragma: no cover
            pass
