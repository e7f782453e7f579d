"""Stage 2b, evidence: how likely each candidate sentence is to state the answer.

The words a sentence shares with the question, its stored vector's closeness to the
question's, whether it names the focus, its tense, the rank of its passage, whether
it holds an entity of the asked kind: each is a weak sign, and how much each counts
was measured, not guessed. A logistic model over them gives every sentence a
probability; its weights are data (``evidence.json``), fitted by
``scripts/fit_answer.py`` on question sets one may tune on (dev, the older sets,
the training sets), never on the held-out sets. The probability is the sentence's
score downstream: candidates inherit it, and with no short answer the most probable
sentence is the one quoted.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

from ..trees import load
from .candidates import Sent, rank_prior
from .question import QuestionInfo
from .typed import AFTER, fold, proximity, words_of

# The features of a sentence's neighbours that it is also given (the end of FEATURES).
NEIGHBOURS = ("fitmax",)
FEATURES = (
    "lex",  # share of the question's words it states
    "dense",  # its stored vector's cosine with the question's (scaled to 0..1)
    "dlex",  # the same two, less the best of any candidate sentence
    "ddense",
    "focus",  # how surely it is about the question's focus
    "strict",  # it names every focus word itself
    "tense",  # a past-tense question and a preview do not fit
    "cue",  # for a quote: it reports speech
    "rank",  # 1/sqrt(rank) of its passage
    "rank1",  # its passage is the first
    "lead",  # 1/(1 + its position in the article)
    "fitmax",  # the best fit to the asked type of an entity it holds that the question does not name
    "ntyped",  # how many such entities of the asked kind it holds (up to 3, over 3)
    "hits",  # how many predicate words of the question it states (up to 3, over 3)
    "length",  # its length, up to 300 characters, over 300
    "passage",  # its passage's retrieval score over the first passage's
    "slot",  # the best (fit x closeness to the question's predicate words) of such an entity
    "dense_rank",  # 1/(1 + its rank among the sentences by stored-vector closeness)
    "lex_rank",  # the same by words
    "nbr_lex",  # the best "lex" of the sentences just before and after it in its article
    "nbr_dense",  # the same for "dense"
    "nbr_focus",  # the same for "fshare": the answer's sentence may not repeat the subject
    "wfocus",  # the share of the focus it names, each word weighted by its rarity among the sentences
    "prev_lex",  # "own_lex" of the sentence just before it in its article (0: not a candidate)
    "next_lex",  # the same just after it: a sentence that restates the question often
    "prev_dense",  # comes before the one that answers it
    "next_dense",
    "novel",  # the share of its words the question does not hold
    "speech",  # it opens with a quotation mark
    "untyped",  # the question asks for no typed value (why, how, what did X say)
    "asks_person",  # the question asks for a person
    "asks_single",  # it asks for one true value: a minute, a date, a score (.question.single)
    # "fitmax" of the sentences just before and after it in its article (0: not a candidate),
    # as "prev_fitmax" and "next_fitmax" (:data:`NEIGHBOURS`): a sentence that restates the
    # question is often followed by the one that answers it ("X has been ruled out after an
    # operation." "The 18-year-old had surgery to repair a double hernia."), and the
    # answering one holds a value of the asked kind where its neighbour does not. Out of fold
    # on 4,173 answerable training questions (3 fold assignments), the quote states the
    # answer for 3,222.3 against 3,216.3 (folds by question) and 3,013.0 against 2,996.0
    # (folds by article, better in all 3); the same for the neighbours' ranks, focus and
    # predicate words as well: 3,227.7 and 3,015.7, but without "fitmax" 3,221.7 and 2,991.3.
    *(f"{side}_{k}" for side in ("prev", "next") for k in NEIGHBOURS),
)


PICK_RANK = "pick_rank.json"
QUOTES = "\"“‘'"  # the marks that open direct speech


@lru_cache(maxsize=1)
def params() -> dict[str, Any]:
    raw = resources.files("search.answer").joinpath("evidence.json").read_text(encoding="utf-8")
    return dict(json.loads(raw))


def features(q: QuestionInfo, sents: list[Sent]) -> list[dict[str, float]]:
    """One row per sentence of ``sents`` (the usable ones), in order."""
    if not sents:
        return []
    max_dense = max(s.dense for s in sents)
    max_lex = max(s.lex for s in sents)
    by_dense = {id(s): i for i, s in enumerate(sorted(sents, key=lambda s: -s.dense))}
    by_lex = {id(s): i for i, s in enumerate(sorted(sents, key=lambda s: -s.lex))}
    positions: dict[str, dict[int, int]] = {}
    qwords = {fold(w) for w in q.words} | {fold(n) for n in q.names}
    at: dict[tuple[str, int], Sent] = {}
    for s in sents:
        a = s.article
        pos = positions.setdefault(a.id, {start: i for i, (start, _) in enumerate(a.sentences)})
        if s.start in pos:
            at[(a.id, pos[s.start])] = s
    asks = q.asks
    rows = []
    for s in sents:
        a = s.article
        pos = positions.setdefault(a.id, {start: i for i, (start, _) in enumerate(a.sentences)})
        typed = [
            (q.fit(lb, a.text[x:y], a.text[y : y + AFTER]), x, y)
            for x, y, lb in s.ents
            if not (words_of(a.text[x:y]) & qwords)
        ]
        fits = [f for f, _, _ in typed]
        i = pos.get(s.start)
        nbrs = (
            [n for n in (at.get((a.id, i - 1)), at.get((a.id, i + 1))) if n is not None]
            if i is not None
            else []
        )
        prev = at.get((a.id, i - 1)) if i is not None else None
        nxt = at.get((a.id, i + 1)) if i is not None else None
        own = words_of(s.text)
        slot = max((f * proximity(s, x - s.start, y - s.start) for f, x, y in typed if f > 0), default=0.0)
        rows.append(
            {
                "lex": s.lex,
                "dense": s.dense,
                "dlex": s.lex - max_lex,
                "ddense": s.dense - max_dense,
                "focus": s.focus,
                "strict": 1.0 if s.strict else 0.0,
                "tense": s.tense,
                "cue": s.cue,
                "rank": rank_prior(s.rank),
                "rank1": 1.0 if s.rank == 1 else 0.0,
                "lead": 1.0 / (1 + pos.get(s.start, 10)),
                "fitmax": max(fits, default=0.0),
                "ntyped": min(3, sum(1 for f in fits if f > 0.5)) / 3,
                "hits": min(3, len(s.hits)) / 3,
                "length": min(1.0, len(s.text) / 300),
                "passage": s.passage,
                "slot": slot,
                "dense_rank": 1.0 / (1 + by_dense[id(s)]),
                "lex_rank": 1.0 / (1 + by_lex[id(s)]),
                "nbr_lex": max((n.own_lex for n in nbrs), default=0.0),
                "nbr_dense": max((n.dense for n in nbrs), default=0.0),
                "nbr_focus": max((n.fshare for n in nbrs), default=0.0),
                "wfocus": s.wfocus,
                "prev_lex": prev.own_lex if prev is not None else 0.0,
                "next_lex": nxt.own_lex if nxt is not None else 0.0,
                "prev_dense": prev.dense if prev is not None else 0.0,
                "next_dense": nxt.dense if nxt is not None else 0.0,
                "novel": len(own - qwords) / len(own) if own else 0.0,
                "speech": 1.0 if s.text[:1] in QUOTES else 0.0,
                **asks,
            }
        )
    row_of = {id(s): r for s, r in zip(sents, rows)}
    for s, row in zip(sents, rows):
        i = positions[s.article.id].get(s.start)
        for side, j in (("prev", -1), ("next", 1)):
            n = at.get((s.article.id, i + j)) if i is not None else None
            other = row_of[id(n)] if n is not None else {}
            for k in NEIGHBOURS:
                row[f"{side}_{k}"] = other.get(k, 0.0)
    return rows


def _z(row: dict[str, float], p: dict[str, Any]) -> float:
    return _linear(row, p["bias"], tuple(sorted(p["weights"].items())))


def _linear(row: dict[str, float], bias: float, items: tuple[tuple[str, float], ...]) -> float:
    return float(bias + sum(w * row.get(k, 0.0) for k, w in items))


def weigh(q: QuestionInfo, sents: list[Sent]) -> list[dict[str, float]]:
    """Set each usable sentence's ``evidence`` and ``pick``; return the feature rows.

    ``evidence`` is a pointwise model's probability that the sentence states the answer,
    judged on its own: what candidates inherit and agreement adds up (five articles that
    each say "55th minute" in a fair sentence outweigh one summary sentence). ``pick`` is the
    softmax over the question's sentences of a LambdaRank model's scores (boosted trees,
    ``pick_rank.json``, run by :mod:`search.trees`): which one sentence to quote. Without
    that file the choice model's weights in ``evidence.json`` score them.

    Why LambdaRank: it learns to put the sentence that states the answer above the question's
    other sentences, which is what one quote needs, and its trees see what a weighted sum
    cannot, such as a sentence that shares every word of the question and names nothing
    new, restating the question rather than answering it. Out of fold on the 1,402
    answerable training questions (three assignments of the questions to folds), the quoted
    sentence states the answer for 1,053 of them (1,049 to 1,056), against 1,028 (1,024 to
    1,034) for the choice model times classifier trees it replaced; with the last nine
    features (the neighbours, what is new, what the question asks for), which did not help
    the models before, 1,063 (1,060 to 1,067).
    """
    usable = [s for s in sents if s.usable]
    rows = features(q, usable)
    p = params()
    point = p.get("pointwise") or p
    point_items = tuple(sorted(point["weights"].items()))
    model = load("search.answer", PICK_RANK)
    if model is not None and rows:
        z = [float(v) for v in model.raw(rows)]
    else:
        items = tuple(sorted(p["weights"].items()))
        z = [_linear(r, p["bias"], items) for r in rows]
    top = max(z, default=0.0)
    e = [math.exp(v - top) for v in z]
    total = sum(e) or 1.0
    for s, row, ev in zip(usable, rows, e):
        zp = _linear(row, point["bias"], point_items)
        s.evidence = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, zp))))
        s.pick = ev / total
    return rows
