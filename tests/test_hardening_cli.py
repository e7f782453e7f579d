"""The CLI under hostile input (#14): a question that is not text, an unreadable file
among explicit paths, and library log lines that must not reach the user without -v.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from search.cli import cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    monkeypatch.delenv("SEARCH_INDEX", raising=False)
    from search.engine import Engine

    Engine.open(tmp_path / "index", create=True, embedder="hash").close()  # only `index` creates (#16)
    return tmp_path


def _env() -> dict[str, str]:
    env = {**os.environ, "SEARCH_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", str(ROOT))
    env.pop("SEARCH_INDEX", None)
    return env


# -- 6: a lone surrogate on the command line is one line and exit 2 -------------------------
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_ask_with_a_lone_surrogate_is_one_line_and_exit_2(workdir: Path, mode: str) -> None:
    CliRunner().invoke(cli, ["index"], catch_exceptions=False)
    r = CliRunner().invoke(cli, ["ask", "goal \udcff goal", "--mode", mode], catch_exceptions=False)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the question holds a character that is not text")


@pytest.mark.integration
def test_ask_with_non_utf8_argv_bytes_in_a_real_process(workdir: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "search", "index"], cwd=workdir, env=_env(), check=True, capture_output=True
    )
    r = subprocess.run(
        [sys.executable.encode(), b"-m", b"search", b"ask", b"goal \xff goal", b"--mode", b"dense"],
        cwd=workdir,
        env=_env(),
        capture_output=True,
    )
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- 9: one unreadable explicit path costs only itself --------------------------------------
def test_an_unreadable_explicit_file_is_skipped_with_a_warning(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import search.ingest as ingest

    good = workdir / "good.txt"
    good.write_text("Messi scored the winner in the final.\n\nArgentina won the cup after extra time.\n")
    locked = workdir / "locked.txt"
    locked.write_text("Kane missed a penalty.\n")
    real_open = os.open

    def fake_open(path: object, *a: object, **kw: object) -> int:
        if os.fspath(path).endswith("locked.txt"):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[arg-type]
        return real_open(path, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest.os, "open", fake_open)
    r = CliRunner().invoke(cli, ["add", str(good), str(locked)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "1 added" in r.stderr
    warn = [line for line in r.stderr.splitlines() if "locked.txt" in line]
    assert len(warn) == 1 and warn[0].startswith("warning: ") and "Permission denied" in warn[0]
    assert "Traceback" not in r.output

    # The same file inside a folder gets the same single line.
    folder = workdir / "folder"
    folder.mkdir()
    shutil.copy(good, folder / "good2.txt")
    shutil.copy(locked, folder / "locked.txt")
    r = CliRunner().invoke(cli, ["add", str(folder)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert len([line for line in r.stderr.splitlines() if "locked.txt" in line]) == 1


def test_only_unreadable_explicit_files_is_one_error_line(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import search.ingest as ingest

    locked = workdir / "locked.txt"
    locked.write_text("Kane missed a penalty.\n")

    real_open = os.open

    def fake_open(path: object, *a: object, **kw: object) -> int:
        if os.fspath(path).endswith("locked.txt"):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[arg-type]
        return real_open(path, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest.os, "open", fake_open)
    r = CliRunner().invoke(cli, ["add", str(locked)], catch_exceptions=False)
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines()[-1].startswith("Error: no article was added")


# -- 10: library logs stay out of the user's way without -v -------------------------------
BROKEN_HTML = {
    "ok.html": "<html><body><p>Messi scored a late goal in the final at the stadium tonight.</p></body></html>",
    "empty.html": "<html></html>",
    "blank.html": "   ",
    "table.html": "<html><body><table><tr><td>",
    "lol.html": '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "x"><!ENTITY b "&a;&a;&a;">]><html><body>&b;</body></html>',
}


@pytest.mark.integration
def test_without_v_library_log_lines_do_not_reach_stderr(tmp_path: Path) -> None:
    html = tmp_path / "html"
    html.mkdir()
    for name, text in BROKEN_HTML.items():
        (html / name).write_text(text)
    from search.engine import Engine

    Engine.open(tmp_path / "idx", create=True, embedder="hash").close()  # only `index` creates (#16)
    cmd = [sys.executable, "-m", "search", "add", str(html), "--index", str(tmp_path / "idx")]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert not [line for line in lines if "trafilatura" in line or line.startswith(("ERROR", "WARNING"))], (
        lines
    )
    # Our own problems: one line each, then the summary.
    assert len([line for line in lines if line.startswith("warning: ")]) == len(BROKEN_HTML) - 1
    assert lines[-1].startswith("add: 1 added")

    verbose = subprocess.run(
        [cmd[0], "-m", "search", "-v", *cmd[3:]], env=_env(), capture_output=True, text=True
    )
    assert "trafilatura" in verbose.stderr  # -v still shows them


def test_configure_logging_sets_model_progress_bars_off_without_v(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    from search.cli import _configure_logging

    for var in ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TQDM_DISABLE"):
        monkeypatch.delenv(var, raising=False)
    root = logging.getLogger()
    level = root.level
    try:
        _configure_logging(False)
        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
        assert os.environ["TQDM_DISABLE"] == "1"
        ours = [h for h in root.handlers if getattr(h, "_search_cli", False)]
        assert len(ours) == 1
        lib = logging.LogRecord("trafilatura.core", logging.ERROR, "", 0, "empty HTML tree", None, None)
        own = logging.LogRecord("search.ingest", logging.WARNING, "", 0, "x", None, None)
        assert not ours[0].filter(lib) and ours[0].filter(own)
    finally:
        for h in [h for h in root.handlers if getattr(h, "_search_cli", False)]:
            root.removeHandler(h)
        root.setLevel(level)


@pytest.mark.slow
def test_search_index_shows_no_model_loading_bar(tmp_path: Path) -> None:
    """sentence-transformers' "Loading weights" bar is a library message too (real model)."""
    env = {**_env(), "SEARCH_EMBEDDER": "sentence-transformers"}
    for var in ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TQDM_DISABLE"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "search", "index", str(ROOT / "seeds"), "--index", str(tmp_path / "idx")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Loading weights" not in r.stderr and "it/s" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip().splitlines()[-1]]


def test_a_problem_with_a_newline_in_its_file_name_is_one_line(workdir: Path) -> None:
    folder = workdir / "odd"
    folder.mkdir()
    (folder / "new\nline.txt").write_text("Kane scored.\n")
    (folder / "fine.txt").write_text("Saka scored the winner in the final.\n")
    r = CliRunner().invoke(cli, ["add", str(folder)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    warn = [line for line in r.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warn) == 1 and "new\\nline.txt" in warn[0], r.stderr
    assert all(line.startswith(("warning: ", "add: ")) for line in r.stderr.splitlines()), r.stderr


@pytest.mark.slow
def test_a_bad_filter_exits_2_while_the_model_still_loads(seed_engine) -> None:
    """The engine loads the model on a thread while the index opens; a filter error came
    back before that load ended and the process aborted (exit 134, "terminate called
    without an active exception") instead of exiting 2 with its one-line error."""
    cmd = [sys.executable, "-m", "search", "ask", "who scored", "--where", "category=football"]
    env = {k: v for k, v in _env().items() if k != "SEARCH_EMBEDDER"}  # the real model
    for _ in range(4):  # the abort came on most runs, not all
        r = subprocess.run([*cmd, "--index", str(seed_engine.path)], env=env, capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
        assert "unknown filter field 'category'" in r.stderr


@pytest.mark.parametrize(
    "args",
    [["show", "x.txt", "--span", "512:356"], ["ask", "--bogus", "x"], ["ask", "-k", "0", "x"], ["nope"]],
)
def test_a_usage_mistake_is_one_line(args: list[str], workdir: Path) -> None:
    """click's usage errors were three lines (Usage:, Try --help, Error:); now one, exit 2."""
    r = subprocess.run([sys.executable, "-m", "search", *args], env=_env(), capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("Error: "), r.stderr
    assert "--help" in r.stderr


def test_help_and_version_still_exit_0(workdir: Path) -> None:
    for args in (["--help"], ["ask", "--help"], ["--version"]):
        r = subprocess.run(
            [sys.executable, "-m", "search", *args], env=_env(), capture_output=True, text=True
        )
        assert r.returncode == 0 and r.stdout and not r.stderr, (args, r.stderr)


# -- ids and paths that look like rich markup are text ------------------------------------------
def test_ids_and_paths_that_look_like_markup_are_printed_as_they_are(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hardening: rich read "[/]" in an id or a path as a closing tag (MarkupError): `search
    list` showed a traceback at its near-duplicate groups, `search remove` after the removal
    was committed (exit 1), `search stats` for an index folder named so, and `search serve`
    on such a --host. A newline in an id made `remove`'s error two lines."""
    import json

    story = "Kane scored the winner in the 90th minute as England beat Wales 2-1 at Wembley tonight."
    recs = [
        {"id": "[/]a", "text": story},
        {"id": "[/]b", "text": story},
        {"id": "[bold]c", "text": "Saka scored."},
    ]
    (workdir / "odd.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    idx = str(workdir / "ix[/]")

    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, [*args, "--index", idx])

    r = run("index", str(workdir / "odd.jsonl"))
    assert r.exit_code == 0, r.output
    r = run("list")
    assert r.exit_code == 0 and r.exception is None, r.output
    assert "[/]a ← [/]b" in r.stdout and "[bold]c" in r.stdout
    r = run("stats")
    assert r.exit_code == 0 and r.exception is None, r.output
    assert idx in r.stdout
    r = run("remove", "[bold]c", "[/]nope")
    assert r.exit_code == 0 and r.exception is None, r.output
    assert "no document '[/]nope'" in r.stderr
    r = run("remove", "x\ny")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "x\\ny" in r.stderr
    import search.server

    monkeypatch.setattr(search.server, "serve", lambda *a, **kw: None)
    r = run("serve", "--host", "[/]", "--embedder", "hash")
    assert r.exit_code == 0 and r.exception is None, r.output
    assert "warning: binding [/]" in r.stderr


# -- hardening: a warning's ":100:" is a line number, not an emoji --------------------------
def test_a_line_number_in_a_warning_is_not_turned_into_an_emoji(workdir: Path) -> None:
    """rich replaced ``:100:`` by 💯, so every warning for line 100 of a file lost its line."""
    good = json.dumps({"id": "g", "title": "Cup", "text": "Messi scored the winner in the final."})
    feed = workdir / "feed.jsonl"
    feed.write_text("\n".join([good] + ["{}"] * 98 + ["{not json"]) + "\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["add", str(feed)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "\U0001f4af" not in r.stderr and f"{feed}:100: malformed JSON" in r.stderr, r.stderr


# -- hardening: thousands of warnings of one kind are a few lines and a count ---------------
def test_many_warnings_of_one_kind_are_capped_with_a_count_per_kind(workdir: Path) -> None:
    """The hostile corpus printed 40,155 warning lines (36,000 of them one duplicated feed
    item): now at most 20 of a kind, then one line saying how many more; -v and --json
    still give every one."""
    good = json.dumps({"id": "g", "title": "Cup", "text": "Messi scored the winner in the final."})
    feed = workdir / "feed.jsonl"
    feed.write_text("\n".join([good] + ["{not json"] * 1234 + ["[]"] * 22) + "\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["add", str(feed)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    lines = r.stderr.strip().splitlines()
    assert len([x for x in lines if f"{feed}:" in x and "malformed JSON" in x]) == 20
    assert len([x for x in lines if f"{feed}:" in x and "got list" in x]) == 20
    more = [x for x in lines if "more like" in x]
    assert more == [
        "warning: ... and 1,214 more like this: malformed JSON (see them all with `search -v add` or --json)",
        "warning: ... and 2 more like this: expected a JSON object, got list "
        "(see them all with `search -v add` or --json)",
    ], more
    assert lines[-1].startswith("add: 1 added")

    r = CliRunner().invoke(cli, ["-v", "add", str(feed), "--replace"], catch_exceptions=False)
    assert len([x for x in r.stderr.splitlines() if x.startswith("warning: ") and str(feed) in x]) == 1256
    assert "more like this" not in r.stderr
    r = CliRunner().invoke(cli, ["add", str(feed), "--json"], catch_exceptions=False)
    assert len(json.loads(r.stdout)["problems"]) == 1256


# -- an error line quotes what it names -------------------------------------------------------
def test_add_of_nothing_readable_says_why_once_without_a_warning_prefix(workdir: Path) -> None:
    """Hardening: "Error: no article was added: warning: pipe.txt: not a regular file ..."."""
    CliRunner().invoke(cli, ["index"], catch_exceptions=False)
    os.mkfifo(workdir / "pipe.txt")
    r = CliRunner().invoke(cli, ["add", str(workdir / "pipe.txt")], catch_exceptions=False)
    assert r.exit_code == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: no article was added: {workdir / 'pipe.txt'}: not a regular file"), last


def test_remove_of_an_empty_id_shows_the_id(workdir: Path) -> None:
    """Hardening: `search remove ''` said "none of the ids is in the index:  (see ...)"."""
    CliRunner().invoke(cli, ["index"], catch_exceptions=False)
    r = CliRunner().invoke(cli, ["remove", "", "nope.txt"], catch_exceptions=False)
    assert r.exit_code == 1
    assert r.stderr.strip() == "Error: none of the ids is in the index: '', 'nope.txt' (see `search list`)"


@pytest.mark.parametrize("where", ["seeds/001_10f36a323a73b675.txt", "seeds"])
def test_an_index_path_that_is_no_index_is_not_to_be_removed(workdir: Path, where: str) -> None:
    """Hardening: `--index seeds/a.txt` (an article) or `--index seeds` said "choose another
    --index directory or remove it": the advice was to delete the user's own articles."""
    before = sorted(p.name for p in (workdir / "seeds").iterdir())
    for cmd in (["ask", "who scored"], ["index", "seeds"]):
        r = CliRunner().invoke(cli, [*cmd, "--index", where], catch_exceptions=False)
        assert r.exit_code == 1
        msg = r.stderr.strip()
        assert msg.startswith(f"Error: {where} is not an index") and "remove" not in msg, msg
        assert len(msg.splitlines()) == 1
    if where.endswith(".txt"):
        assert "is a file" in msg, msg
    assert sorted(p.name for p in (workdir / "seeds").iterdir()) == before


# -- an article's control characters never reach the terminal -----------------------------------
HOSTILE = "\x1b]0;pwned\x07 \x1b[2J\x1b[31mRED\x00 \r\x9b31m end"


@pytest.mark.parametrize(
    "cmd",
    [
        ["show", "esc"],
        ["show", "esc", "--span", "0:10"],
        ["ask", "Lampard"],
        ["list"],
        ["ask", "Lampard", "--mode", "bm25"],
    ],
)
def test_terminal_escapes_in_an_article_are_shown_not_obeyed(workdir: Path, cmd: list[str]) -> None:
    """Hardening: an article's title, source or text holding ESC sequences (from a feed, POST
    /documents or Engine.add) reached the terminal raw through show, ask and list: one could
    clear the screen, set the window title (OSC) or recolour everything after it."""
    from search.engine import Engine
    from search.types import Article

    with Engine.open(workdir / "index", embedder="hash") as e:
        r = e.add(
            Article(
                id="esc",
                title=f"Title {HOSTILE}",
                text=f"Lampard scored twice. {HOSTILE}",
                source=f"BBC{HOSTILE}",
            )
        )
        assert r.added == ["esc"]
    r = CliRunner().invoke(cli, cmd, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    for c in ("\x1b", "\x07", "\x00", "\r", "\x9b"):
        assert c not in r.stdout, (c, r.stdout)
    assert "␛]0;pwned" in r.stdout or cmd[0] == "list"
