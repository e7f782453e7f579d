"""One local generation opened for reading: :class:`Snapshot`.

Everything a query needs from one generation (the layout is in :mod:`.local`): BM25 over
passages and articles, dense search, facets and newest-first order (through
:class:`.local_rows.RowSpace`), and passages, articles and records read on demand from the
segments. A snapshot never changes once built, so a query that uses one throughout never
mixes two generations; :class:`.local.LocalBackend` opens a new one when a writer switches
``CURRENT``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import lexical as lx
from ..errors import IndexFormatError
from ..facets import Facets
from ..filters import Filters
from ..fusion import doc_weight, with_documents
from ..types import Article, Passage
from ..vector_codes import as_float32, decode_unit
from ..vectors import ANN_SUFFIX, AnnSpec, VectorSegment, search_segments
from . import DocRecord
from .local_gen import FORMAT
from .local_rows import RowSpace
from .local_segment_format import SENT
from .local_store import _LRU, Segment
from .local_table import NPASS, ORD, ROW, SEG, Table

__all__ = ["DOC_CACHE", "Snapshot", "rows_to_docs"]

DOC_CACHE = 4096  # document records kept per generation (each one a read and a small parse)


def rows_to_docs(table: Table, rows_of: dict[str, int]) -> dict[str, np.ndarray]:
    """Per segment, int32 [rows]: the table row of each passage row's document, -1 where removed."""
    loc = np.asarray(table.loc)
    out = {}
    for code, name in enumerate(table.segments):
        sel = np.flatnonzero(loc[:, SEG] == code)
        doc = np.full(rows_of[name], -1, dtype=np.int32)
        if len(sel):
            counts = loc[sel, NPASS]
            starts = loc[sel, ROW]
            first = np.cumsum(counts) - counts
            idx = np.repeat(starts - first, counts) + np.arange(int(counts.sum()))
            doc[idx] = np.repeat(sel.astype(np.int32), counts)
        out[name] = doc
    return out


class Snapshot:
    """One generation, opened: everything a query needs, immutable once built.

    Opening maps the document table and the segments' arrays (segments are opened once
    per process and shared by every generation that holds them) and computes which
    vector rows are live: O(passages) numpy, no per-document Python work.
    """

    def __init__(self, root: Path, gen: str, cache: dict[str, Segment], prev: Snapshot | None) -> None:
        self.root = root
        self.gen = gen
        self.dir = root / gen
        try:
            self.manifest: dict[str, Any] = json.loads(
                (self.dir / "manifest.json").read_text(encoding="utf-8")
            )
        except FileNotFoundError:
            raise IndexFormatError(
                f"{self.dir} has no manifest.json: rebuild with `search reindex`"
            ) from None
        if self.manifest.get("format") != FORMAT:
            raise IndexFormatError(
                f"{root} was built with index format {self.manifest.get('format')}, this version reads "
                f"format {FORMAT}: rebuild it with `search reindex`"
            )
        self.table = Table(self.dir)
        self.segments: dict[str, Segment] = {}
        for name in self.table.segments:
            seg = cache.get(name) or Segment(self.dir, name)
            cache[name] = seg
            self.segments[name] = seg
        # Per segment, the table row of each passage row: liveness, and passage ids for dense hits.
        self.seg_doc = rows_to_docs(self.table, {n: s.rows for n, s in self.segments.items()})
        prev_vsegs = {v.name: v for v in prev.vector_segments} if prev else {}
        vsegs: list[VectorSegment] = []
        entries = {s["name"]: s for s in self.manifest.get("segments", [])}
        for name, seg in self.segments.items():
            live = self.seg_doc[name] >= 0
            old = prev_vsegs.get(name)
            # A cached segment's own ANN path may name a generation since removed.
            ann_file = self.dir / f"{name}{ANN_SUFFIX}"
            ann_at = ann_file if ann_file.is_file() else None
            vsegs.append(
                old.with_live(live, ann_at)
                if old is not None
                else VectorSegment(
                    name, seg.vectors, live, ann_at, AnnSpec.from_dict(entries.get(name, {}).get("ann"))
                )
            )
        self.vector_segments: list[VectorSegment] = vsegs
        self.n_passages = int(np.asarray(self.table.loc[:, NPASS]).sum())
        bm25 = self.manifest.get("bm25", {})
        k1, b = bm25.get("k1", 0.9), bm25.get("b", 0.4)
        self.lexical = lx.LexicalIndex(self.dir / "lexical", k1=k1, b=b)
        self.doc_lexical = lx.LexicalIndex(self.dir / "lexical", k1=k1, b=b, indexname=lx.DOCS)
        self._lex_lock = threading.Lock()
        self._rowspace: RowSpace | None = None
        self._recs = _LRU(DOC_CACHE)

    @property
    def rows(self) -> RowSpace:
        """Filters, facets and date order over this generation (built on first use)."""
        if self._rowspace is None:
            with self._lex_lock:
                if self._rowspace is None:
                    self._rowspace = RowSpace(self)
        return self._rowspace

    def fields(self) -> dict[str, str]:
        """The extra metadata fields documents carry, and their kinds (for filters)."""
        return dict(self.rows.columns.kinds)

    def _docmask(self, filters: Filters | None) -> np.ndarray | None:
        return self.rows.doc_mask(filters) if filters else None

    # The reading interface, bound to this one generation: a query that uses a
    # snapshot for both retrievers can never mix two generations.
    def lexical_search(
        self,
        terms: Sequence[str],
        k: int,
        expansions: Sequence[str] | None = None,
        question: str | None = None,  # whoosh works on our own analysed terms
        filters: Filters | None = None,
        extra: dict[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        exp = list(expansions or [])
        dw = doc_weight(self.n_docs)
        docmask = self._docmask(filters)
        rows = self.rows if docmask is not None else None
        with self._lex_lock:
            allow = rows.lexical_allow(docmask) if rows is not None and docmask is not None else None
            passages = self.lexical.search(list(terms), k, exp, allow=allow, extra=extra)
            if dw <= 0:
                return passages
            dallow = rows.doclex_allow(docmask) if rows is not None and docmask is not None else None
            # Twice as deep: a passage near the cut should still find its document's score.
            docs = self.doc_lexical.search(list(terms), 2 * k, exp, allow=dallow, extra=extra)
        return with_documents(passages, docs, dw)[:k]

    def dense(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        docmask = self._docmask(filters)
        allowed = self.rows.segment_masks(docmask) if docmask is not None else None
        hits = search_segments(self.vector_segments, vector, k, allowed)
        rows = self.rows
        return [(rows.row_pid(name, row), score) for score, name, row in hits]

    def passage_vectors(self, pids: Sequence[str]) -> np.ndarray:
        """The stored vectors of live passages (float32 unit rows; unknown ids left out)."""
        rows = [r for r in (self._row(pid) for pid in pids) if r is not None]
        if not rows:
            return np.zeros((0, 0), np.float32)
        return np.stack([as_float32(seg.vectors[row : row + 1])[0] for seg, row, _ in rows])

    def facets(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        words: bool = True,
        question: str | None = None,
    ) -> Facets:
        """Facet counts over every matching passage (``words``: those the terms match,
        else every passage that passes the filters)."""
        rows = self.rows
        docmask = self._docmask(filters)
        scores = None
        if words:
            with self._lex_lock:
                docs, pns, scores = rows.lexical_matches(terms, expansions, docmask)
        else:
            docs, pns = rows.all_passages(docmask if docmask is not None else np.ones(rows.n_docs, bool))
        return rows.facets(docs, pns, scores)

    def newest(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        limit: int,
        question: str | None = None,
    ) -> list[tuple[str, float | None, float]]:
        """The matching passages newest first (undated last), BM25 breaking ties:
        ``(passage id, timestamp, bm25)``, at least ``limit`` and every tie at the cut."""
        rows = self.rows
        with self._lex_lock:
            docs, pns, scores = rows.lexical_matches(terms, expansions, self._docmask(filters))
        ts = rows.published(docs)
        key = np.where(np.isnan(ts), -np.inf, ts)
        order = np.lexsort((pns, docs, -scores, -key))
        if limit < len(order):
            cut = key[order[limit - 1]]
            order = order[: limit + int(np.count_nonzero(key[order[limit:]] == cut))]
        return [
            (rows.pid(int(docs[i]), int(pns[i])), None if np.isnan(ts[i]) else float(ts[i]), float(scores[i]))
            for i in order.tolist()
        ]

    # -- documents -------------------------------------------------------------------
    def _where(self, doc_id: str) -> tuple[int, Segment, int, int, int] | None:
        """(table row, segment, article ordinal, first row, passages) of a live document."""
        i = self.table.find(doc_id)
        if i < 0:
            return None
        # One row to a list, then four picks: a fancy index of four columns of the mapped
        # table and a generator cost ~5 us a call, and a search makes ~70 of these.
        row = self.table.loc[i].tolist()
        s, d, first, n = row[SEG], row[ORD], row[ROW], row[NPASS]
        return i, self.segments[self.table.segments[s]], d, first, n

    def loc(self, doc_id: str) -> tuple[str, int, int] | None:
        """(segment, first row, rows) of a live document."""
        w = self._where(doc_id)
        return None if w is None else (w[1].name, w[3], w[4])

    def _row(self, pid: str) -> tuple[Segment, int, int] | None:
        """(segment, row, article ordinal) of a live passage id ``doc_id#n``."""
        doc_id, sep, n = pid.rpartition("#")
        w = self._where(doc_id) if sep else None
        if w is None or not n.isdigit() or int(n) >= w[4]:
            return None
        return w[1], w[3] + int(n), w[2]

    def passage(self, pid: str) -> Passage | None:
        r = self._row(pid)
        if r is None:
            return None
        seg, row, d = r
        st, en = (int(x) for x in seg.spans[row])
        return Passage(pid, pid.rpartition("#")[0], st, en, seg.text(d)[st:en])

    def article(self, doc_id: str) -> Article | None:
        w = self._where(doc_id)
        return None if w is None else w[1].article(w[2])

    def _record(self, i: int) -> DocRecord:
        rec = self._recs.get(i)
        if rec is None:
            s, d, n = (int(x) for x in self.table.loc[i, [SEG, ORD, NPASS]])
            r = self.segments[self.table.segments[s]].record(d)
            ts = float(self.table.ts[i])
            rec = DocRecord(
                id=self.table.id(i),
                title=r.get("title") or "",
                source=r.get("source") or "",
                url=r.get("url"),
                published=r.get("published"),
                path=r.get("path"),
                content_hash=r.get("content_hash") or "",
                added=r.get("added") or "",
                passages=n,
                duplicate_of=self.table.duplicate_of(i),
                published_ts=None if np.isnan(ts) else ts,
                metadata=dict(r.get("metadata") or {}),
            )
            self._recs.put(i, rec)
        return rec  # type: ignore[no-any-return]

    def doc(self, doc_id: str) -> DocRecord | None:
        i = self.table.find(doc_id)
        return None if i < 0 else self._record(i)

    def all_docs(self) -> list[DocRecord]:
        """Every document's record, by id (reads every record: for listings, not queries)."""
        return [self._record(i) for i in range(self.table.n)]

    def doc_ids(self) -> list[str]:
        return [b.decode("utf-8", "surrogatepass") for b in self.table.ids.all_raw()]

    @property
    def n_docs(self) -> int:
        return self.table.n

    def passages_of(self, doc_id: str) -> list[Passage]:
        w = self._where(doc_id)
        if w is None:
            return []
        _, seg, d, first, n = w
        text = seg.text(d)
        out = []
        for i, (a, b) in enumerate(seg.spans[first : first + n].tolist()):
            out.append(Passage(f"{doc_id}#{i}", doc_id, int(a), int(b), text[int(a) : int(b)]))
        return out

    def sentences(self, pid: str) -> list[str]:
        r = self._row(pid)
        if r is None:
            return []
        seg, row, d = r
        text = seg.text(d)
        return [text[a:b] for a, b in seg.sentences(row)]

    def passage_spans(self, pid: str) -> tuple[Passage, str, list[Any], list[Any]] | None:
        """A passage, its article's text, the passage's sentence spans and the article's
        entities (article offsets, in text order), from the segment's arrays and the
        article's stored enrichment alone: :mod:`search.rerank_typed` reads these for every
        head passage, where :meth:`article` would also decode the record and the vectors."""
        r = self._row(pid)
        if r is None:
            return None
        seg, row, d = r
        st, en = (int(x) for x in seg.spans[row])
        text = seg.text(d)
        return (
            Passage(pid, pid.rpartition("#")[0], st, en, text[st:en]),
            text,
            seg.sentences(row),
            seg.article_entities(d),
        )

    def passage_units(self, pid: str) -> tuple[list[str], np.ndarray | None] | None:
        """A passage's sentences and their stored vectors from the segment's arrays: what
        :func:`search.rerank.stored_units` makes of the whole article (its text, record,
        inflated enrichment and every sentence vector decoded: ~30 articles a search, 2-3 ms
        at 1M passages where few are cached, #17), read without it. None when the arrays
        cannot tell (the caller then reads the article).

        The article's sentences (its non-heading units) are what its passages' stored
        sentences hold between them: a passage stores every unit inside its span and the
        passages cover the article. So the article's sentence number of a passage sentence
        is its place among the distinct starts of the article's passage sentences, checked
        against the article's sentence count in the store; when they differ, None.
        """
        doc_id, sep, n = pid.rpartition("#")
        w = self._where(doc_id) if sep else None
        if w is None or not n.isdigit() or int(n) >= w[4]:
            return None
        _, seg, d, first, count = w
        row = first + int(n)
        text = seg.text(d)
        lo, hi = int(seg.sentoff[row]), int(seg.sentoff[row + 1])
        spans = seg.sents[lo:hi].tolist()
        texts = [text[a:b] for a, b in spans]
        sv = seg.sentvec
        if not spans or sv.ndim != 2 or not sv.shape[1]:
            return texts, None
        s0, s1 = (int(x) for x in seg.offsets[d : d + 2, SENT].tolist())
        every = seg.sents[int(seg.sentoff[first]) : int(seg.sentoff[first + count])]
        starts = np.unique(every[:, 0])
        if len(starts) != s1 - s0:
            return None
        idx = np.searchsorted(starts, np.asarray([a for a, _ in spans], dtype=starts.dtype))
        i0, i1 = int(idx[0]), int(idx[-1]) + 1
        if i1 - i0 == len(idx):  # consecutive sentences (always, as passages are chunked)
            return texts, decode_unit(seg.sentence_rows(s0 + i0, s0 + i1))
        # A shared row's sentences go through the segment's map (sentence_rows).
        return texts, decode_unit(
            np.concatenate([seg.sentence_rows(s0 + int(i), s0 + int(i) + 1) for i in idx])
        )

    def signature_arrays(self) -> tuple[list[str], list[str], np.ndarray]:
        """Every live document's id, near-duplicate group and MinHash signature, as arrays."""
        ids = self.doc_ids()
        groups = [g.decode("utf-8", "surrogatepass") or d for g, d in zip(self.table.dup.all_raw(), ids)]
        loc = np.asarray(self.table.loc)
        width = max((s.minhash.shape[1] for s in self.segments.values() if s.minhash.ndim == 2), default=0)
        sigs = np.zeros((len(ids), width), dtype=np.uint32)
        for code, name in enumerate(self.table.segments):
            seg = self.segments[name]
            sel = np.flatnonzero(loc[:, SEG] == code)
            if len(sel) and seg.minhash.ndim == 2 and seg.minhash.shape[1] == width:
                sigs[sel] = seg.minhash[loc[sel, ORD]]
        return ids, groups, sigs

    def signatures(self) -> list[tuple[str, str | None, np.ndarray]]:
        """``(doc id, duplicate_of, MinHash signature)`` of every live document."""
        ids, _, sigs = self.signature_arrays()
        return [(d, self.table.duplicate_of(i), sigs[i]) for i, d in enumerate(ids)]

    def idf(self, term: str) -> float:
        with self._lex_lock:
            return self.lexical.idf(term)

    def close(self) -> None:
        self.lexical.close()
        self.doc_lexical.close()
