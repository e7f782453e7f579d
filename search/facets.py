"""Facets: how the passages that match a query (every one, not only the top k) spread
over sources, categories and months, and which people and teams they name most.

The matching passages are those the question's words match (BM25, after the filters),
in every mode but ``dense``, where every passage that passes the filters matches. A
filter that matches nothing gives an empty result whose facets are counted without the
filter (``unfiltered``), so a user sees what a wider search would find.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .data import lines

#: Document fields counted as facets (``category`` is an extra JSONL field, e.g. BBC Sport's).
FACET_FIELDS = ("source", "category", "month")
#: Entity labels counted as people, and as teams (a country's name tagged as a place is
#: a national team in match reports; other places are not teams).
PEOPLE_LABELS = frozenset({"PERSON"})
TEAM_LABELS = frozenset({"ORG"})
COUNTRY_LABELS = frozenset({"GPE", "NORP"})
#: People and teams are counted over at most this many matching passages, the best by
#: BM25: gathering every matching passage's entities is linear in the matches (22 ms for a
#: common word at 1M passages, #17), and the names of the best-matching passages are the
#: ones a reader narrows by. Milvus counts every facet over as many (its cap on a search's
#: depth, ``milvus_filters.MATCH_LIMIT``, the same number); the local backend counts source,
#: category and month over every match.
ENTITY_SAMPLE = 16_384


_POSSESSIVE = re.compile(r"['’]s?$")


def facet_name(text: str) -> str:
    """A stored entity's text as the facets show it: spaces collapsed, a possessive dropped
    ("Anthony Gordon’s" and "Anthony Gordon" are one person)."""
    name = " ".join(text.split())
    return _POSSESSIVE.sub("", name) or name


@lru_cache(maxsize=1)
def not_teams() -> frozenset[str]:
    """Outlets, governing bodies and competitions (``data/not_teams.txt``), lower-cased."""
    return frozenset(x.lower() for x in lines("not_teams.txt"))


def entity_group(label: str, text: str, countries: frozenset[str]) -> str | None:
    """ "people", "teams" or None for one stored entity. A country's name is its national
    team whatever the model tagged it ("England" as a person); an outlet or a competition
    tagged ORG ("BBC", "the Champions League") is no team."""
    name = facet_name(text)
    if name in countries:
        return "teams" if label in PEOPLE_LABELS | TEAM_LABELS | COUNTRY_LABELS else None
    if label in PEOPLE_LABELS:
        return "people"
    if label in TEAM_LABELS:
        return None if name.lower() in not_teams() else "teams"
    return None


@dataclass
class Facets:
    """Counts of matching passages per value of each facet, most frequent first."""

    passages: int = 0  # how many passages match
    fields: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    unfiltered: bool = False  # counted without the filters (because nothing matched with them)
    entities_over: int | None = None  # people and teams: counted over this many best matches

    def __post_init__(self) -> None:
        if self.entities_over is None:
            self.entities_over = self.passages

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "passages": self.passages,
            "unfiltered": self.unfiltered,
            "entities_over": self.entities_over,
        }
        for name, counts in self.fields.items():
            d[name] = [{"value": v, "count": c} for v, c in counts]
        return d
