"""The passage that states the answer leads: `ask` shows it first.

The retriever orders passages by how much of the question they hold; the answer stages
then read each sentence of the top passages and pick the one that states the answer (a
fitted model over the question's words beside a value of the asked kind). When that
sentence's passage ranks a little lower, often another passage of the same article (the
report's first paragraph holds the teams and the score, a later one the scorer), it is
moved to the front and the citation numbers follow it.

Measured as hit@1 of `ask` on the question sets one may tune on (dev,
``scripts/questions/heldout_*`` and ``train/``): 566 BBC football questions 0.800 -> 0.834
and 137 over the seeds 0.752 -> 0.774, moving the cited passage from within the top
:data:`LEAD_WITHIN` only. From any depth: 0.839 and 0.766; from the same article only,
0.823 and 0.752 (the seed reports are one or two passages each). Checked once on the
fresh7 sets (now ``train/r7_*``) (measured at milestones before, never fitted on): BBC 0.759 -> 0.793 (+2 of
58 questions), seeds 0.621 -> 0.586 (-1 of 29). Search without an answer keeps the
retriever's order.

Remeasured once the quoted sentence could be the most probable value's own (2026-12-06,
1,515 training questions, t10 included): from the top 10 rather than the top 3, hit@1 of
`ask` 0.802 -> 0.809 and recall@5 0.962 -> 0.964; 7 BBC sets gain or hold and one loses 2
of 40, every seed set holds.

Remeasured once the search head's fitted trees had caught up (2026-12-07): moving the
quoted sentence's passage now costs about as much as it gains, since the head already puts a
passage that states the fact first more often than the quote model picks one. Only a short
answer (its confidence cleared the threshold) moves its passage. hit@1 of `ask`, always /
short answers only, on training sets: with the models of 1943e9b, 502 seed questions 0.835 /
0.873 and 2,190 BBC questions 0.896 / 0.911; after the refit on 44 sets, the same 502 seed
questions 423 / 437 and 614 BBC 547 / 553, but the 522 questions of ``train/r12``-``r17``
299+163 / 294+158, rugby and cricket 89 / 90, and tennis and athletics (not fitted on) 78 /
75 of 100. Pooled, short answers only is ahead by a little; recall@5 does not move.
"""

from __future__ import annotations

from dataclasses import replace

from ..types import AnswerBlock, Hit

LEAD_WITHIN = 10  # the cited passage moves to the front from this rank or better


def lead(hits: list[Hit], block: AnswerBlock, within: int = LEAD_WITHIN) -> list[Hit]:
    """``hits`` with the passage of the block's first sentence first, renumbered, and the
    block's citations renumbered to match (in place). Unchanged when there is no short
    answer (a quoted sentence alone is a weaker sign than the retriever's order), when that
    passage already leads or ranks below ``within``, or when the hits are not numbered from
    1 (a later page)."""
    if block.text is None or not block.sentences or not hits or hits[0].rank != 1:
        return hits
    cited = block.sentences[0].passage_rank
    if cited <= 1 or cited > within:
        return hits
    i = next((j for j, h in enumerate(hits) if h.rank == cited), None)
    if i is None:
        return hits
    order = [hits[i], *hits[:i], *hits[i + 1 :]]
    new = {h.rank: n for n, h in enumerate(order, 1)}
    for n, h in enumerate(order, 1):
        h.rank = n
    block.sentences = [
        replace(s, passage_rank=new.get(s.passage_rank, s.passage_rank)) for s in block.sentences
    ]
    for c in block.versions:
        c.sentences = [replace(s, passage_rank=new.get(s.passage_rank, s.passage_rank)) for s in c.sentences]
    return order
