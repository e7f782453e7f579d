"""Stage 3, typed candidates: the stored entities of the asked kind in candidate sentences
that the question does not itself name, each scored by its sentence and its fit."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from ..text import term
from .candidates import Sent
from .question import QuestionInfo, label_fit, table

PROXIMITY_WORDS = 12
COUNT_MISS = 0.4  # a number not followed by what the question counts
_WORD_RE = re.compile(r"[^\W_]+")  # an entity this many words from the question's matched words counts half
_LEAD_THE = re.compile(r"^(?:the|a|an)\s+", re.I)
_POSSESSIVE = re.compile(r"['’]s?$")
_LETTER = re.compile(r"[^\W\d_]")
_NEEDS_LETTERS = frozenset({"person", "team", "place"})
_NUMBERISH = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    r"hundred|thousand|half|first|second|third|fourth|fifth|stoppage|injury|added)\b",
    re.I,
)


@dataclass
class Candidate:
    text: str  # as the article writes it (exact span, trimmed of "the" and "'s")
    start: int  # article offsets of that text
    end: int
    label: str
    sent: Sent
    score: float
    near: float = 0.5  # 1 beside the question's predicate words, 1/2 at PROXIMITY_WORDS away


def fold(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c)).lower().replace("’", "'")


def _words(s: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", fold(s)))


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    span = text[start:end]
    m = _LEAD_THE.match(span)
    if m:
        start += m.end()
    p = _POSSESSIVE.search(text[start:end])
    if p and p.start() > 0:
        end = start + p.start()
    return start, end


def candidates(q: QuestionInfo, sents: list[Sent]) -> list[Candidate]:
    """Entities that could answer ``q``: right kind, in a sentence on the focus, not named by it."""
    if q.atype == "sentence":
        return []
    qwords = {fold(w) for w in q.words} | {fold(n) for n in q.names}
    numeric = set(table().get("needs_number", []))
    out: list[Candidate] = []
    for s in sents:
        if not s.usable:
            continue
        for a, b, label in s.article.entities:
            if a < s.start or b > s.end:
                continue
            a, b = _trim(s.article.text, a, b)
            text = s.article.text[a:b]
            fit = label_fit(q.atype, label, text)
            if fit <= 0:
                continue
            if not text.strip() or (q.atype in _NEEDS_LETTERS and not _LETTER.search(text)):
                continue
            if q.atype in numeric and not _NUMBERISH.search(text):
                continue
            if _words(text) & qwords:
                continue  # the question's own subject is not its answer
            near = _proximity(s, a - s.start, b - s.start)
            if q.counted:  # "how many goals": "158 goals", not "10-point"
                after = s.article.text[a : b + 40]
                fit *= (
                    1.0
                    if any(q.counted[:5] == term(w)[:5] for w in _WORD_RE.findall(after.lower())[:4])
                    else COUNT_MISS
                )
            out.append(Candidate(text, a, b, label, s, s.score * fit * near, near))
    return out


def _proximity(s: Sent, a: int, b: int) -> float:
    """1 beside the question's matched words, 1/2 at PROXIMITY_WORDS words away."""
    if not s.hits:
        return 0.5

    def gap(h: int) -> int:
        lo, hi = (h, a) if h < a else (b, h) if h > b else (0, 0)
        return s.text[lo:hi].count(" ")

    return 1.0 / (1.0 + min(gap(h) for h in s.hits) / PROXIMITY_WORDS)


def entity_at(s: Sent, matches: Callable[[str], bool], atype: str = "") -> Candidate | None:
    """The first entity of sentence ``s`` whose text ``matches``, as a candidate."""
    for a, b, label in s.article.entities:
        if a >= s.start and b <= s.end:
            a, b = _trim(s.article.text, a, b)
            text = s.article.text[a:b]
            if text.strip() and matches(text):
                return Candidate(text, a, b, label, s, s.score * 0.5)
    return None
