"""``Answer.to_context`` under a character budget (#13): every [n] it cites is in it.

Hand-made answers, no index: the passages the answer and its conflicts cite go in first,
then the rest in rank order, each under its own rank; when even the cited passages do not
fit, each keeps its cited sentence, and a number whose passage is left out is not printed.
"""

from __future__ import annotations

import re

import pytest

from search.mcp_server import answer_text
from search.types import Answer, AnswerBlock, Conflict, Hit, Passage, Sentence

FILLER = "The crowd sang through a long afternoon while the rain kept falling on the pitch. "


def passage_text(claim: str) -> str:
    return FILLER * 4 + claim + " " + FILLER * 4


def make_answer(
    ranks: int = 14, answer_ranks: tuple[int, ...] = (1, 3, 5, 9, 14), conflict_ranks: tuple[int, ...] = (11,)
) -> Answer:
    """``ranks`` passages of ~700 characters; the answer cites ``answer_ranks``, a conflict ``conflict_ranks``."""
    hits, claims = [], {}
    for r in range(1, ranks + 1):
        claim = f"Player{r} scored the winner in minute {r}."
        claims[r] = claim
        text = passage_text(claim)
        doc = f"doc{r:02d}"
        hits.append(
            Hit(
                passage=Passage(f"{doc}#0", doc, 100, 100 + len(text), text),
                score=1.0 / r,
                rank=r,
                title=f"Match {r}",
            )
        )

    def sentence(r: int) -> Sentence:
        text = hits[r - 1].passage.text
        at = text.index(claims[r])
        return Sentence(claims[r], f"doc{r:02d}", 100 + at, 100 + at + len(claims[r]), r)

    block = AnswerBlock(
        text="Player1",
        sentences=[sentence(r) for r in answer_ranks],
        support=len(answer_ranks),
        articles=len(answer_ranks) + len(conflict_ranks),
        confidence=0.9,
        conflicts=[Conflict("Player11", len(conflict_ranks), [sentence(r) for r in conflict_ranks])]
        if conflict_ranks
        else [],
    )
    return Answer(question="who scored the winner", mode="hybrid", took_ms=1.0, hits=hits, answer=block)


def cited(ctx: str) -> set[int]:
    """The numbers the lead (everything before the first passage header) cites."""
    lead = re.split(r"^\[\d+\] ", ctx, maxsplit=1, flags=re.M)[0]
    return {int(n) for n in re.findall(r"\[(\d+)\]", lead)}


def shown(ctx: str) -> list[int]:
    """The passage numbers present, in the order they appear."""
    return [int(n) for n in re.findall(r"^\[(\d+)\] ", ctx, flags=re.M)]


def test_cited_passages_are_kept_first_within_the_budget() -> None:
    r = make_answer()
    ctx = r.to_context(max_chars=4000)
    assert len(ctx) <= 4000
    present = shown(ctx)
    # everything the answer line and the conflict line cite is there, under its own rank
    assert cited(ctx) == {1, 3, 5, 9, 14, 11}
    assert {1, 3, 5, 9, 14, 11} <= set(present)
    # the cited ones all kept (the rest only as room allows), every passage shown in rank order
    assert present == sorted(present)
    assert present[6:] == sorted(present[6:])
    assert "Answer: Player1 [1][3][5][9][14]" in ctx and "Conflicting version: Player11 [11]" in ctx


def test_cited_passage_keeps_its_cited_sentence_when_the_whole_does_not_fit() -> None:
    r = make_answer()
    ctx = r.to_context(max_chars=1500)
    assert len(ctx) <= 1500
    assert cited(ctx) <= set(shown(ctx))
    # all six cited passages are present, each at least with the sentence it is cited for
    assert set(shown(ctx)) >= {1, 3, 5, 9, 14, 11}
    for n in (1, 3, 5, 9, 14, 11):
        assert f"Player{n} scored the winner in minute {n}." in ctx


@pytest.mark.parametrize("budget", [1, 50, 200, 300, 400, 600, 800, 1000, 2000, 3000, 4000, 6000, 20000])
def test_no_citation_without_its_passage_at_any_budget(budget: int) -> None:
    r = make_answer()
    ctx = r.to_context(max_chars=budget)
    assert cited(ctx) <= set(shown(ctx)), ctx
    assert len(shown(ctx)) == len(set(shown(ctx)))
    assert ctx.startswith("Answer: Player1")


def test_budget_is_kept_once_the_lead_fits() -> None:
    r = make_answer()
    for budget in range(300, 6000, 97):
        assert len(r.to_context(max_chars=budget)) <= budget


def test_everything_fits_all_passages_shown() -> None:
    r = make_answer(ranks=6, answer_ranks=(1, 6), conflict_ranks=())
    ctx = r.to_context(max_chars=100_000)
    assert shown(ctx) == [1, 2, 3, 4, 5, 6]
    assert cited(ctx) == {1, 6}
    for h in r.hits:  # whole passages, untrimmed
        assert h.passage.text.strip() in ctx


def test_no_short_answer_cites_only_the_quoted_sentence() -> None:
    r = make_answer()
    assert r.answer is not None
    r.answer.text = None
    r.answer.conflicts = []
    ctx = r.to_context(max_chars=1200)
    assert ctx.startswith("No short answer")
    assert cited(ctx) == {1} and shown(ctx)[0] == 1


def test_a_cite_to_a_passage_not_in_the_hits_is_not_printed() -> None:
    r = make_answer()
    r.hits = [h for h in r.hits if h.rank != 9]
    ctx = r.to_context(max_chars=100_000)
    assert 9 not in cited(ctx) and cited(ctx) <= set(shown(ctx))
    assert "Answer: Player1 [1][3][5][14]" in ctx


def test_no_answer_block_keeps_rank_order() -> None:
    r = make_answer()
    r.answer = None
    ctx = r.to_context(max_chars=2000)
    assert shown(ctx) == list(range(1, len(shown(ctx)) + 1)) and shown(ctx)


def test_first_passage_is_trimmed_rather_than_nothing() -> None:
    r = make_answer()
    r.answer = None
    ctx = r.to_context(max_chars=300)
    assert shown(ctx) == [1] and len(ctx) <= 300 and ctx.rstrip().endswith("…")


def test_mcp_answer_text_resolves_every_citation() -> None:
    r = make_answer()
    text = answer_text(r, max_chars=4000)
    assert cited(text) == {1, 3, 5, 9, 14, 11} and cited(text) <= set(shown(text))


def test_with_no_short_answer_the_reference_is_cited_with_the_conflicts() -> None:
    """No short answer, yet the outlets disagree: the version the conflicts contradict is a
    line of its own, cited, and its passages are kept like the answer's would be."""
    r = make_answer(answer_ranks=(2,), conflict_ranks=(11,))
    a = r.answer
    assert a is not None
    ref_sentences = [s for h in r.hits if h.rank in (4, 7) for s in [_claim(h)]]
    a.text, a.reference = None, Conflict("Player4", 2, ref_sentences)
    ctx = r.to_context(max_chars=1500)
    assert "One version: Player4 [4][7] — 2 articles" in ctx
    assert "Conflicting version: Player11 [11] — 1 article" in ctx
    assert {2, 4, 7, 11} == cited(ctx) and cited(ctx) <= set(shown(ctx))


def _claim(h: Hit) -> Sentence:
    claim = f"Player{h.rank} scored the winner in minute {h.rank}."
    at = h.passage.text.index(claim)
    return Sentence(claim, h.passage.doc_id, h.passage.start + at, h.passage.start + at + len(claim), h.rank)


def test_the_cli_shows_every_side_when_there_is_no_short_answer() -> None:
    from rich.console import Console

    from search.render import print_answer

    r = make_answer(answer_ranks=(2,), conflict_ranks=(11,))
    assert r.answer is not None
    r.answer.text = None
    r.answer.reference = Conflict("Player4", 2, [_claim(h) for h in r.hits if h.rank in (4, 7)])
    console = Console(record=True, width=200)
    print_answer(console, r)
    out = console.export_text()
    assert "No short answer" in out
    assert "Version: Player4 — 2 articles [4], [7]" in out
    assert "Conflict: Player11 — 1 article [11]" in out
