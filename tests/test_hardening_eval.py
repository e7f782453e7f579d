"""`search eval`'s question file (hardening): a line that is no question record, or a path
that is no file, is one error line saying what is wrong in the file's terms, not Python's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from search.errors import IngestError
from search.evaluate import read_questions


@pytest.mark.parametrize(
    ("line", "says"),
    [
        # was "(list indices must be integers or slices, not str)"
        (
            b"[1, 2]",
            ":1: not a question record: expected a JSON object, got a list; each line needs id, question",
        ),
        (b'"who scored"', ":1: not a question record: expected a JSON object, got a string"),
        # was "('id')", a KeyError's repr
        (
            b'{"question": "who scored", "answers": []}',
            ':1: not a question record: no "id"; each line needs id, question',
        ),
        (
            b'{"id": "a", "answers": []}',
            ':1: not a question record: no "question"; each line needs id, question',
        ),
        # was "(Exceeds the limit (4300 digits) ...; use sys.set_int_max_str_digits() ...)"
        (b'{"id": ' + b"9" * 5_000 + b"}", ":1: not a question record: a number of over 4,300 digits"),
        # was "(Expecting value: line 1 column 7 (char 6))"
        (b'{"id": }', ":1: not a question record: malformed JSON (Expecting value at column 8)"),
    ],
)
def test_a_line_that_is_no_question_record_says_what_it_is(tmp_path: Path, line: bytes, says: str) -> None:
    f = tmp_path / "q.jsonl"
    f.write_bytes(line + b"\n")
    with pytest.raises(IngestError) as got:
        read_questions(f)
    assert str(got.value) == f"{f}{says}" or str(got.value).startswith(f"{f}{says}"), str(got.value)
    assert "indices" not in str(got.value) and "char " not in str(got.value)


def test_a_folder_or_a_device_is_not_said_to_be_missing(tmp_path: Path) -> None:
    """Was "no such file" for a folder or /dev/null, which both exist."""
    with pytest.raises(IngestError, match="is a folder, not a question file"):
        read_questions(tmp_path)
    with pytest.raises(IngestError, match="not a regular file"):
        read_questions(os.devnull)
    with pytest.raises(IngestError, match="no such file"):
        read_questions(tmp_path / "missing.jsonl")
