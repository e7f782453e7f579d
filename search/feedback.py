"""Pseudo-relevance feedback: a second round of both retrievers, steered by the first.

The first round's fused list is taken as relevant at its head, and the question is
moved toward it on each side before both retrievers run again and their lists are
fused as usual (``search.retrieve``):

* dense (Rocchio on vectors): the question's vector plus :data:`VECTOR_WEIGHT` times the
  mean stored vector of the best :data:`VECTOR_PASSAGES` passages, unit length;
* lexical (RM3-style): the :data:`TERMS` terms most likely under the relevance model of
  the best :data:`TERM_PASSAGES` passages (each passage's term frequencies over its
  length, weighted by its share of the head's fused score), added to the BM25 query at
  :data:`TERM_WEIGHT` times their likelihood over the best one's (a typed term counts 1).

Only what the index stores is read (passage vectors and texts): no model runs again.
Both backends' readers give it (``passage_vectors(pids)`` and ``lexical_search(...,
extra=...)``, on passages and on the document-level side): the local snapshot from its
segments and its BM25 query weights; Milvus by reading the ``dense`` field by id and by
sending a weighted term as repeated words (its BM25 is linear in a query term's count;
weights rounded to 1/1000, :func:`search.backends.milvus_base.weighted_text`). A reader
without them keeps the first round (:func:`search.retrieve.feedback_ready`). With the
round on both, the SciFact 1,653-document subset (scripts/parity.py) gives nDCG@10 0.8239
local against 0.8210 Milvus, overlap@10 0.984 (0.864 while Milvus had no round: 0.8285).

Measured on SciFact *train* (809 claims, hybrid nDCG@10 through scripts/beir.py's
engine path, #15): 0.7403 without; dense alone 0.7364-0.7456 over passages {1, 2, 3, 5,
10} x weight {0.15, 0.3, 0.5, 1} (best at 1-2 passages; 10 lose); lexical alone
0.7395-0.7424; both, with the dense side at 2 passages and weight 0.5, 0.7463-0.7495
over term passages {5, 10} x terms {10, 20}; these constants 0.7492 (+0.0089: 72 claims
up, 51 down; both halves of five random splits gain 0.007-0.011). Median search time
18.9 -> 27.0 ms (2 cores; the dense side alone costs 2.2 ms, the lexical side's second
BM25 search most of the rest).

On football corpora it loses (dev questions over the seeds: mrr@10 0.913 -> 0.904,
answer@1 0.84 -> 0.80; the BBC question sets mixed): a handful of match reports of one
game leaves nothing for feedback to separate. So it runs only where the football
rules do not (:func:`search.vocab.is_football`, a corpus statistic).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from .text import analyze

VECTOR_PASSAGES = 2
VECTOR_WEIGHT = 0.5
TERM_PASSAGES = 10
TERMS = 10
TERM_WEIGHT = 0.3


def feedback_vector(vec: np.ndarray, head: np.ndarray, weight: float = VECTOR_WEIGHT) -> np.ndarray | None:
    """``normalise(vec + weight * mean(head))``: the question moved toward the rows of
    ``head`` (the best passages' vectors). None when there are none or the sum is zero."""
    rows = np.asarray(head, np.float32)
    if rows.ndim != 2 or not len(rows):
        return None
    q = np.asarray(vec, np.float32).reshape(-1)
    if rows.shape[1] != len(q):
        return None
    out = q + weight * rows.mean(axis=0)
    n = float(np.linalg.norm(out))
    return (out / n).astype(np.float32) if n > 1e-12 else None


def feedback_terms(
    terms: Sequence[str],
    head: Sequence[tuple[str, float]],
    n: int = TERMS,
    weight: float = TERM_WEIGHT,
) -> dict[str, float]:
    """The expansion terms and their weights from ``head``: (passage text, fused score),
    best first. Terms of the question are left out (they already count)."""
    model: dict[str, float] = {}
    total = sum(max(s, 0.0) for _, s in head)
    if total <= 0:
        return {}
    for text, s in head:
        toks = analyze(text)
        if not toks or s <= 0:
            continue
        share = s / total / len(toks)
        for t, c in Counter(toks).items():
            model[t] = model.get(t, 0.0) + share * c
    typed = set(terms)
    ranked = sorted(model.items(), key=lambda tp: -tp[1])  # stable: ties keep first-seen order
    best = [(t, p) for t, p in ranked if t not in typed][:n]
    if not best:
        return {}
    top = best[0][1]
    return {t: weight * p / top for t, p in best}
