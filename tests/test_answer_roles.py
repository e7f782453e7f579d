"""The role written beside a name against the role a question asks for (search.answer.roles)."""

from __future__ import annotations

from search.answer import roles

TEXT = (
    "Sheffield United boss Neil Warnock said the defeat hurt. Keeper Paddy Kenny was carried off. "
    "Stan Varga, the Celtic defender, scored twice. Alan Thompson scored a penalty."
)


def span(name: str) -> tuple[int, int]:
    a = TEXT.index(name)
    return a, a + len(name)


def test_the_asked_role_and_not_one_that_describes_a_name_the_question_gives() -> None:
    assert roles.asked("Which Sheffield United keeper was carried off?") == {"goalkeeper"}
    assert roles.asked("Who is the coach of the French side?") == {"manager"}  # coach, boss: one role
    assert roles.asked("What did Arsenal boss Arsene Wenger say?") == frozenset()
    assert roles.asked("Who scored the winner?") == frozenset()


def test_a_role_before_a_name_or_in_an_apposition_after_it() -> None:
    wanted = roles.asked("which keeper was carried off")
    assert roles.fit(TEXT, *span("Paddy Kenny"), wanted) == 1.0
    assert roles.fit(TEXT, *span("Neil Warnock"), wanted) == -1.0  # the boss, not the keeper
    assert roles.beside(TEXT, *span("Stan Varga")) == {"defender"}
    assert roles.fit(TEXT, *span("Alan Thompson"), wanted) == 0.0  # nothing written beside him
    assert roles.fit(TEXT, *span("Paddy Kenny"), frozenset()) == 0.0  # no role asked


def test_a_role_in_another_clause_is_not_beside_the_name() -> None:
    text = "He thanked the manager. Jones scored."
    a = text.index("Jones")
    assert roles.beside(text, a, a + 5) == frozenset()


def test_a_verb_asks_for_its_role() -> None:
    """ "Who refereed the semi-final" asks for the referee (``data/role_verbs.txt``): the
    substitute who scored in it is no answer."""
    assert roles.asked("Who refereed the semi-final?") == {"referee"}
    assert roles.asked("Who managed Chelsea in 2004?") == {"manager"}  # the group's name
    text = "Substitute Lautaro Martinez headed the winner."
    a = text.index("Lautaro")
    assert roles.fit(text, a, a + 16, roles.asked("Who refereed the semi-final?")) == -1.0
