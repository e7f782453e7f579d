"""Pseudo-relevance feedback (search.feedback): the moved question, the expansion terms,
the weighted BM25 terms they go in as, and when the engine runs the second round."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_lexical import build

from search import lexical as lx
from search.backends.local_snapshot import Snapshot
from search.feedback import TERM_WEIGHT, feedback_terms, feedback_vector
from search.text import analyze
from search.types import Article


def test_the_vector_moves_toward_the_head_and_stays_unit() -> None:
    vec = np.array([1.0, 0.0, 0.0], np.float32)
    head = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    got = feedback_vector(vec, head, weight=0.5)
    want = np.array([1.0, 0.25, 0.25])
    assert got is not None
    np.testing.assert_allclose(got, want / np.linalg.norm(want), rtol=1e-6)
    assert got.dtype == np.float32
    assert feedback_vector(vec, np.zeros((0, 3), np.float32)) is None  # nothing to move toward
    assert feedback_vector(vec, np.ones((2, 4), np.float32)) is None  # another model's rows


def test_terms_come_from_the_scored_head_without_the_question() -> None:
    head = [
        ("Aspirin lowers the risk of stroke; aspirin thins the blood.", 2.0),
        ("Statins lower cholesterol after a stroke.", 1.0),
        ("Football scores nothing here.", 0.0),  # no share of the fused score: no terms
    ]
    got = feedback_terms(["stroke"], head, n=3)
    aspirin = analyze("aspirin")[0]
    assert analyze("stroke")[0] not in got
    assert next(iter(got)) == aspirin  # twice in the better passage: the likeliest
    assert got[aspirin] == pytest.approx(TERM_WEIGHT)
    assert all(0 < w <= TERM_WEIGHT for w in got.values())
    assert len(got) == 3
    assert not set(got) & set(analyze("Football scores nothing here."))
    assert feedback_terms(["stroke"], [("Aspirin", 0.0)]) == {}


def _lexical(path: Path) -> lx.LexicalIndex:
    return build(
        path,
        {
            "a#0": "Lautaro Martinez headed home the winner in stoppage time.",
            "b#0": "Enzo Fernandez equalised in the 85th minute.",
            "c#0": "The winner came in the 90th minute from Martinez.",
        },
    )


def test_extra_terms_weigh_as_typed_terms_scaled(tmp_path: Path) -> None:
    ix = _lexical(tmp_path / "lex")
    winner, minute = analyze("winner minute")
    assert ix.search([winner], 10, extra={minute: 1.0}) == ix.search([winner, minute], 10)
    assert ix.search([winner], 10, extra={winner: 1.0}) == ix.search([winner, winner], 10)
    half = dict(ix.search([winner], 10, extra={minute: 0.5}))
    full = dict(ix.search([winner], 10, extra={minute: 1.0}))
    only = dict(ix.search([minute], 10))
    assert half["b#0"] == pytest.approx(0.5 * only["b#0"])
    assert full["b#0"] == pytest.approx(only["b#0"])


SCIENCE = [
    Article(id=f"s{i}.txt", title=t, text=x)
    for i, (t, x) in enumerate(
        [
            (
                "Aspirin and stroke",
                "Low-dose aspirin lowers the risk of a second ischaemic stroke in adults.",
            ),
            ("Statins", "Statins lower LDL cholesterol and the rate of cardiovascular events."),
            ("Sleep", "Short sleep is associated with insulin resistance in healthy volunteers."),
            ("Vitamin D", "Vitamin D supplements did not prevent fractures in older women."),
        ]
    )
]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The ``extra`` terms of every lexical search the engine makes."""
    seen: list[dict[str, Any]] = []
    real = Snapshot.lexical_search

    def spy(self: Snapshot, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("extra") or {})
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Snapshot, "lexical_search", spy)
    return seen


def test_a_hybrid_query_runs_feedback_off_football(hash_engine: Any, calls: list[dict[str, Any]]) -> None:
    hash_engine.add(SCIENCE)
    # Four passages are too few for vocab.is_football's statistic (a marker word no
    # passage holds still counts 0.5 / 5): say what it says of SciFact.
    hash_engine.football = False
    hits = hash_engine.search("does aspirin prevent stroke", k=4, mode="hybrid")
    assert hits and "aspirin" in hits[0].passage.text.lower()
    assert len(calls) == 2 and not calls[0] and calls[1]  # the second round, with its terms
    calls.clear()
    hash_engine.search("does aspirin prevent stroke", k=4, mode="bm25")
    assert calls == [{}]  # one retriever alone: no feedback round


def test_football_corpora_and_the_switch_keep_one_round(
    hash_engine: Any, calls: list[dict[str, Any]]
) -> None:
    hash_engine.add(SCIENCE)
    hash_engine.football = True  # as vocab.is_football says of the match reports
    hash_engine.search("does aspirin prevent stroke", k=4, mode="hybrid")
    assert calls == [{}]
    calls.clear()
    hash_engine.football = False
    hash_engine.feedback = False
    hash_engine.search("does aspirin prevent stroke", k=4, mode="hybrid")
    assert calls == [{}]
    calls.clear()
    hash_engine.football = True
    hash_engine.feedback = True  # forced on, even there
    hash_engine.search("does aspirin prevent stroke", k=4, mode="hybrid")
    assert len(calls) == 2


def test_passage_vectors_are_the_rows_dense_search_scores(hash_engine: Any) -> None:
    hash_engine.add(SCIENCE)
    view = hash_engine._backend.reader()
    vec = hash_engine.embedder.encode_query("aspirin stroke")
    hits = view.dense(vec, 3)
    rows = view.passage_vectors([pid for pid, _ in hits] + ["missing.txt#0"])
    assert rows.shape[0] == len(hits)  # an unknown passage is left out
    np.testing.assert_allclose(rows @ vec, [s for _, s in hits], rtol=1e-5, atol=1e-6)


def test_weighted_text_sends_weights_as_repeats() -> None:
    from search.backends.milvus_base import EXTRA_SCALE, lexical_text, weighted_text

    assert weighted_text("Who scored?", [], None) == (lexical_text("Who scored?", []), 1.0)
    assert weighted_text(None, ["goal"], {}) == ("goal", 1.0)
    text, scale = weighted_text(None, ["goal", "net", "goal"], {"net": 0.25, "post": 0.1234, "bar": 1e-5})
    assert scale == EXTRA_SCALE
    counts = Counter(text.split())
    # typed terms count their repeats, extras add their weight (as LexicalIndex._query)
    assert counts == {
        "goal": 2 * EXTRA_SCALE,
        "net": round(1.25 * EXTRA_SCALE),
        "post": round(0.1234 * EXTRA_SCALE),
    }
    # from the question when no terms are given; a weight that cuts a term to nothing drops it
    text, _ = weighted_text("Goals", [], {analyze("goals")[0]: -1.0, "net": 0.5})
    assert Counter(text.split()) == {"net": EXTRA_SCALE // 2}


def test_a_reader_without_the_feedback_reads_keeps_one_round(
    hash_engine: Any, calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from search import retrieve

    class Old:
        def lexical_search(self, terms: list[str], k: int) -> list[tuple[str, float]]:
            return []

        def passage_vectors(self, pids: list[str]) -> np.ndarray:
            return np.zeros((0, 0), np.float32)

    class New(Old):
        def lexical_search(  # type: ignore[override]
            self, terms: list[str], k: int, extra: dict[str, float] | None = None
        ) -> list[tuple[str, float]]:
            return []

    class NoVectors:
        def lexical_search(self, terms: list[str], k: int, **kw: Any) -> list[tuple[str, float]]:
            return []

    assert not retrieve.feedback_ready(Old()) and retrieve.feedback_ready(New())
    assert not retrieve.feedback_ready(NoVectors())
    hash_engine.add(SCIENCE)
    hash_engine.football = False
    hash_engine.feedback = True
    monkeypatch.setattr(retrieve, "_READY", {})
    monkeypatch.delattr(Snapshot, "passage_vectors")
    assert hash_engine.search("does aspirin prevent stroke", k=4, mode="hybrid")
    assert calls == [{}]  # no stored vectors to read: the first round stands
