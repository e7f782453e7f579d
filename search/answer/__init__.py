"""The answer block, in stages with plain data between them:

1. :mod:`.question`   question -> answer type, words, tense (a table, no model);
2. :mod:`.candidates` the top passages' stored sentences, with what of the question they state;
3. :mod:`.evidence`   each sentence's probability of stating the answer (fitted weights), and
   which one to quote (LambdaRank trees);
4. :mod:`.typed`      stored entities of the asked kind in those sentences (and, with
   :mod:`.roles`, the role a report writes beside each name);
5. :mod:`.agreement`  candidates grouped by value, counted by distinct articles;
6. :mod:`.ranker`     each value's probability of being the answer (LambdaRank trees),
   and :mod:`.listing` the values listed with it when the question asks for several;
7. :mod:`.confidence` a calibrated score; below its threshold there is no short answer,
   and a sentence is quoted instead: the most probable value's own when that value is
   fairly probable (:data:`QUOTE_BACKED`), else the most probable sentence.

Every short answer is an exact span of a cited sentence, and every sentence an exact
span of its article. Nothing here loads a model: entities, sentence spans and sentence
vectors were stored at index time (:mod:`search.enrich`); the weights and trees are JSON
files fitted by ``scripts/fit_answer.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..types import AnswerBlock, Article, Conflict, Hit, Sentence
from .agreement import SAME_EVENT, Cluster, cluster, corroborate, idf_of, precise, same_event
from .candidates import Sent, collect
from .confidence import confidence, features, threshold
from .evidence import weigh
from .listing import listed
from .question import QuestionInfo, analyse, label_fit, table
from .ranker import pointwise, rank
from .typed import candidates, entity_at, label_votes, question_words, voted_label

__all__ = ["Decision", "QuestionInfo", "analyse", "build_answer", "decide"]

MAX_SENTENCES = 5
CORROBORATE_TOP = 3  # values whose agreement in other words is counted before ranking
ADDRESS_REL = 0.5  # a sentence stating half the question's weight addresses it
CONFLICT_FIT = 0.75  # only a value plainly of the asked kind contradicts (a minute, not "later")
CONFLICT_RATIO = 0.5  # an article's own answer must score this share of the weakest winning one
# An article's own value in a sentence this close to the winning sentences' event (the share
# of its weight they state; .agreement.CORROBORATE is 0.25 for one that agrees) answers the
# question whatever its focus. On the training seed questions (t5c_seeds) it flags 5 of 15
# conflicts against 3, none on the 30 others, and adds none over 860 training questions; at
# 0.25 two half-time scores were set against full-time ones.
CONFLICT_EVENT = 0.35
# With no short answer, the quoted sentence is the most probable value's own best sentence
# when that value is at least this probable and its sentence's pick at least QUOTE_RATIO of
# the best pick; else the best pick. Chosen on the training questions (answer@1 of the 954
# answerable ones with no short answer, 565 -> 582), then checked on t10 (110 questions
# written later, in no fit): 41 -> 44 of 74.
QUOTE_BACKED = 0.3
QUOTE_RATIO = 0.1
PAST_AHEAD = 0.5  # the tense fit of a preview for a question about the past (candidates.Sent.tense)
OLD_INDEX = "this index was built before entities were stored: run `search reindex` to get short answers"


def _getter(engine: Any) -> Any:
    get = getattr(engine, "get_document", None)

    def article(doc_id: str) -> Article | None:
        try:
            return get(doc_id) if get is not None else None
        except Exception:  # removed since the search, or a fake engine: use the passage text
            return None

    return article


def _story(engine: Any) -> Any:
    rec = getattr(engine, "document_record", None)
    cache: dict[str, str] = {}

    def story(doc_id: str) -> str:
        if doc_id not in cache:
            try:
                cache[doc_id] = (rec(doc_id).duplicate_of if rec else None) or doc_id
            except Exception:
                cache[doc_id] = doc_id
        return cache[doc_id]

    return story


def _cite(s: Sent) -> Sentence:
    return Sentence(text=s.text, doc_id=s.doc_id, start=s.start, end=s.end, passage_rank=s.rank)


def _outlet(a: Article) -> str:
    """The outlet's name where the article gives one, else its id (titles are too long to list)."""
    return a.source or a.id


@dataclass
class Decision:
    """What the stages found, before the threshold: for the block, and for fitting confidence."""

    q: QuestionInfo
    sents: list[Sent]
    clusters: list[Cluster]  # most probable answer first
    addressing: int
    features: dict[str, float] | None  # of the decision, for the confidence
    old_index: bool
    rows: list[dict[str, float]]  # the ranker's features of each cluster, in order
    probs: list[float]
    sent_rows: list[dict[str, float]]  # the evidence features of each usable sentence, in order
    idf: dict[str, float]  # the rarity of each term among the candidate sentences

    @property
    def usable(self) -> list[Sent]:
        return [s for s in self.sents if s.usable]

    @property
    def best_sentence(self) -> Sent | None:
        """The sentence most likely to state the answer: quoted when there is no short one."""
        return max(self.usable, key=lambda s: (s.pick, s.score, -s.rank, -s.start), default=None)


def decide(question: str, hits: Sequence[Hit], engine: Any, qvec: Any = None) -> Decision:
    q = analyse(question)
    story = _story(engine)
    sents, _focus = collect(q, hits, _getter(engine), qvec)
    sent_rows = weigh(q, sents)
    cands = candidates(q, sents)
    clusters = cluster(q.atype, cands, story)
    idf = idf_of(sents)
    for cl in clusters[:CORROBORATE_TOP]:
        corroborate(q.atype, cl, sents, story, entity_at, idf, question_words(q))
    stating = {story(c.sent.doc_id) for c in cands}.union(*(cl.articles for cl in clusters[:CORROBORATE_TOP]))
    addressing = (
        len(stating)
        if clusters
        else len({story(s.doc_id) for s in sents if s.focus > 0 and s.rel >= ADDRESS_REL})
    )
    clusters, rows, probs = rank(q, clusters, addressing, sents, story)
    old = bool(sents) and any(not s.article.sentences for s in sents)
    feats = features(probs, rows[0], pointwise(rows[0])) if clusters else None
    return Decision(q, sents, clusters, addressing, feats, old, rows, probs, sent_rows, idf)


def build_answer(question: str, hits: Sequence[Hit], engine: Any, qvec: Any = None) -> AnswerBlock:
    """The answer block for ``hits``; ``qvec`` (the question's embedding) lets stored sentence
    vectors say which sentences state the asked fact in other words."""
    d = decide(question, hits, engine, qvec)
    block = AnswerBlock(articles=d.addressing, notice=OLD_INDEX if d.old_index else None)
    best = d.best_sentence
    if not d.clusters or d.features is None:
        if best is not None:
            block.sentences = [_cite(best)]
        return block
    top = d.clusters[0]
    block.confidence = round(confidence(d.features), 4)
    chosen = sorted(top.articles.values(), key=lambda c: -c.score)
    block.support = top.support
    block.outlets = sorted({_outlet(c.sent.article) for c in chosen})
    needed = getattr(engine, "min_confidence", None)
    football = bool(getattr(engine, "corpus_football", True))
    block.needed = round(threshold(football) if needed is None else needed, 4)
    run = listed(d.q, top, d.clusters) if d.q.many > 1 else None
    if block.confidence >= block.needed and (run is not None or d.q.many == 1):
        shown = precise(d.q.atype, top, d.clusters, same_event(top, d.sents, d.idf))
        if shown is not top:  # "92nd minute" for "stoppage time": both sides state it
            theirs = sorted(shown.articles.values(), key=lambda c: -c.score)
            chosen = theirs + [c for k, c in top.articles.items() if k not in shown.articles]
            top = shown
        if run is not None:  # the articles that list the same values, not all that name one
            chosen = run.members
        block.text = top.text if run is None else run.text
        block.support = len(chosen)
        block.outlets = sorted({_outlet(c.sent.article) for c in chosen})
        block.sentences = [_cite(c.sent) for c in chosen[:MAX_SENTENCES]]
    else:
        if block.confidence >= block.needed:
            block.withheld = f"the question asks for {d.q.many} values, and no sentence lists that many with the likeliest one"
        block.sentences = [_cite(_quoted(d, best, chosen))]
    # A disagreement needs a reference worth disagreeing with: the short answer, or else the
    # likeliest value two outlets state in sentences of the question's tense ("header" from one
    # report does not settle how a goal was scored; "strike" from two does).
    ref = (
        top
        if block.text is not None
        else next((cl for cl in d.clusters[:CORROBORATE_TOP] if _settled(cl) and not _hedged(cl)), None)
    )
    if d.q.single and ref is not None:
        votes = label_votes(d.sents)
        rest = [cl for cl in d.clusters if cl is not ref]
        block.conflicts = _conflicts(d.q, ref, rest, same_event(ref, d.sents, d.idf), votes)
        if block.text is None and block.conflicts:
            # No short answer to stand for one side: name the version the others contradict.
            theirs = sorted(ref.articles.values(), key=lambda c: -c.score)
            block.reference = Conflict(ref.text, ref.support, [_cite(c.sent) for c in theirs[:MAX_SENTENCES]])
    return block


def _hedged(cl: Cluster) -> bool:
    """Worded as a bound ("at least one"): no reference to disagree with."""
    return bool(table()["_hedge"].search(cl.text))


def _settled(cl: Cluster) -> bool:
    """Two outlets state it in sentences of the question's tense (not two previews of the
    final for "what day was the semi-final played")."""
    return sum(c.sent.tense > PAST_AHEAD for c in cl.articles.values()) >= 2


def _quoted(d: Decision, best: Sent | None, chosen: list[Any]) -> Sent:
    """The sentence quoted when there is no short answer: the one most likely to state the
    answer, preferring one that states the most probable value (the value's probability
    says something the sentence model alone does not: "55th minute" in the sentence about
    Gordon's goal, not "92nd minute" in the one with more of the question's words)."""
    own = max((c.sent for c in chosen), key=lambda s: s.pick)
    if best is None or (d.probs[0] >= QUOTE_BACKED and own.pick >= QUOTE_RATIO * best.pick):
        return own
    return best


def _conflicts(
    q: QuestionInfo, top: Cluster, others: list[Cluster], same: Any, votes: dict[str, list[str]]
) -> list[Conflict]:
    """Articles whose own answer differs, at each level the table's ``conflict_levels`` names
    for the asked type (a place is a stadium and a city: "MetLife Stadium in New Jersey"
    against "in New York" is a conflict of cities). At the first level every value plainly of
    the asked kind counts and the winning value is the reference; at a further level (an answer
    type of the table) the values plainly of that type count, and the reference is the value of
    that level the winning articles state.

    Each article answers with its best candidate, in a sentence that (with the text around
    it) names the question's focus. It is in conflict only with a value of the same form as
    the reference: the same family of labels (the table's ``label_family``: a day does not
    contradict a minute), both or neither counted from stoppage time ("the second minute of
    added time" restates the 92nd), both with a number when a number is asked ("stoppage
    time" says less than "the second minute of added time", not something else), never from a preview when the question asks about the past
    (the day of the final does not contradict the day of the semi-final). An article that states the
    reference anywhere is not in conflict, nor one whose value an article stating the reference
    states too (there it is another event's: the winner's minute beside the equaliser's), nor one whose answer is far weaker than a typical
    winning article's (a stray number beside the question's words), hedged ("at least
    one"), or about another event than the winning sentences (the ages of two players)."""
    clusters = [top, *others]
    out: dict[str, Conflict] = {}
    for level in [None, *table().get("conflict_levels", {}).get(q.atype, [])]:
        if level is None:
            ref: Cluster | None = top
        else:
            shared = [
                cl
                for cl in clusters
                if any(_plain(q, level, c, votes) for c in cl.articles.values())
                and set(cl.articles) & set(top.articles)
            ]
            ref = max(
                shared, key=lambda cl: (len(set(cl.articles) & set(top.articles)), cl.score), default=None
            )
        if ref is None:
            continue
        for c in _level_conflicts(q, ref, clusters, same, level, votes):
            out.setdefault(c.text, c)
    return sorted(out.values(), key=lambda c: -c.support)


def _plain(q: QuestionInfo, level: str | None, c: Any, votes: dict[str, list[str]]) -> bool:
    """A candidate plainly of the asked kind (at ``level``, an answer type of the table), by
    the label the model gave its text most often ("Scaloni" tagged GPE once is no city)."""
    label = voted_label(votes, c.text, c.label)
    fit = q.fit(label, c.text) if level is None else label_fit(level, label, c.text)
    return fit >= CONFLICT_FIT


def _form(c: Any, votes: dict[str, list[str]]) -> tuple[str, bool, bool]:
    """What a value must share with the reference to contradict it: its label family,
    whether it counts from stoppage time, and whether it names a weekday (the table's
    ``weekday``: "Tuesday" and "26 October" may be the same day)."""
    label = voted_label(votes, c.text, c.label)
    family = table().get("label_family", {}).get(label, label)
    t = table()
    return (
        family,
        bool(re.search(t.get("stoppage", "$^"), c.text, re.I)),
        bool(re.search(t.get("weekday", "$^"), c.text, re.I)),
    )


def _states(q: QuestionInfo, c: Any, event: float, floor: float) -> bool:
    """Whether an article's own value is its answer to the question: said about the winning
    sentences' event, in a sentence that (with the text around it) names every focus word and
    scores near the winners'; or,
    whatever its focus and score, in a sentence closer still to their event than one that
    corroborates the winner must be (:data:`CONFLICT_EVENT`): "the breakthrough came
    in the 86th minute when Fernandez ... level the scores" against "Fernandez ... in the
    85th minute levelled the scores" names neither team, yet answers the same question. Not
    for the table's ``scoped`` types: a count beside the same words may count something else."""
    if event >= CONFLICT_EVENT and q.atype not in table().get("scoped", []):
        return True
    return event >= SAME_EVENT and c.sent.around and c.score >= floor


def _level_conflicts(
    q: QuestionInfo,
    ref: Cluster,
    clusters: list[Cluster],
    same: Any,
    level: str | None,
    votes: dict[str, list[str]],
) -> list[Conflict]:
    best: dict[str, tuple[Cluster, Any]] = {}
    for cl in clusters:
        if cl is not ref and set(cl.articles) & set(ref.articles):
            continue  # an article that states the reference states this too: another event's value
        for key, c in cl.articles.items():
            if c.sent.focus <= 0 or not _plain(q, level, c, votes):
                continue
            if key not in best or c.score > best[key][1].score:
                best[key] = (cl, c)
    floor = CONFLICT_RATIO * min((c.score for c in ref.articles.values()), default=0.0)
    hedge = table()["_hedge"]
    forms = {_form(c, votes) for c in ref.articles.values()}
    counted = q.atype in table().get("needs_number", []) and any(ch.isdigit() for ch in ref.key)
    groups: dict[str, tuple[Cluster, list[Any]]] = {}
    for key, (cl, c) in sorted(best.items()):
        if (
            cl is ref
            or key in ref.articles
            or hedge.search(c.text)
            or not _states(q, c, same(c.sent, c.text), floor)
        ):
            continue
        if _form(c, votes) not in forms or c.sent.tense <= PAST_AHEAD:
            continue
        if (
            counted != any(ch.isdigit() for ch in cl.key)
            or not counted
            and q.atype in table().get("needs_number", [])
        ):
            continue  # "stoppage time" is less said than "the 92nd minute", not something else
        groups.setdefault(cl.key, (cl, []))[1].append(c)
    out = []
    for cl, theirs in groups.values():
        theirs.sort(key=lambda c: -c.score)
        out.append(Conflict(text=cl.text, support=len(theirs), sentences=[_cite(c.sent) for c in theirs[:3]]))
    return out
