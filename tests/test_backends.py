"""The same re-indexing behaviour over both backends: local (whoosh + FAISS) and Milvus Lite.

Milvus tests need ``pymilvus`` and ``milvus-lite`` 2.5 (the real C++ core: English
analyzer with stemming, BM25 function); they skip, saying why, only where Milvus Lite
cannot start. Scores are never compared by value or sign, only ranks and contents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search.embed import HashEmbedder
from search.engine import Engine
from search.errors import DocumentNotFoundError, IndexMissingError
from search.types import Article

BACKENDS = ["local", "milvus"]
MODES = ("bm25", "dense", "hybrid")

A = Article(
    id="a.txt",
    title="Late winner",
    text="Lautaro Martinez headed home the winner in stoppage time. Inter climbed to second in the table.",
    source="bbc",
)
B = Article(
    id="b.txt",
    title="Equaliser",
    text="Enzo Fernandez equalised in the 85th minute. Messi set him up with a clever pass.",
    source="guardian",
)
A2 = Article(
    id="a.txt",
    title="Penalty miss",
    text="Harry Kane missed a penalty in the first half. Tottenham drew with Arsenal.",
    source="bbc",
)

_milvus_unavailable: str | None = None


def _open(backend: str, root: Path, create: bool = True) -> Engine:
    global _milvus_unavailable
    if backend == "local":
        return Engine.open(root / "idx", create=create, embedder=HashEmbedder())
    if _milvus_unavailable:
        pytest.skip(_milvus_unavailable)
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as e:
        _milvus_unavailable = f"Milvus Lite cannot start: {e} (pip install 'search[milvus]')"
        pytest.skip(_milvus_unavailable)
    try:
        return Engine.open(
            root / "idx", create=create, embedder=HashEmbedder(), backend="milvus", uri=str(root / "m.db")
        )
    except (IndexMissingError, ValueError):
        raise
    except Exception as e:  # the Lite binary missing for this platform, or it failed to start
        if "Milvus Lite" in str(e) or "local milvus" in str(e).lower():
            _milvus_unavailable = f"Milvus Lite cannot start: {e}"
            pytest.skip(_milvus_unavailable)
        raise


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path):
    e = _open(request.param, tmp_path)
    yield e
    e.close()


def _texts(engine: Engine, question: str, mode: str, k: int = 10) -> list[str]:
    return [h.passage.text for h in engine.search(question, k=k, mode=mode)]


def _check_citations(engine: Engine, question: str, mode: str) -> list:
    hits = engine.search(question, k=5, mode=mode)
    for h in hits:
        art = engine.get_document(h.passage.doc_id)
        assert art.text[h.passage.start : h.passage.end] == h.passage.text
        assert h.title == art.title and h.source == art.source
    return hits


def test_add_then_every_mode_cites_spans(engine: Engine) -> None:
    r = engine.add([A, B])
    assert sorted(r.added) == ["a.txt", "b.txt"] and r.passages >= 2
    for mode in MODES:
        hits = _check_citations(engine, "who headed home the winner in stoppage time", mode)
        assert hits, mode
        assert hits[0].passage.doc_id == "a.txt", mode
    # stemming on both sides: "equalising" finds "equalised"
    assert engine.search("equalising goal Fernandez", k=3, mode="bm25")[0].passage.doc_id == "b.txt"
    assert {d.id for d in engine.documents()} == {"a.txt", "b.txt"}
    assert engine.stats()["documents"] == 2


def test_update_replaces_in_both_retrievers(engine: Engine) -> None:
    engine.add([A, B])
    r = engine.add([A2])
    assert r.replaced == ["a.txt"]
    for mode in MODES:
        assert all("Lautaro" not in t for t in _texts(engine, "Lautaro Martinez winner stoppage", mode)), mode
    for mode in MODES:
        hits = _check_citations(engine, "Kane missed a penalty", mode)
        assert hits[0].passage.doc_id == "a.txt" and "penalty" in hits[0].passage.text, mode
    assert engine.get_document("a.txt").title == "Penalty miss"
    assert engine.document_record("a.txt").content_hash == A2.content_hash
    assert all("Kane" in p.text or "Tottenham" in p.text for p in engine.passages_of("a.txt"))


def test_shorter_new_version_leaves_no_old_passages(engine: Engine) -> None:
    long = Article(
        id="long",
        title="Report",
        text=" ".join(f"Sentence {i} about the derby and goal {i}." for i in range(120)),
    )
    engine.add([long])
    before = engine.passages_of("long")
    assert len(before) > 2
    engine.add([Article(id="long", title="Report", text="Short: the derby ended goalless.")])
    after = engine.passages_of("long")
    assert [p.text for p in after] == ["Short: the derby ended goalless."]
    assert engine.stats()["passages"] == 1
    for mode in MODES:
        assert all(
            h.passage.id in {p.id for p in after}
            for h in engine.search("Sentence 57 derby goal", k=10, mode=mode)
        )


def test_unchanged_content_is_skipped(engine: Engine) -> None:
    engine.add([A, B])
    before = engine.manifest()["generation"]

    r = engine.add([A, B])
    assert sorted(r.unchanged) == ["a.txt", "b.txt"] and not r.added and not r.replaced
    assert engine.manifest()["generation"] == before  # nothing was written


def test_remove_returns_nothing(engine: Engine) -> None:
    engine.add([A, B])
    r = engine.remove(["a.txt", "nope"])
    assert r.removed == ["a.txt"] and r.missing == ["nope"]
    for mode in MODES:
        assert all(
            h.passage.doc_id != "a.txt"
            for h in engine.search("Lautaro winner stoppage time", k=10, mode=mode)
        )
    with pytest.raises(DocumentNotFoundError):
        engine.get_document("a.txt")
    assert [d.id for d in engine.documents()] == ["b.txt"]
    assert engine.passages_of("a.txt") == []
    assert engine.stats()["documents"] == 1


def test_index_resets_to_exactly_the_given_sources(engine: Engine, tmp_path: Path) -> None:
    engine.add([A2])  # will not be in the rebuilt index
    src = tmp_path / "src"
    src.mkdir()
    (src / "one.txt").write_text(
        "Derby day\n\nSaka scored twice as Arsenal beat Chelsea.\n", encoding="utf-8"
    )
    (src / "two.txt").write_text(
        "Cup tie\n\nThe goalkeeper saved three penalties in the shoot-out.\n", encoding="utf-8"
    )
    r = engine.index([src])
    assert len(r.added) == 2 and "a.txt" in r.removed
    ids = {d.id for d in engine.documents()}
    assert len(ids) == 2 and "a.txt" not in ids
    for mode in MODES:
        assert all(h.passage.doc_id != "a.txt" for h in engine.search("Kane penalty", k=10, mode=mode))
        assert engine.search("Saka scored twice", k=1, mode=mode)
    assert engine.manifest()["sources"] == [str(src.resolve())]


def test_last_version_in_one_batch_wins(engine: Engine) -> None:
    engine.add([A, A2, B])
    assert engine.get_document("a.txt").text == A2.text
    assert engine.stats()["documents"] == 2


def test_reopen_reads_without_reencoding(engine: Engine, tmp_path: Path) -> None:
    engine.add([A, B])
    before = [h.to_dict() for h in engine.search("who scored the winner", k=3)]
    backend = engine.backend_name
    engine.close()

    class NoEncode(HashEmbedder):
        def encode(self, *a, **k):  # reopening must not re-encode passages
            raise AssertionError("re-encoded")

    kwargs = {"backend": "milvus", "uri": str(tmp_path / "m.db")} if backend == "milvus" else {}
    e2 = Engine.open(tmp_path / "idx", embedder=NoEncode(), **kwargs)
    try:
        assert [h.to_dict() for h in e2.search("who scored the winner", k=3)] == before
    finally:
        e2.close()


def test_each_entity_is_stored_with_its_role(engine: Engine) -> None:
    """The parser's role of each entity (search.enrich.role) is written and read back with
    the spans, on both backends, one per entity, so the answer stage can use it."""
    engine.add([A])
    got = engine.get_document("a.txt")
    assert len(got.roles) == len(got.entities) > 0
    roles = {got.text[a:b]: r for (a, b, _), r in zip(got.entities, got.roles)}
    assert roles["Lautaro Martinez"] == "nsubj head"


def test_entities_tagged_with_other_patterns_say_to_reindex(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The manifest records the entity patterns each write used; after a version whose club
    list or patterns differ, ask and stats say to run `search reindex`, which clears it."""
    import search.enrich as enrich

    now = enrich.info()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(A.title + "\n\n" + A.text, encoding="utf-8")
    engine.index([docs])
    assert engine.manifest()["entities"]["patterns"] == [now["patterns"]]
    assert engine.entity_notice() is None
    with monkeypatch.context() as m:
        m.setattr(enrich, "info", lambda: {"model": now["model"], "patterns": "older"})
        engine.add([B])
    assert engine.manifest()["entities"]["patterns"] == [now["patterns"], "older"]
    note = engine.entity_notice()
    assert note and "search reindex" in note
    assert engine.ask("who equalised").answer.notice == note
    assert engine.stats()["notice"] == note
    engine.reindex()
    assert engine.manifest()["entities"]["patterns"] == [now["patterns"]]
    assert engine.entity_notice() is None and "notice" not in engine.stats()


def test_reindex_rebuilds_what_the_index_holds(engine: Engine, tmp_path: Path) -> None:
    """`search reindex` used to read the recorded sources again: an article removed since
    came back, one added as an object was dropped, and a file added with a root lost the
    folder its id had. It now rebuilds exactly the articles the index holds."""
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    for name, art in (("a.txt", A), ("sub/b.txt", B)):
        (docs / name).write_text(art.title + "\n\n" + art.text, encoding="utf-8")
    other = tmp_path / "other" / "cricket"
    other.mkdir(parents=True)
    (other / "c.txt").write_text(A2.title + "\n\n" + A2.text, encoding="utf-8")
    engine.index([docs])
    engine.add([other / "c.txt"], root=tmp_path / "other")
    engine.add([Article(id="api-1", title="Posted", text="Bukayo Saka scored twice for Arsenal.")])
    engine.remove(["sub/b.txt"])
    before = {d.id: engine.get_document(d.id).text for d in engine.documents()}
    assert set(before) == {"a.txt", "cricket/c.txt", "api-1"}
    report = engine.reindex()
    assert sorted(report.replaced) == sorted(before) and not report.added and not report.removed
    assert {d.id: engine.get_document(d.id).text for d in engine.documents()} == before
    assert engine.search("Saka scored twice", k=1, mode="bm25")[0].passage.doc_id == "api-1"
    assert str(docs.resolve()) in engine.manifest()["sources"]  # still recorded


def test_a_compound_finds_its_other_spelling(engine: Engine) -> None:
    """A compound finds its other spelling ("shoot-out", "shootout"), on both backends."""
    closed = Article(id="c.txt", title="", text="Spain beat France in a shootout in Atlanta.")
    open_ = Article(id="o.txt", title="", text="Argentina lost the shoot-out in Dallas.")
    engine.add([closed, open_, A, B])
    for q in ("shoot-out", "shootout"):
        assert {h.passage.doc_id for h in engine.search(q, k=5, mode="bm25")} == {"c.txt", "o.txt"}
    assert engine.search("shootout Dallas", k=1, mode="bm25")[0].passage.doc_id == "o.txt"


# -- Milvus only ----------------------------------------------------------------------------


@pytest.fixture
def milvus(tmp_path: Path):
    e = _open("milvus", tmp_path)
    yield e
    e.close()


def test_milvus_native_hybrid_and_filters(milvus: Engine) -> None:
    milvus.add([A, B])
    be = milvus._backend
    # ("late" would now match A's headline "Late winner", which both retrievers see)
    vec = milvus.embedder.encode_query("Fernandez equalised in the 85th minute")
    for fusion in ("rrf", "weighted"):
        hits = be.hybrid("Fernandez equalised in the 85th minute", vec, 2, fusion)
        assert hits and hits[0][0].startswith("b.txt#")
    assert {p.split("#")[0] for p, _ in be.hybrid("goal", vec, 5, "rrf", filter={"source": "bbc"})} == {
        "a.txt"
    }
    assert {p.split("#")[0] for p, _ in be.dense(vec, 5, filter={"doc_id": ["a.txt"]})} == {"a.txt"}
    assert {
        p.split("#")[0]
        for p, _ in be.lexical_search([], 5, question="Messi pass", filter='source == "guardian"')
    } == {"b.txt"}
    with pytest.raises(ValueError, match="choose rrf or weighted"):
        be.hybrid("goal", vec, 2, "borda")
    with pytest.raises(ValueError, match="cannot filter on"):
        be.dense(vec, 2, filter={"text": "x"})


def test_milvus_lexical_terms_are_the_engines(tmp_path: Path) -> None:
    """Both backends index and ask the same analysed terms, so BM25 ranks alike: British
    and American spellings meet on Milvus as they do locally, and the order of passages in
    bm25 mode is the same (articles without headlines: the local BM25F title field is empty)."""
    from search.backends.milvus import lex_text

    assert lex_text("Late winner", "He equalised.") == "late winner late winner he equaliz"
    arts = [
        Article(id=f"{i}.txt", title="", text=t, source="s")
        for i, t in enumerate(
            [
                "Enzo Fernandez equalised in the 85th minute after a long spell of pressure.",
                "The defence held firm until the 85th minute, when the equaliser finally came.",
                "Martinez scored the winner in stoppage time; the defence of the champions was over.",
                "Rain fell all evening and the pitch cut up badly in the second half.",
                "The manager praised his defence and the crowd for their patience.",
            ]
        )
    ]
    engines = {b: _open(b, tmp_path / b) for b in BACKENDS}
    try:
        for e in engines.values():
            e.add(arts)
        for q in ["who equalized", "defense minute", "rain pitch second half", "winner stoppage defense"]:
            ranked = {b: [h.passage.id for h in e.search(q, k=5, mode="bm25")] for b, e in engines.items()}
            assert ranked["local"] == ranked["milvus"], (q, ranked)
        assert engines["milvus"].search("who equalized", k=1, mode="bm25")[0].passage.doc_id == "0.txt"
    finally:
        for e in engines.values():
            e.close()


# Articles without headlines (the local BM25F title field is then empty, as Milvus's
# repeated headline is) where a second round has something to move: shared words
# (insulin, stroke, cholesterol) link passages the question's words do not name.
SCIENCE = [
    Article(id=f"{i}.txt", title="", text=t, source="s")
    for i, t in enumerate(
        [
            "Low-dose aspirin lowers the risk of a second ischaemic stroke in adults with atrial fibrillation.",
            "Aspirin thins the blood and reduces platelet aggregation after a transient ischaemic attack.",
            "Statins lower LDL cholesterol and the rate of cardiovascular events in older adults.",
            "High LDL cholesterol raises the risk of stroke and heart attack.",
            "Short sleep is associated with insulin resistance in healthy volunteers.",
            "Insulin resistance precedes type 2 diabetes by several years.",
            "Vitamin D supplements did not prevent fractures in older women.",
            "Calcium and vitamin D intake and bone density in postmenopausal women.",
            "Atrial fibrillation is a major cause of embolic stroke; anticoagulants prevent it.",
            "Regular exercise improves insulin sensitivity and lowers blood pressure.",
        ]
    )
]
SCIENCE_QUESTIONS = [
    "does aspirin prevent stroke",
    "cholesterol and heart disease",
    "sleep and diabetes",
    "vitamin d bone fractures",
    "blood pressure exercise",
]


def test_the_feedback_round_runs_on_milvus_and_ranks_as_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pseudo-relevance feedback (search.feedback) forced on: Milvus runs the second round
    (weighted BM25 terms, the question moved toward stored vectors) and ranks as the local
    backend does, with the round and without it; the round changes some rankings, so the
    agreement is not that of two first rounds."""
    from search.backends.milvus_search import MilvusSearch

    extras: list[dict[str, float]] = []
    real = MilvusSearch.lexical_search

    def spy(self: MilvusSearch, *args: Any, **kwargs: Any) -> Any:
        extras.append(kwargs.get("extra") or {})
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MilvusSearch, "lexical_search", spy)
    engines = {b: _open(b, tmp_path / b) for b in BACKENDS}
    try:
        for e in engines.values():
            e.add(SCIENCE)
            e.football = False  # ten passages are too few for vocab.is_football's statistic
        moved = 0
        for q in SCIENCE_QUESTIONS:
            ranked: dict[tuple[str, bool], list[str]] = {}
            for on in (False, True):
                for b, e in engines.items():
                    e.feedback = on
                    ranked[b, on] = [h.passage.id for h in e.search(q, k=8, mode="hybrid")]
            assert ranked["local", True] == ranked["milvus", True], (q, ranked)
            assert ranked["local", False] == ranked["milvus", False], (q, ranked)
            moved += ranked["milvus", True] != ranked["milvus", False]
        assert moved >= 2
        # one lexical search a question without the round, two with it (the second weighted)
        assert len(extras) == 3 * len(SCIENCE_QUESTIONS)
        assert sum(1 for x in extras if x) == len(SCIENCE_QUESTIONS)
    finally:
        for e in engines.values():
            e.close()


def test_weighted_terms_and_stored_vectors_read_alike(tmp_path: Path) -> None:
    """What the feedback round reads, at the reader: BM25 with ``extra`` terms ranks the same
    passages in the same order on both backends (passages and the document-level side), and
    ``passage_vectors`` gives the same stored rows, in the order asked, unknown ids left out."""
    from search.text import analyze

    engines = {b: _open(b, tmp_path / b) for b in BACKENDS}
    try:
        for e in engines.values():
            e.add(SCIENCE)
        views = {b: e._backend.reader() for b, e in engines.items()}
        terms = analyze("stroke risk adults")  # no two passages tie, with or without extras
        extra = dict(zip(analyze("fibrillation blood"), (0.3, 0.1234)))
        got = {b: [p for p, _ in v.lexical_search(terms, 10, extra=extra)] for b, v in views.items()}
        plain = {b: [p for p, _ in v.lexical_search(terms, 10)] for b, v in views.items()}
        assert got["local"] == got["milvus"] and plain["local"] == plain["milvus"]
        assert got["milvus"] != plain["milvus"]  # the extra terms count on Milvus
        # a typed term given again as extra weighs more, as it does locally
        again = {
            b: [p for p, _ in v.lexical_search(terms, 10, extra={terms[2]: 2.0})] for b, v in views.items()
        }
        assert again["local"] == again["milvus"] != plain["milvus"]

        vec = engines["milvus"].embedder.encode_query("aspirin stroke")
        hits = views["milvus"].dense(vec, 3)
        ids = [pid for pid, _ in hits]
        rows = {b: v.passage_vectors([ids[1], "missing.txt#0", ids[0], ids[2]]) for b, v in views.items()}
        assert rows["milvus"].shape == (3, len(vec)) and rows["milvus"].dtype == np.float32
        np.testing.assert_allclose(rows["milvus"], rows["local"], rtol=1e-6, atol=1e-7)
        scores = dict(hits)
        np.testing.assert_allclose(
            rows["milvus"] @ vec, [scores[ids[1]], scores[ids[0]], scores[ids[2]]], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(np.linalg.norm(rows["milvus"], axis=1), 1.0, rtol=1e-5)
        assert views["milvus"].passage_vectors(["missing.txt#0"]).shape[0] == 0
    finally:
        for e in engines.values():
            e.close()


def test_milvus_weighs_a_query_term_by_its_repeats(milvus: Engine) -> None:
    """What weighted terms on Milvus rest on: its BM25 is linear in how often the query
    repeats a term, so ``weighted_text``'s repeats, divided back, score the weighted query."""
    from search.backends.milvus_base import EXTRA_SCALE, weighted_text
    from search.text import analyze

    milvus.add(SCIENCE)
    be = milvus._backend
    terms = analyze("insulin resistance")
    blood = analyze("blood")[0]
    text, scale = weighted_text(None, terms, {blood: 0.25})
    assert scale == EXTRA_SCALE
    got = dict(be._weighted(text, "", 10, None, scale=scale))
    base = dict(be._weighted(" ".join(terms), "", 10, None))
    more = dict(be._weighted(blood, "", 10, None))
    assert set(got) == set(base) | set(more) and len(got) > len(base)
    for pid, score in got.items():
        assert score == pytest.approx(base.get(pid, 0.0) + 0.25 * more.get(pid, 0.0), rel=1e-5)


def test_milvus_missing_and_mismatched_index_refused(tmp_path: Path) -> None:
    from search.errors import IndexFormatError

    with pytest.raises(IndexMissingError, match="search index"):
        _open("milvus", tmp_path, create=False)
    e = _open("milvus", tmp_path)
    e.add([A])
    e.close()
    from search.backends.milvus import MilvusBackend

    settings = {"embedding": {"model": "other-model", "dim": 384}}
    with pytest.raises(IndexFormatError, match="other-model"):
        MilvusBackend(str(tmp_path / "m.db"), settings=settings)


def test_filter_expressions_escape_values() -> None:
    from search.backends.milvus import filter_expr, lexical_text, lite_path

    assert filter_expr({"source": 'a"b\\c'}) == 'source == "a\\"b\\\\c"'
    assert filter_expr({"doc_id": ["x", "y"]}) == 'doc_id in ["x", "y"]'
    assert filter_expr(None) == "" and filter_expr(" source == 'x' ") == "source == 'x'"
    # Milvus gets the engine's own analysed terms (format 4), the question's when none are given
    assert lexical_text("Who scored the winner?", ["scor", "winner"]) == "scor winner"
    assert lexical_text("Who scored the winner?", []) == "score winner"
    assert lexical_text(None, ["scor", "scor", "winner"]) == "scor scor winner"
    assert lexical_text(None, []) == ""
    assert lite_path("http://localhost:19530") is None
    assert lite_path("/tmp/x.db") == Path("/tmp/x.db")
    assert lite_path("index") == Path("index/milvus.db")


# -- Ray bulk embedding ---------------------------------------------------------------------


@pytest.mark.slow
def test_ray_embedder_matches_single_process(tmp_path: Path) -> None:
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'search[ray]')")
    from search.ray_embed import RayEmbedder, parse_workers

    assert parse_workers("ray") is None and parse_workers("ray:auto") == "auto"
    with pytest.raises(ValueError, match="ray:ADDRESS"):
        parse_workers("spark")
    texts = [f"Player {i} scored in minute {i % 90} of the derby." * (1 + i % 4) for i in range(150)]
    with RayEmbedder("hash", actors=1, cpus_per_actor=1) as emb:
        ticks: list[int] = []
        got = emb.encode(texts, batch_size=32, progress=ticks.append)
        assert sum(ticks) == len(texts)
        assert np.array_equal(got, HashEmbedder().encode(texts, batch_size=32))
        e = Engine.open(tmp_path / "idx", create=True, embedder=emb)
        e.add([A, B])
        assert e.search("who headed home the winner", k=1)[0].passage.doc_id == "a.txt"
        e.close()


def test_a_local_ray_that_times_out_at_start_is_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray gives its raylet a fixed 30 s to register; a busy machine misses it once."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'search[ray]')")
    from search import ray_embed
    from search.ray_embed import RayEmbedder

    real, calls = ray.init, []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise Exception("The current node timed out during startup.")
        return real(*args, **kwargs)

    monkeypatch.setattr(ray, "init", flaky)
    # The real start after the failed one may itself time out on a loaded machine: allow one more.
    monkeypatch.setattr(ray_embed, "LOCAL_STARTS", ray_embed.LOCAL_STARTS + 1)
    texts = ["Gordon scored.", "Martinez headed the winner."]
    with RayEmbedder("hash", actors=1, cpus_per_actor=1) as emb:
        assert np.array_equal(emb.encode(texts), HashEmbedder().encode(texts))
    assert len(calls) >= 2  # the failed start was followed by another


def test_milvus_searches_an_index_never_written(milvus: Engine) -> None:
    """Hardening: Milvus Lite's BM25 over a collection that never held a row fails
    ("Invalid sparse row: NaN or Inf value"): an index opened with create=True and
    searched before its first add answered a MilvusException, where local gives nothing."""
    for mode in MODES:
        assert milvus.search("who scored the winner", k=5, mode=mode) == []
    assert milvus.search("who scored", k=5, mode="hybrid", sort="newest") == []
    assert milvus.ask("who scored the winner", k=3, facets=True).hits == []


def test_both_backends_measure_the_football_share_alike(tmp_path: Path) -> None:
    """vocab.is_football reads only idf, less an absent word's: Milvus counts it as the local
    backend does, and ten passages of science are not football on either."""
    from search import vocab

    shares = {}
    for b in BACKENDS:
        e = _open(b, tmp_path / b)
        try:
            e.add(SCIENCE)
            view = e._backend.reader()
            shares[b] = vocab.football_share(view.idf)
            assert not e._is_football(view)
        finally:
            e.close()
    assert shares["local"] == pytest.approx(shares["milvus"], abs=1e-9)
