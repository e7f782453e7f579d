"""Files in the encodings editors and shells write (hardening): a JSONL file in UTF-16 (what
Windows PowerShell's ``>`` writes) is read as the text file it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from search import ingest

GOOD = "Chelsea beat Portsmouth 3-0 at Stamford Bridge. Frank Lampard scored twice."


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_jsonl_file_with_a_utf16_or_utf32_bom_is_read(tmp_path: Path, encoding: str) -> None:
    """Hardening: a UTF-16 JSONL file gave its first record, then "binary file (NUL bytes)"
    for every other line (each record lost, and the file is not binary); big-endian or
    UTF-32, nothing at all."""
    lines = "".join(
        json.dumps({"id": f"r{i}", "title": "Tïtle", "text": f"{GOOD} Match {i}."}, ensure_ascii=False)
        + "\r\n"
        for i in range(3)
    )
    bom = {"utf-16-le": "\ufeff", "utf-16-be": "\ufeff"}.get(encoding, "")
    f = tmp_path / "feed.jsonl"
    f.write_bytes((bom + lines).encode(encoding))
    arts, problems = ingest.load(f)
    assert [(a.id, a.title) for a in arts] == [("r0", "Tïtle"), ("r1", "Tïtle"), ("r2", "Tïtle")]
    assert arts[2].text == f"{GOOD} Match 2."
    assert problems == []


def test_a_utf16_jsonl_file_cut_short_keeps_its_whole_lines(tmp_path: Path) -> None:
    """An odd last byte (a copy cut short) costs only the line it is in."""
    lines = "".join(json.dumps({"id": f"r{i}", "text": GOOD}) + "\n" for i in range(2))
    f = tmp_path / "feed.jsonl"
    f.write_bytes(lines.encode("utf-16") + b"{")
    arts, problems = ingest.load(f)
    assert [a.id for a in arts] == ["r0", "r1"]
    assert len(problems) == 1 and problems[0].line == 3, problems
