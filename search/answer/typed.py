"""Stage 3, typed candidates: the stored entities of the asked kind in candidate sentences
that the question does not itself name, each scored by its sentence and its fit."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..text import term
from . import roles
from .candidates import Sent, key, opening_reference, referred
from .question import QuestionInfo, data_lines, table

PROXIMITY_WORDS = 12
AFTER = 12  # characters after an entity that the table's "not_of_type_after" reads
ANCHOR_FIT = 0.9  # closeness to a focus word says less than closeness to a predicate word
COUNT_MISS = 0.4  # a number not followed by what the question counts
RIVAL_WORDS = 3  # a name this many words from a candidate or fewer can be whose it is
#: The labels of names a value can belong to: people, clubs, countries, their peoples.
SUBJECT_LABELS = frozenset({"PERSON", "ORG", "GPE", "NORP"})
_WORD_RE = re.compile(r"[^\W_]+")  # an entity this many words from the question's matched words counts half
_LEAD_THE = re.compile(r"^(?:the|a|an)\s+", re.I)
_POSSESSIVE = re.compile(r"['’]s?$")
_CURRENCY = "£$€"
# One capitalised word the model tagged apart from the name just before it ("Henk Ten" +
# "Cate"): a surname it split off, joined back (see _joined).
_NAME_WORD = re.compile(r"[^\W\d_][\w'-]*")
_LETTER = re.compile(r"[^\W\d_]")
_NEEDS_LETTERS = frozenset({"person", "team", "club", "place", "city"})
_NUMBERISH = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    r"hundred|thousand|half|first|second|third|fourth|fifth|stoppage|injury|added|once|twice|thrice)\b",
    re.I,
)


@lru_cache(maxsize=1)
def _role_rx() -> re.Pattern[str]:
    """The role words (``data/football_roles.txt``) that the model sometimes takes into a
    name ("Keeper Petr Cech"), to trim from it."""
    words = sorted(data_lines("football_roles.txt"), key=len, reverse=True)
    return re.compile(r"(?:" + "|".join(re.escape(w) for w in words) + r")\b", re.I)


@dataclass
class Candidate:
    text: str  # as the article writes it (exact span, trimmed of "the" and "'s")
    start: int  # article offsets of that text
    end: int
    label: str
    sent: Sent
    score: float
    near: float = 0.5  # 1 beside the question's predicate words, 1/2 at PROXIMITY_WORDS away
    first: bool = False  # the first candidate of the asked kind in its sentence
    rival: float = 0.0  # whose value it is: see rival()
    role: str = ""  # what it does in its sentence, as stored (search.enrich.role: "nsubj score")
    job: float = 0.0  # the role written beside it against the one asked: see .roles.fit


@lru_cache(maxsize=1 << 16)  # names repeat across sentences, articles and questions
def fold(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c)).lower().replace("’", "'")


_JOINED = re.compile(r"[^\W_]+(?:'[^\W_]+)+")


@lru_cache(maxsize=1 << 16)
def words_of(s: str) -> frozenset[str]:
    """Its folded words, and each word with an apostrophe also whole: "Martin O'Neill" holds
    "o'neill", as the question's own words keep it, so the question's subject is not its answer."""
    f = fold(s)
    return frozenset(re.findall(r"[^\W_]+", f)) | frozenset(_JOINED.findall(f))


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    span = text[start:end]
    m = _LEAD_THE.match(span)
    if m:
        start += m.end()
    m = _role_rx().match(text, start, end)
    if m and text[m.end() : m.end() + 1] == " " and m.end() + 1 < end:
        start = m.end() + 1  # "Keeper Petr Cech": the model took the role into the name
    p = _POSSESSIVE.search(text[start:end])
    if p and p.start() > 0:
        end = start + p.start()
    return start, end


def question_words(q: QuestionInfo) -> frozenset[str]:
    """The question's own words and names, folded: a value that names one is its subject,
    not its answer. The noun a "how many" question counts is part of its answer ("13
    games"), not its subject."""
    return frozenset(fold(w) for w in q.words if not (q.counted and term(w) == q.counted)) | {
        fold(n) for n in q.names
    }


@lru_cache(maxsize=1 << 16)
def value_words(text: str) -> frozenset[str]:
    """A value's folded words and the value whole ("5-4" is one word of the question)."""
    return words_of(text) | {fold(text)}


def names_subject(q: QuestionInfo, qwords: frozenset[str], text: str) -> bool:
    """Whether a value names the question's own subject (``qwords``: :func:`question_words`),
    so it is not the answer; the values an "X or Y" question offers are answers ("a header or
    a shot")."""
    words = value_words(text)
    return bool(words & qwords) and not words <= q.options


def candidates(q: QuestionInfo, sents: list[Sent]) -> list[Candidate]:
    """Entities that could answer ``q``: right kind, in a sentence on the focus, not named by it."""
    if q.atype == "sentence":
        return []
    qwords = question_words(q)
    acronyms = {n for n in q.names if n.isupper() and 2 <= len(n) <= 5}  # "QPR"
    qnames = frozenset(fold(n) for n in q.names if not n[:1].isdigit())
    numeric = set(table().get("needs_number", []))
    bound = set(table().get("bound", []))
    votes = label_votes(sents)
    wanted = roles.asked(q.text)
    rx = table().get("extend_after", {}).get(q.atype)
    extend = re.compile(rx, re.I) if rx else None
    out: list[Candidate] = []
    for s in sents:
        if not s.usable:
            continue
        first = True
        for k, (a, b, label) in _joined(s.article.text, s.ents):
            a, b = trim(s.article.text, a, b)
            if label == "MONEY" and a > 0 and s.article.text[a - 1] in _CURRENCY:
                a -= 1  # "£7million": the model's span may leave the sign out
            text = s.article.text[a:b]
            fit = q.fit(label, text, s.article.text[b : b + AFTER])
            if fit <= 0:
                continue
            if extend and (m := extend.match(s.article.text[b : b + AFTER])):
                b += m.end()  # "1945" + " GMT"
                text = s.article.text[a:b]
            others = votes.get(fold(text), ())
            if len(others) > 1:  # the model's other tags of the same name in these articles
                fit = 0.5 * fit + 0.5 * sum(q.fit(lb, text) for lb in others) / len(others)
            if not text.strip() or (q.atype in _NEEDS_LETTERS and not _LETTER.search(text)):
                continue
            if q.atype in numeric and not _NUMBERISH.search(text):
                continue
            if names_subject(q, qwords, text) or (acronyms and _initials(text) in acronyms):
                continue  # the question's own subject ("QPR": Queens Park Rangers) is not its answer
            near = proximity(s, a - s.start, b - s.start)
            if q.counted:  # "how many goals": "158 goals", not "10-point"
                fit *= 1.0 if counts(q.counted, label, s.article.text[a : b + 40]) else COUNT_MISS
            if q.atype in bound and qnames and owner(s, a, qnames) > 0:
                continue  # "Martinez to head home the winner" says nothing of how Fernandez scored
            r = rival(s, a, b, qnames) if qnames else 0.0
            role = s.roles[k] if k < len(s.roles) else ""
            job = roles.fit(s.article.text, a, b, wanted)
            out.append(Candidate(text, a, b, label, s, s.score * fit * near, near, first, r, role, job))
            first = False
    return out


def _joined(text: str, ents: list[tuple[int, int, str]]) -> list[tuple[int, tuple[int, int, str]]]:
    """The sentence's entities with their stored index, a person's name the model split in
    two joined back: "Henk Ten" (PERSON) + "Cate" (ORG), one space apart, is "Henk Ten Cate".
    Only a single capitalised word after a name that is not a possessive ("Tommy Docherty's
    Manchester United" stays two)."""
    out: list[tuple[int, tuple[int, int, str]]] = []
    skip = False
    for k, (a, b, label) in enumerate(ents):
        if skip:
            skip = False
            continue
        if label == "PERSON" and k + 1 < len(ents):
            na, nb, _ = ents[k + 1]
            word = text[na:nb]
            if (
                na == b + 1
                and text[b] == " "
                and word[:1].isupper()
                and _NAME_WORD.fullmatch(word)
                and not re.search(r"['’]s$", text[a:b])
            ):
                out.append((k, (a, nb, label)))
                skip = True
                continue
        out.append((k, (a, b, label)))
    return out


def rival(s: Sent, a: int, b: int, qnames: frozenset[str]) -> float:
    """Whose value the candidate at article offsets ``a:b`` is, by the nearest name to it
    (a person, club or country within RIVAL_WORDS words): 1 when that is a name the
    question does not give (the value is likely someone else's: "Who manages Argentina?"
    against "England manager Thomas Tuchel", "the score against France?" against
    "Argentina defeated England 2-1"), -1 when it is one of the question's, 0 when no
    name stands that close."""
    text, base = s.article.text, s.start

    def gap(x: int, y: int) -> int:
        lo, hi = (y, a) if y <= a else (b, x) if x >= b else (0, 0)
        return text[lo:hi].count(" ")

    other = RIVAL_WORDS + 1
    mine = other
    for x, y, label in s.ents:
        if label not in SUBJECT_LABELS or (x < b and y > a):
            continue
        g = gap(x, y)
        if words_of(text[x:y]) & qnames:
            mine = min(mine, g)
        else:
            other = min(other, g)
    for m in _WORD_RE.finditer(s.text):  # the question's names as written, tagged or not
        if fold(m.group()) in qnames:
            mine = min(mine, gap(base + m.start(), base + m.end()))
    if mine <= RIVAL_WORDS and mine <= other:
        return -1.0
    return 1.0 if other <= RIVAL_WORDS else 0.0


def owner(s: Sent, a: int, qnames: frozenset[str]) -> float:
    """Whose act the candidate starting at article offset ``a`` is, for the table's "bound"
    types (a finish, a position): the nearest name before it in its sentence, the one who
    headed or drifted ("Fernandez ... powering his header past Jordan Pickford": the keeper
    beaten comes after). -1 when that is a name the question gives, 1 when another, 0 when
    none comes before."""
    text, base = s.article.text, s.start
    best, theirs = -1, False
    # "The Chelsea midfielder unleashed a strike", after a sentence naming Fernandez: his.
    opening = opening_reference(s.text)
    if opening and base + opening <= a:
        back = referred(s)
        if any(key(term(n)) in back for n in qnames):
            best = base + opening
    for x, y, label in s.ents:
        if label in SUBJECT_LABELS and y <= a and y > best:
            best, theirs = y, not (words_of(text[x:y]) & qnames)
    for m in _WORD_RE.finditer(s.text):  # the question's names as written, tagged or not
        if base + m.end() <= a and base + m.end() >= best and fold(m.group()) in qnames:
            best, theirs = base + m.end(), False
    return 0.0 if best < 0 else 1.0 if theirs else -1.0


def counts(counted: str, label: str, text: str) -> bool:
    """Whether an entity (``text`` runs from it on) counts what the question counts: "158
    goals" for goals; "twice" for times, by its label (the table's ``counted_labels``)."""
    if label in table().get("counted_labels", {}).get(counted[:5], ()):
        return True
    return any(counted[:5] == term(w)[:5] for w in _WORD_RE.findall(text.lower())[:4])


def _initials(text: str) -> str:
    return "".join(w[0] for w in text.split() if w[:1].isupper())


def label_votes(sents: list[Sent]) -> dict[str, list[str]]:
    """Every label the model gave each name across the candidate articles: "Southampton"
    tagged PERSON once and ORG five times is a club, whatever one sentence says."""
    votes: dict[str, list[str]] = {}
    seen: set[str] = set()
    for s in sents:
        a = s.article
        if a.id in seen:
            continue
        seen.add(a.id)
        for name, labels in _article_votes(a.text, tuple(a.entities)):
            votes.setdefault(name, []).extend(labels)
    return votes


@lru_cache(maxsize=1 << 12)
def _article_votes(
    text: str, entities: tuple[tuple[int, int, str], ...]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each name of one article with the labels the model gave it there (cached per article)."""
    out: dict[str, list[str]] = {}
    for x, y, label in entities:
        x, y = trim(text, x, y)
        out.setdefault(fold(text[x:y]), []).append(label)
    return tuple((k, tuple(v)) for k, v in out.items())


def voted_label(votes: dict[str, list[str]], text: str, label: str) -> str:
    """The label the model gave ``text`` most often across the candidate articles."""
    got = votes.get(fold(text))
    return max(sorted(set(got)), key=got.count) if got else label


def proximity(s: Sent, a: int, b: int) -> float:
    """1 beside the question's matched words, 1/2 at PROXIMITY_WORDS words away. A sentence
    that states none of the question's predicate words measures from the focus it names
    instead ("what was the score against Egypt": "beat Egypt 3-2"), at most ANCHOR_FIT."""
    marks, cap = (s.hits, 1.0) if s.hits else (s.anchors, ANCHOR_FIT)
    if not marks:
        return 0.5

    def gap(h: int) -> int:
        lo, hi = (h, a) if h < a else (b, h) if h > b else (0, 0)
        return s.text[lo:hi].count(" ")

    return cap / (1.0 + min(gap(h) for h in marks) / PROXIMITY_WORDS)


def governed(role: str, terms: Sequence[str] | frozenset[str]) -> bool:
    """Whether the verb that governs an entity (its stored role, "nsubj score": lemma and
    word as index terms; search.enrich.role) is one of the question's ``terms``: "who
    scored" wants the scorer, not the player who crossed. False when no verb governs it or
    the index stored no roles."""
    verbs = role.split()[1:]
    return bool(verbs) and not set(verbs).isdisjoint(terms)


def entity_at(s: Sent, matches: Callable[[str], bool], atype: str = "") -> Candidate | None:
    """The first entity of sentence ``s`` whose text ``matches``, as a candidate."""
    for a, b, label in s.ents:
        a, b = trim(s.article.text, a, b)
        text = s.article.text[a:b]
        if text.strip() and matches(text):
            return Candidate(text, a, b, label, s, s.score * 0.5)
    return None
