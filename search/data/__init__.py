"""Word lists, pattern files and fitted trees that ship with the package."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def lines(name: str) -> tuple[str, ...]:
    """The lines of a word list in ``search/data``, comments and blank lines left out."""
    raw = resources.files("search.data").joinpath(name).read_text(encoding="utf-8")
    return tuple(x.strip() for x in raw.splitlines() if x.strip() and not x.startswith("#"))
