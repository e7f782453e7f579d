"""The search head's evidence of the asked kind (search/rerank_typed.py)."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from search import rerank_learned
from search.rerank_typed import TYPED, typed_features
from search.text import query_terms
from search.types import Article, Passage

TEXT = (
    "Gordon put England ahead in the 55th minute. "
    "He beat Emiliano Martinez at the back post. "
    "Scaloni said his side never stop. "
    "Anthony Gordon celebrated with the fans."
)


def _spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"[^.]+\.", text)]


def _ents(text: str) -> list[tuple[int, int, str]]:
    out = []
    for name in ("Gordon", "England", "the 55th minute", "Emiliano Martinez", "Scaloni", "Anthony Gordon"):
        for m in re.finditer(re.escape(name), text):
            if not any(s <= m.start() < e for s, e, _ in out):
                label = {"England": "GPE", "the 55th minute": "TIME"}.get(name, "PERSON")
                out.append((m.start(), m.end(), label))
    return sorted(out)


class _View:
    """A reader with one article of four sentences, one passage per sentence."""

    def __init__(self) -> None:
        self.art = Article(id="a", title="", text=TEXT, entities=_ents(TEXT), sentences=_spans(TEXT))
        self.reads = 0

    def passage(self, pid: str) -> Passage | None:
        doc, _, n = pid.partition("#")
        if doc != "a":
            return None
        s, e = self.art.sentences[int(n)]
        return Passage(pid, doc, s, e, TEXT[s:e])

    def article(self, doc_id: str) -> Article | None:
        self.reads += 1
        return self.art if doc_id == "a" else None


def _rows(question: str, pids: list[str], view: Any = None) -> list[dict[str, float]]:
    view = view or _View()
    return typed_features(question, query_terms(question), [(p, 1.0) for p in pids], lambda t: 2.0, view)


def test_a_passage_that_holds_an_unnamed_value_of_the_asked_kind_fits_and_the_subject_does_not() -> None:
    # "who did Gordon beat": the goalkeeper's sentence holds a person the question does not
    # name; the last one names only Gordon, the question's own subject.
    beat, scaloni, own, gone = _rows("Which goalkeeper did Gordon beat?", ["a#1", "a#2", "a#3", "b#0"])
    assert beat["afit"] == 1.0 and own["afit"] == 0.0 and gone["afit"] == 0.0
    # Scaloni is a person too, but his sentence states nothing of the question.
    assert scaloni["afit"] == 1.0 and beat["afit_rel"] > scaloni["afit_rel"] == 0.0
    assert beat["afit_rel_gap"] == 0.0 and scaloni["afit_rel_gap"] < 0 and own["afit_gap"] == -1.0
    assert all(r["asks_person"] == 1.0 and r["untyped"] == 0.0 for r in (beat, scaloni, own, gone))
    assert all(set(r) == set(TYPED) and all(math.isfinite(v) for v in r.values()) for r in (beat, gone))


def test_a_minute_question_fits_the_minute_not_the_person() -> None:
    first, beat = _rows("In what minute did Gordon score?", ["a#0", "a#1"])
    assert first["afit"] > 0 and beat["afit"] == 0.0 and first["asks_person"] == 0.0


@pytest.mark.parametrize("question", ["How did England lose the match?", "Why did England lose?"])
def test_a_question_no_label_answers_reads_no_article(question: str) -> None:
    view = _View()
    rows = _rows(question, ["a#0", "a#1"], view)
    assert view.reads == 0
    assert all(r["afit"] == r["afit_rel"] == r["afit_next"] == 0.0 for r in rows)
    assert rows[0]["untyped"] == float(question.startswith("How"))  # "why" asks for a reason


def test_the_next_sentence_lends_its_value_to_the_one_that_states_the_question() -> None:
    text = "England went ahead in the 55th minute. Anthony Gordon scored it."
    view = _View()
    view.art = Article(id="a", title="", text=text, entities=_ents(text), sentences=_spans(text))
    whole = Passage("a#0", "a", 0, len(text), text)
    view.passage = lambda pid: whole  # type: ignore[method-assign]
    # "went ahead" states the question; its sentence holds no person, the next one does.
    (row,) = _rows("Who put England ahead?", ["a#0"], view)
    assert row["afit_best"] == 0.0 and row["afit_next"] == 1.0


@pytest.mark.parametrize("listed", [True, False])
def test_the_head_computes_them_only_for_trees_that_read_them(
    monkeypatch: pytest.MonkeyPatch, listed: bool
) -> None:
    calls: list[str] = []

    class _Trees:
        features = rerank_learned.FEATURES + (TYPED if listed else ())

        def proba(self, rows: list[dict[str, float]]) -> list[float]:
            calls.append("typed" if "afit" in rows[0] else "plain")
            return [0.5 for _ in rows]

    monkeypatch.setattr(rerank_learned, "load", lambda package, name: _Trees())
    monkeypatch.setattr(rerank_learned, "features", lambda *a: [{"afit": 1.0} if a[-1] else {}])
    run = rerank_learned.head_order("Who beat Martinez?", ["beat", "martinez"], [], [], _View(), True)
    assert run is not None
    run([("a#1", 1.0)], None, [1.0])  # type: ignore[arg-type]
    assert calls == ["typed" if listed else "plain"]


class _ArticlesOnly:
    """The local reader without its shortcut: the passage and the whole article, as Milvus."""

    def __init__(self, view: Any) -> None:
        self.view = view

    def passage(self, pid: str) -> Any:
        return self.view.passage(pid)

    def article(self, doc_id: str) -> Any:
        return self.view.article(doc_id)


@pytest.mark.parametrize(
    "question",
    ["Which goalkeeper did Gordon beat?", "In what minute did Argentina equalise?", "who scored the winner"],
)
def test_the_local_store_s_shortcut_gives_what_the_whole_article_gives(
    seed_engine: Any, question: str
) -> None:
    view = seed_engine._backend.reader()
    pids = [p.id for d in view.doc_ids() for p in view.passages_of(d)]
    terms = query_terms(question)
    short = typed_features(question, terms, [(p, 1.0) for p in pids], view.idf, view)
    whole = typed_features(question, terms, [(p, 1.0) for p in pids], view.idf, _ArticlesOnly(view))
    assert short == whole and any(r["afit"] > 0 for r in short)
