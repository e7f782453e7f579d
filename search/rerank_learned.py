"""The order of the search head: boosted trees over its evidence.

:func:`search.rerank.rerank` scores the head of the fused list with a hand-set sum: a
prior from the fused order plus the best sentence by words and by meaning. On football
questions that sum puts a relevant passage first for 1,093 of the 1,402 answerable
training questions, while one is in the first 20 for 1,388. What it cannot weigh is
*which article* a passage comes from: whether the article (its headline and its passages
in the head) holds the names and rare words of the question, how many of its passages
the retrievers found, and how far each retriever's own list agrees.

Here boosted trees (run with numpy by :mod:`search.trees`, fitted by
``scripts/fit_rerank.py``) score the first :data:`DEPTH` candidates of the fused list from
:data:`FEATURES`; they are sorted by the trees' score (a probability for the classifier
trees, the logistic of the LambdaRank score), which is the hit's score, ahead of the rest
in fused order. Every feature is a property of the question, the passage, its article's
headline, or the two ranked lists; none names a team, a person or an article.

Three sets of trees ship. The query's form picks (:func:`search.text.is_question`), and
for a question the corpus too (:func:`search.vocab.is_football`, a statistic of the index):

- ``rerank_trees_football.json`` for questions on a football corpus: LambdaRank trees
  (LightGBM's ``LGBMRanker``) fitted on the football training questions (a passage is
  relevant when it holds the answer). Since 2026-12-07 they also read the answer type's
  evidence (:mod:`search.rerank_typed`: whether a passage holds a value of the asked kind
  beside the question's words; that module says what it gained). Out of fold (5 folds, two assignments) on the first
  1,402 they put a relevant passage first for 1,151 and 1,141, where the classifier trees
  below did for 1,123 and 1,130. Fitted on all 2,410 (the first ten fresh sets joined the
  training sets), out of fold 1,971 and 1,938 against the hand-set sum's 1,848; held out
  (fresh12-17 and dev, 547 answerable questions) ``search`` ranks one first for 436, where
  the classifier trees did for 405.
- ``rerank_trees.json`` for questions on any other corpus: classifier trees
  (scikit-learn's ``HistGradientBoostingClassifier``) fitted on the same questions. Off
  football they beat the LambdaRank trees: rugby and cricket (110 questions, nDCG@10 of the
  cited report) 0.9344 against 0.9094, behind the convex peer's 0.9312. That loss is why
  the corpus picks: the LambdaRank trees learn football's question forms more closely.
- ``rerank_trees_statements.json`` for everything else (claims, headlines, and keywords off
  football):
  LambdaRank trees (LightGBM's ``LGBMRanker``) fitted on SciFact's train claims (a passage
  is relevant when its abstract is). Out of fold, offline on the recorded heads, SciFact
  train nDCG@10 goes from 0.7492 (the hand-set sum) to 0.7647-0.7718, where classifier
  trees gave 0.7588-0.7606. LambdaRank learns to put a relevant passage above the query's
  other candidates, which is all that ordering a head needs.

On a football corpus a query typed into a search box (lower case, no full stop:
:func:`search.text.is_search_box`, "rooney goals v everton") asks for a fact, so it reads the
football trees. Measured on ``train/t14`` (192 such queries, written blind, before any fit
on them): ``ask`` hit@1 108 -> 140 of 174 and recall@5 151 -> 164 against the statements'
trees. Headlines keep theirs: the question trees put 47 of 50 headlines first where the
statements' trees put 50 and 49 (``scripts/headlines.py --offset 1`` and ``2``). Off
football such a query stays a statement: no measured set says otherwise.

Why the form picks before the corpus (measured with the classifier trees): each set helps
queries like the ones it was fitted on and not the others. Over the rugby and cricket questions (110, a domain neither was fitted
on; nDCG@10 of the cited report, offline on the same heads) the hand-set sum gives 0.928,
the question trees 0.935 and the claim trees 0.917; on SciFact train the question trees
give 0.750, level with the sum. Fitting one set on both kinds lost on both (SciFact
0.755-0.761, rugby and cricket 0.921-0.924).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .fusion import doc_of
from .rerank import Evidence, Learned, sentence_terms
from .rerank_typed import TYPED, typed_features
from .text import analyze, is_question, is_search_box
from .trees import load

TREES = "rerank_trees.json"  # for questions
FOOTBALL_TREES = "rerank_trees_football.json"  # for questions on a football corpus
STATEMENT_TREES = "rerank_trees_statements.json"  # for everything else
MISSING_RANK = 100  # the rank of a passage a retriever's list does not hold
# The trees order the first DEPTH candidates of the fused list (the reranker's own head is
# RERANK_DEPTH, 30); the rest keeps the fused order after them. Out of fold on the
# training questions (offline, on the first feature set), 20 puts a relevant passage
# first as often as 30 (1,125 to 1,134 against 1,113 to 1,128 of 1,402), and the
# sentences of 10 passages fewer are scored.
DEPTH = 20
# A capitalised word after the question's first: the names it asks about.
NAME = re.compile(r"(?<=\S )[A-Z][\w'’-]+")

FEATURES = (
    "rank",
    "lex_rank",
    "dense_rank",
    "lex_rel",
    "dense",
    "dense_gap",
    "words_rel",
    "plain_idf",
    "meaning",
    "meaning_gap",
    "meaning2",
    "typed",
    "lead",
    "doc_count",
    "doc_first",
    "doc_first_here",
    "avg_idf",
    "n_terms",
    "hand",
    "cov_passage",
    "cov_title",
    "cov_both",
    "cov_doc",
    "cov_doc_gap",
    "cov_both_gap",
    "missing_idf",
    "names_passage",
    "names_doc",
    "names_doc_gap",
    "n_names",
)


def _gap(xs: list[float]) -> list[float]:
    top = max(xs, default=0.0)
    return [x - top for x in xs]


def features(
    question: str,
    qterms: Sequence[str],
    candidates: Sequence[tuple[str, float]],
    ev: Evidence,
    hand: list[float],
    lex: Sequence[tuple[str, float]],
    den: Sequence[tuple[str, float]],
    view: Any,
    typed: bool = False,
) -> list[dict[str, float]]:
    """One row of :data:`FEATURES` per candidate (and of :data:`search.rerank_typed.TYPED`
    when ``typed``). ``view`` is the index reader (its ``doc``, for the headline)."""
    n = len(candidates)
    terms = sorted(set(qterms))
    weights = {t: ev.idf(t) for t in terms}
    total = math.fsum(weights.values()) or 1.0

    names = frozenset(analyze(" ".join(NAME.findall(question)).lower()))
    # Every token set below is cut to the words asked about first, so the unions and
    # sums run over a handful of words, not a passage's hundreds.
    asked = frozenset(terms) | names

    def words(text: str) -> frozenset[str]:
        # rerank's cache: the evidence stage has just analysed these very sentences.
        return asked.intersection(sentence_terms(text))

    def cover(tokens: frozenset[str]) -> float:
        return math.fsum(weights[t] for t in tokens if t in weights) / total  # exact: any set order

    def named(tokens: frozenset[str]) -> float:
        return len(tokens & names) / len(names) if names else 1.0

    lex_at = {pid: (i, s) for i, (pid, s) in enumerate(lex)}
    den_at = {pid: (i, s) for i, (pid, s) in enumerate(den)}
    docs: list[str] = []
    text: list[frozenset[str]] = []
    title: list[frozenset[str]] = []
    lead: list[float] = []
    headline: dict[str, frozenset[str]] = {}
    for (pid, _), sents in zip(candidates, ev.texts):
        # The passage's words are its sentences' (already read for the evidence), so the
        # head costs no passage text; a passage id is "<document>#<n>", #0 the lead.
        doc = doc_of(pid)
        if doc not in headline:  # one record read per article
            rec = view.doc(doc)
            headline[doc] = words(rec.title) if rec is not None and rec.title else frozenset()
        docs.append(doc)
        text.append(frozenset().union(*(words(s) for s in sents)))
        title.append(headline[doc])
        lead.append(float(pid.endswith("#0")))
    count = Counter(docs)
    first: dict[str, int] = {}
    held: dict[str, frozenset[str]] = {}
    for i, d in enumerate(docs):
        first.setdefault(d, i)
        held[d] = held.get(d, frozenset()) | text[i]
    lex_s = [lex_at[pid][1] if pid in lex_at else 0.0 for pid, _ in candidates]
    den_s = [den_at[pid][1] if pid in den_at else 0.0 for pid, _ in candidates]
    top_lex = max(lex_s, default=0.0) or 1.0
    top_words = max(ev.words, default=0.0) or 1.0
    meaning = ev.meaning or [0.0] * n
    meaning2 = ev.meaning2 or [0.0] * n
    cov_both = [cover(t | h) for t, h in zip(text, title)]
    cov_doc = [cover(held[d] | h) for d, h in zip(docs, title)]
    names_doc = [named(held[d] | h) for d, h in zip(docs, title)]
    rows = []
    for i, (pid, _) in enumerate(candidates):
        both = text[i] | title[i]
        rows.append(
            {
                "rank": float(i),
                "lex_rank": float(lex_at[pid][0] if pid in lex_at else MISSING_RANK),
                "dense_rank": float(den_at[pid][0] if pid in den_at else MISSING_RANK),
                "lex_rel": lex_s[i] / top_lex,
                "dense": den_s[i],
                "dense_gap": den_s[i] - max(den_s, default=0.0),
                "words_rel": ev.words[i] / top_words,
                "plain_idf": ev.plain[i] / (ev.avg_idf or 1.0),
                "meaning": meaning[i],
                "meaning_gap": meaning[i] - max(meaning, default=0.0),
                "meaning2": meaning2[i],
                "typed": float(ev.typed[i]),
                "lead": lead[i],
                "doc_count": float(count[docs[i]]),
                "doc_first": float(first[docs[i]]),
                "doc_first_here": float(first[docs[i]] == i),
                "avg_idf": ev.avg_idf,
                "n_terms": float(len(terms)),
                "hand": hand[i],
                "cov_passage": cover(text[i]),
                "cov_title": cover(title[i]),
                "cov_both": cov_both[i],
                "cov_doc": cov_doc[i],
                "missing_idf": max((w for t, w in weights.items() if t not in both), default=0.0),
                "names_passage": named(text[i]),
                "names_doc": names_doc[i],
                "n_names": float(len(names)),
            }
        )
    for key, col in (
        ("cov_doc", cov_doc),
        ("cov_both", cov_both),
        ("names_doc", names_doc),
    ):
        for row, g in zip(rows, _gap(col)):
            row[f"{key}_gap"] = g
    if typed:
        for row, extra in zip(rows, typed_features(question, qterms, candidates, ev.idf, view)):
            row.update(extra)
    return rows


def head_order(
    question: str,
    qterms: Sequence[str],
    lex: Sequence[tuple[str, float]],
    den: Sequence[tuple[str, float]],
    view: Any,
    football: bool = False,
) -> Learned | None:
    """What :func:`search.rerank.rerank` calls to score the head with the trees for the
    question's form (and, for a question, whether the corpus is football:
    :func:`search.vocab.is_football`), or None when none ship."""
    asks = is_question(question) or (football and is_search_box(question))
    name = (FOOTBALL_TREES if football else TREES) if asks else STATEMENT_TREES
    trees = load("search.data", name)
    if trees is None:
        return None
    # Only the trees fitted with the answer type's evidence pay for it (search.rerank_typed).
    typed = any(k in TYPED for k in getattr(trees, "features", ()))

    def run(candidates: Sequence[tuple[str, float]], ev: Evidence, hand: list[float]) -> list[float] | None:
        rows = features(question, qterms, candidates, ev, hand, lex, den, view, typed)
        return [float(p) for p in trees.proba(rows)]

    return run
