"""Filters, sorting, paging and facets against a brute-force pass over every document,
on the local backend and on Milvus Lite (#16).

The corpus is generated: 48 short articles over 4 sources, 3 categories, 12 months (a
few undated), a number, a bool and a list field, and entities from a fake tagger, so
every filter keeps a known subset. The reference for "what matches" is the backend's own
unfiltered match list (every passage its BM25 matches), filtered here by
:meth:`Filters.matches` document by document; the filtered query must return exactly
the best k of those, never fewer.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search.dates import month
from search.embed import HashEmbedder
from search.engine import Engine
from search.errors import FilterError
from search.filters import Filters
from search.text import analyze, headline, query_terms
from search.types import Article
from search.vocab import expand

PEOPLE = ["Lautaro Martinez", "Harry Kane", "Bukayo Saka", "Enzo Fernandez", "Declan Rice", "Son Heung-min"]
CLUBS = ["Arsenal", "Chelsea", "Inter", "Tottenham"]
COUNTRIES = ["England", "Argentina"]
SOURCES = ["AFP", "BBC Sport", "Reuters", "The Guardian"]
CATS = ["football", "rugby", "cricket"]
VERBS = ["scored", "headed home", "missed", "saved", "equalised"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
NAMES = re.compile("|".join(re.escape(n) for n in PEOPLE + CLUBS + COUNTRIES))


def fake_tagger(texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    out = []
    for t in texts:
        ents = []
        for m in NAMES.finditer(t):
            name = m.group(0)
            label = "PERSON" if name in PEOPLE else "ORG" if name in CLUBS else "GPE"
            ents.append((m.start(), m.end(), label))
        out.append(ents)
    return out


def corpus() -> list[Article]:
    rng = random.Random(16)
    arts = []
    for i in range(48):
        lines = []
        for j in range(rng.randint(2, 9)):
            p, c, v = rng.choice(PEOPLE), rng.choice(CLUBS + COUNTRIES), rng.choice(VERBS)
            lines.append(f"In report {i} part {j}, {p} {v} for {c} in minute {rng.randint(1, 95)}.")
            if j % 3 == 2:
                lines.append("")
        month = 1 + i % 12
        published = None if i % 11 == 0 else f"2005-{month:02d}-{1 + i % 27:02d}T{i % 24:02d}:00:00Z"
        if i % 7 == 3 and published:  # RFC 2822, as RSS gives it
            published = f"Tue, {1 + i % 27:02d} {MONTHS[month - 1]} 2005 10:00:00 +0100"
        meta: dict[str, Any] = {"category": CATS[i % 3], "minute": i * 2, "live": i % 2 == 0}
        meta["tags"] = [
            t for t, on in (("derby", i % 4 == 0), ("cup", i % 5 == 0), ("final", i % 6 == 1)) if on
        ]
        if i % 13 == 5:
            del meta["category"]
        arts.append(
            Article(
                id=f"r/{i:03d}",
                title=f"Report {i}: {rng.choice(PEOPLE)} and {rng.choice(CLUBS)}",
                text="\n".join(lines),
                source=SOURCES[i % 4] if i % 9 else "",
                published=published,
                metadata=meta,
            )
        )
    return arts


FILTERS: list[Any] = [
    {"source": "AFP"},
    {"source": ["AFP", "Reuters"]},
    {"category": "football"},
    {"since": "2005-03-01"},
    {"until": "2005-06-30"},
    {"since": "2005-03-01", "until": "2005-03-31"},
    ["category=rugby", "minute>=40"],
    {"minute": {">": 20, "<": 60}},
    {"live": True},
    {"tags": "cup"},
    {"tags": ["derby", "final"]},
    {"category": "cricket", "source": "BBC Sport", "since": "2005-02-01"},
    {"published": "2005-05"},
    {"category": "nothing-like-this"},
]
QUESTION = "who scored for Arsenal"
_milvus_skip: str | None = None


def _open(backend: str, root: Path) -> Engine:
    global _milvus_skip
    kw: dict[str, Any] = {"embedder": HashEmbedder(), "tagger": fake_tagger, "create": True}
    if backend == "milvus":
        if _milvus_skip:
            pytest.skip(_milvus_skip)
        try:
            import milvus_lite  # noqa: F401
        except ImportError as e:
            _milvus_skip = f"Milvus Lite cannot start: {e}"
            pytest.skip(_milvus_skip)
        kw.update(backend="milvus", uri=str(root / "m.db"))
    return Engine.open(root / "idx", **kw)


@pytest.fixture(scope="module", params=["local", "milvus"])
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    e = _open(request.param, tmp_path_factory.mktemp(request.param))
    e.add(corpus())
    yield e
    e.close()


def _docs(engine: Engine) -> dict[str, Any]:
    return {d.id: d for d in engine.documents()}


def _passes(engine: Engine, flt: Any) -> set[str]:
    checked = engine.check_filters(flt)
    return {d.id for d in engine.documents() if checked.matches(d.source, d.published_ts, d.metadata or {})}


def _matching(engine: Engine, question: str) -> list[str]:
    """Every passage the backend's BM25 matches for the question, unfiltered."""
    view = engine._backend.reader()
    terms = query_terms(question)
    exp = expand(terms) if engine._is_football(view) else []
    return [pid for pid, _, _ in view.newest(terms, exp, None, 10**6, question=question)]


def test_metadata_is_kept_typed_and_shown(engine: Engine) -> None:
    art = engine.get_document("r/001")
    assert (
        art.metadata["category"] == "rugby" and art.metadata["minute"] == 2 and art.metadata["live"] is False
    )
    assert art.published_utc == "2005-02-02T01:00:00Z"
    rfc = engine.get_document("r/003")  # RFC 2822 with a zone: stored raw, parsed to UTC
    assert rfc.published.startswith("Tue,") and rfc.published_utc == "2005-04-04T09:00:00Z"
    hit = engine.search(QUESTION, k=1, filters={"category": "football"})[0]
    assert hit.to_dict()["metadata"]["category"] == "football"
    assert engine.fields()["tags"] == "strings" and engine.fields()["minute"] == "number"


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_every_filter_returns_the_best_k_that_match(engine: Engine, mode: str) -> None:
    docs = _docs(engine)
    matching = _matching(engine, QUESTION)
    n_all = sum(d.passages for d in docs.values())
    for flt in FILTERS:
        ok = _passes(engine, flt)
        k = 12
        hits = engine.search(QUESTION, k=k, mode=mode, filters=flt, collapse=False)
        assert {h.passage.doc_id for h in hits} <= ok, flt
        # never fewer than exist: bm25 has the matching passages, dense every passage
        exist = (
            sum(1 for p in matching if p.rpartition("#")[0] in ok)
            if mode == "bm25"
            else sum(docs[d].passages for d in ok)
        )
        assert len(hits) >= min(k, exist), (flt, mode, len(hits), exist)
        if mode == "dense" or (mode == "bm25" and engine.backend_name == "local"):
            # a filter selects, it does not re-score: the unfiltered ranking, restricted
            full = engine.search(QUESTION, k=min(100, n_all), mode=mode, collapse=False)
            want = [h.passage.id for h in full if h.passage.doc_id in ok][:k]
            assert [h.passage.id for h in hits][: len(want)] == want, (flt, mode)


def test_sort_newest_is_the_date_order_of_every_match(engine: Engine) -> None:
    docs = _docs(engine)
    matching = _matching(engine, QUESTION)
    for flt in FILTERS[:8]:
        ok = _passes(engine, flt)
        ref = [p for p in matching if p.rpartition("#")[0] in ok]
        k = 10
        hits = engine.search(QUESTION, k=k, mode="bm25", filters=flt, sort="newest", collapse=False)
        assert len(hits) == min(k, len(ref)), flt

        def ts(doc_id: str) -> float:
            t = docs[doc_id].published_ts
            return t if t is not None else float("-inf")

        got = [ts(h.passage.doc_id) for h in hits]
        assert got == sorted(got, reverse=True), flt
        assert got == sorted((ts(p.rpartition("#")[0]) for p in ref), reverse=True)[:k], flt


def test_recency_blends_relevance_with_age(engine: Engine) -> None:
    docs = _docs(engine)
    rel = engine.search(QUESTION, k=50, mode="bm25", collapse=False)
    slow = engine.search(QUESTION, k=10, mode="bm25", collapse=False, sort="recency", half_life=1e9)
    dated = [h.passage.id for h in rel if docs[h.passage.doc_id].published_ts is not None]
    undated = [h.passage.id for h in rel if docs[h.passage.doc_id].published_ts is None]
    # age barely counts: relevance order, undated passages after the dated ones
    assert [h.passage.id for h in slow] == (dated + undated)[:10]
    fast = engine.search(QUESTION, k=10, mode="bm25", collapse=False, sort="recency", half_life=0.001)
    stamps = [docs[h.passage.doc_id].published_ts or float("-inf") for h in fast]
    assert stamps[:3] == sorted(stamps, reverse=True)[:3]  # age decides


def test_offset_pages_through_the_same_ranking(engine: Engine) -> None:
    for sort in ("relevance", "newest"):
        page = engine.search(QUESTION, k=5, offset=5, filters={"since": "2005-02-01"}, sort=sort)
        whole = engine.search(QUESTION, k=10, filters={"since": "2005-02-01"}, sort=sort)
        assert [h.passage.id for h in page] == [h.passage.id for h in whole[5:10]]
        assert [h.rank for h in page] == list(range(6, 6 + len(page)))
    docs, total = engine.list_documents(offset=3, limit=4, filters={"category": "football"})
    assert total == len(_passes(engine, {"category": "football"})) and len(docs) == 4
    assert [d.id for d in docs] == sorted(_passes(engine, {"category": "football"}))[3:7]


def test_facet_counts_equal_a_direct_count(engine: Engine) -> None:
    docs = _docs(engine)
    matching = _matching(engine, QUESTION)
    for flt in [None, {"source": "AFP"}, {"since": "2005-04-01"}, {"tags": "cup"}]:
        ok = _passes(engine, flt) if flt else set(docs)
        pids = [p for p in matching if p.rpartition("#")[0] in ok]
        f = engine.facets(QUESTION, filters=flt, mode="bm25")
        assert f.passages == len(pids)
        src: Counter[str] = Counter()
        cat: Counter[str] = Counter()
        mon: Counter[str] = Counter()
        people: Counter[str] = Counter()
        teams: Counter[str] = Counter()
        for pid in pids:
            d = docs[pid.rpartition("#")[0]]
            if d.source:
                src[d.source] += 1
            if "category" in (d.metadata or {}):
                cat[d.metadata["category"]] += 1
            if d.published_ts is not None:
                mon[month(d.published_ts) or ""] += 1
            art = engine.get_document(d.id)
            p = next(x for x in engine.passages_of(d.id) if x.id == pid)
            for s, e, label in art.entities:
                if p.start <= s and e <= p.end:
                    (people if label == "PERSON" else teams)[art.text[s:e]] += 1
        assert dict(f.fields["source"]) == dict(src)
        assert dict(f.fields["category"]) == dict(cat)
        assert dict(f.fields["month"]) == {k: v for k, v in mon.items() if k}

        def top(c: Counter[str]) -> list[tuple[str, int]]:
            return sorted(c.items(), key=lambda t: (-t[1], t[0]))[:10]

        assert f.fields["people"] == top(people) and f.fields["teams"] == top(teams)
    # dense: every passage that passes the filters
    f = engine.facets(QUESTION, filters={"source": "AFP"}, mode="dense")
    assert f.passages == sum(d.passages for d in docs.values() if d.source == "AFP")


def test_a_filter_that_matches_nothing_keeps_the_unfiltered_facets(engine: Engine) -> None:
    r = engine.ask(QUESTION, k=5, filters={"category": "nothing-like-this"}, facets=True)
    assert r.hits == [] and r.facets is not None and r.facets.unfiltered
    assert r.facets.passages == len(_matching(engine, QUESTION))
    assert r.to_dict()["facets"]["unfiltered"] is True
    assert engine.ask(QUESTION, k=5).facets is None  # the Python API counts them when asked


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ({"colour": "red"}, "unknown filter field 'colour'"),
        ({"since": "last tuesday"}, "'last tuesday' is not a date"),
        ({"since": "2005-06-01", "until": "2005-01-01"}, "is after until"),
        ({"tags": 3}, "tags holds a list of strings: give a string value"),
        (["minute>=many"], "minute holds numbers"),
        (["category>=a"], "category holds text: compare with ="),
        (["no operator"], "is not a filter"),
    ],
)
def test_bad_filters_say_which_field_and_form(engine: Engine, flt: Any, message: str) -> None:
    with pytest.raises(FilterError, match=re.escape(message)):
        engine.search(QUESTION, filters=flt)


def test_filters_parse_the_cli_and_json_forms_alike() -> None:
    a = Filters.parse(source=["AFP"], since="2005-01-01", where=["category=football", "minute>=80"])
    b = Filters.of({"source": "AFP", "since": "2005-01-01", "category": "football", "minute": {">=": 80}})
    kinds = {"category": "text", "minute": "number"}
    assert sorted(a.check(kinds).clauses, key=repr) == sorted(b.check(kinds).clauses, key=repr)


def test_headline_terms_count_as_matches_locally(tmp_path: Path) -> None:
    """The local match set is exactly the passages holding a query term in text or headline."""
    e = _open("local", tmp_path)
    try:
        e.add(corpus())
        view = e._backend.reader()
        terms = query_terms(QUESTION)
        exp = set(expand(terms)) if e._is_football(view) else set()
        want = set()
        for d in e.documents():
            art = e.get_document(d.id)
            head = set(analyze(headline(art.title, art.text)))
            for p in e.passages_of(d.id):
                if (set(analyze(p.text)) | head) & (set(terms) | exp):
                    want.add(p.id)
        assert set(_matching(e, QUESTION)) == want
    finally:
        e.close()


def test_people_and_teams_are_counted_over_the_best_matches(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ENTITY_SAMPLE matches, people and teams come from the best-scoring passages
    (source, category and month still count every match); the result says over how many."""
    if engine.backend_name != "local":
        pytest.skip("Milvus counts every facet over its search depth (MATCH_LIMIT)")
    import search.backends.local_rows as local_rows

    view = engine._backend.reader()
    terms = query_terms(QUESTION)
    exp = expand(terms) if engine._is_football(view) else []
    docs, pns, scores = view.rows.lexical_matches(terms, exp, None)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    # a sample size whose boundary falls between two different scores
    n = next(i for i in range(len(order) // 3, len(order)) if scores[order[i - 1]] > scores[order[i]])
    full = engine.facets(QUESTION, mode="bm25")
    monkeypatch.setattr(local_rows, "ENTITY_SAMPLE", n)
    f = engine.facets(QUESTION, mode="bm25")
    assert f.passages == len(scores) > n and f.entities_over == n
    assert f.to_dict()["entities_over"] == n
    people: Counter[str] = Counter()
    for i in order[:n]:
        doc_id = view.rows.table.id(int(docs[i]))
        art = engine.get_document(doc_id)
        p = engine.passages_of(doc_id)[int(pns[i])]
        for s, e, label in art.entities:
            if label == "PERSON" and p.start <= s and e <= p.end:
                people[art.text[s:e]] += 1
    assert f.fields["people"] == sorted(people.items(), key=lambda t: (-t[1], t[0]))[:10]
    for name in ("source", "category", "month"):  # every match, not the sample
        assert f.fields[name] == full.fields[name]
    assert full.entities_over == full.passages and f.fields["people"] != full.fields["people"]


def test_a_sample_cut_inside_tied_scores_takes_the_first_of_them(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When ENTITY_SAMPLE cuts through passages of equal score, the sample takes every
    passage above the cut and the first of the tied ones, in match order (#17: merged by
    a sort of two runs instead of np.union1d)."""
    if engine.backend_name != "local":
        pytest.skip("Milvus counts every facet over its search depth (MATCH_LIMIT)")
    import search.backends.local_rows as local_rows

    view = engine._backend.reader()
    terms = query_terms(QUESTION)
    exp = expand(terms) if engine._is_football(view) else []
    docs, pns, scores = view.rows.lexical_matches(terms, exp, None)
    # a sample size that cuts a run of two or more equal scores
    vals = sorted(set(scores.tolist()), reverse=True)
    tied = [v for v in vals if int(np.count_nonzero(scores == v)) > 1]
    assert tied, "the corpus has no tied scores"
    cut = tied[0]
    above = np.flatnonzero(scores > cut)
    n = len(above) + 1
    monkeypatch.setattr(local_rows, "ENTITY_SAMPLE", n)
    f = engine.facets(QUESTION, mode="bm25")
    assert f.entities_over == n
    keep = sorted([*above.tolist(), int(np.flatnonzero(scores == cut)[0])])
    want = view.rows.facets(docs[keep], pns[keep], None, sample=len(docs))
    assert f.fields["people"] == want.fields["people"] and f.fields["teams"] == want.fields["teams"]


def test_facet_names_and_groups() -> None:
    """A possessive is the same person; a country tagged as a person is its team; an outlet
    or a competition tagged ORG is no team (newcomer: "BBC" and "the Champions League" were
    teams, "England" a person, "Anthony Gordon’s" a second Gordon)."""
    from search.facets import entity_group, facet_name

    countries = frozenset({"England", "Argentina"})
    assert (
        facet_name("Anthony  Gordon’s") == "Anthony Gordon" and facet_name("Buenos Aires'") == "Buenos Aires"
    )
    assert entity_group("PERSON", "England", countries) == "teams"
    assert entity_group("GPE", "Argentina's", countries) == "teams"
    assert entity_group("PERSON", "Anthony Gordon’s", countries) == "people"
    assert entity_group("ORG", "BBC", countries) is None
    assert entity_group("ORG", "the Champions League", countries) is None
    assert entity_group("ORG", "Chelsea", countries) == "teams"
    assert entity_group("DATE", "England", countries) is None
