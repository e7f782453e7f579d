"""Stage 1, the question: what kind of answer it wants, which words it is about, and its tense.

Plain data out (:class:`QuestionInfo`), no index access. The rules are a table,
``question_types.json``: an ordered list of (regex, answer type), the soft fit of entity
labels to each type, and the tense markers. A question no rule types gets the type a
learned fallback gives, when it is sure enough (:mod:`.qtype`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..data import lines
from ..text import QUESTION_WORDS, STOP_WORDS, analyze, term
from ..vocab import expand
from . import qtype

_WORD = re.compile(r"\d+(?:[-–]\d+)+|[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_POSS = re.compile(r"['’]s?$")
_SCORE = re.compile(r"^\d{1,2}[-–]\d{1,2}$")
_ASKS = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how)\b")  # a question word


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    raw = resources.files("search.answer").joinpath("question_types.json").read_text(encoding="utf-8")
    t = json.loads(raw)
    t["_rules"] = [(re.compile(rx), typ) for rx, typ in t["rules"]]
    t["_search_box_rules"] = [(re.compile(rx), typ) for rx, typ in t.get("search_box_rules", [])]
    t["_hedge"] = re.compile(t.get("hedge", "$^"), re.I)
    t["_future"] = re.compile(t["future"])
    t["_past"] = re.compile(t["past"])
    return t


@dataclass(frozen=True)
class QuestionInfo:
    text: str
    atype: str  # a key of the table's "labels", or "sentence" when no short answer is typed
    terms: tuple[str, ...]  # analysed content terms (as the index stores them)
    related: tuple[str, ...]  # football synonyms of the terms, weighed lower
    words: tuple[str, ...]  # lower-cased words of the question, question words left out
    names: tuple[str, ...]  # words written with a capital (after the first word), or scorelines
    tense: str  # "future", "past" or "present"
    counted: str = ""  # the noun a "how many" question counts ("goals"), as an index term
    options: frozenset[str] = frozenset()  # the words of the values an "X or Y" question offers
    guessed: bool = False  # the type is the learned fallback's (.qtype), no rule matched
    many: int = 1  # how many values it asks for: 2 for "which two teams" (.listing)

    def fit(self, label: str, text: str = "", after: str = "") -> float:
        """How well an entity answers this question: its label's fit to the type, or a
        full fit for a label that states a count of what a "how many" question counts
        (the table's ``counted_labels``: "twice" for "how many times"). ``after`` is the
        article's text just after the entity."""
        if self.counted and label in table().get("counted_labels", {}).get(self.counted[:5], ()):
            return 1.0
        return label_fit(self.atype, label, text, after)

    @property
    def fitting(self) -> frozenset[str]:
        """The entity labels :meth:`fit` can give more than 0: none for a kind no label
        answers (why, how, a quote)."""
        labels = {lab for lab, v in table()["labels"].get(self.atype, {}).items() if v > 0}
        if self.counted:
            labels |= set(table().get("counted_labels", {}).get(self.counted[:5], ()))
        return frozenset(labels)

    @property
    def asks(self) -> dict[str, float]:
        """What kind of answer it asks for, as model features (.evidence, .ranker): none typed
        (why, how), a person, or one true value (:attr:`single`)."""
        return {
            "untyped": 1.0 if self.atype == "sentence" else 0.0,
            "asks_person": 1.0 if self.atype == "person" else 0.0,
            "asks_single": 1.0 if self.single else 0.0,
            "guessed": 1.0 if self.guessed else 0.0,
        }

    @property
    def single(self) -> bool:
        """One true value (a minute, a date, a score): different values are conflicts."""
        return self.atype in table()["single"]


_SUBCLAUSE = re.compile(r"\s(?:when|after|before|because|while|since|until|as|so that|despite)\s.*$")


def rule_type(q: str) -> str:
    """The type the table's rules give, or "sentence" when none matched."""
    low = (
        _SUBCLAUSE.sub("", q.lower().replace("’", "'"), count=1)
        if not q.lower().startswith(("when", "after", "before", "since", "until"))
        else q.lower().replace("’", "'")
    )
    for rx, typ in table()["_rules"]:
        if rx.search(low):
            return str(typ)
    if "?" not in low and not _ASKS.search(low):
        for rx, typ in table()["_search_box_rules"]:  # keywords: a word that names the fact
            if rx.search(low):
                return str(typ)
    return "sentence"


def typed(q: str) -> tuple[str, bool]:
    """The type the main clause asks for ("who was in charge when Santini quit" wants a
    person), and whether it is the learned fallback's guess: a form no rule was written for
    gets that type when the fallback is sure enough."""
    typ = rule_type(q)
    if typ != "sentence":
        return typ, False
    guess = qtype.guess(q)
    return (guess, True) if guess else (typ, False)


def answer_type(q: str) -> str:
    return typed(q)[0]


def analyse(question: str) -> QuestionInfo:
    q = question.strip()
    low = q.lower()
    toks = [(m.group(), m.start()) for m in _WORD.finditer(q)]
    t = table()
    atype, guessed = typed(q)
    type_words = set(t.get("type_words", {}).get(atype, []))
    words = tuple(
        _POSS.sub("", w.lower())
        for w, _ in toks
        if w.lower() not in QUESTION_WORDS and w.lower() not in STOP_WORDS and w.lower() not in type_words
    )
    names = tuple(
        _POSS.sub("", w)
        for i, (w, _) in enumerate(toks)
        if (i > 0 and w[:1].isupper() and w.lower() not in QUESTION_WORDS) or _SCORE.match(w)
    )
    own = {term(w) for w in type_words}
    terms = tuple(x for x in analyze(q) if x not in QUESTION_WORDS and x not in own)
    tense = "future" if t["_future"].search(low) else "past" if t["_past"].search(low) else "present"
    m = re.search(t["counted"], low) if t.get("counted") else None
    return QuestionInfo(
        text=q,
        atype=atype,
        terms=terms,
        related=tuple(expand(list(terms))),
        words=words,
        names=names,
        tense=tense,
        counted=term(m.group(1)) if m else "",
        options=_options(low),
        guessed=guessed,
        many=asked_count(low, t),
    )


def asked_count(low: str, t: dict[str, Any]) -> int:
    """How many values the question asks for (the table's ``many``): 2 for "which two
    teams", 1 for "which two goals" (a count of something else) and for every other."""
    m = re.search(t["many"], low) if t.get("many") else None
    return int(t.get("many_words", {}).get(m.group(1), 1)) if m else 1


_OR = re.compile(
    r"(\w+(?:[- ]\w+)?) or (?:(?:from the|on the|in the|a|an|the|from|on|in|at) )?(\w+(?:[- ]\w+)?)"
)


def _options(low: str) -> frozenset[str]:
    """The words of the two values an alternative question offers ("was it a header or a
    shot": header, shot): those values are answers, not the question's own subject."""
    out: set[str] = set()
    for m in _OR.finditer(low):
        out.update(w for w in re.split(r"[- ]", m.group(1) + " " + m.group(2)) if w and w not in STOP_WORDS)
    return frozenset(out)


@lru_cache(maxsize=1 << 16)
def label_fit(atype: str, label: str, text: str = "", after: str = "") -> float:
    """How well an entity label (and its text, and the text just after it) answers this
    type (0 when it cannot)."""
    if text and text.lower() in excluded(atype):
        return 0.0
    rx = table().get("not_of_type_pattern", {}).get(atype)
    if text and rx and re.search(rx, text.lower()):
        return 0.0
    rx = table().get("not_of_type_after", {}).get(atype)
    if after and rx and re.search(rx, after.lower()):
        return 0.0
    rx = table().get("needs_after", {}).get(atype, {}).get(label)
    if text and rx and not re.search(rx, after.lower()):
        return 0.0
    return min(float(table()["labels"].get(atype, {}).get(label, 0.0)), unlisted_cap(atype, label, text))


def unlisted_cap(atype: str, label: str, text: str) -> float:
    """The most a name of ``label`` can fit ``atype`` when the table's "unlisted" lists do not
    hold it ("New Jersey", tagged GPE, for "which team"); 1 otherwise."""
    rule = table().get("unlisted", {}).get(atype)
    if text and rule and label in rule["labels"] and _LEAD_THE.sub("", text.lower()) not in listed(atype):
        return float(rule["fit"])
    return 1.0


_LEAD_THE = re.compile(r"^the\s+")


@cache
def listed(atype: str) -> frozenset[str]:
    """The names the table's "unlisted" rule for ``atype`` knows (lower case): a place the
    model tags GPE is a team when it is a country or a club, not when it is a city or a state."""
    rule = table().get("unlisted", {}).get(atype) or {}
    return frozenset(
        x.partition("\t")[0].strip().lower() for name in rule.get("lists", []) for x in data_lines(name)
    )


@cache
def excluded(atype: str) -> frozenset[str]:
    """Names that never answer ``atype``: the data file the table's "not_of_type" names for
    it, and the one it names for every type ("*": a nickname is never the answer)."""
    out: set[str] = set()
    for key in (atype, "*"):
        names = table().get("not_of_type", {}).get(key) or []
        for name in [names] if isinstance(names, str) else names:
            out.update(x.lower() for x in data_lines(name))
    return frozenset(out)


data_lines = lines  # the word lists' reader, under the name the answer stages use
