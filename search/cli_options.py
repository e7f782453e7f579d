"""The CLI's filter, sort and paging options, shared by `search ask` and `search list`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .ordering import DEFAULT_HALF_LIFE_DAYS, Sort


def filter_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--source, --since, --until, --where (each narrows; see search.filters)."""
    f = click.option(
        "--where",
        "where",
        multiple=True,
        metavar="FIELD=VALUE",
        help="Keep articles whose metadata field matches (repeatable): category=football, "
        "minute>=80 (>=, <=, >, < for numbers and dates).",
    )(f)
    f = click.option("--until", default=None, metavar="DATE", help="Published on or before DATE (ISO 8601).")(
        f
    )
    f = click.option("--since", default=None, metavar="DATE", help="Published on or after DATE (ISO 8601).")(
        f
    )
    return click.option(
        "--source",
        "sources",
        multiple=True,
        metavar="NAME",
        help="Only this outlet (repeatable: any of them).",
    )(f)


def sort_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--half-life",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_HALF_LIFE_DAYS,
        show_default=True,
        help="Days after which --sort recency halves an article's weight.",
    )(f)
    f = click.option(
        "--offset", type=click.IntRange(0, 1000), default=0, help="Skip this many passages (paging)."
    )(f)
    return click.option(
        "--sort",
        type=click.Choice([s.value for s in Sort]),
        default="relevance",
        show_default=True,
        help="relevance, newest first (relevance breaks ties), or recency (relevance decayed by age).",
    )(f)


def filters_from(
    sources: tuple[str, ...], since: str | None, until: str | None, where: tuple[str, ...]
) -> Any:
    from .filters import Filters

    return Filters.parse(source=list(sources), since=since, until=until, where=list(where))
