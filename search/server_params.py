"""The HTTP face's request parameters and bodies, and the article a POST body gives.

Imported by :mod:`search.server`, which checks first that fastapi is installed.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import Depends, Header, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from .engine import MAX_K, MAX_QUESTION_CHARS
from .errors import (
    IngestError,
)
from .filters import Filters
from .http_query import QueryFields, QueryOptions, filter_params, query_params
from .ingest import (
    MAX_ARTICLE_CHARS,
    MAX_ID_CHARS,
    MAX_PUBLISHED_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
)
from .server_errors import ApiError
from .types import Article

Mode = Literal["hybrid", "bm25", "dense"]
#: Longest article text POST /documents takes (characters). Encoding it is what holds the
#: write lock, so this bounds how long one write makes the others wait: 100,000 characters
#: (about 150 passages) take a few seconds with the ONNX model on 2 cores. Longer: 413.
MAX_HTTP_ARTICLE_CHARS = min(MAX_ARTICLE_CHARS, 100_000)

# -- request parameters and bodies -------------------------------------------------------------------
QuestionParam = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question (at most 2,000 characters).",
        examples=["who scored the winner"],
    ),
]
KParam = Annotated[int, Query(ge=1, le=MAX_K, description="How many passages.")]
ModeParam = Annotated[Mode, Query(description="hybrid, bm25 or dense.")]
DocIdParam = Annotated[
    str, Path(min_length=1, max_length=MAX_ID_CHARS, description="The document id; it may contain '/'.")
]
QueryDep = Annotated[QueryOptions, Depends(query_params)]
FilterDep = Annotated[Filters, Depends(filter_params)]
AuthHeader = Annotated[str | None, Header(description="Bearer <token>, for writes.")]
FormatParam = Annotated[
    Literal["json", "html"] | None,
    Query(
        alias="format",
        description="json or html; by default the Accept header decides (JSON unless it prefers text/html).",
    ),
]
SpanParam = Annotated[
    str | None,
    Query(
        description="START:END, for format=html: the span of the article to highlight, in characters "
        "(whole numbers, START < END), as a citation gives it. Anything else: 422.",
        examples=["120:260"],
    ),
]
_SPAN = re.compile(r"([0-9]+):([0-9]+)")


def check_span(span: str | None) -> tuple[int, int] | None:
    """``START:END`` as two whole numbers with START < END, or None when no span is given.

    Anything else is refused (422), as ``search show --span`` refuses it, rather than shown
    as a span the article lacks. Whether the span lies inside the article is the page's
    question: an article that changed since it was cited says so there.
    """
    if not span:
        return None
    shown = repr(span) if len(span) <= 40 else repr(span[:40]) + "…"
    form = "give START:END, two whole numbers with START < END, e.g. 120:260"
    m = _SPAN.fullmatch(span)
    if m is None:
        raise ApiError(422, "invalid_request", f"query.span: {shown} is not START:END; {form}")
    if max(len(m.group(1)), len(m.group(2))) > 18:  # no article is that long; int() has a limit
        raise ApiError(422, "invalid_request", f"query.span: {shown} has numbers too large; {form}")
    start, end = int(m.group(1)), int(m.group(2))
    if start >= end:
        raise ApiError(422, "invalid_request", f"query.span: {shown} does not have START < END; {form}")
    return start, end


class AskBody(QueryFields):
    """A question, as the body of POST /ask (with optional filters, sort and offset)."""

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question, at most 2,000 characters.",
        examples=["who scored the winner"],
    )
    k: int = Field(5, ge=1, le=MAX_K, description="How many passages to return.")
    mode: Mode = Field("hybrid", description="hybrid, bm25 or dense retrieval.")


class ArticleBody(BaseModel):
    """One article, as a line of JSONL ingestion: POST /documents adds or replaces it by id."""

    # Fields beyond these are the article's metadata, as on a JSONL line (text, number,
    # true/false or a list of strings; anything else is dropped).
    model_config = ConfigDict(extra="allow")

    id: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        # What ingest.validate_id checks that a pattern can say: no control character, no
        # backslash, no leading '/'. A '..' segment is refused by the route (422).
        pattern=r"^[^/\\\x00-\x1f\x7f-\x9f][^\\\x00-\x1f\x7f-\x9f]*$",
        examples=["2024/final-report"],
    )
    title: str = Field(
        "",
        max_length=MAX_TITLE_CHARS,
        description="Empty: derived from the text.",
        examples=["Argentina edge the final"],
    )
    # No maxLength here: a longer text is answered 413 (not 422), by the route.
    text: str = Field(
        min_length=1,
        description=f"The article's text, at most {MAX_HTTP_ARTICLE_CHARS:,} characters (longer: 413).",
        examples=["Lautaro Martinez headed home the winner in the 89th minute."],
    )
    source: str = Field("", max_length=MAX_SOURCE_CHARS)
    url: str | None = Field(None, max_length=MAX_URL_CHARS)
    published: str | None = Field(None, max_length=MAX_PUBLISHED_CHARS)


def _article(body: ArticleBody) -> Article:
    """The article a JSONL line with these fields gives: same checks, same normalisation.

    A bad id or empty text raises :class:`IngestError` with ingestion's own message.
    """
    # The JSONL reader's record parser, so both ways in agree on ids, titles and text.
    from .ingest import IngestProblem, _record

    item = _record(body.model_dump(), "POST /documents", "", 1)
    if isinstance(item, IngestProblem):
        raise IngestError(item.message)
    item.path = None
    return item
