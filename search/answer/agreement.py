"""Stage 4, agreement: candidates that state the same value, counted by distinct articles.

Near-duplicate copies (syndicated stories) count once. A person named in full in one
article and by surname in another is one value ("Lautaro Martinez" ~ "Martinez");
minutes, scores and amounts are compared by their numbers (a minute of stoppage time by the
minute of the match it names).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .candidates import Sent, keyset
from .question import table
from .typed import Candidate, fold, words_of

AGREE = 0.35
# Types where a shorter value inside a longer one is the same value: "Martinez" in
# "Lautaro Martinez", "Sunday" in "Sunday, July 19".
_CONTAINS = frozenset({"person", "team", "club", "place", "city", "date", "name"})
CORROBORATE_ROUNDS = 3
CORROBORATE = 0.25  # share of a sentence's own terms that the winning sentences' event must hold
# A contradicting value need only share the event a little: it is cited beside the winner,
# and must also name the focus in its own sentence with a value plainly of the asked kind.
SAME_EVENT = 0.15
# The words this close to a value say which event it belongs to: in "39-year-old Messi, who
# provided both assists, extends his career, with his side to face Spain in the final on
# Monday", the clause around "Monday" is about the final, the rest about the semi-final.
NEAR_CHARS = 80
_NUM = re.compile(r"\d+(?:[.,]\d+)?")
_NUMBER_TYPES = frozenset({"minute", "score", "money", "number", "duration"})
_WORD_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"once": "1", "twice": "2", "thrice": "3"}


@dataclass
class Cluster:
    key: str
    members: list[Candidate] = field(default_factory=list)
    articles: dict[str, Candidate] = field(default_factory=dict)  # story key -> its best candidate

    @property
    def score(self) -> float:
        """The best article's score, plus a share of every other article's that agrees.

        Agreement counts, but a name every report mentions (the team, the star) must not
        outvote the one sentence that states the asked fact.
        """
        scores = sorted((c.score for c in self.articles.values()), reverse=True)
        return scores[0] + AGREE * sum(scores[1:]) if scores else 0.0

    @property
    def support(self) -> int:
        return len(self.articles)

    @property
    def text(self) -> str:
        """The fullest form the articles use ("Lautaro Martinez" over "Martinez"); for a value
        the table spells several ways ("strike", "fired home"), the best-scored spelling."""
        forms: dict[str, float] = {}
        for c in self.members:
            forms[c.text] = forms.get(c.text, 0.0) + c.score
        if self.key in _group_names():
            return max(forms, key=lambda f: forms[f])
        if any(match_minute(f) for f in forms):  # "92nd minute" over "the second minute of stoppage time"
            forms = {f: v for f, v in forms.items() if self.key in f} or forms
        return max(forms, key=lambda f: (len(_tokens(f)), forms[f]))


def _tokens(s: str) -> list[str]:
    return [_WORD_NUMBERS.get(w, w) for w in re.findall(r"[^\W_]+", fold(s))]


@cache
def _group_names() -> frozenset[str]:
    """Every value the table's "value_groups" name ("header", "shot")."""
    return frozenset(k for g in table().get("value_groups", {}).values() if isinstance(g, dict) for k in g)


@cache
def _groups(atype: str) -> dict[str, str]:
    """The table's spellings of one value for ``atype`` (its "value_groups"), {tokens: value}."""
    raw = table().get("value_groups", {}).get(atype) or {}
    return {" ".join(_tokens(f)): k for k, fs in raw.items() if not k.startswith("_") for f in fs}


@cache
def _stoppage() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str], dict[str, Any]]:
    t = table()
    sm = t.get("stoppage_minute") or {}
    return (
        re.compile(t.get("stoppage", "$^"), re.I),
        re.compile(sm.get("minute_of", "$^"), re.I),
        re.compile(sm.get("pattern", "$^"), re.I),
        re.compile(sm.get("first_half", "$^"), re.I),
        sm,
    )


def match_minute(text: str) -> str | None:
    """The minute of the match a minute of stoppage time names ("the second minute of
    stoppage time" -> "92"), by the table's ``stoppage_minute``; None for any other text."""
    stoppage, minute_of, number, first_half, sm = _stoppage()
    at = minute_of.search(text)
    if not at or not stoppage.search(text):
        return None
    found = number.search(text[: at.start()])
    if not found:
        return None
    n = int(found.group(1)) if found.group(1) else int(sm["ordinals"][found.group(2).lower()])
    base = sm.get("half_time", 45) if first_half.search(text) else sm.get("full_time", 90)
    return str(base + n)


def value_key(atype: str, text: str) -> str:
    forms = _groups(atype)
    if forms and (k := forms.get(" ".join(_tokens(text)))):
        return k
    if atype == "minute" and (m := match_minute(text)):
        return m
    if atype in _NUMBER_TYPES:
        nums = _NUM.findall(text) or [t for t in _tokens(text) if t.isdigit()]
        if nums:
            if atype == "score":
                return "-".join(sorted(nums, reverse=True))  # 2-1 and 1-2 are one result
            return " ".join(nums)
    return " ".join(_tokens(text))


def cluster(atype: str, cands: list[Candidate], story: Callable[[str], str]) -> list[Cluster]:
    """Group candidates by value; a shorter name joins the longer one that contains its words."""
    by_key: dict[str, Cluster] = {}
    for c in sorted(cands, key=lambda c: -len(_tokens(c.text))):
        k = value_key(atype, c.text)
        if not k:
            continue
        target = by_key.get(k)
        if target is None and atype in _CONTAINS:
            words = set(k.split())
            for other in by_key.values():
                if words and words <= set(other.key.split()):
                    target = other
                    break
        if target is None:
            target = by_key[k] = Cluster(k)
        target.members.append(c)
        s = story(c.sent.doc_id)
        if s not in target.articles or c.score > target.articles[s].score:
            target.articles[s] = c
    return sorted(by_key.values(), key=lambda cl: -cl.score)


def idf_of(sents: list[Sent]) -> dict[str, float]:
    df: dict[str, int] = {}
    for s in sents:
        for k in sorted(s.keys):
            df[k] = df.get(k, 0) + 1
    n = len(sents) or 1
    return {k: math.log(1 + n / (1 + d)) for k, d in df.items()}


def same_event(top: Cluster, sents: list[Sent], idf: dict[str, float] | None = None) -> Callable[..., float]:
    """How much a sentence describes the event the winning sentences describe: the share of
    its own weight (the value's words aside) that their terms state."""
    idf = idf if idf is not None else idf_of(sents)
    ctx = context(top, idf)
    own = set(_keys_of(top.key))

    def event(s: Sent, value: str | None = None) -> float:
        """``value``: judge by the words around it in ``s`` rather than all of ``s``."""
        keys = s.keys
        i = s.text.find(value) if value else -1
        if value and i >= 0:
            lo = s.text.rfind(" ", 0, max(0, i - NEAR_CHARS)) + 1
            hi = s.text.find(" ", min(len(s.text), i + len(value) + NEAR_CHARS))
            keys = keyset(s.text[lo : hi if hi >= 0 else len(s.text)])
        return _overlap(keys, ctx, idf, own)

    return event


PRECISE_TOP = 3  # the values looked at for a numbered form of the winner


def precise(atype: str, top: Cluster, clusters: list[Cluster], same: Callable[..., float]) -> Cluster:
    """The value to show for ``top``: itself, or for a minute said only as "stoppage time"
    the numbered minute of stoppage time ("92nd minute") that one of the next values states
    about the same event. The two are one fact said with more and less precision (the
    conflicts never set them against each other); a reader asking "what minute" wants the
    number."""
    stoppage, _, _, _, sm = _stoppage()
    if atype != "minute" or any(ch.isdigit() for ch in top.key) or not stoppage.search(top.text):
        return top
    full = int(sm.get("full_time", 90))
    for cl in clusters[1:PRECISE_TOP]:
        if (
            cl.key.isdigit()
            and int(cl.key) > full
            and any(same(c.sent, c.text) >= SAME_EVENT for c in cl.articles.values())
        ):
            return cl
    return top


def context(cl: Cluster, idf: dict[str, float]) -> dict[str, float]:
    """The event the winning sentences describe: their terms, weighted by rarity."""
    own = set(_keys_of(cl.key))
    terms: dict[str, float] = {}
    for c in cl.articles.values():
        for k in sorted(c.sent.keys):
            if k not in own:
                terms[k] = idf.get(k, 0.0)
    return terms


def _keys_of(value: str) -> list[str]:
    return [w[:5] for w in value.split()]


def overlap(s: Sent, ctx: dict[str, float], idf: dict[str, float], own: set[str]) -> float:
    """Share of sentence ``s``'s own weight (the value's words aside) that the context states."""
    return _overlap(s.keys, ctx, idf, own)


def _overlap(keys: frozenset[str], ctx: dict[str, float], idf: dict[str, float], own: set[str]) -> float:
    mine = {k: idf.get(k, 0.0) for k in sorted(keys) if k not in own}  # sorted: hash-seed independent
    total = sum(mine.values()) or 1.0
    return sum(w for k, w in mine.items() if k in ctx) / total


def corroborate(
    atype: str,
    top: Cluster,
    sents: list[Sent],
    story: Callable[[str], str],
    entity_at: Callable[..., Any],
    idf: dict[str, float] | None = None,
    subject: frozenset[str] = frozenset(),
) -> None:
    """Count the articles that state the winning value about the same event in other words.

    "Lautaro Martinez rose to head home in stoppage time" shares none of "who scored the
    winner"'s words, but it names the winner and shares the event's terms (head, home,
    stoppage, time) with the sentences that do: that article agrees, and its sentence is
    cited. Sentences must name the question's focus too. A name holding a word of
    ``subject`` (the question's own words) is not the value: "Dane Thomas Gravesen" does not
    state "Dane" for a question about Gravesen's agent.
    """
    idf = idf if idf is not None else idf_of(sents)
    want = set(top.key.split())
    own = set(_keys_of(top.key))
    for _round in range(CORROBORATE_ROUNDS):  # each agreeing sentence widens the event's terms
        ctx = context(top, idf)
        grew = False
        for s in sents:
            key = story(s.doc_id)
            if key in top.articles or s.focus <= 0 or overlap(s, ctx, idf, own) < CORROBORATE:
                continue
            c = entity_at(s, lambda text: _same(atype, want, text) and not (words_of(text) - want) & subject)
            if c is not None:
                top.members.append(c)
                top.articles[key] = c
                grew = True
        if not grew:
            return


_SCORELINE = re.compile(r"^\s*\d{1,2}\s*[-–]\s*\d{1,2}\s*$")


def _same(atype: str, want: set[str], text: str) -> bool:
    """Whether ``text`` states the value whose key words are ``want``. A scoreline states
    only a score: "2-1" holds the numbers of "two assists" and "one goal", not the value
    (on the training questions 98 took a "2-1" as agreeing with such a count)."""
    if atype != "score" and _SCORELINE.match(text):
        return False
    got = set(value_key(atype, text).split())
    return bool(got) and (want <= got or (got <= want and atype in _CONTAINS))
