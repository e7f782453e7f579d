"""Hardening: what a custom ``tagger=`` gives the write path (search.enrich.check_spans).

Spans are ``(start, end, label)`` or ``(start, end, label, role)`` in the text's own
offsets, one list per text. Anything else failed deep in the write (IndexError, TypeError
at the segment writer) or, on Milvus, was stored and then broke every read of the
article; now the add stops at once with one line saying what the tagger gave.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from search.embed import HashEmbedder
from search.engine import Engine
from search.types import Article

TEXT = "Gordon scored the winner in the 85th minute. Chelsea won 2-1."
OLD = Article(id="old.txt", title="Old", text="Kane missed a penalty for Spurs.")

Tagger = Callable[[Sequence[str]], Any]


def _engine(tmp_path: Path, tagger: Tagger) -> Engine:
    e = Engine.open(
        tmp_path / "idx", create=True, embedder=HashEmbedder(), tagger=lambda ts: [[] for _ in ts]
    )
    e.add([OLD])
    e._tagger = tagger
    return e


def _each(span: Any) -> Tagger:
    return lambda texts: [[span] for _ in texts]


BAD: dict[str, tuple[Tagger, str]] = {
    "two-tuple": (_each((0, 6)), "(start, end, label[, role])"),
    "a string": (_each("PERSON"), "(start, end, label[, role])"),
    "a dict": (_each({"start": 0, "end": 6, "label": "PERSON"}), "(start, end, label[, role])"),
    "text offsets": (_each(("0", "6", "PERSON")), "whole numbers"),
    "float offsets": (_each((0.0, 6.5, "PERSON")), "whole numbers"),
    "None offset": (_each((None, 6, "PERSON")), "whole numbers"),
    "bool offsets": (_each((True, False, "PERSON")), "whole numbers"),
    "negative": (_each((-5, 3, "PERSON")), "0 <= start <= end <="),
    "past the end": (_each((50, 5000, "PERSON")), "0 <= start <= end <="),
    "start after end": (_each((20, 3, "PERSON")), "0 <= start <= end <="),
    "label None": (_each((0, 6, None)), "label must be a string"),
    "role a number": (_each((0, 6, "PERSON", 5)), "role must be a string"),
    "surrogate label": (_each((0, 6, "\ud800")), "lone surrogate"),
    "None for a text": (lambda texts: [None for _ in texts], "a list of spans"),
    "None": (lambda texts: None, "one list of spans per text"),
    "fewer lists": (lambda texts: [[] for _ in texts][1:], "one list of spans per text"),
    "more lists": (lambda texts: [[] for _ in texts] + [[]], "one list of spans per text"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_tagger_stops_the_add_with_one_line(tmp_path: Path, name: str) -> None:
    tagger, said = BAD[name]
    e = _engine(tmp_path, tagger)
    with pytest.raises(ValueError) as err:
        e.add([Article(id="a.txt", title="A", text=TEXT), Article(id="b.txt", title="B", text=TEXT)])
    msg = str(err.value)
    assert "tagger" in msg and said in msg and "\n" not in msg, msg
    assert [d.id for d in e.documents()] == ["old.txt"]  # the index as it was
    e.close()


def test_good_spans_of_any_shape_are_kept(tmp_path: Path) -> None:
    spans = [(0, 6, "PERSON", "nsubj score"), [33, 43, "TIME"], (45, 52, "ORG", None, 0.9)]
    e = _engine(tmp_path, lambda texts: (list(spans) for _ in texts))  # a generator, lists, 5-tuples
    e.add([Article(id="a.txt", title="A", text=TEXT)])
    a = e.get_document("a.txt")
    assert a.entities == [(0, 6, "PERSON"), (33, 43, "TIME"), (45, 52, "ORG")]
    assert a.roles == ["nsubj score", "", ""]  # a role of None is no role, not "None"
    e.close()
