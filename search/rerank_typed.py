"""The search head's evidence of the asked kind: does a passage hold a value that answers?

The head's other features (:mod:`search.rerank_learned`) weigh how much of the question a
passage states. A question that asks for a kind of value ("which goalkeeper", "how far
out", "which club") is answered by a passage that states its subject *and* holds a value of
that kind the question does not name. The answer stages already know both: the question's
type (:func:`search.answer.question.analyse`, the table's rules and the learned fallback)
and how well each stored entity's label fits it (``QuestionInfo.fit``, soft). Here those
become features of each head passage, computed from the entities and sentence spans the
index stored at ingest (no model runs at query time):

- ``afit``: the best fit of a value in the passage that the question does not name;
- ``afit_rel``: the best, over the passage's sentences, of that fit times the share of
  the question's weight (idf) the same sentence states;
- ``afit_best`` and ``afit_next``: the fit in the sentence that states most of the
  question, and the better of it and the next sentence's (the answer often follows the
  sentence that restates the question);
- ``afit_gap``, ``afit_rel_gap``: each against the head's best;
- ``untyped``, ``asks_person``: what the question asks for, so the trees can weigh the
  rest by it.

Why (2026-12-07, the football trees refitted with and without them, LambdaRank, same
parameters): out of fold on the 3,813 training questions with a relevant passage in the
head, the first passage is relevant for 3,135 / 3,119 (two fold assignments) without and
3,174 / 3,174 with; on ``train/t17`` and ``t18`` (360 questions no fit had seen) 289 ->
294. Only the football questions' trees read them: they are computed when the trees list
them (:func:`search.rerank_learned.head_order`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from .fusion import doc_of
from .rerank import sentence_terms

TYPED = (
    "afit",
    "afit_gap",
    "afit_rel",
    "afit_rel_gap",
    "afit_best",
    "afit_next",
    "untyped",
    "asks_person",
)


@lru_cache(maxsize=1 << 16)  # the same sentences and names come back across queries
def _terms(sentence: str) -> frozenset[str]:
    return frozenset(sentence_terms(sentence))


def _start(x: Sequence[Any]) -> Any:
    return x[0]


def _within(items: Sequence[Any], start: int, end: int) -> Sequence[Any]:
    """The spans of ``items`` (in text order) that start inside [start, end)."""
    lo = bisect.bisect_left(items, start, key=_start)
    return items[lo : bisect.bisect_left(items, end, lo, key=_start)]


def typed_features(
    question: str,
    qterms: Sequence[str],
    candidates: Sequence[tuple[str, float]],
    idf: Callable[[str], float],
    view: Any,
) -> list[dict[str, float]]:
    """One row of :data:`TYPED` per candidate; ``view`` is the index reader (its
    ``passage`` and ``article``: the stored entities and sentence spans)."""
    from .answer.question import analyse  # the answer stages' tables load on first use
    from .answer.typed import AFTER, names_subject, question_words

    q = analyse(question)
    kinds = q.fitting  # the labels that can answer: none for why, how, a quote
    asked = question_words(q)
    weights = {t: idf(t) for t in sorted(set(qterms))}
    total = sum(weights.values()) or 1.0
    arts: dict[str, Any] = {}
    spans_of = getattr(view, "passage_spans", None)  # the local store's shortcut
    rows: list[dict[str, float]] = []
    for pid, _ in candidates:
        row = dict.fromkeys(("afit", "afit_rel", "afit_best", "afit_next"), 0.0)
        rows.append(row)
        if not kinds:
            continue
        got = spans_of(pid) if callable(spans_of) else None
        if got is not None:
            p, text, sents, ents = got
        else:  # a reader without the shortcut (Milvus): the passage and its whole article
            p = view.passage(pid)
            d = p.doc_id if p is not None else doc_of(pid)
            if d not in arts:
                arts[d] = view.article(d)
            a = arts[d]
            if p is None or a is None:
                continue
            text, sents, ents = a.text, _within(a.sentences, p.start, p.end), a.entities
        spans = [(s, e) for s, e in sents if p.start <= s and e <= p.end]
        if not spans:
            continue
        starts = [s for s, _ in spans]
        fits = [0.0] * len(spans)
        for es, ee, lab in _within(ents, p.start, p.end):
            if lab not in kinds:
                continue
            i = bisect.bisect_right(starts, es) - 1
            if i < 0 or ee > spans[i][1] or fits[i] >= 1.0:
                continue
            name = text[es:ee]
            if names_subject(q, asked, name):
                continue  # the question's own subject is not its answer
            fits[i] = max(fits[i], q.fit(lab, name, text[ee : ee + AFTER]))
        shares = []
        for s, e in spans:
            terms = _terms(text[s:e])
            shares.append(sum(w for t, w in weights.items() if t in terms) / total)
        b = max(range(len(shares)), key=lambda i: shares[i])
        row["afit"] = max(fits)
        row["afit_rel"] = max(f * sh for f, sh in zip(fits, shares))
        row["afit_best"] = fits[b]
        row["afit_next"] = max(fits[b], fits[b + 1] if b + 1 < len(fits) else 0.0)
    for key in ("afit", "afit_rel"):
        top = max((r[key] for r in rows), default=0.0)
        for r in rows:
            r[f"{key}_gap"] = r[key] - top
    for r in rows:
        r["untyped"] = float(q.atype == "sentence")
        r["asks_person"] = float(q.atype == "person")
    return rows
