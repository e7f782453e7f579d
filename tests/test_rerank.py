"""The sentence-evidence reranker: answer types, tense, the question's own subject,
and retrieval quality on the development and held-out question sets."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search.backends import local_write
from search.embed import HashEmbedder
from search.engine import Engine
from search.evaluate import evaluate, read_questions
from search.rerank import NAME, PERSON, PLACE, TIME, answer_type, rerank, stored_units
from search.text import analyze, query_terms
from search.types import Article
from search.vocab import expand

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT.parent / "shared" / "eval" / "dev.jsonl"
HELD_OUT = ROOT / "scripts" / "questions" / "heldout_seeds.jsonl"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("In what minute did England open the scoring?", TIME),
        ("when did Messi retire", TIME),
        ("where was the match played", PLACE),
        ("which goalkeeper did Gordon beat", PERSON),
        ("Which two England defenders did Martinez climb above?", PERSON),
        ("who scored the winner", PERSON),
        ("Which club does Enzo Fernandez play for?", NAME),
        ("why did England lose", None),
    ],
)
def test_answer_type(question: str, kind) -> None:
    assert answer_type(question) is kind


def test_place_is_a_place_not_a_day_or_a_month() -> None:
    found = lambda s: [m.group(0) for m in PLACE.finditer(s)]  # noqa: E731
    assert found("They meet in Saturday's play-off in July.") == []
    assert found("It was played in Atlanta.") == ["in Atlanta"]
    assert found("It was played at the Mercedes-Benz Stadium.") == ["Mercedes-Benz Stadium"]


FILLER = {f"filler{i}": ["Nothing of note happened here today."] for i in range(8)}


def _rank(question: str, passages: dict[str, list[str]]) -> list[str]:
    """The reranked order of ``passages`` (in fused order) followed by eight fillers,
    as in a real head of 30 candidates most of which hold no evidence."""
    passages = {**passages, **FILLER}
    terms = query_terms(question)
    cands = [(pid, 1.0 / (i + 1)) for i, pid in enumerate(passages)]
    out = rerank(question, terms, expand(terms), cands, lambda pid: passages[pid], lambda t: 1.0)
    return [pid for pid, _ in out]


NEXT_FIXTURE = "Argentina will face Spain in the final at MetLife Stadium in New Jersey on Sunday."
VENUE = "Beckham was in the crowd at the air-conditioned Mercedes-Benz Stadium."


def test_a_past_question_takes_the_reported_venue_not_the_next_fixture() -> None:
    passages = {"next": [NEXT_FIXTURE, "The match pits the champions of two continents."], "venue": [VENUE]}
    # The venue sentence holds no word of the question: the place alone is evidence.
    assert _rank("where was the match played", passages)[0] == "venue"
    # Asked about the future, the next fixture's place is the answer.
    passages = {"other": ["The final pits the champions of two continents."], "next": [NEXT_FIXTURE]}
    assert _rank("where will the final be played", passages)[0] == "next"


def test_the_questions_own_subject_is_not_a_candidate_name() -> None:
    passages = {
        "subject": ["Anthony Gordon fired England ahead with a fine goal."],
        "keeper": ["Gordon guided the ball past Emiliano Martinez at the back post."],
    }
    assert _rank("which goalkeeper did Gordon beat", passages)[0] == "keeper"


def test_agreement_of_both_retrievers_is_not_overturned_by_equal_evidence() -> None:
    same = ["Lautaro Martinez headed the winner."]
    assert _rank("who scored the winner", {"a": same, "b": same, "c": same})[:3] == ["a", "b", "c"]


def _unit(i: int) -> np.ndarray:
    v = np.zeros(8, np.float32)
    v[i] = 1.0
    return v


def test_a_sentence_that_means_the_question_moves_its_passage_up() -> None:
    # Equal words everywhere; only "b"'s sentence is close to the question in meaning.
    same = ["The trial reported its results."]
    vecs = {"a": _unit(1), "b": _unit(0), "c": _unit(2)}

    def units(pid: str):
        return same, vecs[pid][None, :].astype(np.float16)

    cands = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    q = analyze("did the trial report results")
    args = ("did the trial report results", q, [], cands, lambda pid: same, lambda t: 1.0)
    assert [p for p, _ in rerank(*args)] == ["a", "b", "c"]  # no vector: words only
    assert [p for p, _ in rerank(*args, qvec=_unit(0), units=units, dense_weight=0.0)] == ["a", "b", "c"]
    assert [p for p, _ in rerank(*args, qvec=_unit(0), units=units)][0] == "b"


def test_stored_units_are_the_passages_sentences_with_their_vectors(tmp_path: Path) -> None:
    text = " ".join(
        f"Sentence number {i} says something about topic {i % 4} in plain words." for i in range(40)
    )
    e = Engine.open(
        tmp_path / "idx", create=True, embedder=HashEmbedder(), tagger=lambda ts: [[] for _ in ts]
    )
    try:
        e.add([Article(id="x", title="A long report", text=text)])
        view = e._backend.reader()
        art = view.article("x")
        pids = [p.id for p in e.passages_of("x")]
        assert len(pids) > 2
        units = stored_units(view, pids)
        row = {span: i for i, span in enumerate(art.sentences)}
        for pid in pids:
            texts, vecs = units(pid)
            assert texts == view.sentences(pid) and texts
            p = view.passage(pid)
            spans = [(s, t) for s, t in art.sentences if s >= p.start and t <= p.end]
            want = np.stack([art.sentence_vectors[row[sp]] for sp in spans])
            assert np.array_equal(np.asarray(vecs), want)
            # stored as int8 codes (search.vector_codes): within a code step of the model's
            got, ref = np.asarray(vecs[0], np.float32), HashEmbedder().encode([texts[0]])[0]
            assert np.abs(got - ref).max() <= np.abs(ref).max() / 127 and float(got @ ref) > 0.999
    finally:
        e.close()


class _ArticlesOnly:
    """A reader without ``passage_units``: stored_units reads whole articles, as for Milvus."""

    def __init__(self, view: Any) -> None:
        self._view = view

    def __getattr__(self, name: str) -> Any:
        if name == "passage_units":
            raise AttributeError(name)
        return getattr(self._view, name)


def test_units_from_the_segment_arrays_equal_units_from_whole_articles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local reader gives a passage's sentences and vectors from the segment's arrays
    (no article read, #17): the same texts and the very same floats as the article path,
    with headings, rows shared by repeated sentences, several segments and after a merge."""
    rng = random.Random(4)

    def article(i: int) -> Article:
        parts = []
        for j in range(rng.randint(1, 6)):
            if rng.random() < 0.4:
                parts.append(f"Part {j} of the story")  # a heading: not a sentence
            parts.append(
                " ".join(
                    f"Player {i} scored goal {k} in minute {rng.randint(1, 90)} of match {j}."
                    for k in range(rng.randint(1, 9))
                )
                # A line every report carries: its vector row is stored once (.sentmap.npy).
                + " Full report to follow."
            )
        return Article(id=f"a{i}", title=f"Report {i}", text="\n\n".join(parts))

    e = Engine.open(
        tmp_path / "idx", create=True, embedder=HashEmbedder(), tagger=lambda ts: [[] for _ in ts]
    )
    try:
        for batch in range(3):
            e.add([article(batch * 10 + i) for i in range(10)])
        for merged in (False, True):
            if merged:  # merge every tier of two, with a removed document's rows dropped
                monkeypatch.setattr(local_write, "MERGE_FANOUT", 2)
                e.remove(["a3"])
                e.add([article(30 + i) for i in range(10)])
            view = e._backend.reader()
            assert (len(view.segments) == 1) == merged, list(view.segments)
            assert all(seg.sentmap is not None for seg in view.segments.values())
            pids = [p.id for d in e.documents() for p in e.passages_of(d.id)]
            assert len(pids) > 40
            direct, whole = stored_units(view, pids), stored_units(_ArticlesOnly(view), pids)
            for pid in pids:
                assert view.passage_units(pid) is not None, pid
                (t1, v1), (t2, v2) = direct(pid), whole(pid)
                assert t1 == t2, pid
                assert (v1 is None) == (v2 is None), pid
                if v1 is not None:
                    assert v1.dtype == v2.dtype and np.array_equal(v1, v2), pid
        assert view.passage_units("a1#99") is None and view.passage_units("nope#0") is None
    finally:
        e.close()


def test_no_candidates_and_no_terms() -> None:
    assert rerank("who", [], [], [], lambda pid: [], lambda t: 1.0) == []
    assert analyze("?!") == []


def _eval(engine, path: Path) -> dict[str, tuple[float, float, float]]:
    qs = read_questions(path)
    return {
        m: (r.hit1, r.recall5, r.mrr10)
        for m in ("bm25", "dense", "hybrid")
        for r in [evaluate(engine, qs, mode=m, answers=False)]
    }


@pytest.mark.skipif(not DEV.is_file(), reason="../shared/eval/dev.jsonl is not beside the project")
def test_dev_questions_meet_the_acceptance_bar(seed_engine) -> None:
    r = _eval(seed_engine, DEV)
    hit1, recall5, mrr = r["hybrid"]
    assert hit1 >= 0.85 and recall5 >= 0.95, r
    assert mrr >= max(r["bm25"][2], r["dense"][2]), r


def test_held_out_questions_do_not_regress(seed_engine) -> None:
    # 40 questions over the seeds written without sight of the code or of dev.jsonl.
    # Measured at this change: hybrid hit@1 0.70, recall@5 0.925, mrr@10 0.783.
    r = _eval(seed_engine, HELD_OUT)
    hit1, recall5, mrr = r["hybrid"]
    assert hit1 >= 0.675 and recall5 >= 0.9, r
    assert mrr >= max(r["bm25"][2], r["dense"][2]), r
