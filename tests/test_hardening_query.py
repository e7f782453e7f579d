"""The query path under hostile input: filters of the wrong shape, a damaged index, a bad
question file, out-of-range settings. Each is a user's mistake (one line, a 4xx, a tool
error) or the index's state (one line naming it and what to do), never a traceback or a 500.

In-process (FastAPI's TestClient, click's CliRunner) over the seeds indexed with the fake
HashEmbedder.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
LOCAL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from search.embed import HashEmbedder
    from search.engine import Engine

    path = tmp_path_factory.mktemp("hostq") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.index([SEEDS])
    return path


@pytest.fixture
def index_copy(seed_index: Path, tmp_path: Path) -> Path:
    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)
    return idx


@pytest.fixture
def client(seed_index: Path) -> Iterator[TestClient]:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.server import create_app

    with Engine.open(seed_index, embedder=HashEmbedder()) as e:
        with TestClient(create_app(e), base_url=LOCAL, raise_server_exceptions=False) as c:
            yield c


# -- a "where" filter that is neither a string nor a list ------------------------------------
@pytest.mark.parametrize("where", [5, True, 1.5])
def test_a_where_filter_of_the_wrong_type_is_400_bad_filter(client: TestClient, where: Any) -> None:
    """{"filters": {"where": 5}} raised a TypeError inside Filters: a 500."""
    r = client.post("/ask", json={"question": "who scored", "filters": {"where": where}})
    assert r.status_code == 400, r.text
    body = r.json()["error"]
    assert body["code"] == "bad_filter" and "where" in body["message"], body
    assert "\n" not in body["message"]


def test_filters_of_a_where_that_is_no_string_or_list_is_a_filter_error() -> None:
    from search.errors import FilterError
    from search.filters import Filters

    with pytest.raises(FilterError, match="where"):
        Filters.of({"where": 5})
    assert Filters.of({"where": "category=football"}).fields() == {"category"}


# -- a damaged index: one line naming it, 503 over HTTP, never a traceback or "usage" error ----
def _damage(idx: Path, pattern: str) -> Path:
    """Truncate the live generation's first file matching ``pattern`` to 100 bytes."""
    gen = (idx / "CURRENT").read_text().strip()
    target = sorted((idx / gen).glob(pattern))[0]
    with open(target, "r+b") as f:
        f.truncate(100)
    return target


@pytest.mark.parametrize(
    ("pattern", "args"),
    [
        ("table.loc.npy", ["ask", "who scored", "--mode", "bm25"]),  # read as the index opens
        ("table.loc.npy", ["stats"]),
        ("seg-*.store.bin", ["show", "002_547adb95b189fdfd.txt"]),  # read when an article is
        ("seg-*.store.bin", ["ask", "who scored", "--mode", "bm25"]),
        ("seg-*.store.bin", ["list"]),
    ],
)
def test_a_damaged_index_is_one_line_naming_it_on_the_cli(
    index_copy: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, args: list[str]
) -> None:
    """A truncated file was a traceback (zlib.error), "Aborted!" (an EOFError click took for
    ^D) or numpy's text as a usage mistake ("... (see search --help)", exit 2)."""
    from click.testing import CliRunner

    from search.cli import cli

    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    _damage(index_copy, pattern)
    r = CliRunner().invoke(cli, [*args, "--index", str(index_copy)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the index is damaged"), r.stderr
    assert f"a file in {index_copy} cannot be read" in lines[0], r.stderr
    assert "search index" in lines[0] and "--help" not in lines[0] and "pickle" not in lines[0]


def test_a_damaged_index_is_503_over_http_and_the_server_keeps_serving(index_copy: Path) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.server import create_app

    with Engine.open(index_copy, embedder=HashEmbedder()) as e:
        _damage(index_copy, "seg-*.store.bin")
        with TestClient(create_app(e), base_url=LOCAL, raise_server_exceptions=False) as c:
            for path in ("/documents/002_547adb95b189fdfd.txt", "/ask?q=who+scored&mode=bm25", "/documents"):
                r = c.get(path)
                assert r.status_code == 503, (path, r.text)
                assert r.json()["error"]["code"] == "index_unavailable", r.text
            assert c.get("/healthz").status_code == 200


def test_bad_arguments_stay_the_callers_mistake_and_a_damaged_index_is_index_format_error(
    index_copy: Path,
) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.errors import IndexFormatError, QueryError

    with Engine.open(index_copy, embedder=HashEmbedder()) as e:
        _damage(index_copy, "seg-*.store.bin")
        with pytest.raises(ValueError, match="k must be") as got:
            e.search("who scored", k=0)
        assert not isinstance(got.value, IndexFormatError)
        with pytest.raises(ValueError, match="unknown mode"):
            e.ask("who scored", mode="evil")
        with pytest.raises(QueryError, match="empty"):
            e.ask("  ")
        with pytest.raises(IndexFormatError, match="is damaged"):
            e.get_document("002_547adb95b189fdfd.txt")
        with pytest.raises(IndexFormatError, match="is damaged"):
            e.ask("who scored", mode="bm25")


# -- k on Engine.ask, as Engine.search takes it ------------------------------------------------
@pytest.mark.parametrize("k", [0, -1, 101, 10**9, True, 5.5, "5", None])
@pytest.mark.parametrize("answer", [True, False])
def test_ask_refuses_a_k_that_search_refuses(seed_index: Path, k: Any, answer: bool) -> None:
    """Hardening: ask checked only max(k, 20) capped at 100, so k=0, -1 and 10**9 were taken
    (k=-1 returned all passages but the last), and k="5" or None was a TypeError."""
    from search.embed import HashEmbedder
    from search.engine import Engine

    with Engine.open(seed_index, embedder=HashEmbedder()) as e:
        with pytest.raises(ValueError, match="k must be a whole number from 1 to 100"):
            e.ask("who scored", k=k, answer=answer)
        assert len(e.ask("who scored", k=100, answer=answer).hits) >= 1


# -- a date filter at the end of the calendar ---------------------------------------------------
@pytest.mark.parametrize("until", ["9999", "9999-12", "9999-12-31"])
def test_a_bound_on_the_last_day_there_is_is_a_filter_not_damage(client: TestClient, until: str) -> None:
    """Hardening: the end of year 9999 overflowed while the filter was typed, inside the
    index read, so "until 9999" was "the index is damaged" (a 503 over HTTP)."""
    for bound in ("until", "since"):
        r = client.get("/search", params={"q": "who scored", bound: until, "mode": "bm25"})
        assert r.status_code == 200, r.text


def test_until_the_last_year_there_is_keeps_every_dated_article(hash_engine: Any) -> None:
    from search.types import Article

    text = "Lampard scored twice as Chelsea beat Portsmouth at Stamford Bridge."
    hash_engine.add([Article(id="a", title="A", text=text, published="2005-03-01")])
    assert [h.passage.doc_id for h in hash_engine.search("Lampard", filters={"until": "9999"})] == ["a"]
    assert hash_engine.search("Lampard", filters={"since": "9999-12-31"}) == []


@pytest.mark.parametrize("since", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"])
def test_a_date_outside_the_calendar_in_utc_is_400_bad_filter(client: TestClient, since: str) -> None:
    r = client.get("/search", params={"q": "who scored", "since": since})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "bad_filter" and "not a date" in r.json()["error"]["message"]


# -- `search eval` with a question file that is not one ---------------------------------------
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe\x00garbage\x80\x81", "not UTF-8 text"),
        (b"[" * 100_000 + b"\n", ":1: not a question record"),
        (
            b'{"id": "a", "question": "who scored", "answers": [], "evidence": []}\n'
            b'{"id": "b", "question": "   ", "answers": [], "evidence": []}\n',
            ":2: question b: the question is empty",
        ),
        (
            b'{"id": "a", "question": 5, "answers": [], "evidence": []}\n',
            ":1: question a: the question must be text",
        ),
        # hardening: a lone string was taken letter by letter ("a" is in any answer)
        (
            b'{"id": "a", "question": "who scored", "answers": "abc", "evidence": []}\n',
            ':1: "answers" is a string, not a list of strings: write "answers": ["abc"]',
        ),
        (
            b'{"id": "a", "question": "who scored", "answers": [], "evidence": "Martinez"}\n',
            ':1: "evidence" is a string, not a list of strings',
        ),
        (
            b'{"id": "a", "question": "who scored", "answers": [null], "evidence": []}\n',
            ':1: "answers" must be a list of strings',
        ),
        (
            b'{"id": "a", "question": "who scored", "answers": [], "evidence": {"x": 1}}\n',
            ':1: "evidence" must be a list of strings',
        ),
    ],
)
def test_a_bad_question_file_is_one_line_naming_the_file(
    seed_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, says: str
) -> None:
    """A binary file was the codec's text passed off as a usage mistake (no file named), a
    deeply nested line a RecursionError traceback, a blank question stopped the run with no
    line named."""
    from click.testing import CliRunner

    from search.cli import cli

    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    qfile = tmp_path / "q.jsonl"
    qfile.write_bytes(content)
    r = CliRunner().invoke(cli, ["eval", str(qfile), "--index", str(seed_index), "--mode", "bm25"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {qfile}") and says in lines[0], r.stderr


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs /proc")
def test_a_question_file_that_cannot_be_read_is_one_line_naming_it(
    seed_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hardening: a question file the user may not read (PermissionError) or whose read fails
    (EIO: /proc/self/mem stands for it, root reads every mode bit) was a traceback."""
    import builtins

    from click.testing import CliRunner

    from search.cli import cli

    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    locked = tmp_path / "locked.jsonl"
    locked.write_text('{"id": "a", "question": "who scored", "answers": [], "evidence": []}\n')
    real_open = builtins.open

    def fake_open(path: Any, *a: Any, **kw: Any) -> Any:
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)
    for qfile, says in ((str(locked), "Permission denied"), ("/proc/self/mem", "Input/output error")):
        r = CliRunner().invoke(cli, ["eval", qfile, "--index", str(seed_index), "--mode", "bm25"])
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert r.exit_code == 1, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {qfile}: cannot read") and says in lines[0]


def test_min_confidence_nan_is_a_usage_mistake(
    seed_index: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """click's FloatRange(0, 1) took nan, which no confidence reaches: every short answer
    was silently withheld (SEARCH_MIN_CONFIDENCE=nan is refused)."""
    from search.cli import main

    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    with pytest.raises(SystemExit) as got:
        main(["ask", "who scored", "--min-confidence", "nan", "--index", str(seed_index)])
    err = capsys.readouterr().err.strip().splitlines()
    assert got.value.code == 2 and len(err) == 1 and "--min-confidence" in err[0], err


def test_a_mistake_in_the_code_is_not_reported_as_a_damaged_index() -> None:
    """A TypeError or AttributeError is a bug to report, which rebuilding would not fix."""
    from search.errors import IndexFormatError, reading_index

    with pytest.raises(IndexFormatError, match="is damaged"):
        with reading_index("/some/index"):
            raise EOFError("No data left in file")
    for bug in (TypeError("unsupported operand"), AttributeError("no attribute 'x'")):
        with pytest.raises(type(bug)):
            with reading_index("/some/index"):
                _raise_inside_the_package(bug)
    with pytest.raises(IndexFormatError, match="is damaged"):  # raised by a library reading a file
        with reading_index("/some/index"):
            ord("")


def _raise_inside_the_package(e: Exception) -> None:
    from search import errors

    code = compile("def boom(e):\n    raise e\n", errors.__file__, "exec")
    ns: dict[str, Any] = {}
    exec(code, ns)
    ns["boom"](e)


def test_writing_over_a_damaged_store_says_the_index_is_damaged(index_copy: Path) -> None:
    """A rebuild or an add reads the records already stored (to tell added from replaced):
    a damaged store is the index's state, not JSON's text shown as a usage mistake."""
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.errors import IndexFormatError

    with Engine.open(index_copy, embedder=HashEmbedder()) as e:
        _damage(index_copy, "seg-*.store.bin")
        for write in (lambda: e.index([SEEDS]), lambda: e.add([SEEDS / "000_e3a89f9a78d59e55.txt"])):
            with pytest.raises(IndexFormatError, match="is damaged"):
                write()


def test_a_huge_unknown_document_id_is_not_echoed_whole(seed_index: Path) -> None:
    """MCP has no length cap on ``doc_id`` (HTTP's is 200): the one-line error stays one
    short line however long the id."""
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.errors import DocumentNotFoundError

    with Engine.open(seed_index, embedder=HashEmbedder()) as e:
        with pytest.raises(DocumentNotFoundError) as got:
            e.get_document("x" * 100_000)
        assert len(str(got.value)) < 200 and "100000 characters" in str(got.value)
        with pytest.raises(DocumentNotFoundError, match="no document 'nope.txt' in the index"):
            e.get_document("nope.txt")


def _scramble_offsets(idx: Path) -> None:
    """Overwrite part of the live generation's article offsets with garbage (the array's
    header kept), as a bad disk sector or a stray write would."""
    gen = (idx / "CURRENT").read_text().strip()
    target = sorted((idx / gen).glob("seg-*.store.npy"))[0]
    raw = bytearray(target.read_bytes())
    raw[200:260] = b"x" * 60
    target.write_bytes(bytes(raw))


def test_scrambled_article_offsets_are_a_damaged_index_not_a_memory_error(
    index_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offsets far past the file asked os.pread for exabytes: a MemoryError traceback."""
    from click.testing import CliRunner

    from search.cli import cli

    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    _scramble_offsets(index_copy)
    r = CliRunner().invoke(cli, ["ask", "who scored the winner", "--index", str(index_copy)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the index is damaged"), r.stderr
    assert "outside the" in lines[0]


def test_reindex_of_a_damaged_index_rebuilds_it_from_the_recorded_sources(
    index_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`search reindex` read the stored text back and failed on the damage, so the advice
    was to build again by hand; the index records its sources, so it rebuilds from them and
    says so."""
    from click.testing import CliRunner

    from search.cli import cli
    from search.embed import HashEmbedder
    from search.engine import Engine

    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    _scramble_offsets(index_copy)
    r = CliRunner().invoke(cli, ["reindex", "--index", str(index_copy)])
    assert r.exit_code == 0, r.output
    assert "the index is damaged: rebuilt from the 1 source(s) it recorded" in r.stderr
    with Engine.open(index_copy, embedder=HashEmbedder()) as e:
        assert e.list_documents()[1] == 5
        assert e.ask("who scored the winner").hits
