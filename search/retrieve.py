"""The engine's read path: retrieve with BM25 and vectors, fuse, rerank, order, build hits.

``search.engine.Engine`` inherits these methods. One query reads one index generation
(``backend.reader()``) for both retrievers, so it never mixes two generations:

    question → terms (+ football expansions) → BM25 top ``CANDIDATES`` ┐
             → vector → nearest ``CANDIDATES`` ────────────────────────┴→ fuse
             → (off football corpora: both again, moved toward the fused head, and fuse;
                search.feedback) → rerank
             → (newest / recency order) → hits, near-duplicate copies collapsed
"""

from __future__ import annotations

import inspect
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import ordering
from .backends import Backend
from .dates import iso_utc
from .errors import QueryError, reading_index
from .feedback import TERM_PASSAGES, VECTOR_PASSAGES, feedback_terms, feedback_vector
from .filters import Filters
from .fusion import Fusion, Mode, confidence_alpha, convex, corpus_alpha, doc_of, rrf
from .ordering import DEFAULT_HALF_LIFE_DAYS, Sort, check_half_life
from .rerank import RERANK_DEPTH, rerank, stored_units
from .rerank_learned import DEPTH as LEARNED_DEPTH
from .rerank_learned import head_order
from .text import compounds, query_terms
from .types import Hit
from .vocab import expand, is_football

MAX_K = 100
MAX_OFFSET = 1_000  # paging deeper than this is a crawl: use `search list` / GET /documents
# How deep each retriever goes before fusion (at least 3x k): deep enough that a passage
# ranked well by one side and poorly by the other still meets itself in the fused list.
# 50 and 100 give the same dev figures; 50 halves the passage-id lookups and top-k work
# (hybrid p50 at 102k passages 14.7-17.3 -> 12.2-13.3 ms over 3 A/B runs).
CANDIDATES = 50


#: Encoding beside BM25 pays while the machine has a core to spare: the model's threads
#: and BM25 then run side by side. On a machine already busy they only contend for the
#: same cores. Measured at 1M passages on 2 cores, one process, overlap against one after
#: the other (#17): load average ~1, hybrid p50 12 against 14.5 ms; ~2.5, 13.7 against
#: 13.4 ms (p95 26.2 against 23.2); 3.8-4.7, 18.8 against 17.2 ms and 19.9 against 18.0 ms
#: (Engine.ask 28.7 against 24.5 ms). So the encode overlaps while the 1-minute load
#: average is at most the cores plus this.
SPARE_LOAD = 0.0
_load: list[float] = [-1.0, 0.0]  # when the load average was last read (monotonic), and it


def spare_core(now: float | None = None) -> bool:
    """Whether the machine likely has a core to spare for encoding beside BM25: its 1-minute
    load average (read at most once a second) is at most :data:`SPARE_LOAD` above the cores
    this process may run on. True where the load average cannot be read."""
    now = time.monotonic() if now is None else now
    if now - _load[0] >= 1.0:
        try:
            _load[1] = os.getloadavg()[0]
        except (AttributeError, OSError):  # not on this platform
            _load[1] = 0.0
        _load[0] = now
    return _load[1] <= _cores() + SPARE_LOAD


@lru_cache(maxsize=1)
def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_READY: dict[type, bool] = {}


def feedback_ready(view: Any) -> bool:
    """Whether a reader gives what a feedback round reads: ``passage_vectors(pids)`` and
    ``lexical_search(..., extra=...)`` (the local snapshot and the Milvus reader do).
    Decided once per reader class."""
    cls = type(view)
    got = _READY.get(cls)
    if got is None:
        got = _READY[cls] = _has_feedback_reads(cls)
    return got


def _has_feedback_reads(cls: type) -> bool:
    if not callable(getattr(cls, "passage_vectors", None)):
        return False
    search = getattr(cls, "lexical_search", None)
    if not callable(search):
        return False
    try:
        params = inspect.signature(search).parameters
    except (TypeError, ValueError):
        return False
    return "extra" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@dataclass
class Query:
    """What narrows and orders a search besides the question: filters, sort, page."""

    filters: Any = None
    sort: str = "relevance"
    offset: int = 0
    half_life: float = DEFAULT_HALF_LIFE_DAYS


class Retrieves:
    """Searching an index: :class:`~search.engine.Engine`'s read path."""

    _backend: Backend
    path: Path
    backend_name: str
    fusion: Fusion
    rrf_k: int
    alpha: float | None
    rerank: bool
    collapse_duplicates: bool
    football: bool | None
    #: Pseudo-relevance feedback on hybrid queries (:mod:`search.feedback`): True or False
    #: forces it (for measurements); None runs it where the football rules do not apply.
    feedback: bool | None = None
    _football_at: tuple[Any, bool] | None
    #: Encode a hybrid question on a worker thread while BM25 runs (see _encode_beside):
    #: True or False forces it; None (the default) overlaps while a core is likely free
    #: (:func:`spare_core`).
    overlap_encode: bool | None = None
    _pool: ThreadPoolExecutor | None  # created on first use, under _pool_lock
    _pool_lock: threading.Lock

    if TYPE_CHECKING:

        @property
        def embedder(self) -> Any: ...

        @staticmethod
        def check_question(question: str) -> str: ...

    def _encode_beside(self, q: str) -> Future[np.ndarray]:
        """Encode the question on another thread while BM25 runs on this one.

        The model's session releases the GIL, so on two cores the two retrievers' first
        steps overlap instead of following each other. One worker per engine: concurrent
        queries' encodes queue for it, and the session's own threads do the parallel work.
        """
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode")
        return self._pool.submit(self.embedder.encode_query, q)

    def _search(
        self, question: str, k: int, mode: str, collapse: bool | None, opts: Query | None = None
    ) -> tuple[list[Hit], np.ndarray | None]:
        """:meth:`search`, and the question's vector when dense retrieval computed one."""
        opts = opts or Query()
        collapse = self.collapse_duplicates if collapse is None else collapse
        q, m, order, half_life = self._check_args(question, k, mode, opts)
        with self._reading():  # a file of the index that cannot be read: IndexFormatError
            return self._retrieve(q, k, m, collapse, opts, order, half_life)

    def _check_args(self, question: str, k: int, mode: str, opts: Query) -> tuple[str, Mode, Sort, float]:
        """The question and the arguments checked (QueryError, ValueError) before any read."""
        q = self.check_question(question)
        m = Mode.from_str(mode)  # None or 3: the choices, not "None is not a valid Mode"
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be a whole number from 1 to {MAX_K}")
        offset = opts.offset
        if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
            raise QueryError(f"offset must be a whole number from 0 to {MAX_OFFSET}")
        return q, m, Sort.from_str(opts.sort), check_half_life(opts.half_life)

    def _reading(self) -> AbstractContextManager[None]:
        """Reads of this index: what its files cannot give is IndexFormatError (local only)."""
        return reading_index(self.path if self.backend_name == "local" else None)

    def _retrieve(
        self, q: str, k: int, m: Mode, collapse: bool, opts: Query, order: Sort, half_life: float
    ) -> tuple[list[Hit], np.ndarray | None]:
        offset = opts.offset
        vec: np.ndarray | None = None
        view = self._backend.reader()  # one generation for the whole query
        flt: Filters | None = Filters.of(opts.filters).check(view.fields()) or None
        terms = query_terms(q)
        football = self._is_football(view)
        expansions = [*compounds(q), *(expand(terms) if football else [])]
        want = k + offset
        depth = max(CANDIDATES, want * 3)
        lex: list[tuple[str, float]] = []
        den: list[tuple[str, float]] = []
        overlap = self.overlap_encode if self.overlap_encode is not None else spare_core()
        encoding = self._encode_beside(q) if m is Mode.HYBRID and overlap else None
        if m in (Mode.BM25, Mode.HYBRID):
            lex = view.lexical_search(terms, depth, expansions, question=q, filters=flt)
        if m in (Mode.DENSE, Mode.HYBRID):
            vec = encoding.result() if encoding is not None else self.embedder.encode_query(q)
            den = view.dense(vec, depth, filters=flt)
        if m is Mode.BM25:
            fused = lex
        elif m is Mode.DENSE:
            fused = den
        else:
            alpha = self._alpha(football)
            fused = self._fuse(lex, den, alpha)
            if vec is not None and self._feedback(view, football):
                lex, den = self._second_round(view, q, terms, expansions, flt, depth, vec, lex, den, fused)
                fused = self._fuse(lex, den, alpha)
            if self.rerank:
                # The head's trees (search/rerank_learned.py) order a shorter head than the
                # hand-set sum does; the sum runs only where no trees ship.
                learned = head_order(q, terms, lex, den, view, football)
                depth = LEARNED_DEPTH if learned is not None else RERANK_DEPTH
                head = rerank(
                    q,
                    terms,
                    expansions,
                    fused[:depth],
                    view.sentences,
                    view.idf,
                    qvec=vec,
                    units=stored_units(view, [pid for pid, _ in fused[:depth]]),
                    learned=learned,
                )
                fused = head + fused[depth:]
        if order is not Sort.RELEVANCE:
            fused = self._ordered(view, order, fused, m, terms, expansions, flt, want, half_life, q)
        lex_rank = {pid: i for i, (pid, _) in enumerate(lex, 1)}
        den_rank = {pid: i for i, (pid, _) in enumerate(den, 1)}
        lex_score = dict(lex)
        den_score = dict(den)
        hits: list[Hit] = []
        seen_groups: dict[str, Hit] = {}
        for pid, score in fused:
            p = view.passage(pid)
            if p is None:
                continue
            rec = view.doc(p.doc_id)
            if collapse and rec is not None:
                group = rec.duplicate_of or rec.id
                first = seen_groups.get(group)
                if first is not None:
                    if first.passage.doc_id != p.doc_id and p.doc_id not in first.duplicates:
                        first.duplicates.append(p.doc_id)
                    if first.passage.doc_id != p.doc_id:
                        continue
            hit = Hit(
                passage=p,
                score=float(score),
                title=rec.title if rec else "",
                source=rec.source if rec else "",
                url=rec.url if rec else None,
                published=rec.published if rec else None,
                published_utc=iso_utc(rec.published_ts) if rec else None,
                metadata=dict(rec.metadata or {}) if rec else {},
                bm25_rank=lex_rank.get(pid),
                dense_rank=den_rank.get(pid),
                bm25_score=lex_score.get(pid),
                dense_score=den_score.get(pid),
                terms=list(terms),
            )
            if rec is not None:
                seen_groups.setdefault(rec.duplicate_of or rec.id, hit)
            hits.append(hit)
            if len(hits) >= want:
                break
        hits = hits[offset:]
        for i, h in enumerate(hits, offset + 1):
            h.rank = i
        return hits, vec

    def _fuse(
        self, lex: list[tuple[str, float]], den: list[tuple[str, float]], alpha: float
    ) -> list[tuple[str, float]]:
        if self.fusion is Fusion.RRF:
            return rrf([lex, den], k=self.rrf_k)
        if self.fusion is Fusion.CONVEX:
            return convex(lex, den, alpha)
        return convex(lex, den, confidence_alpha(lex, den, alpha))

    def _alpha(self, football: bool) -> float:
        """The lexical weight: the one given, else the corpus's (fusion.corpus_alpha)."""
        if self.alpha is not None:
            return self.alpha
        return corpus_alpha(football, int(self._backend.manifest().get("counts", {}).get("documents", 0)))

    def _feedback(self, view: Any, football: bool) -> bool:
        """Whether a hybrid query runs a feedback round (:mod:`search.feedback`): forced by
        ``self.feedback``, else off on football corpora. Both backends' readers give what it
        reads (stored passage vectors, BM25 with ``extra`` weighted terms); a reader that
        does not keeps the first round (:func:`feedback_ready`)."""
        on = self.feedback if self.feedback is not None else not football
        return on and feedback_ready(view)

    def _second_round(
        self,
        view: Any,
        q: str,
        terms: list[str],
        expansions: list[str],
        flt: Filters | None,
        depth: int,
        vec: np.ndarray,
        lex: list[tuple[str, float]],
        den: list[tuple[str, float]],
        fused: list[tuple[str, float]],
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """BM25 and the vectors again, the question moved toward the head of ``fused``
        (a side with nothing to add keeps its first list)."""
        qv = feedback_vector(vec, view.passage_vectors([pid for pid, _ in fused[:VECTOR_PASSAGES]]))
        texts = ((view.passage(pid), s) for pid, s in fused[:TERM_PASSAGES])
        extra = feedback_terms(terms, [(p.text, s) for p, s in texts if p is not None])
        if extra:
            lex = view.lexical_search(terms, depth, expansions, question=q, filters=flt, extra=extra)
        if qv is not None:
            den = view.dense(qv, depth, filters=flt)
        return lex, den

    def _ordered(
        self,
        view: Any,
        order: Sort,
        fused: list[tuple[str, float]],
        m: Mode,
        terms: list[str],
        expansions: list[str],
        flt: Filters | None,
        want: int,
        half_life: float,
        q: str,
    ) -> list[tuple[str, float]]:
        """The candidates in ``newest`` or ``recency`` order (:mod:`search.ordering`)."""
        cache: dict[str, float | None] = {}

        def ts_of(pid: str) -> float | None:
            d = doc_of(pid)
            if d not in cache:
                rec = view.doc(d)
                cache[d] = rec.published_ts if rec is not None else None
            return cache[d]

        if order is Sort.RECENCY:
            return ordering.recency(fused, ts_of, half_life)
        if m is Mode.DENSE:
            return ordering.by_date(fused, ts_of)
        # Deep enough that collapsed copies still leave ``want`` hits.
        dated = view.newest(terms, expansions, flt, max(want * 3, CANDIDATES), question=q)
        return ordering.newest(dated, fused)

    def _is_football(self, view: Any) -> bool:
        """The football rules apply to this corpus (measured once per index generation)."""
        if self.football is not None:
            return self.football
        gen = self._backend.manifest().get("generation")
        key = (id(view), gen)
        if self._football_at is None or self._football_at[0] != key:
            self._football_at = (key, is_football(view.idf))
        return self._football_at[1]
