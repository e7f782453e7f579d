"""The search head's trees (search/rerank_learned.py): what they read and where they run."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search import rerank_learned
from search.rerank import evidence
from search.rerank_typed import TYPED
from search.text import query_terms
from search.trees import load


@dataclass
class _Doc:
    title: str


class _View:
    """A reader with headlines only: the features take a passage's words from its sentences."""

    def __init__(self, titles: dict[str, str]) -> None:
        self.titles = titles

    def doc(self, doc_id: str) -> _Doc | None:
        return _Doc(self.titles[doc_id]) if doc_id in self.titles else None


@pytest.mark.parametrize(
    "name", [rerank_learned.TREES, rerank_learned.FOOTBALL_TREES, rerank_learned.STATEMENT_TREES]
)
def test_the_shipped_trees_read_the_head_features_and_were_fitted_on_training_sets_only(name: str) -> None:
    trees = load("search.data", name)
    # The football questions' trees also read the answer type's evidence (search.rerank_typed).
    extra = TYPED if name == rerank_learned.FOOTBALL_TREES else ()
    assert trees is not None and trees.features == rerank_learned.FEATURES + extra
    p = trees.proba([{k: 0.5 for k in trees.features}, {}])
    assert p.shape == (2,) and ((p > 0) & (p < 1)).all()
    data = json.loads(resources.files("search.data").joinpath(name).read_text(encoding="utf-8"))
    assert data["fitted_on"] and not any("fresh" in n or "test" in n for n in data["fitted_on"])


def test_features_give_one_finite_row_per_candidate_from_passage_headline_and_lists() -> None:
    question = "Who scored for Chelsea against Portsmouth?"
    passages = {
        "a#0": "Chelsea beat Portsmouth 3-0. Drogba scored twice.",
        "a#1": "Mourinho praised his side.",
        "b#2": "Arsenal won at Fratton Park. Campbell scored.",
    }
    view = _View({"a": "Chelsea 3-0 Portsmouth", "b": "Arsenal win"})
    candidates = [("b#2", 0.9), ("a#0", 0.8), ("a#1", 0.5), ("gone#3", 0.1)]
    terms = query_terms(question)
    ev = evidence(
        question,
        terms,
        [],
        candidates,
        lambda pid: passages[pid].split(". ") if pid in passages else [],
        lambda t: 2.0,
    )
    lex = [("a#0", 12.0), ("b#2", 6.0)]
    den = [("b#2", 0.61), ("a#1", 0.40)]
    rows = rerank_learned.features(question, terms, candidates, ev, [1.0, 0.8, 0.2, 0.0], lex, den, view)
    assert len(rows) == 4 and all(set(r) == set(rerank_learned.FEATURES) for r in rows)
    assert all(math.isfinite(v) for r in rows for v in r.values())
    b, a0, a1, gone = rows
    assert (a0["lex_rank"], a0["dense_rank"], a1["lex_rank"]) == (
        0,
        rerank_learned.MISSING_RANK,
        rerank_learned.MISSING_RANK,
    )
    assert a0["lead"] == 1.0 and a1["lead"] == 0.0 and b["lead"] == 0.0
    assert a0["doc_count"] == a1["doc_count"] == 2 and a1["doc_first"] == 1 and a1["doc_first_here"] == 0.0
    # Both names of the question are in article a's headline; b's holds neither.
    assert (
        a1["names_doc"] == 1.0
        and a1["cov_title"] > 0
        and b["names_doc"] == 0.0
        and b["names_doc_gap"] == -1.0
    )
    assert a0["cov_passage"] > b["cov_passage"] and gone["cov_passage"] == 0.0


class _Reverse:
    """Trees that put the hand-set order upside down."""

    def proba(self, rows: list[dict[str, float]]) -> np.ndarray:
        return np.array([-r["hand"] for r in rows])


@pytest.mark.parametrize("football", [True, False])
def test_the_query_s_form_and_the_corpus_pick_the_trees(
    seed_engine: Any, monkeypatch: pytest.MonkeyPatch, football: bool
) -> None:
    """A question reads the football trees on a football corpus and the general question
    trees elsewhere; a query typed into a search box ("england goal scorer") reads the
    football trees on a football corpus; anything else (a claim, a headline) reads the
    statements' trees on any corpus."""
    monkeypatch.setattr(seed_engine, "football", football)
    asked: list[str] = []

    def top(q: str, only: str | None) -> list[str]:
        """The head when only the file ``only`` ships (None: no trees, the hand-set sum)."""

        def load(package: str, name: str) -> Any:
            asked.append(name)
            return _Reverse() if name == only else None

        monkeypatch.setattr(rerank_learned, "load", load)
        return [h.passage.id for h in seed_engine.search(q, k=5, collapse=False)]

    question = rerank_learned.FOOTBALL_TREES if football else rerank_learned.TREES
    files = {rerank_learned.TREES, rerank_learned.FOOTBALL_TREES, rerank_learned.STATEMENT_TREES}
    for q, mine in [
        ("who scored England's goal", question),
        ("England's goal scorer", rerank_learned.STATEMENT_TREES),
        ("england goal scorer", question if football else rerank_learned.STATEMENT_TREES),
    ]:
        hand = top(q, None)
        assert top(q, mine) != hand  # its own trees order the head
        for other in files - {mine}:
            assert top(q, other) == hand  # the others are never read for it
        assert asked[-1] == mine


def test_fit_rerank_learns_an_order_the_hand_set_sum_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/fit_rerank.py on made-up rows: the relevant passage is the one whose article
    holds the question's names, which the hand-set score ignores."""
    pytest.importorskip("lightgbm")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "scripts"))
    import fit_rerank

    rng = np.random.default_rng(0)
    names = rerank_learned.FEATURES.index("names_doc")
    qs = []
    for i in range(200):
        x = rng.random((rerank_learned.DEPTH, len(rerank_learned.FEATURES)))
        x[:, names] = 0.0
        right = int(rng.integers(rerank_learned.DEPTH))
        x[right, names] = 1.0
        y = np.zeros(rerank_learned.DEPTH)
        y[right] = 1.0
        qs.append((f"q{i}", x, y))
    assert fit_rerank.first_right(qs) < 40  # the hand-set column is noise here
    assert fit_rerank.first_right(qs, fit_rerank.fit(qs)) > 190
