"""Reading the documents an index holds: :class:`~search.engine.Engine`'s document reads.

By id (the article, its record, its passages), page by page with filters over the fields the
index holds, and the index's stats and manifest. Every read takes the index's read guard
(``_reading``), so a damaged file is an :class:`~search.errors.IndexFormatError`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from .backends import Backend, DocRecord
from .errors import DocumentNotFoundError, QueryError
from .filters import Filters
from .types import Article, Passage


class Documents:
    """The documents of an index, as the faces list and show them."""

    _backend: Backend

    if TYPE_CHECKING:

        def _reading(self) -> AbstractContextManager[None]: ...

    def fields(self) -> dict[str, str]:
        """The fields this index can filter on, and their kinds (text, number, bool, strings, date)."""
        from .filters import BUILTIN

        with self._reading():
            return {**BUILTIN, **self._backend.reader().fields()}

    def check_filters(self, filters: Any) -> Filters:
        """``filters`` parsed and checked against this index's fields, or :class:`FilterError`."""
        f = Filters.of(filters)
        if not f:
            return f
        with self._reading():
            kinds = self._backend.reader().fields()
        return f.check(kinds)

    def get_document(self, doc_id: str) -> Article:
        check_id(doc_id)
        with self._reading():
            self._backend.refresh()
            return found(self._backend.article(doc_id), doc_id)

    def document_record(self, doc_id: str) -> DocRecord:
        check_id(doc_id)
        with self._reading():
            return found(self._backend.doc(doc_id), doc_id)

    def documents(self) -> list[DocRecord]:
        with self._reading():
            self._backend.refresh()
            return sorted(self._backend.docs(), key=lambda d: d.id)

    def list_documents(
        self, offset: int = 0, limit: int | None = None, filters: Any = None
    ) -> tuple[list[DocRecord], int]:
        """One page of the documents (by id) that pass ``filters``, and how many pass in all."""
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise QueryError("offset must be a whole number, 0 or more")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise QueryError("limit must be a whole number, 1 or more")
        flt = self.check_filters(filters)
        docs = self.documents()
        if flt:
            with self._reading():  # a record's metadata is read as it is matched
                docs = [d for d in docs if flt.matches(d.source, d.published_ts, d.metadata or {})]
        end = None if limit is None else offset + limit
        return docs[offset:end], len(docs)

    def passages_of(self, doc_id: str) -> list[Passage]:
        check_id(doc_id)
        with self._reading():
            return self._backend.passages_of(doc_id)

    def stats(self) -> dict[str, Any]:
        with self._reading():
            self._backend.refresh()
            st = self._backend.stats()
        note = self.entity_notice()
        if note:
            st["notice"] = note
        return st

    def manifest(self) -> dict[str, Any]:
        with self._reading():
            return self._backend.manifest()

    def entity_notice(self) -> str | None:
        """What to do when some articles were tagged with entity patterns other than this
        version's (``search/data``'s patterns and club list): the answers read the stored
        labels, so they are only as current as the last ``search reindex``."""
        from .enrich import info

        got = (self.manifest().get("entities") or {}).get("patterns") or []
        if all(p == info()["patterns"] for p in got):
            return None
        return (
            "some articles were tagged with the entity patterns of another version: "
            "run `search reindex` to tag them with this one's"
        )


T = TypeVar("T")


def shown(x: object) -> str:
    """``x`` as an error message names a wrong argument: its repr, or its type when long."""
    r = repr(x)
    return r if len(r) <= 80 else f"a {type(x).__name__}"


def check_id(doc_id: object) -> None:
    """A document id is a string: anything else is a ValueError saying so (``5`` was
    "'int' object has no attribute 'encode'" from deep in a backend)."""
    if not isinstance(doc_id, str):
        raise ValueError(
            f"document ids are strings, not {shown(doc_id)}: give the id as text, as `search list` shows it"
        )


def found(x: T | None, doc_id: str) -> T:
    """``x``, or the error a missing document gives on every face."""
    if x is None:
        shown = repr(doc_id) if len(doc_id) <= 80 else repr(doc_id[:80]) + f"… ({len(doc_id)} characters)"
        raise DocumentNotFoundError(f"no document {shown} in the index: see `search list`")
    return x
