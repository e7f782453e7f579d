"""scripts/questions_beir.py: question files over report folders become a BEIR folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from questions_beir import convert  # noqa: E402


def test_reports_and_answerable_questions_become_corpus_queries_and_qrels(tmp_path: Path) -> None:
    folder = tmp_path / "rugby"
    folder.mkdir()
    (folder / "001.txt").write_bytes(
        b"Hodgson shoulders blame\n\nEngland\x92s kicking cost \xa318m."
    )  # cp1252
    (folder / "002.txt").write_text("Wales win\n\nWales beat Italy.", encoding="utf-8")
    qs = tmp_path / "rugby.jsonl"
    qs.write_text(
        json.dumps({"id": "rg01", "question": "who beat Italy", "doc": ["002.txt"]})
        + "\n"
        + json.dumps({"id": "rg02", "question": "who won the Ashes", "doc": []})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "beir"
    assert convert([(folder, qs)], out) == (2, 1)
    corpus = [json.loads(x) for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert corpus[0] == {
        "_id": "rugby/001.txt",
        "title": "Hodgson shoulders blame",
        "text": "England\u2019s kicking cost \xa318m.",
    }
    assert [json.loads(x)["_id"] for x in (out / "queries.jsonl").read_text().splitlines()] == ["rg01"]
    assert (out / "qrels" / "test.tsv").read_text().splitlines() == [
        "query-id\tcorpus-id\tscore",
        "rg01\trugby/002.txt\t1",
    ]
