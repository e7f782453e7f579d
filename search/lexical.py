"""BM25 over passages with whoosh, exact under incremental adds and removes.

Passages are analysed by :mod:`search.text` and stored pre-analysed, so the whoosh
schema holds only whoosh's own space tokenizer (whoosh pickles the schema into its
table of contents; keeping our classes out of it keeps old indexes loadable).

Whoosh keeps deleted documents in its collection statistics until a merge; the writer
records what they contributed and the scorer subtracts it (:mod:`search.lexical_stats`).
Writing (segments, corrections, postings arrays) is :mod:`search.lexical_writer`.

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
matching document at a time in Python (about 48 ms a query over 100k passages). Instead,
each commit writes every new whoosh segment's postings as numpy arrays beside it
(:mod:`search.lexical_postings`), a reader memory-maps them, and :mod:`search.impacts`
scores them with block-max pruning, so a query neither decodes whoosh's blocks nor
scores the long lists of common words in full. The formula, statistics, deletion
corrections and tie order (score, then document number) are whoosh's;
:meth:`LexicalIndex.search_whoosh` keeps whoosh's own path as the reference the tests
compare against, and a segment without arrays (an index written before them) is read
from whoosh's blocks as before.
"""

from __future__ import annotations

import logging
import math
import threading
from bisect import bisect_right
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import index

from .fusion import TITLE_WEIGHT
from .impacts import Params, Query, Term, all_scores, top_k
from .lexical_postings import SegmentPostings, TermPostings, WhooshSegment, dead_docs, open_segment
from .lexical_stats import (
    CORRECTIONS_FILE,
    DOCS,
    FIELD,
    TITLE,
    Corrections,
    ExactBM25,
    SegmentCorrection,
    corrections_file,
    segment_names,
)
from .lexical_writer import LexicalWriter, create, make_schema

__all__ = [
    "CORRECTIONS_FILE", "DOCS", "FIELD", "TITLE", "Corrections", "ExactBM25", "LexicalIndex",
    "LexicalWriter", "SegmentCorrection", "create", "make_schema",
]  # fmt: skip

log = logging.getLogger(__name__)

Postings = SegmentPostings | WhooshSegment
#: Postings decoded from whoosh's blocks kept per index (segments without arrays only;
#: docnum and two frequencies, ~20 bytes each): ~80 MB at most.
POSTINGS_CACHE = 4_000_000
#: Terms whose per-segment postings (views over the arrays, ~0.3 kB a segment) stay looked up.
TERMS_CACHE = 20_000
# The old helpers' names, for code that reached in (tests, scripts).
_segment_names = segment_names
_corrections_file = corrections_file


class LexicalIndex:
    """A read-only view of one whoosh index (passages, or ``indexname="docs"``) over its
    postings arrays, memory-mapped; whoosh's own reader only where needed."""

    def __init__(
        self,
        path: Path,
        k1: float = 0.9,
        b: float = 0.4,
        indexname: str = "MAIN",
        title_weight: float = TITLE_WEIGHT,
        arrays: bool = True,
    ) -> None:
        self.path = Path(path)
        # False reads every segment through whoosh's blocks (the path before postings
        # arrays; benchmarks compare the two). Segments without arrays always do.
        self.arrays = arrays
        self.indexname = indexname
        self.title_weight = title_weight
        self._ix = index.open_dir(str(self.path), indexname=indexname, readonly=True)
        # The table of contents alone: segments, their sizes, field lengths and deletions.
        # whoosh's reader (it loads every segment's term index: ~0.9 MB a 1,000 passages)
        # opens only for the reference path and for segments without postings arrays.
        self._toc = self._ix._read_toc()
        self._whoosh_reader: Any = None
        self._segment_readers: list[Any] = []
        corr = Corrections.load(self.path / corrections_file(indexname))
        # A published generation's directory never changes, so its table of
        # contents names exactly the segments this index holds.
        self.correction = corr.total(s.segment_id() for s in self._toc.segments)
        self.k1, self.b = k1, b
        # whoosh's Searcher (and whoosh.query, ~50 ms of a cold start to import) only
        # for the reference path.
        self._whoosh_searcher: Any = None
        self._leaf_data: list[tuple[Postings, int, np.ndarray | None]] | None = None
        # Per generation (a generation never changes): df over either field, text idf.
        self._df_either: dict[str, int] = {}
        self._idf: dict[str, float] = {}
        self._title_avg: float | None = None
        self._term_cache: dict[str, list[TermPostings | None]] = {}
        self._cached = 0
        self._bases: list[int] = []
        self._pids: dict[int, str] = {}
        self._param_cache: dict[float, Params] = {}
        self._live_mask: np.ndarray | None = None
        self._acc: np.ndarray | None = None
        self._lens: np.ndarray | None = None  # every segment's length codes end to end
        self._acc_lock = threading.Lock()
        self._any_dead = False
        self._live = self.doc_count()

    @property
    def _reader(self) -> Any:
        """whoosh's reader over every segment, opened on first use."""
        if self._whoosh_reader is None:
            self._whoosh_reader = self._ix.reader()
        return self._whoosh_reader

    def _segment_reader(self, segment: Any) -> Any:
        from whoosh.reading import SegmentReader

        r = SegmentReader(self._ix.storage, self._toc.schema, segment, generation=self._toc.generation)
        self._segment_readers.append(r)
        return r

    def _field_length(self, name: str) -> int:
        """Total length of a field, deleted documents included (as whoosh counts it)."""
        return sum(int(s._fieldlengths.get(name, 0)) for s in self._toc.segments)

    def _weighting(self) -> ExactBM25:
        return ExactBM25(self.correction, self.k1, self.b)

    def doc_count(self) -> int:
        return sum(int(s.doc_count()) for s in self._toc.segments)

    def idf(self, text: str) -> float:
        """The BM25(F) idf of one term, from the same exact statistics the scorer uses."""
        if self.title_weight <= 0:
            return self._idf_text(text)
        return self._idf_either(text)

    def _idf_either(self, text: str) -> float:
        """idf where df counts passages holding the term in the text or the title (BM25F)."""
        df = self._df_either.get(text)
        if df is None:
            df = self._df_either[text] = self._live_postings(text)
        n = self._live
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _avg_title(self) -> float:
        if self._title_avg is None:
            n = max(self._live, 1)
            total = self._field_length(TITLE) - self.correction.title_length
            self._title_avg = max(total / n, 1e-9)
        return self._title_avg

    # -- the fast path -----------------------------------------------------------------
    def _leaves(self) -> list[tuple[Postings, int, np.ndarray | None]]:
        """Per whoosh segment: (its postings, first docnum, deleted mask or None)."""
        if self._leaf_data is None:
            out = []
            base = 0  # whoosh numbers documents segment after segment, in this order
            for seg in self._toc.segments:
                n = seg.doc_count_all()
                if n:
                    postings = open_segment(self.path, seg, self._segment_reader, self.arrays)
                    out.append((postings, base, dead_docs(seg)))
                base += n
            self._leaf_data = out
            self._bases = [base for _, base, _ in out]
        return self._leaf_data

    def _n_docs(self) -> int:
        return max((base + seg.n for seg, base, _ in self._leaves()), default=0)

    def _terms(self, text: str) -> list[TermPostings | None]:
        """A term's postings in each segment (None where a segment lacks it), cached.

        On arrays an entry is a few views (the dictionary lookup is what is saved); on
        whoosh's blocks it is the decoded postings, so those count against POSTINGS_CACHE.
        """
        hit = self._term_cache.get(text)
        if hit is not None:
            self._term_cache[text] = self._term_cache.pop(text)  # most recently used goes last
            return hit
        leaves = self._leaves()
        out = [seg.term(text) for seg, _, _ in leaves]
        self._term_cache[text] = out
        self._cached += _decoded(out, leaves)
        while (self._cached > POSTINGS_CACHE or len(self._term_cache) > TERMS_CACHE) and len(
            self._term_cache
        ) > 1:
            old = next(iter(self._term_cache))
            self._cached -= _decoded(self._term_cache.pop(old), leaves)
        return out

    def _df_text(self, text: str) -> int:
        """Documents holding the term in the text, as whoosh counts them (deleted ones too)."""
        return sum(tp.df_text for tp in self._terms(text) if tp is not None)

    def _idf_text(self, text: str) -> float:
        """The text field's idf, from whoosh's statistics less the deleted documents'."""
        idf = self._idf.get(text)
        if idf is None:
            n = self._live
            df = max(self._df_text(text) - self.correction.df.get(text, 0), 0)
            idf = self._idf[text] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return idf

    def _live_postings(self, text: str) -> int:
        """Live documents holding the term in either field (BM25F's df)."""
        total = 0
        for tp, (_, _, dead) in zip(self._terms(text), self._leaves()):
            if tp is not None:
                total += len(tp.docs) - (int(np.count_nonzero(dead[tp.docs])) if dead is not None else 0)
        return total

    def _avg_text(self) -> float:
        """The text field's average length after deletes (ExactBM25's ``avgfl``)."""
        n = max(self._live, 1)
        return max((self._field_length(FIELD) - self.correction.length) / n, 1e-9)

    def _params(self, title_weight: float) -> Params:
        got = self._param_cache.get(title_weight)
        if got is None:
            avg_title = self._avg_title() if title_weight > 0 else 1.0
            got = Params(self.k1, self.b, title_weight, (self._avg_text(), avg_title))
            self._param_cache[title_weight] = got
        return got

    def _query(
        self, terms: list[str], expansions: list[str] | None, expansion_weight: float, tw: float,
        allow: np.ndarray | None, extra: dict[str, float] | None = None,
    ) -> Query:  # fmt: skip
        """The query's terms, weighted by idf and query frequency, with their postings per segment."""
        weights: dict[str, float] = {t: float(c) for t, c in Counter(terms).items()}
        for t in expansions or []:
            weights.setdefault(t, expansion_weight)
        for t, w in (extra or {}).items():
            weights[t] = weights.get(t, 0.0) + w
        leaves = self._leaves()
        out: list[Term] = []
        for text, qf in weights.items():
            tps = self._terms(text)
            if qf <= 0 or all(tp is None for tp in tps):
                continue
            idf = self._idf_either(text) if tw > 0 else self._idf_text(text)
            out.append(Term(idf * qf, [(i, tp) for i, tp in enumerate(tps) if tp is not None]))
        n = self._n_docs()
        if self._lens is None:
            self._lens = (
                np.concatenate([seg.lens for seg, _, _ in leaves], axis=1)
                if leaves
                else np.zeros((2, 0), np.uint8)
            )
        segments: list[tuple[Any, int]] = [(seg, base) for seg, base, _ in leaves]
        return Query(segments, out, n, self._lens, self._mask(allow, n), filtered=allow is not None)

    def _mask(self, allow: np.ndarray | None, n: int) -> np.ndarray | None:
        """The documents that may score: live, and allowed when a filter is given."""
        if self._live_mask is None:
            live = np.ones(n, dtype=bool)
            for seg, base, dead in self._leaves():
                if dead is not None:
                    live[base : base + seg.n] = ~dead
            self._live_mask = live
            self._any_dead = not live.all()
        if allow is None:
            return self._live_mask if self._any_dead else None
        mask = np.zeros(n, dtype=bool)
        mask[: min(len(allow), n)] = allow[:n]
        return mask & self._live_mask

    def _pid(self, docnum: int) -> str:
        pid = self._pids.get(docnum)
        if pid is None:
            seg, base, _ = self._leaves()[bisect_right(self._bases, docnum) - 1]
            pid = self._pids[docnum] = seg.key(docnum - base)
        return pid

    def search(
        self,
        terms: list[str],
        limit: int,
        expansions: list[str] | None = None,
        expansion_weight: float = 0.5,
        title_weight: float | None = None,
        allow: np.ndarray | None = None,
        stats: dict[str, int] | None = None,
        extra: dict[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        """Top passages for already-analysed query terms, as ``(passage_id, score)``.

        ``expansions`` are related terms (see :mod:`search.vocab`) that count at
        ``expansion_weight`` of a term the user typed. With ``title_weight`` 0 (or no
        titles) scores and order equal :meth:`search_whoosh` (tested); ties go to the
        lower document number, as in whoosh. ``allow`` (bool over whoosh document
        numbers, see :meth:`docnum_keys`) is a filter: only those documents score, so
        the result is the best ``limit`` of them. Collection statistics stay those of the
        whole index: a filter selects, it does not re-weigh (Lucene's filter context).
        The long lists of common words are mostly left unread (MaxScore,
        :mod:`search.impacts`); the result equals the exhaustive top ``limit`` exactly
        (tested). ``stats`` receives counts of postings held, read and looked up.
        ``extra`` maps terms to weights added to their query weight (a typed term counts
        1): the expansion terms of pseudo-relevance feedback (:mod:`search.feedback`).
        """
        if not terms or limit <= 0:
            return []
        tw = self.title_weight if title_weight is None else title_weight
        q = self._query(terms, expansions, expansion_weight, tw, allow, extra)
        # One accumulator per index, zero between queries; a concurrent query gets its own.
        shared = self._acc_lock.acquire(blocking=False)
        try:
            if shared and (self._acc is None or len(self._acc) < q.n_docs):
                self._acc = np.zeros(q.n_docs)
            docs, scores = top_k(q, self._params(tw), limit, self._acc if shared else None, stats)
        finally:
            if shared:
                self._acc_lock.release()
        return [(self._pid(int(d)), float(s)) for d, s in zip(docs.tolist(), scores.tolist())]

    def docnum_keys(self) -> list[str | None]:
        """The stored key (passage id, or document id in the ``docs`` index) of every whoosh
        document number, None where deleted: how a filter over documents becomes ``allow``."""
        keys: list[str | None] = [None] * self._n_docs()
        for seg, base, dead in self._leaves():
            got: list[str | None] = list(seg.keys())
            if dead is not None:
                for i in np.flatnonzero(dead).tolist():
                    got[i] = None
            keys[base : base + seg.n] = got
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
        if not terms:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        tw = self.title_weight if title_weight is None else title_weight
        q = self._query(terms, expansions, expansion_weight, tw, allow)
        return all_scores(q, self._params(tw))

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
        for r in [self._whoosh_searcher or self._whoosh_reader, *self._segment_readers]:
            try:
                if r is not None:
                    r.close()  # a searcher closes its reader with it
            except Exception:  # pragma: no cover - closing is best effort
                pass


def _decoded(terms: list[TermPostings | None], leaves: list[tuple[Postings, int, np.ndarray | None]]) -> int:
    """Postings held in memory by one cache entry (those decoded from whoosh's blocks)."""
    return sum(
        len(tp.docs)
        for tp, (seg, _, _) in zip(terms, leaves)
        if tp is not None and isinstance(seg, WhooshSegment)
    )
