"""The CLI: exit codes and the exact one-line errors a user sees (no tracebacks)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from search.cli import cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with the seeds, using the fast fake embedder."""
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    monkeypatch.delenv("SEARCH_INDEX", raising=False)
    return tmp_path


def run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_every_command_has_help_with_an_example() -> None:
    for name, cmd in cli.commands.items():
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Example" in (cmd.help or ""), f"`search {name}` help has no example"


def test_ask_builds_index_from_seeds_first(workdir: Path) -> None:
    r = run("ask", "who scored the winner", "--json")
    assert r.exit_code == 0, r.output
    assert "building one from seeds/ first" in r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("{")][0]
    d = json.loads(line)
    assert d["question"] == "who scored the winner" and d["mode"] == "hybrid"
    assert set(d["passages"][0]) >= {
        "rank",
        "passage_id",
        "doc_id",
        "title",
        "source",
        "start",
        "end",
        "text",
        "score",
        "bm25_rank",
        "dense_rank",
    }
    art = (workdir / "seeds" / d["passages"][0]["doc_id"]).read_text(encoding="utf-8")
    p = d["passages"][0]
    assert art.replace("\r\n", "\n")[p["start"] : p["end"]] == p["text"] or p["text"] in art


def test_human_output_cites_passages(workdir: Path) -> None:
    assert run("index").exit_code == 0
    r = run("ask", "who scored the winner", "--mode", "bm25")
    assert r.exit_code == 0
    assert "[1]" in r.stdout and ".txt:" in r.stdout


@pytest.mark.parametrize(
    "question, message",
    [
        ("", "Error: the question is empty"),
        ("   ", "Error: the question is empty"),
        ("?!* :: ()", "Error: the question has no words to search for"),
        ("x" * 100_000, "Error: the question is 100,000 characters long; the limit is 2,000: shorten it"),
    ],
)
def test_bad_questions(workdir: Path, question: str, message: str) -> None:
    r = run("ask", question)
    assert r.exit_code == 2  # a bad question is a usage mistake (#14)
    assert r.stderr.strip().splitlines()[-1].startswith(message)
    assert "Traceback" not in r.output


def test_query_syntax_is_just_text(workdir: Path) -> None:
    run("index")
    for q in ['"who scored', "winner AND NOT", "win* OR ?", "title:(Messi", "[Kane]]"]:
        r = run("ask", q, "--mode", "bm25", "--json")
        assert r.exit_code == 0, (q, r.output)


def test_missing_path_and_not_an_index(workdir: Path) -> None:
    r = run("index", "nope/")
    assert r.exit_code == 1 and "Error: nope/: no such file or folder" in r.stderr
    (workdir / "notindex").mkdir()
    (workdir / "notindex" / "data.bin").write_bytes(b"\x00\x01")
    r = run("ask", "who scored", "--index", "notindex")
    assert r.exit_code == 1
    assert "is not an index (no CURRENT file)" in r.stderr


def test_bad_files_in_a_batch_are_warnings(workdir: Path) -> None:
    d = workdir / "batch"
    d.mkdir()
    (d / "good.txt").write_text(
        "Kane scored a penalty.\n\nEngland won the match 1-0 at Wembley.", encoding="utf-8"
    )
    (d / "empty.txt").write_text("", encoding="utf-8")
    (d / "binary.txt").write_bytes(b"\x00\xff\x00\xfe" * 50)
    (d / "legacy.txt").write_bytes("Caf\xe9 society: the goal cost \xa35.".encode("latin-1"))
    r = run("index", str(d))
    assert r.exit_code == 0, r.output
    assert "empty.txt" in r.stderr and "binary.txt" in r.stderr and "legacy.txt" in r.stderr
    r = run("list", "--json")
    ids = sorted(json.loads(x)["id"] for x in r.stdout.splitlines())
    assert ids == ["good.txt", "legacy.txt"]


def test_failed_index_keeps_previous(workdir: Path) -> None:
    assert run("index").exit_code == 0
    (workdir / "empty").mkdir()
    r = run("index", "empty")
    assert r.exit_code == 1 and "no articles could be read" in r.stderr
    r = run("ask", "who scored the winner", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["passages"]


def test_eval_json_and_bad_file(workdir: Path) -> None:
    qs = workdir / "q.jsonl"
    qs.write_text(
        json.dumps(
            {
                "id": "a",
                "question": "who scored the winner",
                "answers": ["Martinez"],
                "evidence": ["Lautaro Martinez"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    r = run("eval", str(qs), "--mode", "bm25", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert {"mode", "n", "hit@1", "recall@5", "mrr@10", "misses"} <= set(d) and d["n"] == 1
    bad = workdir / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    r = run("eval", str(bad))
    assert r.exit_code == 1 and "bad.jsonl:1: not a question record" in r.stderr


def test_show_and_remove(workdir: Path) -> None:
    run("index")
    doc = "000_e3a89f9a78d59e55.txt"
    r = run("show", doc, "--span", "0:30")
    assert r.exit_code == 0 and "cited span 0:30" in r.stdout
    # Not a terminal: a highlight would not show, so the span is marked in the text.
    marked = r.stdout.split("\n\n", 1)[1].split("[[", 1)[1].split("]]", 1)[0]  # the body, not the header
    d = json.loads(run("show", doc, "--span", "0:30", "--json").stdout)
    assert d["span"] == {"start": 0, "end": 30, "text": d["text"][:30]}
    assert " ".join(marked.split()) == " ".join(d["text"][:30].split())
    r = run("show", doc, "--span", "10:5")
    assert r.exit_code == 2 and "need 0 <= START < END" in r.stderr
    for loose in ("+5:30", "1_0:30", "5: 30", "٣:30"):  # int() reads these; ?span= does not
        r = run("show", doc, "--span", loose)
        assert r.exit_code == 2 and "is not START:END" in r.stderr, (loose, r.stderr)
    r = run("show", "nope.txt")
    assert r.exit_code == 1 and "no document 'nope.txt'" in r.stderr
    r = run("remove", "nope.txt")
    assert r.exit_code == 1 and "none of the ids is in the index" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # no warning and "removed 0" first
    r = run("remove", doc)
    assert r.exit_code == 0
    r = run("stats", "--json")
    assert json.loads(r.stdout)["documents"] == 4


def test_ask_without_index_or_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no seeds/ here to build from
    r = run("ask", "who scored the winner", "--index", "missing")
    assert r.exit_code == 1
    assert (
        r.stderr.strip()
        == "Error: no index at missing: create it with `search index --index missing [PATH...]`"
    )


def test_a_mistyped_index_is_an_error_not_a_new_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#16: inside a checkout (seeds/ present) --index typo used to build a new index quietly."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "a.txt").write_text(
        "Title\nLautaro Martinez scored the winner.\n", encoding="utf-8"
    )
    for args in (("ask", "who scored"), ("add", "seeds/a.txt"), ("remove", "a.txt")):
        r = run(*args, "--index", "indx")
        assert r.exit_code == 1, args
        assert "no index at indx: create it with `search index --index indx" in r.stderr
    assert not (tmp_path / "indx").exists()


def test_min_confidence_sets_the_bar_for_a_short_answer(workdir: Path) -> None:
    def answer(*extra: str) -> dict[str, object]:
        r = run("ask", "who scored the winner", "--json", *extra)
        assert r.exit_code == 0, r.output
        line = [x for x in r.stdout.splitlines() if x.startswith("{")][0]
        return json.loads(line)["answer"]

    low, high = answer("--min-confidence", "0"), answer("--min-confidence", "1")
    assert low["text"] and low["needed"] == 0.0
    assert not high["text"] and high["needed"] == 1.0 and high["sentences"]
    r = CliRunner().invoke(cli, ["ask", "who scored", "--min-confidence", "1.5"])
    assert r.exit_code == 2 and "--min-confidence" in r.output and "Traceback" not in r.output


def test_a_filter_nothing_passes_promises_no_passages(workdir: Path) -> None:
    """It said "the closest passages follow" and then that no passage passes the filters."""
    r = run("ask", "who scored the winner", "--source", "Nobody")
    assert r.exit_code == 0, r.output
    assert "No passage passes the filters." in r.stdout and "follow" not in r.stdout
    r = run("ask", "who scored the winner")
    assert "No passage passes the filters." not in r.stdout
