"""Stage 2, candidate sentences: the sentences of the top passages, each scored for how
much of the question it states, and whether it (or its passage) names the question's focus.

The focus is what the question names: the question's words that the retrieved
articles' stored entities contain ("chelsea", "portsmouth", "fernandez"), and any
capitalised word or scoreline. A sentence that states the focus itself fits fully;
one whose passage or article lead names it fits partly; one that names none cannot
give the short answer (it may still be quoted when nothing better exists).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..text import LOOKS_AHEAD, STOP_WORDS, analyze_spans, term
from ..types import Article, Hit
from .question import QuestionInfo, data_lines, table

# A sentence in the passage or lead around the one that names the focus still counts, less.
FOCUS_NEAR = 0.8
FOCUS_TITLE = 0.5
RELATED_WEIGHT = 0.6  # a football synonym of a question term ("keeper" for "goalkeeper")
PREFIX = 5  # "equaliser"/"equalised" and "minute"/"minutes" meet on their first five letters
LEAD_CHARS = 400
ADJACENT = 2  # question words at most this many words apart count as standing together
# Retrieval ranked the passage for the whole question: a sentence of a top passage that
# shares few of its (often generic) words can still hold the answer ("where was the
# match played": "... at Mercedes-Benz Stadium in Atlanta").
REL_FLOOR = 0.3
TOP_PASSAGES = 3
FOCUS_MISS = 0.25  # a focus word the article never states: likely another story
FOCUS_ELSEWHERE = 0.6  # stated by the article, but far from this sentence and not in its lead
NAME_LABELS = frozenset("PERSON ORG GPE NORP FAC LOC VENUE EVENT WORK_OF_ART PRODUCT".split())
OFF_CUE = 0.3
# MiniLM cosine of a question with a sentence: ~0.2 says nothing, ~0.6 states the fact.
DENSE_FLOOR = 0.15
DENSE_FULL = 0.6
DENSE_WEIGHT = 0.5
_WORDS = re.compile(r"[^\W_]+")


@dataclass
class Sent:
    doc_id: str
    start: int
    end: int
    text: str
    rank: int  # the citation number: rank of the passage that holds it
    article: Article
    rel: float = 0.0  # share of the question's weight this sentence states (0..1)
    lex: float = 0.0  # the same from words alone, before the stored vectors are blended in
    focus: float = 1.0  # 1: the sentence names the focus; FOCUS_NEAR: its surroundings do
    strict: bool = True  # every focus word is in the sentence itself
    fshare: float = 1.0  # the share of the focus words the sentence itself names
    wfocus: float = 1.0  # the same, each focus word weighted by its rarity among the sentences
    tense: float = 1.0
    cue: float = 1.0
    keys: frozenset[str] = frozenset()  # analysed terms (first PREFIX letters) of the sentence
    dense: float = 0.0  # the question's cosine with the sentence's stored vector, scaled to 0..1
    hits: list[int] = field(default_factory=list)  # offsets (in the sentence) of matched words
    anchors: list[int] = field(default_factory=list)  # offsets of the focus words it names
    ents: list[tuple[int, int, str]] = field(default_factory=list)  # the stored entities inside it
    roles: list[str] = field(default_factory=list)  # each one's stored role (search.enrich.role)
    evidence: float | None = None  # the probability that it states the answer (stage 2b)
    pick: float = 0.0  # the probability that it is the one sentence to quote (stage 2b)
    passage: float = 1.0  # its passage's fused retrieval score over the first passage's
    # "lex" from its own words only, without the focus words it names by referring back to
    # the sentence before it: what it lends its neighbours (.evidence)
    own_lex: float = 0.0
    around: bool = True  # every focus word is in it, or in the text around it (FOCUS_NEAR)

    @property
    def usable(self) -> bool:
        return self.focus > 0 and (self.rel > 0 or self.rank <= TOP_PASSAGES)

    @property
    def score(self) -> float:
        """The evidence probability once weighed (:mod:`.evidence`), else a rule of thumb."""
        if self.evidence is not None:
            return self.evidence
        rel = max(self.rel, REL_FLOOR) if self.rank <= TOP_PASSAGES else self.rel
        return rel * self.focus * self.tense * self.cue * rank_prior(self.rank)


def rank_prior(rank: int) -> float:
    return 1.0 / math.sqrt(max(rank, 1))


def key(term: str) -> str:
    """A term cut to its first PREFIX letters: "equaliser" and "equalised" meet."""
    return term[:PREFIX] if len(term) > PREFIX else term


def _sentence_spans(a: Article, start: int, end: int) -> list[tuple[int, int]]:
    if a.sentences:
        return [(s, e) for s, e in a.sentences if s >= start and e <= end]
    from ..chunk import segment  # an index built before sentences were stored

    return [(u.start, u.end) for u in segment(a.text) if not u.heading and u.start >= start and u.end <= end]


def cue_pattern(atype: str) -> re.Pattern[str] | None:
    rx = table().get("cues", {}).get(atype)
    return re.compile(rx, re.I) if rx else None


@lru_cache(maxsize=1 << 12)
def _name_words(text: str, entities: tuple[tuple[int, int, str], ...]) -> frozenset[str]:
    """The words of an article's named entities (cached: the same articles come back)."""
    out: set[str] = set()
    for s, e, label in entities:
        if label in NAME_LABELS:
            out.update(w.lower() for w in _WORDS.findall(text[s:e]))
    return frozenset(out - STOP_WORDS)


def focus_words(q: QuestionInfo, articles: Sequence[Article]) -> list[str]:
    """The question's words that name something: in a stored entity, or capitalised."""
    ent_words: set[str] = set()
    for a in articles:
        ent_words |= _name_words(a.text, tuple(a.entities))
    named = {n.lower() for n in q.names}
    out = []
    for w in q.words:
        base = re.sub(r"['’]s$", "", w)
        if (base in ent_words or w in named) and base not in out and len(base) > 1:
            out.append(base)
    return out


def collect(
    q: QuestionInfo, hits: Sequence[Hit], get_article: Callable[[str], Article | None], qvec: Any = None
) -> tuple[list[Sent], list[str]]:
    """The candidate sentences of ``hits`` (each once, best rank kept) and the focus words."""
    arts: dict[str, Article] = {}
    for h in hits:
        d = h.passage.doc_id
        if d not in arts:
            a = get_article(d)
            if a is None or a.text[h.passage.start : h.passage.end] != h.passage.text:
                a = Article(id=d, title="", text=h.passage.text) if a is None else a
            arts[d] = a
    focus = focus_words(q, list(arts.values()))
    seen: dict[tuple[str, int], Sent] = {}
    top = max((h.score for h in hits), default=0.0) or 1.0
    for h in sorted(hits, key=lambda h: h.rank):
        p = h.passage
        a = arts[p.doc_id]
        lo, hi = (p.start, p.end) if a.text[p.start : p.end] == p.text else (0, len(a.text))
        for s, e in _sentence_spans(a, lo, hi):
            if (p.doc_id, s) not in seen:
                seen[(p.doc_id, s)] = Sent(p.doc_id, s, e, a.text[s:e], h.rank or 1, a, passage=h.score / top)
    sents = list(seen.values())
    _place_entities(sents)
    _score(q, sents, focus)
    if qvec is not None:
        _meaning(sents, np.asarray(qvec, np.float32).reshape(-1))
    return sents, focus


def _place_entities(sents: list[Sent]) -> None:
    """Give each sentence the stored entities inside it: one pass over an article's sorted
    entities per question, instead of one per sentence."""
    by_article: dict[str, tuple[list[int], list[tuple[int, int, str]], list[str]]] = {}
    for s in sents:
        a = s.article
        if a.id not in by_article:
            order = sorted(range(len(a.entities)), key=a.entities.__getitem__)
            ents = [a.entities[k] for k in order]
            roles = [a.roles[k] for k in order] if len(a.roles) == len(a.entities) else [""] * len(ents)
            by_article[a.id] = ([x for x, _, _ in ents], ents, roles)
        starts, ents, roles = by_article[a.id]
        i = bisect_left(starts, s.start)
        out, out_roles = [], []
        while i < len(ents) and ents[i][0] < s.end:
            if ents[i][1] <= s.end:
                out.append(ents[i])
                out_roles.append(roles[i])
            i += 1
        s.ents, s.roles = out, out_roles


def _meaning(sents: list[Sent], qvec: np.ndarray) -> None:
    """Blend in how close each sentence's stored vector is to the question's (one product
    per article, over all its sentences)."""
    index: dict[str, dict[tuple[int, int], float]] = {}
    for s in sents:
        a = s.article
        if a.id not in index:
            vecs = a.sentence_vectors
            ok = vecs is not None and len(vecs) == len(a.sentences) and len(vecs) > 0
            cos = (np.asarray(vecs, np.float32) @ qvec).tolist() if ok else []
            index[a.id] = dict(zip(a.sentences, cos))
        c = index[a.id].get((s.start, s.end))
        if c is None:
            continue
        s.dense = min(1.0, max(0.0, (c - DENSE_FLOOR) / (DENSE_FULL - DENSE_FLOOR)))
        s.rel = (1 - DENSE_WEIGHT) * s.rel + DENSE_WEIGHT * s.dense


@lru_cache(maxsize=1 << 15)
def keyset(text: str) -> frozenset[str]:
    return frozenset(k for k, _ in _keyed(text))


@lru_cache(maxsize=1 << 15)  # the same articles' sentences come back question after question
def _keyed(text: str) -> tuple[tuple[str, int], ...]:
    return tuple((key(t), a) for t, a, _ in analyze_spans(text))


@lru_cache(maxsize=1)
def _anaphor() -> re.Pattern[str]:
    """A sentence opening that refers back to the one before it (``data/anaphors.txt``, with
    the roles of ``football_roles.txt`` and the nationalities of ``demonyms.txt`` as heads)."""
    pronouns: list[str] = []
    heads: list[str] = []
    for line in data_lines("anaphors.txt"):
        kind, _, w = line.partition(" ")
        (pronouns if kind == "pronoun" else heads).append(w)
    heads += [re.escape(w) for w in data_lines("football_roles.txt") + data_lines("demonyms.txt")]
    return re.compile(
        rf"[\"'“‘]?(?:(?:{'|'.join(pronouns)})\b|The (?:[\w'’-]+ ){{0,3}}?(?i:{'|'.join(heads)})s?\b)"
    )


def opening_reference(text: str) -> int:
    """The length of a sentence's opening that refers back ("The Chelsea midfielder"), or 0."""
    m = _anaphor().match(text)
    return m.end() if m else 0


def referred(s: Sent) -> frozenset[str]:
    """The keys of the sentence before ``s`` in its article when ``s`` opens by referring back
    to its subject ("The Chelsea midfielder unleashed ..." after "... found Enzo Fernandez");
    else none."""
    spans = s.article.sentences
    if not spans or not opening_reference(s.text):
        return frozenset()
    i = bisect_left(spans, (s.start, -1))
    if i == 0 or i == len(spans) or spans[i][0] != s.start:
        return frozenset()  # the article's first sentence, or not one of its stored sentences
    x, y = spans[i - 1]
    return keyset(s.article.text[x:y])


def _focus_fit(s: Sent, missing: list[str], n_focus: int) -> float:
    """How surely sentence ``s`` is about the question's focus, given the focus words it lacks.

    The story is the article's: a report on Celtic's cup rout of Clyde names them in its
    headline and lead, and its later sentences ("Varga tapped in his second") need not.
    A focus word the article never states is a sign of another story; more than half of
    them missing, and the sentence cannot give the short answer. Also sets ``s.around``.
    """
    if not missing:
        return 1.0
    near = s.article.text[max(0, s.start - 600) : s.end + 300].lower()
    s.around = all(f in near for f in missing)
    lead = (s.article.title + " " + s.article.text[:LEAD_CHARS]).lower()
    whole = s.article.text.lower()
    fit, absent = 1.0, 0
    for f in missing:
        if f in near:
            fit *= FOCUS_NEAR
        elif f in lead:
            fit *= FOCUS_TITLE
        elif f in whole:
            fit *= FOCUS_ELSEWHERE
        else:
            fit *= FOCUS_MISS
            absent += 1
    return fit if 2 * absent <= n_focus and absent < n_focus else 0.0


def _score(q: QuestionInfo, sents: list[Sent], focus: list[str]) -> None:
    keyed = [_keyed(s.text) for s in sents]
    keysets = [keyset(s.text) for s in sents]
    n = len(sents) or 1
    want = {key(t): 1.0 for t in q.terms}
    for t in q.related:
        want.setdefault(key(t), RELATED_WEIGHT)
    df = {k: sum(k in ks for ks in keysets) for k in want}
    weight = {k: w * math.log(1 + n / (1 + df[k])) for k, w in want.items()}
    # Sums over sets are exact (math.fsum): a process's hash seed orders a set, and a sum
    # in another order can differ in its last bit (wfocus 1e-16, not 0), enough to send a
    # row down another branch of the fitted trees and quote another sentence.
    ordered = sorted(weight)
    total = math.fsum(weight[key(t)] for t in set(q.terms)) or 1.0
    focus_keys = [key(term(f)) for f in focus]
    # A focus word most sentences name ("England" in every report of England's match) says
    # less about which sentence is on the question's subject than a rare one ("France").
    fdf = {k: sum(k in ks for ks in keysets) for k in focus_keys}
    fweight = {k: math.log(1 + n / (1 + fdf[k])) for k in focus_keys}
    ftotal = math.fsum(fweight.values())
    cue = cue_pattern(q.atype)
    for s, ks, present in zip(sents, keyed, keysets):
        s.keys = present
        # Focus words the sentence names by referring back to the one before it.
        back = referred(s) if focus_keys else frozenset()
        carried = {f for f in focus_keys if f not in present and f in back}
        found = math.fsum(weight[k] for k in ordered if k in present)
        lent = math.fsum(weight[k] for k in ordered if k in carried)
        if found:  # question words that stand together in the sentence as in the question
            pos: dict[str, list[int]] = {}
            for i, (k, _) in enumerate(ks):
                pos.setdefault(k, []).append(i)
            qk = [key(t) for t in q.terms]
            for a, b in zip(qk, qk[1:]):
                if (
                    a != b
                    and a in pos
                    and b in pos
                    and any(abs(x - y) <= ADJACENT for x in pos[a] for y in pos[b])
                ):
                    found += 0.5 * (weight[a] + weight[b])
        s.own_lex = min(1.0, found / total)
        s.rel = s.lex = min(1.0, (found + lent) / total)
        # Words of the predicate ("joined", "winner"), not the focus, place the answer.
        s.hits = [a for k, a in ks if k in weight and k not in focus_keys]
        s.anchors = [a for k, a in ks if k in focus_keys]
        if cue is not None and not cue.search(s.text):
            s.cue = OFF_CUE
        # What it names itself (strict, fshare, wfocus) and what it is about (focus).
        unsaid = [f for f in focus_keys if f not in present]
        s.strict = not unsaid
        s.fshare = 1.0 - len(unsaid) / len(focus_keys) if focus_keys else 1.0
        s.wfocus = 1.0 - math.fsum(fweight[f] for f in set(unsaid)) / ftotal if ftotal else 1.0
        s.focus = _focus_fit(s, [f for f in unsaid if f not in carried], len(focus_keys))
        ahead = bool(LOOKS_AHEAD.search(s.text))
        if q.tense == "future":
            s.tense = 1.0 if ahead else 0.6
        elif q.tense == "past" and ahead:
            s.tense = 0.5
