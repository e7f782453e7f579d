"""Hostile input at ingest (#14): only regular files under the root, bounded sizes, one bad
record costs only itself, and a writer killed in the commit window never blocks the next."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from search import ingest, ingest_base
from search.embed import HashEmbedder
from search.engine import Engine
from search.types import Article

GOOD = (
    "Chelsea beat Portsmouth 3-0 at Stamford Bridge on Saturday. Frank Lampard scored twice "
    "and Didier Drogba added a late third for the visitors' neighbours.\n"
)


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.txt").write_text("Chelsea cruise\n" + GOOD, encoding="utf-8")
    return root


def _ids(paths: list[Path] | Path) -> tuple[set[str], list[ingest.IngestProblem]]:
    arts, problems = ingest.load(paths)
    return {a.id for a in arts}, problems


def test_symlink_out_of_the_root_is_not_read(tmp_path: Path) -> None:
    """Item 1: /etc/passwd behind a symlink is never indexed; a link inside the root is."""
    root = _corpus(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("Secret title\nroot:x:0:0:the password file of this machine\n", encoding="utf-8")
    (root / "passwd.txt").symlink_to(secret)
    (root / "etc.txt").symlink_to("/etc/passwd")
    (root / "inside.txt").symlink_to(root / "good.txt")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "other.txt").write_text("Other\n" + GOOD, encoding="utf-8")
    (root / "linked").symlink_to(outside_dir, target_is_directory=True)
    ids, problems = _ids(root)
    assert ids == {"good.txt", "inside.txt"}
    shown = {Path(p.path).name: p for p in problems}
    assert "outside the corpus" in shown["passwd.txt"].message
    assert "outside the corpus" in shown["etc.txt"].message
    assert "not followed" in shown["linked"].message
    assert all(p.level == "warning" for p in problems)
    # Named on its own, the link's root is its folder: still refused.
    ids, problems = _ids([root / "passwd.txt"])
    assert ids == set() and "outside the corpus" in problems[0].message


def test_symlink_out_of_the_root_never_reaches_the_index(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "passwd.txt").symlink_to("/etc/passwd")
    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder()) as e:
        report = e.index([root])
        assert report.added == ["good.txt"]
        assert [d.id for d in e.documents()] == ["good.txt"]
        assert not e.search("root nologin bin bash", k=5, mode="bm25")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_special_files_are_not_read(tmp_path: Path) -> None:
    """Item 2: a FIFO would block forever and /dev/zero never ends: both are skipped."""
    root = _corpus(tmp_path)
    os.mkfifo(root / "fifo.txt")
    (root / "zero.txt").symlink_to("/dev/zero")
    os.symlink("/dev/zero", tmp_path / "zero-out.txt")
    result: dict[str, object] = {}
    t = threading.Thread(target=lambda: result.update(r=_ids(root)), daemon=True)
    t.start()
    t.join(60)  # a generous bound: the old code never returns from the FIFO
    assert not t.is_alive(), "reading a folder with a FIFO blocked"
    ids, problems = result["r"]  # type: ignore[misc]
    assert ids == {"good.txt"}
    msgs = {Path(p.path).name: p.message for p in problems}
    assert "regular file" in msgs["fifo.txt"]
    assert "outside the corpus" in msgs["zero.txt"]


def test_special_file_inside_the_root_via_symlink(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    os.mkfifo(root / "fifo.pipe")
    (root / "via.txt").symlink_to(root / "fifo.pipe")
    ids, problems = _ids(root)
    assert ids == {"good.txt"}
    assert any("regular file" in p.message for p in problems)


def test_oversize_file_is_skipped_without_reading_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 8: a file over the byte limit or an article over the character limit is skipped."""
    root = _corpus(tmp_path)
    monkeypatch.setattr(ingest_base, "MAX_FILE_BYTES", 10_000)
    monkeypatch.setattr(ingest_base, "MAX_ARTICLE_CHARS", 5_000)
    (root / "huge.txt").write_text("Huge\n" + "word " * 10_000, encoding="utf-8")
    (root / "long.txt").write_text("Long\n" + "A sentence of words. " * 400, encoding="utf-8")
    (root / "big.jsonl").write_text(
        json.dumps({"id": "ok", "text": GOOD})
        + "\n"
        + json.dumps({"id": "toolong", "text": "x " * 4000})
        + "\n"
        + json.dumps({"id": "hugeline", "text": "y" * 20_000})
        + "\n"
        + json.dumps({"id": "after", "text": GOOD})
        + "\n",
        encoding="utf-8",
    )
    ids, problems = _ids(root)
    assert ids == {"good.txt", "ok", "after"}
    text = "\n".join(str(p) for p in problems)
    assert "huge.txt" in text and "over the limit of 10,000" in text
    assert "long.txt" in text and "SEARCH_MAX_ARTICLE_CHARS" in text
    assert "big.jsonl:3" in text and "big.jsonl:2" in text


def test_engine_refuses_an_oversize_article_alone(hash_engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_base, "MAX_ARTICLE_CHARS", 1_000)
    r = hash_engine.add(
        [Article(id="big", title="Big", text="word " * 1000), Article(id="ok", title="Ok", text=GOOD)]
    )
    assert r.added == ["ok"]
    assert any("big" in p and "limit" in p for p in r.problems)


def test_deep_nesting_costs_only_its_line(tmp_path: Path) -> None:
    """Item 4: 100,000 nested brackets raised RecursionError and lost the whole batch."""
    root = _corpus(tmp_path)
    deep = '{"id":"a","text":"x","x":' + "[" * 100_000 + "]" * 100_000 + "}"
    (root / "deep.jsonl").write_text(
        deep + "\n" + json.dumps({"id": "b", "text": GOOD}) + "\n", encoding="utf-8"
    )
    ids, problems = _ids(root)
    assert ids == {"good.txt", "b"}
    assert any(p.line == 1 and "nested" in p.message for p in problems)


def test_lone_surrogates_cost_only_their_record(tmp_path: Path) -> None:
    """Item 5: a lone surrogate in a record's text or id, or a non-UTF-8 file name."""
    root = _corpus(tmp_path)
    (root / "s.jsonl").write_text(
        '{"id": "t1", "text": "goal \\ud83d goal"}\n'
        '{"id": "bad\\ud800", "text": "fine text here"}\n' + json.dumps({"id": "t3", "text": GOOD}) + "\n",
        encoding="utf-8",
    )
    os.close(os.open(os.fsencode(root) + b"/caf\xe9.txt", os.O_WRONLY | os.O_CREAT))
    with open(os.fsencode(root) + b"/caf\xe9.txt", "w", encoding="utf-8") as f:
        f.write("Cafe\n" + GOOD)
    ids, problems = _ids(root)
    assert ids == {"good.txt", "t3"}
    text = "\n".join(str(p) for p in problems)
    assert "s.jsonl:1" in text and "s.jsonl:2" in text and "surrogate" in text
    assert "caf\ufffd.txt" in text and "not valid Unicode" in text
    text.encode("utf-8")  # every message can be printed


def test_a_date_out_of_range_costs_only_the_date(tmp_path: Path) -> None:
    """Hardening: a published date that is in year 10000 once in UTC was an OverflowError
    traceback from `search add`, and every other record of the batch was lost."""
    root = _corpus(tmp_path)
    (root / "d.jsonl").write_text(
        json.dumps({"id": "late", "text": GOOD, "published": "9999-12-31T23:59:59-05:00"})
        + "\n"
        + json.dumps({"id": "early", "text": GOOD, "published": "0001-01-01T00:00:00+05:00"})
        + "\n"
        + json.dumps({"id": "fine", "text": GOOD, "published": "2005-03-01"})
        + "\n",
        encoding="utf-8",
    )
    arts, _ = ingest.load(root)
    got = {a.id: (a.published, a.published_ts) for a in arts}
    assert set(got) == {"good.txt", "late", "early", "fine"}
    assert got["late"] == ("9999-12-31T23:59:59-05:00", None)  # the raw string is kept
    assert got["early"][1] is None and got["fine"][1] is not None


def test_a_title_over_the_http_limit_is_cut_with_a_warning(tmp_path: Path) -> None:
    """Hardening: a JSONL or feed title of 200,000 characters was kept whole, while POST
    /documents takes at most 2,000. It is cut to 2,000 (the article is kept) and said."""
    from search.server_params import ArticleBody

    limit = ArticleBody.model_fields["title"].metadata[0].max_length
    assert limit == ingest_base.MAX_TITLE_CHARS == 2_000  # one limit for both ways in
    root = _corpus(tmp_path)
    long = "Lampard " * 25_000
    (root / "t.jsonl").write_text(
        json.dumps({"id": "long", "title": long, "text": GOOD})
        + "\n"
        + json.dumps({"id": "fits", "title": "x" * 2_000, "text": GOOD})
        + "\n",
        encoding="utf-8",
    )
    (root / "f.rss").write_text(
        f"<rss><channel><item><title>{long}</title><description>{GOOD}</description>"
        "<link>http://example.com/1</link></item></channel></rss>",
        encoding="utf-8",
    )
    arts, problems = ingest.load(root)
    got = {a.id: a for a in arts}
    assert set(got) == {"good.txt", "long", "fits", "http://example.com/1"}
    assert len(got["fits"].title) == 2_000 and not got["fits"].title.endswith("…")
    for doc_id in ("long", "http://example.com/1"):
        assert len(got[doc_id].title) <= 2_000 and got[doc_id].title.startswith("Lampard Lampard")
        assert got[doc_id].title.endswith("…")
    text = [str(p) for p in problems]
    assert len(text) == 2 and all(
        "the title is 199,999 characters, over the limit of 2,000: cut to 2,000" in t for t in text
    ), text


def test_engine_skips_an_article_with_a_surrogate(hash_engine) -> None:
    r = hash_engine.add(
        [Article(id="x", title="T", text="goal \ud800 goal"), Article(id="y", title="Y", text=GOOD)]
    )
    assert r.added == ["y"] and len(r.problems) == 1 and "surrogate" in r.problems[0]


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u3000\u2028"])
def test_engine_skips_an_article_with_no_text(hash_engine, text: str) -> None:
    """Hardening: white space only was a ValueError traceback from the local write (and
    a document with no passage on Milvus); it costs only itself, as in JSONL."""
    r = hash_engine.add([Article(id="x", title="T", text=text), Article(id="y", title="Y", text=GOOD)])
    assert r.added == ["y"] and len(r.problems) == 1 and "x: the article has no text" in r.problems[0]
    assert [h.passage.doc_id for h in hash_engine.search("Lampard", k=3)] == ["y"]


def _stuck_index(tmp_path: Path) -> Path:
    """An index as a writer killed between renaming gen-N into place and switching CURRENT leaves it."""
    path = tmp_path / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.add([Article(id="a.txt", title="A", text=GOOD)])
    cur = (path / "CURRENT").read_text().strip()
    n = int(cur.split("-")[1])
    shutil.copytree(path / cur, path / f"gen-{n + 1:06d}")
    return path


@pytest.mark.parametrize("op", ["add", "remove", "reindex", "index"])
def test_writer_killed_in_the_commit_window_does_not_block_the_next(tmp_path: Path, op: str) -> None:
    """Item 3: a leftover generation newer than CURRENT made every later write fail (ENOTEMPTY)."""
    path = _stuck_index(tmp_path)
    src = tmp_path / "b.txt"
    src.write_text("B story\n" + GOOD.replace("Chelsea", "Arsenal"), encoding="utf-8")
    with Engine.open(path, embedder=HashEmbedder()) as e:
        if op == "add":
            e.add([src])
            assert {d.id for d in e.documents()} == {"a.txt", "b.txt"}
        elif op == "remove":
            e.remove(["a.txt"])
            assert e.documents() == []
        elif op == "index":
            e.index([src])
            assert {d.id for d in e.documents()} == {"b.txt"}
        else:
            e.add([src])
            e.reindex()  # rebuilds what the index holds: the article added as an object too
            assert {d.id for d in e.documents()} == {"a.txt", "b.txt"}
    assert (path / (path / "CURRENT").read_text().strip()).is_dir()


def test_writer_killed_before_the_first_current(tmp_path: Path) -> None:
    """A writer killed while creating the index leaves gen-000001 and no CURRENT."""
    path = tmp_path / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()):
        pass
    (path / "CURRENT").unlink()
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.add([Article(id="a.txt", title="A", text=GOOD)])
        assert [d.id for d in e.documents()] == ["a.txt"]


def test_a_symlink_loop_among_explicit_paths_costs_only_itself(tmp_path: Path) -> None:
    """Hardening (found by scripts/hostile.py): `search add a.txt good.txt`, a.txt a link to
    b.txt and b.txt to a.txt, was a RuntimeError traceback from resolving a.txt for its root,
    and good.txt was lost with it; `search index` the same. A loop as --root was one too."""
    from search.errors import IngestError

    root = _corpus(tmp_path)
    (root / "a.txt").symlink_to(root / "b.txt")
    (root / "b.txt").symlink_to(root / "a.txt")
    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder()) as e:
        r = e.add([root / "a.txt", root / "good.txt"])
        assert r.added == ["good.txt"], r
        assert len(r.problems) == 1 and r.problems[0].startswith(str(root / "a.txt")), r.problems
        r = e.index([root / "a.txt", root / "good.txt"])
        assert {d.id for d in e.documents()} == {"good.txt"}
        with pytest.raises(IngestError, match="give a folder as --root"):
            e.add([root / "good.txt"], root=root / "a.txt")
        assert {d.id for d in e.documents()} == {"good.txt"}


def test_click_here_teasers_cost_linear_time(tmp_path: Path) -> None:
    """Hardening: the inline "Click here to ..." remover scanned from every teaser to the end
    of its line for a sentence end: 128,000 characters of '” Click here to ' took 9 s and an
    article at the 200,000 limit over 20 s (quadratic), in the write path of POST /documents."""
    import time

    from search.ingest_text import clean_text

    text = "” Click here to " * 12_500
    t0 = time.perf_counter()
    clean_text(text)
    assert time.perf_counter() - t0 < 2.0
    kept = clean_text("Kane scored. Click here to read more about the match. Then Son equalised.")
    assert kept == "Kane scored. Then Son equalised."


@pytest.mark.parametrize("run", [".", "!?", "…"])
def test_a_long_run_of_stops_is_cut_into_sentences_in_linear_time(run: str) -> None:
    """Hardening: the sentence-end pattern tried every start inside a run of full stops and
    backtracked through it: 16,000 dots took 10 s to split, an article at the 200,000 limit
    some 25 minutes, all of it under the index's write lock."""
    import time

    from search.chunk_sentences import _split_sentences

    text = "Kane scored. " + run * (60_000 // len(run)) + "x. Then Son equalised."
    t0 = time.perf_counter()
    spans = _split_sentences(text, 0, len(text))
    assert time.perf_counter() - t0 < 2.0
    assert text[spans[0][0] : spans[0][1]] == "Kane scored."
    assert text[spans[-1][0] : spans[-1][1]] == "Then Son equalised."


def test_a_long_run_of_stops_inside_a_word_chunks_in_linear_time() -> None:
    """Hardening: the names scan asked of every word whether it ends a clause, a search that
    tried every start in a run of stops: one 20,000-dot word took 6 s to chunk."""
    import time

    from search.chunk import chunk

    text = "Kane scored. " + "." * 60_000 + "x. Then Son equalised."
    t0 = time.perf_counter()
    passages = chunk("d", text)
    assert time.perf_counter() - t0 < 3.0
    assert passages and all(text[p.start : p.end] == p.text for p in passages)
