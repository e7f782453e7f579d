"""The short answer says what the question asks: several values together, or a minute by its number (#13)."""

from __future__ import annotations

import pytest
from test_answer import FakeEngine, article, check_spans, hits_of

from search.answer import analyse, build_answer
from search.types import AnswerBlock, Article


@pytest.mark.parametrize(
    ("question", "many"),
    [
        ("Which two teams did Argentina need extra time to beat?", 2),
        ("Between which two England defenders did Martinez rise?", 2),
        ("Name the two players Southampton offered Forest", 2),
        ("which three players were booked", 3),
        ("Which two goals were ruled out for offside?", 1),  # a count of goals, not two values
        ("Who scored in the 2-1 win over England?", 1),
        ("who scored the winner", 1),
    ],
)
def test_how_many_values_a_question_asks_for(question: str, many: int) -> None:
    assert analyse(question).many == many


def _extra_time() -> list[Article]:
    return [
        article(
            "a.txt",
            "Argentina needed extra time to beat both Cape Verde and Switzerland in the knockout rounds.",
            # The model tags one of the two a place: still one list with the other.
            [("Argentina", "GPE"), ("Cape Verde", "LOC"), ("Switzerland", "GPE")],
        ),
        article(
            "b.txt",
            "Earlier in the knockout rounds Argentina went to extra time against Cape Verde and Switzerland.",
            [("Argentina", "GPE"), ("Cape Verde", "GPE"), ("Switzerland", "GPE")],
        ),
    ]


def _ask(question: str, arts: list[Article]) -> AnswerBlock:
    engine = FakeEngine(arts)
    engine.min_confidence = 0.0  # type: ignore[attr-defined]  # whatever the fit: the list decides
    block = build_answer(question, hits_of(arts), engine)
    check_spans(block, arts)
    return block


def test_a_question_for_two_values_gets_the_two_a_sentence_lists() -> None:
    block = _ask("Which two teams took Argentina to extra time in the knockout rounds?", _extra_time())
    assert block.text == "Cape Verde and Switzerland"
    assert block.support == 2 and block.withheld is None
    # One value alone is what the same question gets when it asks for one.
    one = _ask("Which team took Argentina to extra time in the knockout rounds?", _extra_time())
    assert one.text in {"Cape Verde", "Switzerland"}


def test_a_list_may_carry_a_role_word_but_not_a_verb() -> None:
    arts = [
        article(
            "a.txt",
            "Southampton offered striker Brett Ormerod and defender Darren Kenton to Forest for Reid.",
            [
                ("Southampton", "ORG"),
                ("Brett Ormerod", "PERSON"),
                ("Darren Kenton", "PERSON"),
                ("Forest", "ORG"),
            ],
        )
    ]
    block = _ask("Which two players did Southampton offer Forest for Reid?", arts)
    assert block.text == "Brett Ormerod and defender Darren Kenton"
    arts = [
        article(
            "a.txt",
            "Messi fed Lautaro Martinez, who beat Jordan Pickford from close range.",
            [("Messi", "PERSON"), ("Lautaro Martinez", "PERSON"), ("Jordan Pickford", "PERSON")],
        )
    ]
    block = _ask("Which two Argentina players combined for the winner?", arts)
    assert block.text is None


def test_a_longer_list_is_cut_where_a_role_word_starts_a_group() -> None:
    text = (
        "Boro boss Steve McClaren praised winger Stewart Downing and strikers Jimmy Floyd Hasselbaink"
        " and Mark Viduka, who both ended barren runs in front of goal."
    )
    names = ["Steve McClaren", "Stewart Downing", "Jimmy Floyd Hasselbaink", "Mark Viduka"]
    arts = [article("a.txt", text, [(n, "PERSON") for n in names])]
    block = _ask("Which two Boro strikers ended barren runs in front of goal?", arts)
    assert block.text == "Jimmy Floyd Hasselbaink and Mark Viduka"


def test_with_no_sentence_naming_them_together_there_is_no_short_answer_and_it_says_why() -> None:
    arts = [
        article(
            "a.txt",
            "Argentina needed extra time to beat Cape Verde in the last 32. Switzerland also took them the distance.",
            [("Argentina", "GPE"), ("Cape Verde", "GPE"), ("Switzerland", "GPE")],
        )
    ]
    block = _ask("Which two teams took Argentina to extra time?", arts)
    assert block.text is None and block.sentences
    assert block.withheld and "asks for 2 values, and no sentence lists" in block.withheld
    assert block.summary.startswith("No short answer: the question asks for 2 values")
    assert block.to_dict()["withheld"] == block.withheld
    assert "below" not in block.summary  # its confidence did not fall short


def test_stoppage_time_is_shown_as_the_numbered_minute_another_report_gives() -> None:
    """ "What minute": "stoppage time" and "the 92nd minute" are one fact, said less and more
    precisely; the short answer is the number, backed by both."""
    from search.answer.agreement import precise, same_event
    from search.answer.candidates import collect
    from search.answer.typed import candidates

    texts = [
        "Martinez headed the winner for Argentina in stoppage time against England.",
        "Argentina won when Martinez headed the winner in stoppage time against England.",
        "Martinez headed the winner for Argentina against England in the 92nd minute.",
    ]
    ents = [("Martinez", "PERSON"), ("Argentina", "GPE"), ("England", "GPE"), ("92nd minute", "MINUTE")]
    arts = [article(f"{i}.txt", t, ents + [("stoppage time", "TIME")]) for i, t in enumerate(texts)]
    q = analyse("What minute did Martinez head the winner for Argentina against England?")
    sents, _ = collect(q, hits_of(arts), FakeEngine(arts).get_document)
    from search.answer.agreement import cluster

    clusters = sorted(cluster(q.atype, candidates(q, sents), str), key=lambda cl: -cl.support)
    top = clusters[0]
    assert top.text == "stoppage time"
    shown = precise(q.atype, top, clusters, same_event(top, sents))
    assert shown.text == "92nd minute"
    # A numbered minute inside normal time is another event's, not this one said precisely.
    numbered = next(cl for cl in clusters if cl.key == "92")
    numbered.key = "85"
    assert precise("minute", top, [top, numbered], same_event(top, sents)) is top
    numbered.key = "92"
    block = _ask("What minute did Martinez head the winner for Argentina against England?", arts)
    assert block.text == "92nd minute" and block.support == 3
    assert "92nd minute" in block.sentences[0].text
