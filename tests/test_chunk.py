"""Tests for search.chunk: the segmenter's contract, its hard cases, and the chunker's invariants."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import chunk_sentences, indexing
from search.chunk import chunk, heading_spans, segment, sentence_spans
from search.engine import CHUNK_OVERLAP, CHUNK_TARGET
from search.types import Article, Passage

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def sents(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def seed(prefix: str) -> str:
    (path,) = SEEDS.glob(f"{prefix}_*.txt")
    return path.read_text(encoding="utf-8")


def assert_covers(text: str, spans: list[tuple[int, int]]) -> None:
    """Spans are trimmed, ordered, disjoint, and cover every non-space character once."""
    covered = [False] * len(text)
    last = 0
    for s, e in spans:
        assert last <= s < e <= len(text)
        assert not text[s].isspace() and not text[e - 1].isspace()
        for i in range(s, e):
            covered[i] = True
        last = e
    for i, ch in enumerate(text):
        assert covered[i] or ch.isspace(), f"character {i} {ch!r} not in any span"


def assert_passages(text: str, doc_id: str, target: int, overlap: int) -> None:
    passages = chunk(doc_id, text, target_chars=target, overlap=overlap)
    units = segment(text)
    if not units:
        assert passages == []
        return
    assert [p.id for p in passages] == [f"{doc_id}#{n}" for n in range(len(passages))]
    for p in passages:
        assert p.doc_id == doc_id
        assert p.text and text[p.start : p.end] == p.text
        assert p.text == p.text.strip()
    starts = [p.start for p in passages]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    ends = [p.end for p in passages]
    assert ends == sorted(ends) and len(set(ends)) == len(ends)
    # Every sentence lands in some passage (whole, or in pieces if it was over 2x target).
    for u in units:
        assert any(p.start <= u.start < p.end for p in passages)
        assert any(p.start < u.end <= p.end for p in passages)
    # Nothing between the passages is lost.
    reach = passages[0].end
    assert not text[: passages[0].start].strip()
    for p in passages[1:]:
        assert not text[reach : p.start].strip()
        reach = max(reach, p.end)
    assert not text[reach:].strip()
    # A heading never ends a passage that has more text after it.
    for p in passages[:-1]:
        assert not any(u.heading and u.end == p.end for u in units)


# --- sentence_spans: the hard cases ----------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\n  \t\r\n"])
def test_empty_and_blank_text_has_no_sentences(text: str) -> None:
    assert sentence_spans(text) == []
    assert chunk("d", text) == []


def test_abbreviations_initials_and_decimals_do_not_end_sentences() -> None:
    text = (
        "Mr. Smith met Dr. Jones at St. James' Park. J. R. Smith scored 2.5 goals on average. "
        "He moved to the U.S. Open in Jan. 5 last year. No. 10 was on the bench."
    )
    assert sents(text) == [
        "Mr. Smith met Dr. Jones at St. James' Park.",
        "J. R. Smith scored 2.5 goals on average.",
        "He moved to the U.S. Open in Jan. 5 last year.",
        "No. 10 was on the bench.",
    ]


def test_acronym_at_sentence_end_before_a_common_opener() -> None:
    assert sents("He left for the U.S. The club agreed.") == ["He left for the U.S.", "The club agreed."]


def test_quotes_closing_after_the_full_stop() -> None:
    text = (
        "“We’re disappointed,” Tuchel told the BBC. “We smell blood.” Then it ended. "
        '"We go for it," he said. "Everything."'
    )
    assert sents(text) == [
        "“We’re disappointed,” Tuchel told the BBC.",
        "“We smell blood.”",
        "Then it ended.",
        '"We go for it," he said.',
        '"Everything."',
    ]


def test_ellipses_dashes_and_scores() -> None:
    text = (
        "So to fall short like we did today... just gutted. It ended 2-1 — a classic. "
        "He waited… Then he scored. ATLANTA (AFP) — Messi won. Was it? Yes!"
    )
    assert sents(text) == [
        "So to fall short like we did today... just gutted.",
        "It ended 2-1 — a classic.",
        "He waited…",
        "Then he scored.",
        "ATLANTA (AFP) — Messi won.",
        "Was it?",
        "Yes!",
    ]


def test_headings_on_their_own_line_are_units() -> None:
    text = "Argentina won.\n\nThe Comeback\n\nThe breakthrough came late.\nMessi sparks comeback\nHe did."
    assert sents(text) == [
        "Argentina won.",
        "The Comeback",
        "The breakthrough came late.",
        "Messi sparks comeback",
        "He did.",
    ]
    assert [text[s:e] for s, e in heading_spans(text)] == ["The Comeback", "Messi sparks comeback"]


def test_a_list_of_short_lines_is_not_a_run_of_headings() -> None:
    text = "The draw was made.\n" + "\n".join(f"{i} Player Name (Country)" for i in range(1, 40)) + "\nDone."
    assert heading_spans(text) == []
    assert all(len(p.text) <= 700 for p in chunk("d", text))
    two = "Report\nFirst half\nArgentina pressed."
    assert [two[s:e] for s, e in heading_spans(two)] == ["Report", "First half"]


def test_last_line_without_punctuation_is_not_a_heading() -> None:
    assert heading_spans("Argentina won.\nReferee: R Styles (Hampshire)") == []


def test_hard_wrapped_paragraph_is_joined() -> None:
    text = (
        "England broke the deadlock ten minutes into the second half when Gordon\n"
        "burst into the box, getting in front of Molina to sidefoot home a cross\n"
        "from Rogers on the right. Argentina then pressed for the rest of the game\n"
        "and finally scored."
    )
    assert len(sents(text)) == 2
    assert heading_spans(text) == []


def test_lower_case_line_continues_the_sentence() -> None:
    assert sents("The goal came\nafter a long spell. Then it rained.") == [
        "The goal came\nafter a long spell.",
        "Then it rained.",
    ]


# --- seeds -------------------------------------------------------------------------------


def test_seed_002_inline_headings_are_split_from_their_sentences() -> None:
    text = seed("002")
    heads = [text[s:e] for s, e in heading_spans(text)]
    assert heads == ["Main Developments", "Background", "Why It Matters", "What's Next"]
    all_sents = sents(text)
    assert (
        "Argentina defeated England 2-1 in the World Cup semi-final at Mercedes-Benz Stadium in Atlanta, "
        "with Lautaro Martinez scoring the winner in the 92nd minute." in all_sents
    )
    assert "For England, the defeat represents a crushing missed opportunity." in all_sents
    # Real sentence starts that open with capitalised names are left whole.
    assert any(s.startswith("Then Lionel Messi, at 39 years old") for s in all_sents)
    assert any(s.startswith("Key players Jude Bellingham and Harry Kane") for s in all_sents)


def test_seed_headings_on_lines() -> None:
    assert [seed("001")[s:e] for s, e in heading_spans(seed("001"))][:2] == [
        "England's dream slips away",
        "Messi sparks comeback",
    ]
    heads = [seed("004")[s:e] for s, e in heading_spans(seed("004"))]
    assert "The Comeback" in heads and "England's Lead and Argentina's Response" in heads
    assert heading_spans(seed("000")) == [] and heading_spans(seed("003")) == []


def test_seed_sentences_are_not_split_inside_names_or_quotes() -> None:
    three = sents(seed("003"))
    assert three[0].startswith("ATLANTA (AFP) — Lionel Messi engineered")
    assert "“The other day I said this group never stops surprising me,” Scaloni said." in three
    assert any(s.startswith("Captain Harry Kane said") for s in three)


@pytest.mark.parametrize("prefix", ["000", "001", "002", "003", "004"])
@pytest.mark.parametrize(("target", "overlap"), [(700, 1), (300, 1), (1000, 0), (120, 2)])
def test_seed_passages_keep_the_invariants(prefix: str, target: int, overlap: int) -> None:
    assert_passages(seed(prefix), f"s{prefix}", target, overlap)


@pytest.mark.parametrize("prefix", ["001", "002", "004"])
def test_no_passage_starts_with_a_heading_that_heads_nothing(prefix: str) -> None:
    text = seed(prefix)
    heads = set(heading_spans(text))
    for p in chunk(prefix, text):
        units = [u for u in segment(text) if p.start <= u.start and u.end <= p.end]
        assert not all((u.start, u.end) in heads for u in units)
        assert not units[-1].heading


def test_default_passages_fit_the_model_window() -> None:
    # ~1,000 characters is the 256-word-piece limit of all-MiniLM-L6-v2.
    for prefix in ["000", "001", "002", "003", "004"]:
        assert all(len(p.text) <= 1000 for p in chunk(prefix, seed(prefix)))


def test_overlap_repeats_one_sentence_within_a_section() -> None:
    text = " ".join(f"Sentence number {i} is here and it is fairly long." for i in range(12))
    ps = chunk("d", text, target_chars=200, overlap=1)
    assert len(ps) > 2
    for a, b in zip(ps, ps[1:], strict=False):
        last = sents(a.text)[-1]
        assert b.text.startswith(last)


def test_section_heading_opens_a_new_passage_without_overlap() -> None:
    body = " ".join(f"Argentina pressed again in minute {i} of the half." for i in range(6))
    text = f"{body}\n\nThe Comeback\n\n{body}"
    ps = chunk("d", text, target_chars=400)
    opener = [p for p in ps if "The Comeback" in p.text]
    assert len(opener) == 1 and opener[0].text.startswith("The Comeback")


def test_overlong_sentence_is_its_own_passage_or_split_at_clauses() -> None:
    long_clause = ", ".join(f"clause {i} of a very long sentence" for i in range(40)) + "."
    text = f"Short one. {long_clause} Short two."
    ps = chunk("d", text, target_chars=200)
    assert all(len(p.text) <= 200 for p in ps)
    assert_passages(text, "d", 200, 1)
    medium = "A" + " medium" * 40 + "."  # between 1x and 2x the target: kept whole
    ps = chunk("d", f"First. {medium} Last.", target_chars=200)
    assert medium in [p.text for p in ps]


@pytest.mark.parametrize(("target", "overlap"), [(0, 1), (100, -1)])
def test_bad_arguments(target: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        chunk("d", "Text.", target_chars=target, overlap=overlap)


# --- properties ----------------------------------------------------------------------

WORDS = ["Messi", "scored", "the", "winner", "Mr.", "U.S.", "2-1", "2.5", "—", "“quote,”", "he", "said",
         "J.", "Smith", "Café", "naïve", "…", "Main", "Developments", "Argentina", "x", "Ünal", "の", "...",
         "(AFP)", "'", '"', "St.", "e.g.", "No.", "10"]  # fmt: skip
ENDS = [".", "!", "?", "...", ".”", '."', "…", "", ":"]
SEPS = [" ", "  ", "\n", "\n\n", "\r\n", "\t", " \n ", "\u00a0", "\u2028"]


@st.composite
def article_text(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 25))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30))
        if draw(st.booleans()):
            words[0] = words[0].capitalize()
        parts.append(" ".join(words) + draw(st.sampled_from(ENDS)))
        parts.append(draw(st.sampled_from(SEPS)))
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(st.one_of(article_text(), st.text(max_size=400)))
def test_property_sentence_spans_cover_text(text: str) -> None:
    spans = sentence_spans(text)
    assert_covers(text, spans)
    assert set(heading_spans(text)) <= set(spans)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(article_text(), st.text(max_size=400)),
    st.integers(min_value=1, max_value=900),
    st.integers(min_value=0, max_value=3),
)
def test_property_passages_keep_invariants(text: str, target: int, overlap: int) -> None:
    assert_passages(text, "doc/a.txt", target, overlap)


# --- the write path's one segmentation (#17) ----------------------------------------


def _ref_chunk_and_tag(
    articles: list[Article],
) -> tuple[list[list[Passage]], list[list[list[tuple[int, int]]]]]:
    """What ``indexing.chunk_and_tag`` gave when it segmented each article twice."""
    passages, sentences = [], []
    for a in articles:
        ps = chunk(a.id, a.text, target_chars=CHUNK_TARGET, overlap=CHUNK_OVERLAP)
        units = [(u.start, u.end) for u in segment(a.text) if not u.heading]
        passages.append(ps)
        sentences.append([[(s, e) for s, e in units if s >= p.start and e <= p.end] for p in ps])
    return passages, sentences


def _check_chunk_and_tag(texts: list[str]) -> None:
    arts = [Article(id=f"d{i}", title="t", text=t) for i, t in enumerate(texts)]
    prep = indexing.chunk_and_tag(arts, lambda ts: [[] for _ in ts], indexing.Clock())
    passages, sentences = _ref_chunk_and_tag(arts)
    assert prep.passages == passages
    assert prep.sentences == sentences
    for a in arts:
        assert a.sentences == [(u.start, u.end) for u in segment(a.text) if not u.heading]


def test_write_path_chunks_seeds_as_chunk_alone() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(SEEDS.glob("*.txt"))]
    assert texts
    _check_chunk_and_tag(texts + ["", "   ", "One.", "Heading\nBody sentence here. Another one."])


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(article_text(), st.text(max_size=400)),
    st.integers(min_value=1, max_value=900),
    st.integers(min_value=0, max_value=3),
)
def test_property_chunk_with_given_units_is_chunk_alone(text: str, target: int, overlap: int) -> None:
    assert chunk("d", text, target, overlap, units=segment(text)) == chunk("d", text, target, overlap)
    _check_chunk_and_tag([text])


def _ref_split_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The old sentence splitter: whitespace after a mark skipped one character at a time."""
    end_re = re.compile(r"(?:[.!?]+|…+)[\"'”’»)\]]*(?=\s+\S)")
    spans: list[tuple[int, int]] = []
    s = start
    for m in end_re.finditer(text, start, end):
        nxt = m.end()
        while nxt < end and text[nxt].isspace():
            nxt += 1
        if nxt >= end or not chunk_sentences._is_boundary(text, s, m.start(), m.group(0), nxt, end):
            continue
        spans.append((s, m.end()))
        s = nxt
    spans.append((s, end))
    return spans


_SPACES = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


def test_regex_whitespace_is_str_isspace() -> None:
    # _split_sentences finds where a sentence starts with \s; the old code used isspace().
    assert re.fullmatch(r"\s+", _SPACES)
    assert not any(re.match(r"\s", chr(c)) for c in range(0x110000) if not chr(c).isspace())


def test_split_sentences_from_inside_a_run_of_stops_equals_the_reference() -> None:
    """A span may start inside a run of stops ("ended.. Then"): the run's first stop is then
    the span's first character, and it may end a sentence as the reference says."""
    text = "It ended.. Then they left!? Fine. So... Go."
    for start in range(len(text)):
        for end in range(start, len(text) + 1):
            got = chunk_sentences._split_sentences(text, start, end)
            assert got == _ref_split_sentences(text, start, end), (start, end)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        article_text(),
        st.text(max_size=400),
        st.lists(st.sampled_from([*WORDS, *ENDS, *_SPACES, "U.S. The", "Dr. No"]), max_size=60).map("".join),
    ),
    st.data(),
)
def test_property_split_sentences_equals_the_reference(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert chunk_sentences._split_sentences(text, start, end) == _ref_split_sentences(text, start, end)
    assert chunk_sentences._split_sentences(text, 0, len(text)) == _ref_split_sentences(text, 0, len(text))
