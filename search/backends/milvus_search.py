"""Searching a Milvus index: BM25, dense, Milvus's native hybrid, and facets and date order.

:class:`MilvusSearch` sends the engine's analysed terms to Milvus's BM25 (passages, and
the document-level collection fused in as the local backend does; weighted terms such as
pseudo-relevance feedback's as repeated words), the query vector to
the dense index, both at once to ``hybrid_search``; filters become Milvus expressions
(:mod:`.milvus_filters`) applied inside each search. A term's idf is counted by Milvus
(``TEXT_MATCH`` on a server, a one-term search on Lite) with N from the manifest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..facets import Facets
from ..filters import Filters
from ..fusion import doc_weight, with_documents
from . import milvus_filters as mf
from .milvus_base import (
    PASSAGE_FIELDS,
    RRF_K,
    _and,
    _single_quoted,
    filter_expr,
    lexical_text,
    weighted_text,
)
from .milvus_filters import expression
from .milvus_read import MilvusReads


class MilvusSearch(MilvusReads):
    """The lexical, dense and hybrid searches, facets and newest-first order over Milvus."""

    def _search(
        self, data: list[Any], field: str, k: int, metric: str, filter: Any
    ) -> list[tuple[str, float]]:
        if not isinstance(k, int) or k < 1:
            raise ValueError("k must be a positive whole number")
        if field == "sparse" and not self._passages_counted():
            return []  # Lite's BM25 over a collection that never held a row: "NaN or Inf value"
        params: dict[str, Any] = {"metric_type": metric}
        if field == "dense" and self.index_type == "HNSW":
            params["params"] = {"ef": max(64, k)}
        res = self._client.search(
            self.passages_name,
            data=data,
            anns_field=field,
            limit=min(k, 16_384),
            filter=filter_expr(filter),
            output_fields=PASSAGE_FIELDS,
            search_params=params,
        )
        hits = list(res[0]) if res else []
        self._remember(hits)
        return [(h["id"], float(h["distance"])) for h in hits]

    def _passages_counted(self) -> int:
        """The passages the manifest counts (0: nothing to search, nothing to fail on)."""
        return int(self.manifest().get("counts", {}).get("passages", 0))

    def lexical(
        self, terms: Sequence[str], k: int, question: str | None = None, filter: Any = None
    ) -> list[tuple[str, float]]:
        """BM25 hits (Milvus's scoring); pass ``question`` so Milvus analyses the raw text."""
        text = lexical_text(question, terms)
        if not text.strip():
            return []
        return self._search([text], "sparse", k, "BM25", filter)

    def lexical_search(
        self,
        terms: Sequence[str],
        k: int,
        expansions: Sequence[str] | None = None,
        question: str | None = None,
        filters: Filters | None = None,
        filter: Any = None,
        extra: dict[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        """The reader's lexical search: BM25 over the question (or terms) plus expansions.

        BM25 adds up over query terms, so the expansions (related football words) go in a
        second request whose scores count at :data:`search.vocab.EXPANSION_WEIGHT`, as the
        local backend weighs them; one request with the words appended counted them as
        much as the words asked (dev hybrid hit@1 0.84 against local 0.88).

        ``extra`` maps terms to weights added to the query's (a typed term counts 1): the
        expansion terms of pseudo-relevance feedback (:mod:`search.feedback`), on passages
        and on the document-level collection alike, as locally. They go in the first
        request as repeated words (:func:`.milvus_base.weighted_text`), so the weighted
        query is scored in one pass, exactly but for weights rounded to 1/EXTRA_SCALE.
        """
        text, scale = weighted_text(question, terms, extra)
        text = text.strip()
        if not text:
            return []
        filter = _and(filter_expr(filter), expression(filters, self.fields()))
        exp = " ".join(expansions or []).strip()
        passages = self._weighted(text, exp, k, filter, scale=scale)
        dw = doc_weight(int(self.manifest().get("counts", {}).get("documents", 0)))
        if dw <= 0:
            return passages
        docs = self._weighted(text, exp, 2 * k, None, self.doclex_name, scale=scale)
        # A filter narrows passages; a document found only as a whole may not pass it.
        return with_documents(passages, docs, dw, add_missing=not filter)[:k]

    def _weighted(
        self, text: str, exp: str, k: int, filter: Any, collection: str | None = None, scale: float = 1.0
    ) -> list[tuple[str, float]]:
        """BM25 of ``text`` over ``scale`` plus EXPANSION_WEIGHT times BM25 of ``exp``, top ``k``."""
        from ..vocab import EXPANSION_WEIGHT

        def one(q: str) -> list[tuple[str, float]]:
            if collection is None:
                return self._search([q], "sparse", k, "BM25", filter)
            res = self._client.search(
                collection,
                data=[q],
                anns_field="sparse",
                limit=min(k, 16_384),
                search_params={"metric_type": "BM25"},
            )
            return [(h["id"], float(h["distance"])) for h in (res[0] if res else [])]

        hits = one(text)
        if scale != 1.0:
            hits = [(pid, sc / scale) for pid, sc in hits]
        if not exp:
            return hits
        scores = dict(hits)
        for pid, sc in one(exp):
            scores[pid] = scores.get(pid, 0.0) + EXPANSION_WEIGHT * sc
        return sorted(scores.items(), key=lambda t: (-t[1], t[0]))[:k]

    def idf(self, term: str) -> float:
        """BM25 idf (Lucene's) of an analysed term: df counted by Milvus, N from the manifest
        (the same terms as the local backend's, so the same idf)."""
        if term in self._idf:
            return self._idf[term]
        n = int(self.manifest().get("counts", {}).get("passages", 0))
        df = 0
        if n and term.strip():
            if self.lite is None:
                rows = self._client.query(
                    self.passages_name,
                    filter=f"TEXT_MATCH(lex, '{_single_quoted(term)}')",
                    output_fields=["count(*)"],
                )
                df = int(rows[0]["count(*)"]) if rows else 0
            else:
                # Milvus Lite has no TEXT_MATCH: count the passages a one-term BM25 search
                # matches (every match scores above zero), up to Milvus's top-k cap.
                res = self._client.search(
                    self.passages_name,
                    data=[term],
                    anns_field="sparse",
                    limit=min(n, 16_384),
                    search_params={"metric_type": "BM25"},
                )
                df = len(res[0]) if res else 0
        value = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        with self._lock:
            self._idf[term] = value
        return value

    def dense(
        self, vector: np.ndarray, k: int, filters: Filters | None = None, filter: Any = None
    ) -> list[tuple[str, float]]:
        """Inner-product hits for an L2-normalised query vector (= cosine)."""
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if v.shape[0] != self.dim:
            raise ValueError(f"the query vector has {v.shape[0]} dimensions, the index {self.dim}")
        expr = _and(filter_expr(filter), expression(filters, self.fields()))
        return self._search([v.tolist()], "dense", k, "IP", expr)

    def facets(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        words: bool = True,
        question: str | None = None,
    ) -> Facets:
        """Facet counts over the passages the words match (or all, without ``words``) under the filters."""
        expr = expression(filters, self.fields())
        if words:
            pids = [pid for pid, _ in mf.matches(self, terms, question, expr)]
        else:
            pids = mf.all_passages(self, expr)
        return mf.facets(self, pids)

    def newest(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        limit: int,
        question: str | None = None,
    ) -> list[tuple[str, float | None, float]]:
        return mf.newest(self, terms, question, expression(filters, self.fields()), limit)

    def hybrid(
        self,
        question: str,
        vector: np.ndarray,
        k: int,
        fusion: str = "rrf",
        *,
        filter: Any = None,
        rrf_k: int = RRF_K,
        weights: tuple[float, float] = (0.5, 0.5),
        depth: int | None = None,
    ) -> list[tuple[str, float]]:
        """Milvus's native hybrid search: BM25 and dense requests fused by RRF or weights.

        ``fusion="rrf"`` uses ``RRFRanker(rrf_k)``; ``"weighted"`` a ``WeightedRanker``
        with ``weights`` (lexical, dense) on normalised scores. Each side goes ``depth``
        deep (default ``max(100, 3k)``, as the engine's own fusion does).
        """
        from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

        if not isinstance(k, int) or k < 1:
            raise ValueError("k must be a positive whole number")
        f = fusion.lower()
        if f == "rrf":
            ranker: Any = RRFRanker(rrf_k)
        elif f in ("weighted", "convex"):
            ranker = WeightedRanker(float(weights[0]), float(weights[1]))
        else:
            raise ValueError(f"unknown fusion {fusion!r}: choose rrf or weighted")
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if v.shape[0] != self.dim:
            raise ValueError(f"the query vector has {v.shape[0]} dimensions, the index {self.dim}")
        expr = filter_expr(filter) or None
        n = min(depth or max(100, 3 * k), 16_384)
        dense_params: dict[str, Any] = {"metric_type": "IP"}
        if self.index_type == "HNSW":
            dense_params["params"] = {"ef": max(64, n)}
        text = lexical_text(question, [])
        if not self._passages_counted():
            return []
        reqs = [
            AnnSearchRequest([text], "sparse", {"metric_type": "BM25"}, n, expr=expr),
            AnnSearchRequest([v.tolist()], "dense", dense_params, n, expr=expr),
        ]
        res = self._client.hybrid_search(
            self.passages_name, reqs, ranker, limit=min(k, 16_384), output_fields=PASSAGE_FIELDS
        )
        hits = list(res[0]) if res else []
        self._remember(hits)
        return [(h["id"], float(h["distance"])) for h in hits]
