"""The measuring scripts run from a fresh work folder and at their smallest sizes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))


def test_ann_choice_makes_a_work_folder_that_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ann_choice

    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[:8] + 0.1 * rng.standard_normal((8, 16)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    # The real vectors (~102k MiniLM encodes) are not what this checks.
    monkeypatch.setattr(ann_choice, "real_set", lambda data, cache: (x, np.arange(200) // 4, q))
    work = tmp_path / "fresh" / "work"
    monkeypatch.setattr(sys, "argv", ["ann_choice.py", "--work", str(work), "--only", "flat"])
    ann_choice.main()
    assert "exact (numpy over the stored rows)" in capsys.readouterr().out
    assert work.is_dir() and not any(work.iterdir())  # its temp dir is gone again


def test_scale_store_measures_a_store_of_fewer_than_2000_articles(tmp_path: Path) -> None:
    """--what store on a small corpus: the open step looked up a sample of 2,000 ids."""
    import json
    import os
    import subprocess

    data = tmp_path / "shared" / "data" / "bbcsport"
    data.mkdir(parents=True)
    recs = [
        {
            "id": f"football/{i:03d}",
            "category": "football",
            "title": f"Headline number {i}",
            "text": f"The striker scored in minute {i}. The keeper saved twice.\n\nThe crowd sang {i} songs.",
        }
        for i in range(10)
    ]
    (data / "bbcsport.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    work = tmp_path / "work"
    r = subprocess.run(
        [sys.executable, str(SCRIPTS / "scale_store.py"), "--articles", "20", "--work", str(work)]
        + ["--data", str(tmp_path / "shared"), "--what", "corpus,store-no-ann"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SCRIPTS.parent)},
    )
    assert r.returncode == 0, r.stderr
    opened = json.loads(r.stdout.strip().splitlines()[-1])["store"]["open"]
    assert opened["docs"] == 20


@pytest.mark.integration
def test_hostile_kills_expect_reindex_to_keep_the_articles_the_index_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reindex rebuilds the stored articles, not the sources: a killed reindex followed by
    another must leave the articles the index held (the campaign counted that a failure)."""
    import hostile
    import killing

    real = killing.campaign

    def only_reindex(**kw: Any) -> killing.Outcome:
        return real(**kw) if kw["name"] == "reindex" else killing.Outcome()

    monkeypatch.setattr(killing, "campaign", only_reindex)
    stats: dict[str, Any] = dict.fromkeys(["kills", "kills_old_state", "kills_new_state", "kill_failures"], 0)
    hostile.kills_part(tmp_path, 1, stats)
    assert stats["kills"] == 1
    assert stats["kill_failures"] == 0, stats["kill_failure_examples"]


def test_fit_answer_folds_follow_the_questions_not_their_order(capsys: pytest.CaptureFixture[str]) -> None:
    """Folds came from positions, so the order the sets were given in moved the out-of-fold
    figures (top-1 by about 5 of 1,402); they now follow the question ids, and --fold-seeds
    reports the spread over several assignments."""
    import argparse

    import fit_answer

    ids = [f"set/q{i}" for i in range(200)]
    f = fit_answer.folds(ids, 5)
    assert dict(zip(ids, f)) == dict(zip(ids[::-1], fit_answer.folds(ids[::-1], 5)))
    assert set(f) == set(range(5)) and not (f == fit_answer.folds(ids, 5, seed=1)).all()

    rng = np.random.default_rng(0)
    qs = []
    for i in ids:  # the first value's "agree" says it is right, with noise
        rows = [{k: float(rng.random()) for k in fit_answer.ranker.FEATURES} for _ in range(3)]
        rows[0]["agree"] += 0.5
        qs.append((i, rows, [True, False, False], True, [], []))
    args = argparse.Namespace(
        precision=0.9, l2=0.01, folds=5, conf_l2=0.05, min_shown=10, boot=0, show=0, fold_seeds=3
    )
    fit_answer.spread({seed: qs for seed in range(3)}, args)  # each assignment's rows
    out = capsys.readouterr().out
    assert "over 3 fold assignments, top-1: mean" in out and "coverage: mean" in out


def test_fit_answer_heads_are_the_trees_of_the_fold_a_question_is_not_in(tmp_path: Path) -> None:
    """fit_rerank.py --folds writes each fold's head trees (fitted on the other folds) and
    fit_answer.py --heads gives each question those of its own fold: an answer model fitted
    on heads that saw the question would trust the head more than new questions bear out."""
    pytest.importorskip("lightgbm")
    import fit_answer
    import fit_rerank

    from search import rerank_learned

    rng = np.random.default_rng(0)
    names = rerank_learned.FEATURES.index("names_doc")
    qs = []
    for i in range(100):
        x = rng.random((8, len(rerank_learned.FEATURES)))
        y = np.zeros(8)
        y[int(np.argmax(x[:, names]))] = 1.0
        qs.append((f"set/q{i}", x, y))
    folds = np.array_split(np.random.default_rng(0).permutation(len(qs)), 5)
    models = [fit_rerank.fit([q for j, q in enumerate(qs) if j not in set(f.tolist())]) for f in folds]
    fit_rerank.write_folds(tmp_path, rerank_learned.FOOTBALL_TREES, models, folds, qs)
    name, heads = fit_answer.read_heads(tmp_path)
    assert name == rerank_learned.FOOTBALL_TREES and set(heads) == {q[0] for q in qs}
    for i, fold in enumerate(folds):
        for j in fold.tolist()[:3]:
            rows = [dict(zip(rerank_learned.FEATURES, r)) for r in qs[j][1]]
            assert np.allclose(heads[qs[j][0]].raw(rows), models[i].predict(qs[j][1]), atol=1e-4)


def test_fit_threshold_refuses_a_football_corpus(seed_engine: Any, tmp_path: Path) -> None:
    """threshold_other is the confidence a short answer needs off football: fitted on a
    football corpus it would say nothing about other sports, so the script stops."""
    import fit_threshold

    qs = tmp_path / "q.jsonl"
    qs.write_text('{"id": "a", "question": "who scored the winner", "answers": ["Martinez"]}\n')
    with pytest.raises(SystemExit, match="football corpus"):
        fit_threshold.collect([f"{seed_engine.path}:{qs}"])


def test_fit_answer_by_article_keeps_one_article_or_one_small_corpus_in_one_fold(
    seed_engine: Any, tmp_path: Path
) -> None:
    """Out of fold by question, a fact asked in two sets is fitted on through one while the
    other is judged; --by-article puts every question about one article in one fold, and every
    question on a corpus of a few articles (one story told by several outlets) in one."""
    import json

    import fit_answer

    qs = tmp_path / "q.jsonl"
    rows = [
        {"id": f"q{i}", "question": "who scored", "answers": ["Martinez"], "doc": [f"{i % 3}.txt"]}
        for i in range(30)
    ] + [{"id": "none", "question": "who refereed", "answers": []}]
    qs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    groups = fit_answer.article_groups([f"{seed_engine.path}:{qs}"])
    assert len(set(groups.values())) == 1  # the seeds: five outlets on one match
    try:
        fit_answer.SMALL_CORPUS = 0
        groups = fit_answer.article_groups([f"{seed_engine.path}:{qs}"])
        fit_answer.GROUPS.update(groups)
        f = dict(zip(groups, fit_answer.folds(list(groups), 5)))
    finally:
        fit_answer.SMALL_CORPUS = 20
        fit_answer.GROUPS.clear()
    assert len(set(groups.values())) == 4 and groups["q/none"] == "q/none"
    assert all(f[f"q/q{i}"] == f[f"q/q{i % 3}"] for i in range(30))

    import fit_rerank  # the head's trees: the same folds by article for fit_answer.py --heads

    rows = [(qid, np.zeros((2, 2)), np.zeros(2)) for qid in groups]
    folds = fit_rerank.split(rows, groups, seed=0)
    at = {rows[j][0]: i for i, fold in enumerate(folds) for j in fold.tolist()}
    assert len(at) == len(rows) and all(at[f"q/q{i}"] == at[f"q/q{i % 3}"] for i in range(30))
    assert sorted(len(x) for x in fit_rerank.split(rows, {}, seed=0)) == [6, 6, 6, 6, 7]
