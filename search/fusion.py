"""Fusing ranked lists: reciprocal rank fusion and convex combination of scores.

Fusion only merges ranked lists of ids; it knows nothing of whoosh or FAISS.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

# RRF's constant: 60 is the value of Cormack, Clarke & Büttcher (SIGIR 2009), chosen
# there on TREC runs and still the default of Elasticsearch, OpenSearch and Milvus.
# It flattens the head of each list, so one retriever's rank 1 cannot outvote
# agreement between both retrievers a few ranks lower.
RRF_K = 60

# Weight of the lexical side in convex fusion. Near 0.5 did best on SciFact and SQuAD
# when this was measured (see DESIGN.md); tune only on dev/train data.
CONVEX_ALPHA = 0.4
# The lexical weight over football coverage of many matches (the football switch,
# search.vocab.is_football, and at least DOC_MIN_DOCS documents). The likely reason, not
# itself measured: there the names carry the ranking (MiniLM places "Gerrard scored for
# Liverpool" near every report of a goal; BM25 finds the one that names Gerrard), while
# over the five reports of one match, which all name the same people, meaning tells
# passages apart, and 0.4 stays best there.
# Measured with `search` alone (no answer stage) on the training questions only, hit@1:
# 7 BBC training sets on seeds + 265 BBC reports, at 0.3 / 0.4 / 0.5 / 0.6 / 0.7:
# 0.723 / 0.739 / 0.760 / 0.765 / 0.753 (bm25 alone 0.737, dense alone 0.600); the seed
# training sets on that index 0.690 at 0.4, 0.705 at 0.6; on the seeds alone (5 documents)
# 0.755 / 0.735 / 0.730 / 0.710 at 0.4-0.7 and dev 0.88 / 0.80 / 0.76 / 0.68. SciFact and
# BBC rugby and cricket are not football by the switch and keep CONVEX_ALPHA.
MANY_MATCHES_ALPHA = 0.6


# Lexical signals (see search.lexical): the headline's weight in BM25F, and how much a
# passage's document, scored as a whole (title + all its text), adds to the passage's
# own score. Fitted on SciFact train and the dev questions (see with_documents).
TITLE_WEIGHT = 2.0
DOC_WEIGHT = 0.5
# Below this many documents the document-level signal is left out: document frequencies
# over a handful of articles (the five seed reports of one match) cannot tell topics
# apart, and the signal only reorders near-equal passages of different outlets.
DOC_MIN_DOCS = 50
# The dense side has no document-level counterpart: it was measured and lost. On SciFact
# train (hybrid nDCG@10 0.7492 as the engine stands), adding w times the cosine of the
# question with the document's mean stored passage vector (unit length) to each dense
# hit gave 0.7458 / 0.7447 / 0.7459 / 0.7442 at w 0.1 / 0.25 / 0.5 / 1; the mean of the
# passage cosines (unnormalised mean vector) 0.7470 at 0.25 and 0.5; the mean of the
# document's other passages 0.7461 / 0.7464 / 0.7447 at 0.1 / 0.25 / 0.5; the document's
# best passage 0.7457 at 0.25. Dense mode alone loses too (0.6936 -> 0.6895 at w 0.5): an
# abstract's claim sits in one passage, and the mean blurs it. Ranking documents by best
# passage plus 0.05-0.2 of the second (beside MaxP) gave 0.7475-0.7492, and per-query
# weights (Fusion.CONFIDENCE) 0.7434.


class Fusion(str, Enum):
    RRF = "rrf"
    CONVEX = "convex"
    CONFIDENCE = "confidence"  # convex with a per-query weight (confidence_alpha)

    @classmethod
    def from_str(cls, value: str) -> Fusion:
        try:
            return cls(value.lower())
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown fusion {value!r}: choose one of {choices}") from None


DEFAULT_FUSION = "convex"


class Mode(str, Enum):
    HYBRID = "hybrid"
    BM25 = "bm25"
    DENSE = "dense"

    @classmethod
    def from_str(cls, value: object) -> Mode:
        try:
            if isinstance(value, str):
                return cls(value.lower())
        except ValueError:
            pass
        choices = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown mode {value!r}: choose one of {choices}")


Ranked = Sequence[tuple[str, float]]  # (id, score), best first


def rrf(
    lists: Sequence[Ranked], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``sum_i w_i / (k + rank_i)`` with ranks from 1."""
    if k < 0:
        raise ValueError("the RRF constant must be non-negative")
    w = list(weights) if weights is not None else [1.0] * len(lists)
    scores: dict[str, float] = {}
    for lst, wi in zip(lists, w):
        for rank, (doc, _) in enumerate(lst, start=1):
            scores[doc] = scores.get(doc, 0.0) + wi / (k + rank)
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def minmax(lst: Ranked) -> dict[str, float]:
    """Scores scaled to [0, 1] within the list; a list of equal scores maps to 1."""
    if not lst:
        return {}
    vals = [s for _, s in lst]
    lo, hi = min(vals), max(vals)
    if hi - lo <= 1e-12:
        return {d: 1.0 for d, _ in lst}
    return {d: (s - lo) / (hi - lo) for d, s in lst}


def convex(lexical: Ranked, dense: Ranked, alpha: float = CONVEX_ALPHA) -> list[tuple[str, float]]:
    """``alpha * minmax(lexical) + (1 - alpha) * minmax(dense)``; missing scores count 0."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be between 0 and 1")
    a, b = minmax(lexical), minmax(dense)
    ids = set(a) | set(b)
    scores = {d: alpha * a.get(d, 0.0) + (1 - alpha) * b.get(d, 0.0) for d in ids}
    return sorted(scores.items(), key=lambda t: (-t[1], t[0]))


def corpus_alpha(football: bool, n_docs: int) -> float:
    """The lexical weight of convex fusion for a corpus (see MANY_MATCHES_ALPHA)."""
    return MANY_MATCHES_ALPHA if football and n_docs >= DOC_MIN_DOCS else CONVEX_ALPHA


def doc_weight(n_docs: int) -> float:
    """The document-level weight for a corpus of ``n_docs`` documents (see DOC_MIN_DOCS)."""
    return DOC_WEIGHT if n_docs >= DOC_MIN_DOCS else 0.0


def doc_of(pid: str) -> str:
    """The document id of a passage id ``doc_id#n``."""
    return pid.rpartition("#")[0] or pid


def with_documents(
    passages: Ranked, docs: Ranked, weight: float = DOC_WEIGHT, add_missing: bool = True
) -> list[tuple[str, float]]:
    """Passage scores plus ``weight`` times their document's score.

    ``docs`` ranks whole documents (title + all their text) for the same query. A
    passage whose document matches as a whole ranks up: a question whose words are
    spread over an article's headline and several of its passages is still about that
    article. A document found only as a whole is represented by its first passage,
    with the document's part of the score only (unless ``add_missing`` is off).
    """
    if weight <= 0 or not docs:
        return list(passages)
    dscore = dict(docs)
    out = {pid: s + weight * dscore.get(doc_of(pid), 0.0) for pid, s in passages}
    seen = {doc_of(pid) for pid in out}
    for d, s in docs:
        if add_missing and d not in seen:
            out[f"{d}#0"] = weight * s
    return sorted(out.items(), key=lambda t: (-t[1], t[0]))


def _confidence(lst: Ranked, depth: int = 10) -> float:
    """How far a list's best score stands above the rest of its head, in standard deviations."""
    vals = [s for _, s in lst[:depth]]
    if len(vals) < 2:
        return 1.0
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5
    return (vals[0] - mean) / sd if sd > 1e-12 else 0.0


def confidence_alpha(lexical: Ranked, dense: Ranked, alpha: float = CONVEX_ALPHA) -> float:
    """A per-query lexical weight: ``alpha`` moved toward the side whose top stands out more."""
    cl, cd = _confidence(lexical), _confidence(dense)
    if cl + cd <= 1e-12:
        return alpha
    return alpha * cl / (alpha * cl + (1 - alpha) * cd)
