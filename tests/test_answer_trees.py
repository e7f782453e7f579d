"""The answer's boosted trees (search/trees.py): the quote's and the values' LambdaRank trees
and the confidence's, stored as data and run with numpy."""

from __future__ import annotations

import importlib
import json
from importlib import resources
from typing import Any

import numpy as np
import pytest

from search.answer import evidence, ranker
from search.answer.confidence import FEATURES as CONFIDENCE_FEATURES
from search.answer.confidence import TREES as CONFIDENCE_TREES
from search.answer.confidence import confidence, features, threshold
from search.trees import Trees, export, export_lightgbm, load


def test_exported_trees_give_what_scikit_learn_gives() -> None:
    ensemble = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 4))
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(float)
    model = ensemble.HistGradientBoostingClassifier(max_iter=40, max_leaf_nodes=15, random_state=0).fit(x, y)
    names = ("a", "b", "c", "d")
    trees = Trees(json.loads(json.dumps(export(model, names, "test"))))
    rows = [dict(zip(names, r)) for r in x[:400]]
    assert np.allclose(trees.raw(rows), model.decision_function(x[:400]), atol=1e-4)
    assert np.allclose(trees.proba(rows), model.predict_proba(x[:400])[:, 1], atol=1e-4)
    assert trees.raw([]).shape == (0,)


def test_exported_lambdarank_trees_give_what_lightgbm_gives() -> None:
    lightgbm = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 4))
    x[:, 2] = np.round(x[:, 2])  # ties at a threshold go left, as LightGBM sends them
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0.5).astype(int) + (x[:, 3] > 1)
    model = lightgbm.LGBMRanker(objective="lambdarank", n_estimators=40, num_leaves=7, verbose=-1)
    model.fit(x, y, group=[20] * 100)
    names = ("a", "b", "c", "d")
    trees = Trees(json.loads(json.dumps(export_lightgbm(model, names, "test"))))
    rows = [dict(zip(names, r)) for r in x[:400]]
    assert np.allclose(trees.raw(rows), model.predict(x[:400]), atol=1e-4)


@pytest.mark.parametrize(
    ("name", "names"), [(evidence.PICK_RANK, evidence.FEATURES), (ranker.RANK, ranker.FEATURES)]
)
def test_the_shipped_rank_trees_read_their_stage_s_features(name: str, names: tuple[str, ...]) -> None:
    """The quote's and the values' LambdaRank trees read every feature of their stage and
    were fitted on training sets only."""
    trees = load("search.answer", name)
    assert trees is not None and trees.features == names
    data = json.loads(resources.files("search.answer").joinpath(name).read_text(encoding="utf-8"))
    assert data["fitted_on"] and not any("fresh" in n for n in data["fitted_on"])
    raw = trees.raw([{k: 0.5 for k in names}, {}])
    assert raw.shape == (2,) and np.isfinite(raw).all()


def test_the_values_probabilities_are_a_distribution() -> None:
    rows = [{k: v for k in ranker.FEATURES} for v in (0.1, 0.5, 0.9)]
    p = ranker.probabilities(rows)
    assert len(p) == 3 and sum(p) == pytest.approx(1.0) and all(0 < v < 1 for v in p)


def test_the_confidence_trees_read_the_winner_s_features_and_trust_a_clear_winner_more() -> None:
    """The shipped confidence trees read every feature :func:`features` gives, were fitted on
    training sets only, and rate a value that wins clearly, with its sentence stating the
    question, above one that barely wins with a sentence stating little of it."""
    trees = load("search.answer", CONFIDENCE_TREES)
    assert trees is not None and trees.features == CONFIDENCE_FEATURES
    data = json.loads(resources.files("search.answer").joinpath(CONFIDENCE_TREES).read_text(encoding="utf-8"))
    assert data["fitted_on"] and not any("fresh" in name for name in data["fitted_on"])
    strong = {"score": 1.0, "agree": 1.0, "lex": 1.0, "lex_max": 1.0, "dense": 0.8, "fit": 1.0, "near": 1.0}
    weak = {"score": 0.3, "agree": 0.3, "lex": 0.1, "lex_max": 0.1, "dense": 0.1, "fit": 0.0, "near": 0.0}
    sure = features([0.95, 0.03, 0.02], strong, 0.9)
    unsure = features([0.36, 0.34, 0.30], weak, 0.2)
    assert set(sure) == set(CONFIDENCE_FEATURES)
    assert 0.0 < confidence(unsure) < confidence(sure) < 1.0
    assert confidence(unsure) < threshold()


def test_the_rank_trees_replace_the_pick_the_choice_model_would_make(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sentences the choice model (no trees shipped) ranks one way; LambdaRank trees that
    favour the other's features turn the pick, and the picks stay a distribution over the
    usable sentences."""
    from search.answer.candidates import Sent
    from search.answer.question import analyse
    from search.types import Article

    one, two = "Chelsea beat Arsenal at the Bridge.", "Drogba scored twice for Chelsea."
    text = f"{one} {two}"
    art = Article(id="a", title="T", text=text, sentences=[(0, len(one)), (len(one) + 1, len(text))])
    q = analyse("Who scored for Chelsea against Arsenal?")

    def sents() -> list[Sent]:
        return [
            Sent("a", 0, len(one), one, 1, art, rel=0.9, lex=0.9, dense=0.9),
            Sent("a", len(one) + 1, len(text), two, 1, art, rel=0.3, lex=0.3, dense=0.3),
        ]

    monkeypatch.setattr(evidence, "load", lambda package, name: None)
    alone = sents()
    evidence.weigh(q, alone)
    assert alone[0].pick > alone[1].pick

    # One tree: a low "lex" is worth +12 in log-odds, a high one -12.
    stub = Trees(
        {
            "features": list(evidence.FEATURES),
            "baseline": 0.0,
            "depth": 1,
            "roots": [0],
            "feature": [evidence.FEATURES.index("lex"), 0, 0],
            "threshold": [0.5, 0.0, 0.0],
            "left": [1, 0, 0],
            "right": [2, 0, 0],
            "leaf": [0, 1, 1],
            "value": [0.0, 12.0, -12.0],
        }
    )
    monkeypatch.setattr(evidence, "load", lambda package, name: stub)
    both = sents()
    evidence.weigh(q, both)
    assert both[1].pick > both[0].pick
    assert sum(s.pick for s in both) == pytest.approx(1.0)


@pytest.mark.parametrize("football", [True, False])
def test_a_corpus_that_is_not_football_needs_its_own_fitted_confidence(
    seed_engine: Any, monkeypatch: pytest.MonkeyPatch, football: bool
) -> None:
    """The answer models learned football's reports; on other sports the same confidence is
    right less often, so there a short answer needs ``threshold_other`` (fitted on other
    sports' questions by scripts/fit_threshold.py), and on football the football one."""
    conf_mod = importlib.import_module(
        "search.answer.confidence"
    )  # the package exports a function of that name
    p = conf_mod.params()
    assert p["threshold_other"] > p["threshold"] and p["other_fitted_on"]
    assert not any("fresh" in n for n in p["other_fitted_on"])  # the blind other sports measure
    monkeypatch.setattr(seed_engine, "football", football)
    a = seed_engine.ask("who scored the winner").answer
    assert a is not None and a.needed == round(conf_mod.threshold(football), 4)
    assert a.needed == round(p["threshold"] if football else p["threshold_other"], 4)
