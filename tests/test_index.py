"""The local index on disk: round trip, generations, replace, remove, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from search.backends.local import FORMAT
from search.embed import HashEmbedder
from search.engine import Engine
from search.errors import IndexFormatError, IndexMissingError, QueryError
from search.types import Article

A = Article(id="a.txt", title="Late winner", text="Lautaro Martinez headed home the winner in stoppage time.")
B = Article(
    id="b.txt", title="Equaliser", text="Enzo Fernandez equalised in the 85th minute. Messi set him up."
)


def test_round_trip_reopens_without_reencoding(tmp_path: Path) -> None:
    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder())
    e.add([A, B])
    before = [h.to_dict() for h in e.search("who scored the winner", k=3)]
    e.close()

    class NoEncode(HashEmbedder):
        def encode(self, *a, **k):  # reopening must not re-encode passages
            raise AssertionError("re-encoded")

    e2 = Engine.open(tmp_path / "idx", embedder=NoEncode())
    with pytest.raises(IndexFormatError, match="embedding model hash"):
        Engine.open(tmp_path / "idx", embedder="auto")
    after = [h.to_dict() for h in e2.search("who scored the winner", k=3)]
    assert before == after
    art = e2.get_document("a.txt")
    for h in after:
        doc = e2.get_document(h["doc_id"]).text
        assert doc[h["start"] : h["end"]] == h["text"]
    assert art.text == A.text
    e2.close()


def test_manifest_records_settings(hash_engine) -> None:
    hash_engine.add([A])
    m = hash_engine.manifest()
    assert m["format"] == FORMAT
    assert m["embedding"] == {"model": "hash", "dim": 384, "backend": "hash"}  # the fake is its own model
    assert m["chunking"]["target_chars"] > 0
    assert m["counts"] == {"documents": 1, "passages": 1}
    assert m["package_version"]


def test_replace_and_remove(hash_engine) -> None:
    hash_engine.add([A, B])
    r = hash_engine.add([A])
    assert r.unchanged == ["a.txt"] and not r.added
    new_a = Article(id="a.txt", title="Late winner", text="Kane missed a penalty in the first half.")
    r = hash_engine.add([new_a])
    assert r.replaced == ["a.txt"]
    for mode in ("bm25", "dense", "hybrid"):
        texts = [
            h.passage.text for h in hash_engine.search("Lautaro Martinez winner stoppage", k=10, mode=mode)
        ]
        assert all("Lautaro" not in t for t in texts)
    assert any("penalty" in h.passage.text for h in hash_engine.search("penalty Kane", mode="bm25"))
    r = hash_engine.remove(["a.txt", "zzz"])
    assert r.removed == ["a.txt"] and r.missing == ["zzz"]
    for mode in ("bm25", "dense", "hybrid"):
        assert all(h.passage.doc_id != "a.txt" for h in hash_engine.search("penalty Kane", k=10, mode=mode))


def test_remove_takes_one_id_as_one_id(hash_engine) -> None:
    """Hardening: remove("a.txt") iterated the string, so it removed the documents whose ids
    are single characters of it ("a", "t") and reported the rest missing; a.txt stayed."""
    short = [Article(id=c, title=c, text=f"Kane scored goal number {i}.") for i, c in enumerate("at")]
    hash_engine.add([A, B, *short])
    r = hash_engine.remove("a.txt")
    assert r.removed == ["a.txt"] and r.missing == []
    assert {d.id for d in hash_engine.documents()} == {"b.txt", "a", "t"}
    with pytest.raises(ValueError, match="document ids are strings"):
        hash_engine.remove(["b.txt", None])
    assert {d.id for d in hash_engine.documents()} == {"b.txt", "a", "t"}


@pytest.mark.parametrize(
    ("items", "says"),
    [
        (None, "not None"),
        (5, "not 5"),
        (b"a.txt", "not b'a.txt'"),
        ([A, None], "item 1 is None"),
        ([B, 5], "item 1 is 5"),
        (iter([A, None]), "item 1 is None"),
    ],
)
def test_add_of_what_is_not_a_path_or_an_article_says_what_add_takes(
    hash_engine, items: object, says: str
) -> None:
    """Hardening: add(None) was "'NoneType' object is not iterable", add([None]) "expected
    str, bytes or os.PathLike object": neither said what add takes. Nothing is written."""
    hash_engine.add([B])
    with pytest.raises(ValueError, match="add takes paths .* and Article objects") as got:
        hash_engine.add(items)
    assert says in str(got.value)
    assert [d.id for d in hash_engine.documents()] == ["b.txt"]


def test_a_duplicate_id_among_articles_is_warned_about_as_from_files(hash_engine, tmp_path: Path) -> None:
    """Hardening: add([A, A2]) with one id kept the last silently, while two JSONL records
    with one id gave a warning. Both warn now, in the same words; the later one is kept."""
    a2 = Article(id="a.txt", title="Penalty", text="Kane missed a penalty in the first half.")
    r = hash_engine.add([A, B, a2])
    assert r.added == ["a.txt", "b.txt"]
    assert r.problems == [
        "warning: a.txt: document id 'a.txt' was also given earlier in this add; the later one is kept"
    ]
    assert hash_engine.get_document("a.txt").title == "Penalty"
    feed = tmp_path / "feed.jsonl"
    feed.write_text(json.dumps({"id": "b.txt", "title": "Later", "text": "Messi scored twice."}) + "\n")
    r = hash_engine.add([B, feed])
    assert r.problems == [
        f"warning: {feed}: document id 'b.txt' was also given as an Article in this add; the later one is kept"
    ]
    assert hash_engine.get_document("b.txt").title == "Later"


@pytest.mark.parametrize("doc_id", [5, None, b"a.txt", ["a.txt"]])
def test_a_document_id_that_is_not_a_string_says_so(hash_engine, doc_id: object) -> None:
    """Hardening: get_document(5) was "'int' object has no attribute 'encode'"."""
    hash_engine.add([A])
    for read in (hash_engine.get_document, hash_engine.document_record, hash_engine.passages_of):
        with pytest.raises(ValueError, match=r"document ids are strings, not .*: give the id as text"):
            read(doc_id)


def test_missing_index_and_not_an_index(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError, match="search index"):
        Engine.open(tmp_path / "nope")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("hello")
    with pytest.raises(IndexFormatError, match="is not an index"):
        Engine.open(junk, create=True)


def test_other_model_or_format_is_refused(tmp_path: Path) -> None:
    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder())
    e.add([A])
    e.close()
    gen = (tmp_path / "idx" / "CURRENT").read_text().strip()
    mpath = tmp_path / "idx" / gen / "manifest.json"
    m = json.loads(mpath.read_text())
    m["embedding"]["model"] = "some/other-model"
    mpath.write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="rebuild with `search reindex`"):
        Engine.open(tmp_path / "idx", embedder=HashEmbedder())
    m["format"] = 99
    mpath.write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="format 99"):
        Engine.open(tmp_path / "idx", embedder=HashEmbedder())


def test_failed_write_leaves_previous_index(tmp_path: Path) -> None:
    class Boom(HashEmbedder):
        def encode(self, texts, **kw):
            if any("explode" in t for t in texts):
                raise RuntimeError("encoder failed")
            return super().encode(texts, **kw)

    e = Engine.open(tmp_path / "idx", create=True, embedder=Boom())
    e.add([A, B])
    with pytest.raises(RuntimeError):
        e.index([Article(id="c.txt", title="", text="This will explode.")])
    e.close()
    e2 = Engine.open(tmp_path / "idx", embedder=HashEmbedder())
    assert sorted(d.id for d in e2.documents()) == ["a.txt", "b.txt"]
    assert e2.search("winner", k=1)[0].passage.doc_id == "a.txt"


@pytest.mark.parametrize(
    "question, message",
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("?!?! ... :: ** ()", "no words"),
        ("x" * 100_000, "limit is 2,000"),
    ],
)
def test_bad_questions(hash_engine, question: str, message: str) -> None:
    hash_engine.add([A])
    with pytest.raises(QueryError, match=message):
        hash_engine.search(question)


@pytest.mark.parametrize(
    "q",
    [
        '"winner',
        "winner AND",
        "NOT winner",
        "winner*",
        "winner?",
        "title:winner",
        "(winner",
        "[winner]]",
        "OR",
    ],
)
def test_query_syntax_never_crashes(hash_engine, q: str) -> None:
    hash_engine.add([A, B])
    hits = hash_engine.search(q, k=2, mode="bm25")
    if q.strip('"()[]*?').lower() not in ("or",):
        assert hits and hits[0].passage.doc_id == "a.txt"


def test_bad_k_and_mode(hash_engine) -> None:
    hash_engine.add([A])
    with pytest.raises(ValueError, match="from 1 to 100"):
        hash_engine.search("winner", k=0)
    with pytest.raises(ValueError, match="choose one of"):
        hash_engine.search("winner", mode="sparse")


def test_reindex_rebuilds_an_index_of_another_format(tmp_path: Path) -> None:
    src = tmp_path / "articles"
    src.mkdir()
    (src / "a.txt").write_text(A.title + "\n\n" + A.text, encoding="utf-8")
    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder())
    e.add([src])
    e.close()
    gen = (tmp_path / "idx" / "CURRENT").read_text().strip()
    mpath = tmp_path / "idx" / gen / "manifest.json"
    m = json.loads(mpath.read_text())
    m["format"] = 1
    mpath.write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="search reindex"):
        Engine.open(tmp_path / "idx", embedder=HashEmbedder())
    engine, report = Engine.rebuild(tmp_path / "idx", embedder=HashEmbedder())
    assert report.added == ["a.txt"]
    assert engine.manifest()["format"] == FORMAT and engine.search("winner", k=1)


@pytest.mark.parametrize(
    ("ids", "says"),
    [(None, "not None"), (5, "not 5"), (b"a.txt", "not b'a.txt'"), (bytearray(b"a"), "not bytearray")],
)
def test_remove_of_what_is_not_an_id_says_what_remove_takes(hash_engine, ids: object, says: str) -> None:
    """Hardening: remove(None) was "'NoneType' object is not iterable", and remove(b"a.txt")
    iterated the bytes ("document ids are strings, not 97"). Nothing is removed."""
    hash_engine.add([A])
    with pytest.raises(ValueError, match="remove takes a document id .* or an iterable of them") as got:
        hash_engine.remove(ids)
    assert says in str(got.value)
    assert [d.id for d in hash_engine.documents()] == ["a.txt"]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"mode": None}, "unknown mode None: choose one of hybrid, bm25, dense"),
        ({"mode": 3}, "unknown mode 3: choose one of hybrid, bm25, dense"),
        (
            {"filters": b"source=x"},
            "filters must be an object of field: value pairs or a list of FIELD=VALUE strings, not bytes",
        ),
    ],
)
def test_search_arguments_of_the_wrong_type_say_what_is_taken(hash_engine, kwargs: dict, says: str) -> None:
    """Hardening: mode=None was "None is not a valid Mode" (no choices), and filters=b"..."
    was read byte by byte ("a where clause must be a FIELD=VALUE string, not 115")."""
    hash_engine.add([A])
    with pytest.raises(ValueError) as got:
        hash_engine.search("who scored", **kwargs)
    assert says in str(got.value), str(got.value)
