"""Stage 4b, ranking the values: which one answers, from measured features of each.

Every value (a cluster of candidates that state it) is described by a few numbers
in 0..1: how much of the question its best sentence states in words and in meaning,
how well its entity label fits the asked type, how close it stands to the question's
own words, how many of the articles on the question state it, and how much of the
retrieved text merely mentions it (the star every report names is seldom the answer).
A logistic model over them gives each value a probability of being the answer. Its
weights are data (``ranker.json``), fitted by ``scripts/fit_answer.py`` on question
sets one may tune on, never on the held-out sets; no weight is written by hand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from ..trees import load
from .agreement import Cluster
from .candidates import Sent, rank_prior
from .question import QuestionInfo, unlisted_cap
from .typed import governed

FEATURES = (
    "score",  # the value's best candidate score over the best in the question
    "agree",  # the cluster score (best article plus a share of the others) over the best
    "lex",  # share of the question's words its best sentence states
    "dense",  # the question's cosine with that sentence's stored vector (scaled)
    "lex_max",  # the same over all of its sentences
    "dense_max",
    "fit",  # how well its entity label answers the asked type
    "near",  # 1 beside the question's predicate words, less further away
    "hits",  # its best sentence states a predicate word of the question (not only the focus)
    "strict",  # that sentence names every focus word itself
    "focus",
    "rank",  # 1/sqrt(rank) of the passage that holds the best sentence
    "support_ratio",  # the articles stating it over those addressing the question
    "log_support",
    "mentions",  # its share of all typed mentions in the candidate sentences
    "first",  # its best candidate is the first of the asked kind in its sentence
    "evidence",  # the best probability that one of its sentences states the answer
    "votes",  # share of the articles whose most probable sentence states it
    "log_votes",
    "rival",  # of its mentions with a name beside them, the share where it is not the question's
    "verb",  # the verb that governs its best candidate is one the question uses (stored role)
    "wfocus",  # the rarity-weighted share of the focus its best sentence names
    "job",  # of its mentions with a role beside them, the share with the asked one less the rest (.roles)
    "pick",  # the best quote probability (.evidence) of a sentence that states it, over the best of any
    "pick_top",  # it is stated in the sentence the quote model would pick
    "asks_person",  # the question asks for a person
    "asks_single",  # it asks for one true value: a minute, a date, a score (.question.single)
    "guessed",  # the asked type is the learned fallback's guess (.qtype), not a rule's
)
RANK = "ranker_rank.json"  # the LambdaRank model of :func:`probabilities`


@lru_cache(maxsize=1)
def params() -> dict[str, Any]:
    raw = resources.files("search.answer").joinpath("ranker.json").read_text(encoding="utf-8")
    return dict(json.loads(raw))


def _votes(
    clusters: list[Cluster], sents: Sequence[Sent], story: Callable[[str], str]
) -> tuple[list[int], int]:
    """Each article votes once, with its most probable sentence: the values stated there.

    Support counts every article that mentions a value somewhere near the question; a
    vote counts only the articles whose best evidence states it, which is what
    independent outlets agreeing looks like (a name every report mentions gets few)."""
    best: dict[str, Sent] = {}
    for s in sents:
        if s.usable:
            k = story(s.doc_id)
            if k not in best or s.score > best[k].score:
                best[k] = s
    chosen = {id(s) for s in best.values()}
    votes = [len({story(c.sent.doc_id) for c in cl.members if id(c.sent) in chosen}) for cl in clusters]
    return votes, len(best)


def features(
    q: QuestionInfo,
    clusters: list[Cluster],
    addressing: int,
    sents: Sequence[Sent] = (),
    story: Callable[[str], str] = str,
) -> list[dict[str, float]]:
    """One feature row per cluster, in the clusters' order."""
    if not clusters:
        return []
    votes, voters = _votes(clusters, sents, story)
    best_score = max(max(c.score for c in cl.articles.values()) for cl in clusters) or 1.0
    best_agree = max(cl.score for cl in clusters) or 1.0
    mentions = sum(len(cl.members) for cl in clusters) or 1
    top_pick = max((x.pick for x in sents if x.usable), default=0.0) or 1.0
    asks = q.asks
    rows = []
    for cl, vote in zip(clusters, votes):
        best = max(cl.articles.values(), key=lambda c: c.score)
        s: Sent = best.sent
        own = [c.sent for c in cl.articles.values()]
        rows.append(
            {
                "score": best.score / best_score,
                "agree": cl.score / best_agree,
                "lex": s.lex,
                "dense": s.dense,
                "lex_max": max(x.lex for x in own),
                "dense_max": max(x.dense for x in own),
                "fit": min(q.fit(best.label), unlisted_cap(q.atype, best.label, best.text)),
                "near": best.near,
                "hits": 1.0 if s.hits else 0.0,
                "strict": 1.0 if s.strict else 0.0,
                "focus": s.focus,
                "rank": rank_prior(s.rank),
                "support_ratio": cl.support / max(addressing, cl.support, 1),
                "log_support": math.log1p(cl.support) / math.log1p(10),
                "mentions": len(cl.members) / mentions,
                "first": 1.0 if best.first else 0.0,
                "evidence": max(x.score for x in own),
                "votes": vote / max(voters, 1),
                "log_votes": math.log1p(vote) / math.log1p(10),
                "rival": _rival(cl),
                "verb": 1.0 if governed(best.role, q.terms) else 0.0,
                "wfocus": s.wfocus,
                "job": _job(cl),
                "pick": max(c.sent.pick for c in cl.members) / top_pick,
                "pick_top": 1.0 if any(c.sent.pick >= top_pick for c in cl.members) else 0.0,
                "asks_person": asks["asks_person"],
                "asks_single": asks["asks_single"],
                "guessed": asks["guessed"],
            }
        )
    return rows


def _rival(cl: Cluster) -> float:
    """Of the value's mentions that stand beside a name, the share where that name is not
    one the question gives (:func:`.typed.rival`): Tuchel beside "England" every time he
    is named is England's manager, whatever one sentence says about Argentina."""
    theirs = sum(1 for c in cl.members if c.rival > 0)
    ours = sum(1 for c in cl.members if c.rival < 0)
    return theirs / (theirs + ours) if theirs else 0.0


def _job(cl: Cluster) -> float:
    """Of the value's mentions with a role written beside them, the share with the asked
    role less the share with another: a name mentioned often with no role is not less the
    manager for it ("England manager Thomas Tuchel" once, "Tuchel said" five times)."""
    ours = sum(1 for c in cl.members if c.job > 0)
    theirs = sum(1 for c in cl.members if c.job < 0)
    return (ours - theirs) / (ours + theirs) if ours or theirs else 0.0


def _score(row: dict[str, float], p: dict[str, Any] | None = None) -> float:
    p = p or params()
    return float(p["bias"] + sum(w * row.get(k, 0.0) for k, w in sorted(p["weights"].items())))


def pointwise(row: dict[str, float]) -> float:
    """The pointwise model's probability that this value is right, judged on its own."""
    p = params().get("pointwise") or params()
    z = _score(row, p)
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def probabilities(rows: list[dict[str, float]]) -> list[float]:
    """The softmax over the question's values (they compete for one answer) of a LambdaRank
    model's scores (``ranker_rank.json``), or without it of the choice model's in
    ``ranker.json`` (or a pointwise model's logistic of each).

    Why LambdaRank: out of fold on the 1,402 answerable training questions (three
    assignments to folds, each question's quote picked by a model fitted on the other
    folds) its first value is right for 839 (837 to 842), against 804.5 for the choice model
    it replaces; offline, the choice model over the same features gave 816, and the two
    multiplied 828."""
    model = load("search.answer", RANK)
    if model is not None and rows:
        raw = [float(v) for v in model.raw(rows)]
        top = max(raw)
        e = [math.exp(v - top) for v in raw]
        return [v / sum(e) for v in e]
    z = [_score(r) for r in rows]
    if params().get("objective") == "choice":
        top = max(z, default=0.0)
        e = [math.exp(v - top) for v in z]
        return [v / sum(e) for v in e]
    return [1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, v)))) for v in z]


def rank(
    q: QuestionInfo,
    clusters: list[Cluster],
    addressing: int,
    sents: Sequence[Sent] = (),
    story: Callable[[str], str] = str,
) -> tuple[list[Cluster], list[dict[str, float]], list[float]]:
    """The clusters, most probable answer first, with their feature rows and probabilities."""
    rows = features(q, clusters, addressing, sents, story)
    probs = probabilities(rows)
    order = sorted(range(len(clusters)), key=lambda i: (-probs[i], -clusters[i].score, clusters[i].key))
    return [clusters[i] for i in order], [rows[i] for i in order], [probs[i] for i in order]
