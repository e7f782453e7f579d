"""The local store (#17): articles read lazily, the table as columns, writes that stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from search import indexing
from search.backends import local_store
from search.dedup import DuplicateFinder, signature
from search.dedup_index import BandIndex
from search.embed import HashEmbedder
from search.engine import Engine
from search.errors import IndexFormatError
from search.rerank import RERANK_DEPTH
from search.types import Article

WORDS = (
    "striker keeper derby penalty header corner volley stoppage referee winger captain fixture "
    "semi final league cup relegation promotion transfer injury tackle offside"
).split()


def tagger(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    import re

    return [
        [
            (m.start(), m.end(), "PERSON" if " " in m.group() else "ORG")
            for m in re.finditer(r"[A-Z][a-z]+( [A-Z][a-z]+)?", t)
        ]
        for t in texts
    ]


def article(i: int, rng: np.random.Generator) -> Article:
    paras = []
    for _ in range(int(rng.integers(2, 6))):
        sents = [
            " ".join(str(w) for w in rng.choice(WORDS, int(rng.integers(6, 14)))).capitalize()
            + f" Player{i} Scored."
            for _ in range(int(rng.integers(1, 4)))
        ]
        paras.append(" ".join(sents))
    meta: dict[str, object] = {"category": ["football", "rugby", "tennis"][i % 3], "round": i % 7}
    if i % 4 == 0:
        meta["tags"] = ["derby", f"t{i % 5}"]
    if i % 5 == 0:
        meta["live"] = bool(i % 2)
    return Article(
        id=f"ä/{i:04d}" if i % 6 == 0 else f"doc-{i:04d}",
        title=f"Match report {i}",
        text="\n\n".join(paras),
        source=["BBC Sport", "AFP", ""][i % 3],
        published=f"20{10 + i % 12:02d}-0{1 + i % 9}-1{i % 9}T10:00:00Z" if i % 8 else None,
        metadata=meta,
    )


@pytest.fixture
def corpus() -> list[Article]:
    rng = np.random.default_rng(7)
    return [article(i, rng) for i in range(60)]


def open_engine(path: Path, **kw: object) -> Engine:
    return Engine.open(path, create=True, embedder=HashEmbedder(), tagger=tagger, **kw)


def test_lazily_read_articles_equal_what_was_written(tmp_path: Path, corpus: list[Article]) -> None:
    with open_engine(tmp_path / "idx") as e:
        e.add(corpus)
    with Engine.open(tmp_path / "idx", embedder=HashEmbedder()) as e:
        for a in corpus:
            got = e.get_document(a.id)
            assert (got.id, got.title, got.text, got.source, got.published) == (
                a.id,
                a.title,
                a.text,
                a.source,
                a.published,
            )
            assert got.metadata == a.metadata and got.published_ts == a.published_ts
            assert got.entities == tagger([a.text])[0] and got.entities
            assert got.sentences and all(got.text[s:t].strip() == got.text[s:t] for s, t in got.sentences)
            assert got.sentence_vectors is not None and len(got.sentence_vectors) == len(got.sentences)
            ps = e.passages_of(a.id)
            assert ps and all(got.text[p.start : p.end] == p.text for p in ps)
            rec = e.document_record(a.id)
            assert rec.passages == len(ps) and rec.title == a.title and rec.metadata == a.metadata


def test_opening_builds_no_article_and_reads_no_text(
    tmp_path: Path, corpus: list[Article], monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_engine(tmp_path / "idx") as e:
        e.add(corpus)
    reads = {"text": 0, "record": 0, "article": 0}
    for name in reads:
        orig = getattr(local_store.Segment, name)

        def counted(self: local_store.Segment, d: int, _orig=orig, _name=name) -> object:  # type: ignore[no-untyped-def]
            reads[_name] += 1
            return _orig(self, d)

        monkeypatch.setattr(local_store.Segment, name, counted)
    with Engine.open(tmp_path / "idx", embedder=HashEmbedder()) as e:
        assert reads == {"text": 0, "record": 0, "article": 0}
        snap = e._backend.reader()
        assert all(not s._articles._d and not s._texts._d for s in snap.segments.values())
        hits = e.search("penalty header", k=5)
        # A search reads passage texts, and whole articles only for the reranker's head
        # (its sentence vectors), never more than RERANK_DEPTH of them.
        assert hits and reads["article"] <= RERANK_DEPTH
        assert reads["text"] <= 60
        before = reads["article"]
        e.get_document(hits[-1].passage.doc_id)
        assert reads["article"] <= before + 1


def test_what_a_segment_keeps_decoded_is_bounded(
    tmp_path: Path, corpus: list[Article], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_store, "TEXT_CACHE", 4)
    monkeypatch.setattr(local_store, "ARTICLE_CACHE", 3)
    with open_engine(tmp_path / "idx") as e:
        e.add(corpus)
    with Engine.open(tmp_path / "idx", embedder=HashEmbedder()) as e:
        for a in corpus:
            assert e.get_document(a.id).text == a.text
            assert e.passages_of(a.id)[0].text
        for seg in e._backend.reader().segments.values():
            assert len(seg._texts._d) <= 4 and len(seg._articles._d) <= 3


class ThreadedHash(HashEmbedder):
    """The hash embedder, declared as a model that releases the GIL: encodes on the thread."""

    backend = "threaded-test"


@pytest.mark.parametrize("embedder", [HashEmbedder, ThreadedHash])
def test_a_build_in_many_batches_is_one_segment_and_the_same_index(
    tmp_path: Path, corpus: list[Article], monkeypatch: pytest.MonkeyPatch, embedder: type
) -> None:
    with open_engine(tmp_path / "one") as e:
        e.add(corpus, reset=True)
        want = {q: [(h.passage.id, round(h.score, 6)) for h in e.search(q, k=8)] for q in WORDS[:8]}
        want_facets = e.facets("penalty").to_dict()
    monkeypatch.setattr(indexing, "BATCH_ARTICLES", 7)
    threads: set[str] = set()
    encode = indexing.encode

    def spy(*args: object) -> object:
        import threading

        threads.add(threading.current_thread().name)
        return encode(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(indexing, "encode", spy)
    with Engine.open(tmp_path / "many", create=True, embedder=embedder(), tagger=tagger) as e:
        rep = e.add(corpus, reset=True)
        assert rep.added == [a.id for a in corpus]
        snap = e._backend.reader()
        assert len(snap.vector_segments) == 1 and len(list(snap.dir.glob("seg-*.store.bin"))) == 1
        got = {q: [(h.passage.id, round(h.score, 6)) for h in e.search(q, k=8)] for q in WORDS[:8]}
        assert got == want
        assert e.facets("penalty").to_dict() == want_facets
        assert set(rep.stages) >= {"encode", "ner", "rest"} and rep.stages["rest"] >= 0
    assert all(t.startswith("encode") for t in threads) == (embedder is ThreadedHash)


def test_the_last_version_of_an_id_wins_across_batches(
    tmp_path: Path, corpus: list[Article], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "BATCH_ARTICLES", 5)
    late = Article(id=corpus[2].id, title="Rewritten", text="Zanzibar quokka unusual words only here.")
    src = tmp_path / "src"
    src.mkdir()
    lines = [json.dumps({"id": a.id, "title": a.title, "text": a.text}) for a in corpus[:20]]
    lines.append(json.dumps({"id": late.id, "title": late.title, "text": late.text}))
    (src / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open_engine(tmp_path / "idx") as e:
        rep = e.index([src])
        assert any("later one is kept" in p for p in rep.problems)
        assert e.stats()["documents"] == 20
        assert e.get_document(late.id).text == late.text
        old_words = set(corpus[2].text.split()) - set(
            " ".join(a.text for a in corpus[:20] if a.id != late.id).split()
        )
        for w in old_words:  # the first version left nothing behind in BM25
            assert all(h.passage.doc_id != late.id for h in e.search(w, k=20, mode="bm25"))
        hits = e.search("zanzibar quokka", k=3, mode="bm25")
        assert hits[0].passage.doc_id == late.id and len(e.passages_of(late.id)) == 1


def _copy(a: Article) -> Article:
    """A fresh article with ``a``'s fields (a write fills in entities and vectors on its input)."""
    return Article(
        id=a.id, title=a.title, text=a.text, source=a.source, published=a.published, metadata=dict(a.metadata)
    )


def _state(e: Engine) -> dict[str, object]:
    """What an index answers, to compare two builds."""
    return {
        "stats": {k: v for k, v in e.stats().items() if k in ("documents", "passages")},
        "docs": sorted(
            (
                d.id,
                d.title,
                d.passages,
                d.duplicate_of,
                json.dumps(d.metadata, sort_keys=True),
                e.get_document(d.id).text,
                e.get_document(d.id).entities,
                e.get_document(d.id).sentences,
            )
            for d in e.documents()
        ),
        "hits": {q: [(h.passage.id, round(h.score, 6)) for h in e.search(q, k=8)] for q in WORDS[:8]},
        "facets": e.facets("penalty").to_dict(),
    }


@pytest.mark.parametrize("embedder", [HashEmbedder, ThreadedHash])
def test_a_generator_gives_the_same_index_as_a_list_and_is_not_held(
    tmp_path: Path, corpus: list[Article], monkeypatch: pytest.MonkeyPatch, embedder: type
) -> None:
    """#17 item 5: a stream is read once, as the write goes, and its articles are let go
    batch by batch; the index and the report equal those of the same articles as a list
    (paths in the stream included: they are read after its articles, as a list's are)."""
    import gc
    import weakref

    copy_of = Article(id="copy", title="Copy", text=corpus[5].text)  # a near-duplicate story
    src = tmp_path / "more.jsonl"
    src.write_text(
        json.dumps({"id": "from-file", "title": "Filed", "text": "A quokka derby penalty."}) + "\n"
    )
    with Engine.open(tmp_path / "list", create=True, embedder=embedder(), tagger=tagger) as e:
        want_rep = e.add([*map(_copy, corpus[:30]), copy_of, src, *map(_copy, corpus[30:])], root=tmp_path)
        want = _state(e)
    monkeypatch.setattr(indexing, "BATCH_ARTICLES", 5)
    alive: list[weakref.ref[Article]] = []
    most = 0

    def stream() -> Iterator[Article | Path]:
        nonlocal most
        for i, a in enumerate([*corpus[:30], copy_of, src, *corpus[30:]]):
            if isinstance(a, Path):
                yield a
                continue
            if i % 3 == 0:  # a full collection costs ~0.5 s with the models loaded: every third
                gc.collect()
                most = max(most, sum(r() is not None for r in alive))
            fresh = _copy(a)
            alive.append(weakref.ref(fresh))
            yield fresh
            del fresh

    with Engine.open(tmp_path / "stream", create=True, embedder=embedder(), tagger=tagger) as e:
        rep = e.add(stream(), root=tmp_path)
        assert _state(e) == want
    assert rep.added == want_rep.added and "from-file" in rep.added and len(rep.added) == 62
    assert rep.duplicates == want_rep.duplicates == {"copy": corpus[5].id}
    assert rep.problems == want_rep.problems == [] and rep.passages == want_rep.passages
    # Batches of 5 grow no further: a few batches are in flight at a time, never the stream.
    assert 0 < most <= 20


def test_a_bad_article_in_a_stream_costs_only_itself(tmp_path: Path, corpus: list[Article]) -> None:
    bad = Article(id="bad", title="T", text="goal \ud800 goal")

    def stream() -> Iterator[Article]:
        yield from map(_copy, corpus[:20])
        yield bad
        yield from map(_copy, corpus[20:40])

    with open_engine(tmp_path / "idx") as e:
        rep = e.add(stream())
        assert rep.added == [a.id for a in corpus[:40]]
        assert (
            len(rep.problems) == 1 and rep.problems[0].startswith("bad:") and "surrogate" in rep.problems[0]
        )
        assert e.stats()["documents"] == 40 and e._backend.doc("bad") is None
        assert sorted(d.id for d in e.documents()) == sorted(a.id for a in corpus[:40])
        assert e.stats()["passages"] == sum(len(e.passages_of(a.id)) for a in corpus[:40])


def test_a_stream_that_fails_leaves_the_index_as_it_was(
    tmp_path: Path, corpus: list[Article], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "BATCH_ARTICLES", 5)

    def stream() -> Iterator[Article]:
        yield from map(_copy, corpus[10:30])  # several batches are written before it fails
        raise OSError("the feed went away")

    with open_engine(tmp_path / "idx") as e:
        e.add(corpus[:10])
        before = _state(e)
        with pytest.raises(OSError, match="feed went away"):
            e.add(stream())
        assert _state(e) == before
        rep = e.add(map(_copy, corpus[10:30]))  # the next write is not blocked
        assert rep.added == [a.id for a in corpus[10:30]] and e.stats()["documents"] == 30


def test_a_stream_of_unknown_length_is_cut_into_growing_batches() -> None:
    sizes = [len(b) for b in indexing.batches(iter(range(300)), 64, grow=True)]
    assert sizes == [32, 64, 64, 64, 64, 12]
    assert [len(b) for b in indexing.batches(range(100), 40)] == [40, 40, 20]


def test_adds_removes_and_merges_keep_the_table_and_segments_consistent(
    tmp_path: Path, corpus: list[Article]
) -> None:
    with open_engine(tmp_path / "idx") as e:
        for i in range(0, 60, 6):  # ten writes: tier merges happen along the way
            e.add(corpus[i : i + 6])
        e.remove([corpus[3].id, corpus[40].id])
        changed = Article(id=corpus[10].id, title="Changed", text="Brand new text about a quokka.")
        e.add([changed])
        live = {a.id: a for a in corpus if a.id not in (corpus[3].id, corpus[40].id)}
        live[changed.id] = changed
        snap = e._backend.reader()
        assert snap.n_docs == len(live) and e.stats()["passages"] == sum(len(e.passages_of(d)) for d in live)
        assert sorted(d.id for d in e.documents()) == sorted(live)
        for d, a in live.items():
            assert e.get_document(d).text == a.text
        assert e._backend.doc(corpus[3].id) is None and not e.passages_of(corpus[3].id)
        # every live vector row is a live passage, and the other way round
        n_live = sum(int(v.live.sum()) for v in snap.vector_segments)
        assert n_live == e.stats()["passages"]
        dense = e.search("quokka", k=5, mode="dense")
        assert all(e._backend.doc(h.passage.doc_id) is not None for h in dense)


def test_an_older_format_says_to_reindex(tmp_path: Path, corpus: list[Article]) -> None:
    with open_engine(tmp_path / "idx") as e:
        e.add(corpus[:3])
    gen = (tmp_path / "idx" / "CURRENT").read_text().strip()
    mpath = tmp_path / "idx" / gen / "manifest.json"
    m = json.loads(mpath.read_text())
    m["format"] = 4
    mpath.write_text(json.dumps(m))
    with pytest.raises(
        IndexFormatError, match=r"format 4, this version reads format 5: rebuild it with `search reindex`"
    ):
        Engine.open(tmp_path / "idx", embedder=HashEmbedder())
    # a format-5 manifest over format-4 segment files says the same
    m["format"] = 5
    mpath.write_text(json.dumps(m))
    seg = next((tmp_path / "idx" / gen).glob("seg-*.store.bin"))
    (seg.parent / seg.name.replace(".store.bin", ".docs.jsonl")).write_text("{}\n")
    seg.unlink()
    with pytest.raises(IndexFormatError, match="older index format: rebuild with `search reindex`"):
        Engine.open(tmp_path / "idx", embedder=HashEmbedder())


def test_field_kinds_are_the_first_seen_and_survive_removals(tmp_path: Path) -> None:
    def art(i: int, v: object) -> Article:
        return Article(id=f"z{i}", title=f"T{i}", text=f"Text number {i} about football.", metadata={"x": v})

    with open_engine(tmp_path / "idx") as e:
        e.add([art(0, 5), art(1, "five"), art(2, 7)])
        assert e.fields()["x"] == "number"
        assert {h.passage.doc_id for h in e.search("football", k=10, filters={"x": {">=": 6}})} == {"z2"}
        e.remove(["z0", "z2"])  # the text value is now the first seen
        assert e.fields()["x"] == "text"
        assert {h.passage.doc_id for h in e.search("football", k=10, filters={"x": "five"})} == {"z1"}


def test_band_index_groups_as_the_duplicate_finder_does() -> None:
    rng = np.random.default_rng(3)
    base = [" ".join(str(w) for w in rng.choice(WORDS, 80)) for _ in range(40)]
    texts = []
    for i in range(300):  # copies with a few words changed, and unrelated stories
        t = base[int(rng.integers(0, 40))].split()
        for _ in range(int(rng.integers(0, 12))):
            t[int(rng.integers(0, len(t)))] = str(rng.choice(WORDS))
        texts.append(" ".join(t) if i % 3 else " ".join(str(w) for w in rng.choice(WORDS, 80)))
    sigs = np.stack([signature(t) for t in texts])
    finder = DuplicateFinder()
    want = []
    for i, s in enumerate(sigs):
        found = finder.find(f"d{i}", s)
        want.append(found[0] if found else None)
        finder.add(f"d{i}", s, want[-1])
    index = BandIndex()
    index.hold([f"d{i}" for i in range(50)], sigs[:50], [w or f"d{i}" for i, w in enumerate(want[:50])])
    got = want[:50] + [g for g, _ in index.assign([f"d{i}" for i in range(50, 170)], sigs[50:170])]
    got += [g for g, _ in index.assign([f"d{i}" for i in range(170, 300)], sigs[170:])]
    assert sum(w is not None for w in want) > 50
    assert got == want


def test_band_index_few_new_against_held_as_with_band_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A few new stories are compared with the held ones minimum by minimum, many by their
    band keys: both find the same copies."""
    from search import dedup_index

    rng = np.random.default_rng(5)
    base = [" ".join(str(w) for w in rng.choice(WORDS, 80)) for _ in range(30)]
    texts = []
    for i in range(120):
        t = base[i % 30].split()
        for _ in range(int(rng.integers(0, 10))):
            t[int(rng.integers(0, len(t)))] = str(rng.choice(WORDS))
        texts.append(" ".join(t))
    sigs = np.stack([signature(t) for t in texts])

    def run(few: int) -> list[str | None]:
        monkeypatch.setattr(dedup_index, "FEW_NEW", few)
        index = BandIndex()
        index.hold([f"d{i}" for i in range(60)], sigs[:60], [f"d{i % 30}" for i in range(60)])
        out: list[str | None] = []
        for i in range(60, 120, 3):  # three new at a time
            out += [g for g, _ in index.assign([f"d{j}" for j in range(i, i + 3)], sigs[i : i + 3])]
        return out

    direct, banded = run(4), run(0)
    assert sum(g is not None for g in direct) > 30
    assert direct == banded
