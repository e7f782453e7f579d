"""Sentence-level evidence: re-rank the head of the fused list by its best sentence.

A passage answers a factoid question when one of its sentences holds the question's
words close together *and* something of the kind asked for (a name for "who", a
minute or a day for "when", a place for "where", a number for "how many"). Passage
scores spread that evidence over 700 characters; this stage looks at each sentence of
the top candidates (their spans are stored at index time, so nothing is re-split at
query time) and scores:

* the idf of the question's terms the sentence contains (related football words from
  :mod:`search.vocab` at half weight);
* a proximity bonus for question terms that stand next to each other in the sentence
  as in the question ("England manager");
* a boost when the sentence also holds an entity of the expected answer type that is
  not a word of the question.

The final score adds the min-max normalised fused score and the normalised sentence
score (weight :data:`SENTENCE_WEIGHT`), so fusion still decides between passages with
equal evidence. Only lexical signals: it costs well under a millisecond a passage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from .text import analyze

SENTENCE_WEIGHT = 0.5
RERANK_DEPTH = 30  # how many fused candidates are re-scored
PROXIMITY = 2  # terms at most this many index terms apart count as adjacent
TYPE_BOOST = 1.5

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
TIME = re.compile(
    rf"\b\d{{1,3}}(?:st|nd|rd|th)[- ]minute|\b(?:stoppage|added|injury|extra)[- ]time\b|\bhalf[- ]time\b"
    rf"|\b(?:{_DAYS})\b|\b(?:{_MONTHS})\b|\b(?:19|20)\d\d\b|\b\d{{1,2}}:\d\d\b"
)
PLACE = re.compile(
    r"\b[A-Z][\w'’-]+(?:\s[A-Z][\w'’-]+)*\s(?:Stadium|Arena|Park|Ground|Road|Lane|Field)\b|\b(?:in|at)\s[A-Z][a-z]+"
)
NUMBER = re.compile(
    r"\b\d+(?:\.\d+)?\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred)\b",
    re.IGNORECASE,
)
SCORE = re.compile(r"\b\d{1,2}-\d{1,2}\b")
PERSON = re.compile(r"\b[A-Z][a-z'’]+(?:\s(?:Mac|de|van|von|da|di|del|dos|le)?\s?[A-Z][a-z'’]+)+")

_PERSON_NOUNS = (
    "player|coach|manager|goalkeeper|keeper|defender|striker|midfielder|forward|winger|captain|"
    "referee|substitute|scorer|goalscorer|boss|star|stars|striker|man|woman|legend"
)


def answer_type(question: str) -> re.Pattern[str] | None:
    """The pattern of what the question asks for, when it asks for a short kind of thing."""
    q = question.lower().strip()
    if re.match(r"(what|which) (minute|time|date|day|year|month)\b|when\b|what time\b", q):
        return TIME
    if q.startswith("where"):
        return PLACE
    if re.match(r"how (many|much|far|long|old)\b", q):
        return NUMBER
    if re.search(r"\bscore(line)?\b|\bresult\b", q) and q.startswith(("what", "how")):
        return SCORE
    if re.match(rf"(who|whom|whose)\b|(which|what) ({_PERSON_NOUNS})\b", q):
        return PERSON
    return None


@lru_cache(maxsize=65_536)
def _terms(sentence: str) -> tuple[str, ...]:
    # Sentences repeat across queries (the same passages answer related questions).
    return tuple(analyze(sentence))


def _sentence_score(
    text: str,
    qterms: Sequence[str],
    expansions: set[str],
    idf: Callable[[str], float],
    atype: re.Pattern[str] | None,
    qwords: set[str],
) -> float:
    toks = _terms(text)
    if not toks:
        return 0.0
    present = set(toks)
    score = sum(idf(t) for t in set(qterms) if t in present)
    score += 0.5 * sum(idf(t) for t in expansions if t in present)
    if score <= 0:
        return 0.0
    pos: dict[str, list[int]] = {}
    for i, t in enumerate(toks):
        pos.setdefault(t, []).append(i)
    for a, b in zip(qterms, qterms[1:]):
        if a != b and a in pos and b in pos and any(abs(x - y) <= PROXIMITY for x in pos[a] for y in pos[b]):
            score += 0.5 * (idf(a) + idf(b))
    if atype is not None:
        for m in atype.finditer(text):
            if not set(m.group(0).lower().split()) <= qwords:
                score *= TYPE_BOOST
                break
    return score


def _minmax(xs: list[float]) -> list[float]:
    lo, hi = min(xs), max(xs)
    if hi - lo <= 1e-12:
        return [0.0 for _ in xs]
    return [(x - lo) / (hi - lo) for x in xs]


def rerank(
    question: str,
    qterms: Sequence[str],
    expansions: Sequence[str],
    candidates: Sequence[tuple[str, float]],
    sentences: Callable[[str], list[str]],
    idf: Callable[[str], float],
    weight: float = SENTENCE_WEIGHT,
) -> list[tuple[str, float]]:
    """Re-score ``candidates`` (passage id, fused score) by their best sentence.

    ``sentences(pid)`` gives the texts of a passage's sentences (headings left out).
    """
    if not candidates:
        return []
    atype = answer_type(question)
    qwords = {w.strip("?.,!'\"").lower() for w in question.split()}
    exp = set(expansions) - set(qterms)
    cache: dict[str, float] = {}

    def cached_idf(t: str) -> float:
        if t not in cache:
            cache[t] = idf(t)
        return cache[t]

    sent = [
        max((_sentence_score(s, qterms, exp, cached_idf, atype, qwords) for s in sentences(pid)), default=0.0)
        for pid, _ in candidates
    ]
    # The head's order, not its scores: RRF and convex scores live on different
    # scales, ranks do not (1 / (60 + rank) keeps RRF's flattening of the head).
    fused = _minmax([1.0 / (60 + i) for i in range(1, len(candidates) + 1)])
    ev = _minmax(sent)
    scored = [(pid, f + weight * e) for (pid, _), f, e in zip(candidates, fused, ev)]
    scored.sort(key=lambda t: -t[1])
    return scored
