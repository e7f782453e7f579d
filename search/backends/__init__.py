"""The storage seam: everything below it holds indexes, nothing above imports them.

The engine talks to a :class:`Backend`; the local backend is whoosh + FAISS on disk,
the Milvus backend one Milvus collection. Each returns ranked passage ids with scores
and resolves them to passages and article metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..dates import iso_utc
from ..facets import Facets
from ..filters import Filters
from ..types import Article, Passage


@dataclass
class DocRecord:
    """What the index keeps about one live document, besides its text."""

    id: str
    title: str
    source: str = ""
    url: str | None = None
    published: str | None = None
    path: str | None = None
    content_hash: str = ""
    added: str = ""
    passages: int = 0
    duplicate_of: str | None = None  # id of the first-seen copy of a near-duplicate story
    published_ts: float | None = None  # ``published`` as a UTC timestamp (search.dates)
    metadata: dict[str, Any] = field(default_factory=dict)  # the article's extra fields
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "url": self.url,
            "published": self.published,
            "path": self.path,
            "content_hash": self.content_hash,
            "added": self.added,
            "passages": self.passages,
            "duplicate_of": self.duplicate_of,
            "published_utc": iso_utc(self.published_ts),
            "metadata": dict(self.metadata or {}),
        }
        d.update(self.extra)
        return d


@dataclass
class WriteBatch:
    """One atomic change: documents to add or replace (with passages and vectors), ids to remove."""

    articles: list[Article] = field(default_factory=list)
    passages: list[list[Passage]] = field(default_factory=list)  # per article
    vectors: list[np.ndarray] = field(default_factory=list)  # per article, float32 [n, dim]
    duplicate_of: list[str | None] = field(default_factory=list)  # per article
    minhash: list[str] = field(default_factory=list)  # per article
    # per article, per passage: the (start, end) article spans of its sentences, headings left out
    sentences: list[list[list[tuple[int, int]]]] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # paths to record for `reindex`
    reset: bool = False  # drop every existing document first (a full rebuild)
    embedding: dict[str, Any] = field(default_factory=dict)  # how the vectors were made (embedder.info())
    entities: dict[str, Any] = field(default_factory=dict)  # how the entities were tagged (enrich.info())


class Reader(Protocol):
    """One consistent view of the index, used for a whole query."""

    def lexical_search(
        self,
        terms: Sequence[str],
        k: int,
        expansions: Sequence[str] | None = None,
        question: str | None = None,  # the raw text, for engines that analyse it themselves
        filters: Filters | None = None,  # checked; applied inside the retriever, before top-k
        *,
        extra: dict[str, float] | None = None,  # terms added to the query's weights (feedback)
    ) -> list[tuple[str, float]]: ...
    def dense(
        self, vector: np.ndarray, k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]: ...
    def passage_vectors(self, pids: Sequence[str]) -> np.ndarray: ...  # stored, unit rows
    def fields(self) -> dict[str, str]: ...  # extra metadata fields and their filter kinds
    def facets(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        words: bool = True,
        question: str | None = None,
    ) -> Facets: ...
    def newest(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        limit: int,
        question: str | None = None,
    ) -> list[tuple[str, float | None, float]]: ...
    def passage(self, pid: str) -> Passage | None: ...
    def article(self, doc_id: str) -> Article | None: ...
    def doc(self, doc_id: str) -> DocRecord | None: ...
    def sentences(self, pid: str) -> list[str]: ...
    def idf(self, term: str) -> float: ...


class Backend(Protocol):
    """The operations the engine needs from an index store."""

    def reader(self) -> Reader: ...
    def refresh(self) -> bool: ...
    def write(self, batch: WriteBatch) -> None: ...
    def lexical(self, terms: Sequence[str], k: int) -> list[tuple[str, float]]: ...
    def dense(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]: ...
    def passage(self, pid: str) -> Passage | None: ...
    def article(self, doc_id: str) -> Article | None: ...
    def doc(self, doc_id: str) -> DocRecord | None: ...
    def docs(self) -> list[DocRecord]: ...
    def passages_of(self, doc_id: str) -> list[Passage]: ...
    def signatures(self) -> list[tuple[str, str | None, np.ndarray]]: ...
    def stats(self) -> dict[str, Any]: ...
    def manifest(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


def record_entities(manifest: dict[str, Any], tagged: dict[str, Any], reset: bool) -> None:
    """Note in ``manifest`` how a write's articles were tagged (``enrich.info()``): the
    entity patterns of every write since the last rebuild, so that an engine with other
    patterns can say the index needs ``search reindex``. A write by another tagger (a test's)
    leaves no record; a rebuild starts the record again."""
    if reset:
        manifest.pop("entities", None)
    if not tagged:
        return
    rec = manifest.get("entities") or {}
    seen = list(rec.get("patterns") or [])
    if tagged.get("patterns") not in seen:
        seen.append(tagged.get("patterns"))
    manifest["entities"] = {"model": tagged.get("model"), "patterns": seen}
