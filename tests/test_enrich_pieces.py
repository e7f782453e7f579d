"""A text with a very long run and no sentence end is tagged in pieces (hardening): the
parser's time grows with the square of a sentence's length, so 60,000 "(" took minutes."""

from __future__ import annotations

import pytest

from search import enrich


def test_prose_is_tagged_whole() -> None:
    text = "Lionel Messi scored. " * 500 + "\n" + "Kahn, Sagnol, Kovac, Lucio. " * 40
    assert enrich.pieces(text) == [(0, len(text))]


def test_a_long_run_is_cut_into_bounded_contiguous_pieces() -> None:
    text = "a" * 600 + ". " + "b " * 150 + "(" * 5000 + " tail words. " + "x " * 3000
    got = enrich.pieces(text)
    assert got[0][0] == 0 and got[-1][1] == len(text)
    assert all(b == c for (_, b), (c, _) in zip(got, got[1:]))  # contiguous, nothing lost
    assert all(b - a <= enrich.PIECE_CHARS for a, b in got)
    assert got[0] == (0, 602)  # after the sentence end, not at a later space


@pytest.mark.slow
def test_entities_of_a_text_tagged_in_pieces_keep_their_offsets() -> None:
    text = "(" * 2500 + " Lionel Messi scored for Argentina in Atlanta."
    got = {text[a:b]: label for a, b, label, _ in enrich.tag([text])[0]}
    assert any("Messi" in t and lb == "PERSON" for t, lb in got.items()) and got.get("Atlanta") == "GPE"
