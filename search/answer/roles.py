"""Whose job a name is: the role a report writes beside a name ("Sheffield United boss
Neil Warnock", "Stan Varga, the Celtic defender,") against the role a question asks for
("which Sheffield United keeper was carried off").

British match reports name nearly everyone by club and role, so a person the question
does not ask for is often told apart by that word alone: the boss quoted on the keeper's
injury, the scorer of another goal described as a midfielder. The role words are data
(``data/football_roles.txt``); words one group of :mod:`search.vocab` holds ("keeper",
"goalkeeper") are one role. How much a match or a clash counts is the ranker's fitted
weight (:mod:`.ranker`, feature ``role``), not a rule.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..vocab import GROUPS
from .question import data_lines

ROLE_BEFORE_WORDS = 4  # a role word this many words before the name: "Celtic defender Stan Varga"
ROLE_AFTER_CHARS = 50  # an apposition after it: "Warnock, the Blades boss, said"


@lru_cache(maxsize=1)
def _table() -> tuple[re.Pattern[str], dict[str, str]]:
    words = [x.lower() for x in data_lines("football_roles.txt")]
    group: dict[str, str] = {}
    for w in words:
        held = next((g.split() for g in GROUPS if w in g.split()), [w])
        group[w] = held[0]
    rx = re.compile(
        r"\b(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")s?\b", re.I
    )
    return rx, group


def roles_in(text: str) -> frozenset[str]:
    """The roles (one name per group) that role words of ``text`` name."""
    rx, group = _table()
    return frozenset(group[m.group(1).lower()] for m in rx.finditer(text))


def asked(question: str) -> frozenset[str]:
    """The roles a question asks about ("which Everton striker" -> striker, "who refereed"
    -> referee, by ``data/role_verbs.txt``); not one it writes before a name it gives ("what
    did Arsenal boss Arsene Wenger say": Wenger's)."""
    rx, group = _table()
    verbs = _verbs()
    return frozenset(
        group[m.group(1).lower()]
        for m in rx.finditer(question)
        if not re.match(r"\s+[A-Z]", question[m.end() :])
    ) | frozenset(
        group.get(verbs[w], verbs[w]) for w in re.findall(r"[a-z]+", question.lower()) if w in verbs
    )


@lru_cache(maxsize=1)
def _verbs() -> dict[str, str]:
    pairs = (x.split() for x in data_lines("role_verbs.txt"))
    return {p[0].lower(): p[1].lower() for p in pairs if len(p) == 2}


def beside(text: str, a: int, b: int) -> frozenset[str]:
    """The roles written beside the name at ``text[a:b]``: in the few words before it, or
    in an apposition just after it (a comma, then up to the next punctuation)."""
    before = " ".join(re.split(r"\s+", text[max(0, a - 60) : a].rstrip())[-ROLE_BEFORE_WORDS:])
    before = re.split(r"[.,;:!?\"“”()]", before)[-1]  # not across a clause
    after = ""
    if text[b : b + 2].lstrip().startswith(","):
        after = re.split(r"[.;:!?\"“”()]", text[b + 1 : b + 1 + ROLE_AFTER_CHARS].lstrip(" ,"))[0]
        after = after.split(",")[0]
    return roles_in(before) | roles_in(after)


def fit(text: str, a: int, b: int, wanted: frozenset[str]) -> float:
    """1 when a role the question asks for is written beside the name, -1 when only other
    roles are, 0 when none is or the question asks for none."""
    if not wanted:
        return 0.0
    near = beside(text, a, b)
    if not near:
        return 0.0
    return 1.0 if near & wanted else -1.0
