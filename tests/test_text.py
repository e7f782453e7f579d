"""The analyser's fast tokenizer gives exactly what the per-match loop it replaced gave (#17).

The reference below is the old ``search.text._words``, one regex match at a time; every
public function built on the tokenizer (the index's terms, the highlighter's spans, a
question's terms) is compared with the same function written over it, on news text,
Unicode edge cases and random strings.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import text as tx
from search.text import (
    QUESTION_WORDS,
    STOP_WORDS,
    analyze,
    analyze_spans,
    compounds,
    has_searchable_text,
    query_terms,
    term,
)


def ref_words(text: str, catenate: bool = True) -> Iterator[tuple[str, int, int]]:
    norm = unicodedata.normalize("NFKC", text).translate(tx._APOSTROPHES)
    if len(norm) != len(text):
        norm = text.translate(tx._APOSTROPHES)
    words = []
    for m in tx._TOKEN.finditer(norm):
        w = m.group(0).lower()
        if w.endswith("'s"):
            w = w[:-2]
        w = w.replace("'", "")
        if w:
            words.append((w, m.start(), m.end()))
    # Words one hyphen apart form a compound, which also yields its parts joined, before
    # them. (Not a compound pattern over the text: a score token "0-0" holds its hyphen, so
    # "0-0A" is two words with no hyphen between them.)
    joined = {}
    i = 0
    while i < len(words):
        j = i
        while j + 1 < len(words) and words[j + 1][1] == words[j][2] + 1 and norm[words[j][2]] in "-\u2010":
            j += 1
        if j > i and catenate:
            joined[words[i][1]] = ("".join(w for w, _, _ in words[i : j + 1]), words[i][1], words[j][2])
        i = j + 1
    for w in words:
        if w[1] in joined:
            yield joined.pop(w[1])
        yield w


def ref_analyze(text: str, stop: frozenset[str] = STOP_WORDS) -> list[str]:
    return [term(w) for w, _, _ in ref_words(text) if w not in stop]


def ref_analyze_spans(text: str) -> list[tuple[str, int, int]]:
    return [(term(w), s, e) for w, s, e in ref_words(text) if w not in STOP_WORDS]


def ref_query_terms(question: str) -> list[str]:
    words = [w for w, _, _ in ref_words(question, catenate=False)]
    kept = [w for w in words if w not in STOP_WORDS and w not in QUESTION_WORDS]
    if not kept:
        kept = [w for w in words if w not in STOP_WORDS] or words
    return [term(w) for w in kept]


CASES = [
    "",
    " ",
    "\n\t ",
    "a",
    "A.",
    "'s",
    "_",
    "__init__ snake_case",
    "Lautaro Martinez headed home the winner in stoppage time.",
    "Argentina beat England 2-1; the 20-metre run, 3-2-1 and 4--4, -5-, 7-",
    "Messi's goal, the players' bonus, rock'n'roll, don't, ''quoted'', it's'",
    "Curly: Messi’s goal, ‘quoted’, O‘Neill, modifierʼs, back`tick, acute´s",
    "The equaliser came from Fernandez; the centre-back's defence was organised.",
    "semi-final, semifinal, half-time; PD-1 and Bcl-2 T-cells; o'Neill-led, x-2-1, 2-1-win, a\u2011b",
    "ΟΔΟΣ ΑΣ.Β ΟΔΥΣΣΕΥΣ: Greek final sigma depends on what follows",
    "İstanbul and ǅemal: lower() changes lengths; ß straße",
    "ﬁnal ﬂag ①② ½ ＡＢＣ１２３ – NFKC changes these",
    "Café naïve résumé e\u0301 combining a\u0308ccents",
    "Zlatan Ibrahimović, Łukasz Piszczek, Ødegaard, Müller",
    "中文 日本語のテキスト 한국어",
    "emoji ⚽️ 🏆 goal!!! ١٢٣ Arabic digits ٣-١",
    "x" * 5 + " " + "y'" * 40,
    "No. 10 scored at 3 p.m. in the U.S. Open",
    "tab\there\r\nwindows\u2028line\u00a0nbsp",
    "the and of a an",  # all stop words
    "who is it",  # all question / stop words
]


@pytest.mark.parametrize("text", CASES)
def test_tokens_equal_the_per_match_reference(text: str) -> None:
    assert list(zip(*tx._tokens(text))) == list(ref_words(text))
    assert analyze(text) == ref_analyze(text)
    assert analyze(text, frozenset()) == ref_analyze(text, frozenset())
    assert analyze_spans(text) == ref_analyze_spans(text)
    assert query_terms(text) == ref_query_terms(text)
    assert has_searchable_text(text) == any(True for _ in ref_words(text))


_ALPHABET = st.sampled_from(
    list("abcXYZ019 '’‘`´ʼ-_.,;\n\t")
    + ["ς", "Σ", "İ", "ß", "ﬁ", "①", "é", "e\u0301", "٣", "中", "⚽", "\u00a0"]
)


@settings(max_examples=400, deadline=None, database=None)
@given(st.one_of(st.text(max_size=200), st.lists(_ALPHABET, max_size=80).map("".join)))
def test_property_analysis_equals_the_reference(text: str) -> None:
    assert list(zip(*tx._tokens(text))) == list(ref_words(text))
    assert analyze_spans(text) == ref_analyze_spans(text)
    assert analyze(text) == ref_analyze(text)
    assert query_terms(text) == ref_query_terms(text)


def test_a_hyphenated_compound_is_also_one_word():
    """Either spelling of a compound finds the other: "semi-final" holds "semifinal"."""
    assert term("semifinal") in analyze("the semi-final") and term("semi") in analyze("the semi-final")
    assert query_terms("Does PD-1 block T-cells?") == ["pd", "1", "block", "t", "cell"]
    assert compounds("Does PD-1 block T-cells?") == [term("pd1"), term("tcells")]  # expansions
    assert analyze("a 2-1 win") == ["2-1", "win"]  # a score stays one word
    assert analyze("2–1") == ["2", "1"]  # an en dash joins nothing


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("who scored the winner", True),
        ("Did Spain win?", True),
        ("Tell me the score", True),
        ("what's the name of the linesman", True),
        ("Who\u2019d Chelsea sign", True),
        ("name the scorer of the winner", True),
        ("whatsoever happened to the final", False),
        ("the score at half time?", True),
        ("0-dimensional biomaterials lack inductive properties.", False),
        ("Spain win the final", False),
        ("I wonder about the final", False),
        ("", False),
    ],
)
def test_a_query_is_a_question_when_it_opens_with_a_question_word_or_ends_with_a_question_mark(
    text: str, asked: bool
) -> None:
    assert tx.is_question(text) is asked


@pytest.mark.parametrize(
    ("text", "typed"),
    [
        ("rooney goals v everton", True),
        ("final venue", True),
        ("chelsea 3-0 portsmouth scorers", True),
        ("Spain win the final", False),  # a headline
        ("0-dimensional biomaterials lack inductive properties.", False),  # a claim
        ("the final was won by spain.", False),  # a sentence
        ("2-1", False),  # no word
        ("", False),
    ],
)
def test_a_query_typed_into_a_search_box_is_lower_case_with_no_full_stop(text: str, typed: bool) -> None:
    assert tx.is_search_box(text) is typed
