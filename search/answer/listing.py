"""Stage 5b, a list: a question that asks for several values ("which two teams", "name
the two defenders") is answered by a sentence that names them together.

The ranker picks one value; one of two is not the answer, and shown alone it reads as a
confident wrong one ("Cape Verde" for "which two teams took Argentina to extra time").
So the short answer becomes the run of values of the asked kind that the winning value
stands in, joined in its sentence as a list ("Cape Verde and Switzerland", "John Stones
and Reece James"): an exact span of that sentence. When no sentence that states the
winner names exactly as many values so joined, there is no short answer, and the block
says why. How many values a question asks for, and what may join two of them, are the
question table's (``many``, ``many_words``, ``list_joiner``, ``list_joiner_plain``): data,
not branches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from .agreement import Cluster
from .candidates import NAME_LABELS
from .question import QuestionInfo, table
from .typed import Candidate, fold, names_subject, question_words, trim


@dataclass
class Listed:
    text: str  # the exact span of the sentence, from the first value to the last
    members: list[Candidate]  # the best candidate of the top value in each sentence that lists it


@cache
def _joiner(plain: bool = False) -> re.Pattern[str]:
    """What may stand between two values of a list (the table's ``list_joiner``), or with
    ``plain`` a joiner with no word of its own (``list_joiner_plain``)."""
    default = r"^(?:\s*,\s*|,?\s*and\s+)$"
    return re.compile(table().get("list_joiner_plain" if plain else "list_joiner", default))


def _spans(c: Candidate, pool: list[Candidate], q: QuestionInfo) -> list[tuple[int, int]]:
    """The values a list in ``c``'s sentence may hold, in order: the candidates of the asked
    kind, and the sentence's other names when ``c`` is a name (the model tags one country of
    "Cape Verde and Switzerland" LOC, the other GPE), less those the question names."""
    spans = {(x.start, x.end) for x in pool}
    if c.label in NAME_LABELS:
        text = c.sent.article.text
        qwords = question_words(q)
        for a, b, label in c.sent.ents:
            if label in NAME_LABELS:
                a, b = trim(text, a, b)
                if b > a and not names_subject(q, qwords, text[a:b]):
                    spans.add((a, b))
    ordered: list[tuple[int, int]] = []
    for a, b in sorted(spans, key=lambda x: (x[0], -x[1])):
        if ordered and a < ordered[-1][1]:
            continue  # a span inside or across the last one: one value
        ordered.append((a, b))
    return ordered


def _run(c: Candidate, spans: list[tuple[int, int]], joins: re.Pattern[str]) -> list[tuple[int, int]]:
    """The values of ``spans`` that ``joins`` links into one list with ``c``."""
    i = next((k for k, (a, b) in enumerate(spans) if a <= c.start < b), None)
    if i is None:
        return [(c.start, c.end)]
    text = c.sent.article.text
    lo = hi = i
    while lo > 0 and joins.match(text[spans[lo - 1][1] : spans[lo][0]]):
        lo -= 1
    while hi + 1 < len(spans) and joins.match(text[spans[hi][1] : spans[hi + 1][0]]):
        hi += 1
    return spans[lo : hi + 1]


def listed(q: QuestionInfo, top: Cluster, clusters: list[Cluster]) -> Listed | None:
    """The list of ``q.many`` values that ``top`` stands in, in the sentences that state it
    (best first), or None when none names that many. A list that runs longer is cut where a
    joiner carries a word of its own ("winger Downing and strikers Hasselbaink and Viduka":
    the strikers are two). Two runs are the same list when they name the same values (by
    their folded text), and each article counts once."""
    by_sent: dict[int, list[Candidate]] = {}
    for cl in clusters:
        for m in cl.members:
            by_sent.setdefault(id(m.sent), []).append(m)
    found: dict[frozenset[str], list[Candidate]] = {}
    spans: dict[frozenset[str], str] = {}
    for c in sorted(top.articles.values(), key=lambda c: -c.score):
        values = _spans(c, by_sent.get(id(c.sent), [c]), q)
        run = _run(c, values, _joiner())
        if len(run) > q.many:
            run = _run(c, run, _joiner(plain=True))
        if len(run) != q.many:
            continue
        text = c.sent.article.text
        key = frozenset(fold(text[a:b]) for a, b in run)
        found.setdefault(key, []).append(c)
        spans.setdefault(key, text[run[0][0] : run[-1][1]])
    if not found:
        return None
    key = max(found, key=lambda k: (len(found[k]), sum(c.score for c in found[k])))
    return Listed(spans[key], found[key])
