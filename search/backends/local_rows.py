"""Filters, facets and date order for one local generation, as numpy over row spaces.

A generation has three numberings of the same things: documents (rows of the document
table), passage rows of each vector segment, and whoosh document numbers (of the
passage index and of the document-level index). :class:`RowSpace` maps the last two
onto the first once per generation, so a filter costs one boolean column over the
documents (microseconds, cached per filter) and two fancy-indexing steps, never a
Python loop per query.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data import lines
from ..facets import ENTITY_SAMPLE, FACET_FIELDS, Facets
from ..filters import Filters
from ..impacts import kth_largest
from .local_table import MONTH, NPASS, ROW, SEG, StoredColumns

if TYPE_CHECKING:
    from .local import Snapshot

MASK_CACHE = 32  # filters whose document bitmaps stay cached per generation


class RowSpace:
    """Documents as columns, and every passage numbering mapped to documents."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        table = snap.table
        self.table = table
        self.columns = StoredColumns(table)
        self.n_docs = table.n
        self.seg_names = list(table.segments)
        loc = np.asarray(table.loc)
        self.doc_seg = loc[:, SEG].astype(np.int32)
        self.doc_start = loc[:, ROW]
        self.doc_n = loc[:, NPASS]
        # segment row → document ordinal (-1 for rows of removed documents)
        self.seg_doc: dict[str, np.ndarray] = snap.seg_doc
        self._lex: tuple[np.ndarray, np.ndarray] | None = None
        self._doclex: np.ndarray | None = None
        self._positions: dict[str, int] | None = None
        self._ents: tuple[dict[str, np.ndarray], list[tuple[str, str]], np.ndarray, np.ndarray] | None = None
        self._masks: OrderedDict[tuple[Any, ...], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    # -- filters as bitmaps ------------------------------------------------------------
    def doc_mask(self, filters: Filters) -> np.ndarray:
        """bool [documents]: which documents pass (cached per filter)."""
        key = filters.key
        with self._lock:
            hit = self._masks.get(key)
            if hit is not None:
                self._masks.move_to_end(key)
                return hit
        mask = self.columns.mask(filters)
        with self._lock:
            self._masks[key] = mask
            while len(self._masks) > MASK_CACHE:
                self._masks.popitem(last=False)
        return mask

    def segment_masks(self, docmask: np.ndarray) -> dict[str, np.ndarray]:
        """Per vector segment, bool [rows]: the rows of allowed documents."""
        ext = np.append(docmask, False)  # index -1 (a removed document's row) → False
        return {name: ext[d] for name, d in self.seg_doc.items()}

    def _pos(self) -> dict[str, int]:
        """id → document ordinal, for mapping whoosh's numbering (built once, when a filter
        or a facet first needs it)."""
        if self._positions is None:
            self._positions = {d: i for i, d in enumerate(self.snap.doc_ids())}
        return self._positions

    def _lexical_map(self) -> tuple[np.ndarray, np.ndarray]:
        """whoosh docnum → (document ordinal or -1, passage number within the document)."""
        if self._lex is None:
            keys = self.snap.lexical.docnum_keys()
            pos = self._pos()
            docs = np.full(len(keys), -1, dtype=np.int32)
            pns = np.zeros(len(keys), dtype=np.int64)
            for n, pid in enumerate(keys):
                if pid is None:
                    continue
                d, _, pn = pid.rpartition("#")
                i = pos.get(d)
                if i is not None:
                    docs[n] = i
                    pns[n] = int(pn)
            self._lex = (docs, pns)
        return self._lex

    def lexical_allow(self, docmask: np.ndarray) -> np.ndarray:
        docs, _ = self._lexical_map()
        return np.append(docmask, False)[docs]

    def doclex_allow(self, docmask: np.ndarray) -> np.ndarray:
        if self._doclex is None:
            pos = self._pos()
            keys = self.snap.doc_lexical.docnum_keys()
            self._doclex = np.array([pos.get(k, -1) if k else -1 for k in keys], dtype=np.int32)
        return np.append(docmask, False)[self._doclex]

    # -- matching passages ---------------------------------------------------------------
    def lexical_matches(
        self, terms: Sequence[str], expansions: Sequence[str], docmask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every passage matching the words (and the filter): (document ordinals, passage
        numbers, BM25F scores)."""
        allow = self.lexical_allow(docmask) if docmask is not None else None
        docnums, scores = self.snap.lexical.scores(list(terms), list(expansions), allow=allow)
        docs, pns = self._lexical_map()
        d, p = docs[docnums], pns[docnums]
        live = d >= 0
        return d[live], p[live], scores[live]

    def all_passages(self, docmask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every passage of the allowed documents: (document ordinals, passage numbers)."""
        idx = np.flatnonzero(docmask)
        counts = self.doc_n[idx]
        d = np.repeat(idx, counts).astype(np.int32)
        starts = np.cumsum(counts) - counts
        p = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
        return d, p

    def published(self, docs: np.ndarray) -> np.ndarray:
        """Timestamps of documents (NaN where undated)."""
        return np.asarray(self.table.ts)[docs]

    def pid(self, doc: int, pn: int) -> str:
        return f"{self.table.id(doc)}#{pn}"

    def row_pid(self, segment: str, row: int) -> str:
        """The passage id of a vector segment's live row."""
        d = int(self.seg_doc[segment][row])
        return f"{self.table.id(d)}#{row - int(self.doc_start[d])}"

    # -- facets ---------------------------------------------------------------------
    def facets(
        self,
        docs: np.ndarray,
        pns: np.ndarray,
        scores: np.ndarray | None = None,
        top: int = 10,
        sample: int | None = None,
    ) -> Facets:
        """Counts over the given passages: per source, category and month over all of them,
        and the people and teams that the stored entities of the best ``sample`` of them
        (by ``scores``; all of them without scores) name most."""
        out = Facets(passages=len(docs))
        per_doc = np.bincount(docs, minlength=self.n_docs) if len(docs) else np.zeros(self.n_docs, np.int64)
        # The documents matched (each field counts only these); nonzero through a bool
        # array, several times faster than over the int64 counts.
        hit = np.flatnonzero(per_doc != 0)
        for name in FACET_FIELDS:
            out.fields[name] = self._field_counts(name, hit, per_doc[hit])
        sample = ENTITY_SAMPLE if sample is None else sample
        if scores is not None and len(docs) > sample:
            # The best ``sample`` by score (ties at the cut: the first of them), found from
            # the exact k-th score (a strided sample narrows it) rather than a full partition.
            cut = kth_largest(scores, sample)
            best = np.flatnonzero(scores > cut)
            if len(best) < sample:
                # Two disjoint ascending runs: a stable sort merges them, as union1d's hash
                # and sort would (~1.9 ms at 1M passages) in a hundredth of the time.
                ties = np.flatnonzero(scores == cut)[: sample - len(best)]
                best = np.sort(np.concatenate([best, ties]), kind="stable")
            docs, pns = docs[best], pns[best]
            out.entities_over = sample
        gids, keys, people, rank = self._entity_space()
        total = np.zeros(len(keys), dtype=np.int64)
        if len(docs):
            segs = self.doc_seg[docs]
            rows = self.doc_start[docs] + pns
            for s, name in enumerate(self.seg_names):
                sel = rows[segs == s]
                if not len(sel):
                    continue
                entoff, codes, _ = self.snap.segments[name].entities()
                # The codes of the selected rows' entities: CSR ranges gathered at once.
                lo, hi = entoff[sel], entoff[sel + 1]
                n = hi - lo
                if not n.sum():
                    continue
                idx = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
                total += np.bincount(gids[name][codes[idx]], minlength=len(keys))
        for field, group in (("people", True), ("teams", False)):
            cand = np.flatnonzero((total > 0) & (people == group))
            best = cand[np.lexsort((rank[cand], -total[cand]))][:top]  # most named, then by name
            out.fields[field] = [(keys[i][1], int(total[i])) for i in best.tolist()]
        return out

    def _entity_space(self) -> tuple[dict[str, np.ndarray], list[tuple[str, str]], np.ndarray, np.ndarray]:
        """Once per generation: every segment's entity codes mapped onto one vocabulary of
        (group, name), whether each is a person, and each name's rank in name order."""
        if self._ents is None:
            index: dict[tuple[str, str], int] = {}
            gids: dict[str, np.ndarray] = {}
            for name in self.seg_names:
                vocab = self.snap.segments[name].entities()[2]
                gids[name] = np.fromiter(
                    (index.setdefault(v, len(index)) for v in vocab), np.int64, len(vocab)
                )
            keys = list(index)
            people = np.fromiter((g == "people" for g, _ in keys), bool, len(keys))
            rank = np.empty(len(keys), dtype=np.int64)
            rank[sorted(range(len(keys)), key=lambda i: keys[i][1])] = np.arange(len(keys))
            self._ents = (gids, keys, people, rank)
        return self._ents

    def _field_counts(self, name: str, hit: np.ndarray, n: np.ndarray) -> list[tuple[str, int]]:
        """A field's values over the documents ``hit``, each weighted by its ``n`` passages."""
        if name == "month":  # stored at write time: a code per document, -1 undated
            kind, data = self.table.column(MONTH)
        else:
            kind, data = self.columns.column(name)
        if kind != "text":
            return []
        codes, vocab = data
        codes = np.asarray(codes)[hit]
        known = codes >= 0
        c = np.bincount(codes[known], weights=n[known], minlength=len(vocab))
        names = list(vocab)
        return sorted(((names[i], int(c[i])) for i in np.flatnonzero(c)), key=lambda t: (-t[1], t[0]))


def _top(c: Counter[str], n: int) -> list[tuple[str, int]]:
    return sorted(c.items(), key=lambda t: (-t[1], t[0]))[:n]


_COUNTRIES: frozenset[str] | None = None


def _countries() -> frozenset[str]:
    global _COUNTRIES
    if _COUNTRIES is None:
        _COUNTRIES = frozenset(lines("countries.txt"))
    return _COUNTRIES
