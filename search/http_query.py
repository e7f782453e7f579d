"""The HTTP face's filter, sort and paging inputs: query parameters and a JSON ``filters`` object.

GET requests take ``source`` (repeatable), ``since``, ``until``, ``where=FIELD=VALUE``
(repeatable, also ``FIELD>=VALUE``), ``sort``, ``offset`` and ``half_life``; POST bodies
take the same names, and ``filters`` as a JSON object (see :mod:`search.filters`). A
filter that names an unknown field or gives a value of the wrong form is a 400
(``bad_filter``) that says which field and the form it expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, Field

from .filters import Filters
from .ordering import DEFAULT_HALF_LIFE_DAYS

SortName = Literal["relevance", "newest", "recency"]
MAX_OFFSET = 1_000


@dataclass
class QueryOptions:
    filters: Filters
    sort: str = "relevance"
    offset: int = 0
    half_life: float = DEFAULT_HALF_LIFE_DAYS

    def kwargs(self) -> dict[str, Any]:
        return {
            "filters": self.filters,
            "sort": self.sort,
            "offset": self.offset,
            "half_life": self.half_life,
        }


def filter_params(
    source: Annotated[
        list[str] | None, Query(description="Only this outlet (repeatable: any of them).")
    ] = None,
    since: Annotated[
        str | None, Query(max_length=64, description="Published on or after (ISO 8601).")
    ] = None,
    until: Annotated[
        str | None, Query(max_length=64, description="Published on or before (ISO 8601).")
    ] = None,
    where: Annotated[
        list[str] | None,
        Query(
            max_length=500,
            description="FIELD=VALUE on an article's metadata (repeatable), or FIELD>=VALUE (>=, <=, >, <) "
            "for numbers and dates.",
            examples=["category=football"],
        ),
    ] = None,
) -> Filters:
    return Filters.parse(source=source or [], since=since, until=until, where=where or [])


def query_params(
    source: Annotated[
        list[str] | None, Query(description="Only this outlet (repeatable: any of them).")
    ] = None,
    since: Annotated[
        str | None, Query(max_length=64, description="Published on or after (ISO 8601).")
    ] = None,
    until: Annotated[
        str | None, Query(max_length=64, description="Published on or before (ISO 8601).")
    ] = None,
    where: Annotated[
        list[str] | None,
        Query(
            max_length=500,
            description="FIELD=VALUE on an article's metadata (repeatable), or FIELD>=VALUE (>=, <=, >, <) "
            "for numbers and dates.",
            examples=["category=football"],
        ),
    ] = None,
    sort: Annotated[SortName, Query(description="relevance, newest (date first) or recency (decayed).")] = (
        "relevance"
    ),
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Skip this many passages (paging).")] = 0,
    half_life: Annotated[
        float,
        # allow_inf_nan=False: nan was "less than or equal to 100000", not "a finite number"
        Query(
            gt=0,
            le=100_000,
            allow_inf_nan=False,
            description="Days after which sort=recency halves a weight.",
        ),
    ] = DEFAULT_HALF_LIFE_DAYS,
) -> QueryOptions:
    return QueryOptions(filter_params(source, since, until, where), sort, offset, half_life)


FilterValue = str | float | bool | list[str] | dict[str, str | float]


class QueryFields(BaseModel):
    """Filters, sort and page, as fields of a JSON body (mixed into POST /ask)."""

    filters: dict[str, FilterValue] | list[str] | None = Field(
        None,
        description='Metadata filters: {"source": "AFP", "since": "2005-01-01", "category": ["football"], '
        '"minute": {">=": 80}} or a list of "FIELD=VALUE" strings.',
        examples=[{"category": "football", "since": "2005-01-01"}],
    )
    sort: SortName = Field("relevance", description="relevance, newest or recency.")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many passages (paging).")
    half_life: float = Field(
        DEFAULT_HALF_LIFE_DAYS, gt=0, le=100_000, allow_inf_nan=False, description="Days, for sort=recency."
    )

    def options(self) -> QueryOptions:
        return QueryOptions(Filters.of(self.filters), self.sort, self.offset, self.half_life)
