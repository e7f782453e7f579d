"""Asking: search, then the answer stages over the passages found (:mod:`search.answer`).

:class:`~search.engine.Engine`'s ``ask`` and ``facets``: the answer reads the top
:data:`ANSWER_DEPTH` passages of one index generation (:class:`_Pinned`), the passage it
cites leads (:mod:`search.answer.lead`), and facet counts come from the same reader.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .backends import DocRecord
from .documents import check_id, found
from .facets import Facets
from .filters import Filters
from .fusion import Mode
from .ordering import DEFAULT_HALF_LIFE_DAYS, Sort
from .retrieve import MAX_K, Query, Retrieves
from .text import query_terms
from .types import Answer, Article
from .vocab import expand

# How many passages the answer module reads: five outlets' worth of evidence, so a
# lone dissenting outlet ranked below the shown passages still counts as a conflict.
ANSWER_DEPTH = 20


class Asks(Retrieves):
    """Questions answered with cited passages, and facet counts over what they match."""

    if TYPE_CHECKING:

        def entity_notice(self) -> str | None: ...

    def facets(self, question: str, filters: Any = None, mode: str = "hybrid") -> Facets:
        """Facet counts over every passage matching ``question`` and ``filters`` (:mod:`search.facets`)."""
        q = self.check_question(question)
        m = Mode.from_str(mode)
        with self._reading():
            view = self._backend.reader()
            flt = Filters.of(filters).check(view.fields())
            return self._facets(view, q, flt, m)

    def _facets(self, view: Any, q: str, flt: Filters, m: Mode) -> Facets:
        terms = query_terms(q)
        expansions = expand(terms) if self._is_football(view) else []
        return view.facets(terms, expansions, flt or None, words=m is not Mode.DENSE, question=q)

    def ask(
        self,
        question: str,
        k: int = 5,
        mode: str = "hybrid",
        answer: bool = True,
        collapse: bool | None = None,
        *,
        filters: Any = None,
        sort: str = "relevance",
        offset: int = 0,
        half_life: float = DEFAULT_HALF_LIFE_DAYS,
        facets: bool = False,
    ) -> Answer:
        """Search, then (with ``answer``) extract a short answer with its supporting sentences.

        The answer reads the top :data:`ANSWER_DEPTH` passages, so that outlets which
        rank lower still vote and can show a conflict; the result holds the top ``k``
        passages plus any deeper passage the answer cites (with its own rank number).
        ``filters``, ``sort``, ``offset`` and ``half_life`` are :meth:`search`'s; with
        ``facets`` the result carries counts over every matching passage
        (:mod:`search.facets`), counted without the filters when nothing passes them. The
        faces (CLI, HTTP, MCP, the page) ask for them; a Python caller opts in, since
        counting every match costs more than the answer at scale (about 6 ms at 100k
        passages and 22 ms at 1M, against 16 ms for the whole ask without them).
        """
        t0 = time.perf_counter()
        opts = Query(filters, sort, offset, half_life)
        # A bad argument is the caller's mistake, told before any read of the index: k as
        # search() takes it (the answer's deeper read, at most MAX_K, is then in range too).
        self._check_args(question, k, mode, opts)
        with self._reading():
            return self._ask(question, k, mode, answer, collapse, opts, facets, t0)

    def _ask(
        self,
        question: str,
        k: int,
        mode: str,
        answer: bool,
        collapse: bool | None,
        opts: Query,
        facets: bool,
        t0: float,
    ) -> Answer:
        filters, sort, offset, half_life = opts.filters, opts.sort, opts.offset, opts.half_life
        depth = max(k, ANSWER_DEPTH) if answer else k
        view = self._backend.reader()
        flt = Filters.of(filters).check(view.fields())
        opts = Query(flt, sort, offset, half_life)
        hits, vec = self._search(question, min(depth, MAX_K), mode, collapse, opts)
        block = None
        if answer:
            from .answer import build_answer

            # In bm25 mode no model is loaded (vec is None): the answer weighs words only.
            block = build_answer(question.strip(), hits, _Pinned(self, view), vec)
            block.notice = block.notice or self.entity_notice()
            if Sort.from_str(sort) is Sort.RELEVANCE:
                from .answer.lead import lead

                hits = lead(hits, block)
        shown = hits[:k]
        if block is not None:
            cited = {s.passage_rank for s in block.sentences}
            cited |= {s.passage_rank for c in block.versions for s in c.sentences}
            shown += [h for h in hits[k:] if h.rank in cited]
        counts = None
        if facets:
            m = Mode.from_str(mode)
            counts = self._facets(view, question.strip(), flt, m)
            if not hits and flt:
                counts = self._facets(view, question.strip(), Filters(), m)
                counts.unfiltered = True
        took = (time.perf_counter() - t0) * 1000
        return Answer(
            question=question.strip(),
            mode=Mode.from_str(mode).value,
            took_ms=took,
            hits=shown,
            answer=block,
            facets=counts,
            filters=flt.to_dict() if flt else None,
            sort=Sort.from_str(sort).value,
            offset=offset,
        )


class _Pinned:
    """The engine as the answer stage sees it: its ~20 articles and records are read from
    the generation the question was asked of, not through :meth:`Engine.get_document`,
    which looks for a newer generation first (a read of ``CURRENT``, 16 us, per article).
    Everything else is the engine's."""

    def __init__(self, engine: Asks, view: Any) -> None:
        self._engine = engine
        self._view = view

    def get_document(self, doc_id: str) -> Article:
        check_id(doc_id)
        return found(self._view.article(doc_id), doc_id)

    def document_record(self, doc_id: str) -> DocRecord:
        check_id(doc_id)
        return found(self._view.doc(doc_id), doc_id)

    @property
    def corpus_football(self) -> bool:
        """Whether the football rules apply to this generation (the answer's threshold)."""
        return bool(self._engine._is_football(self._view))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)
