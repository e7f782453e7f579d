"""A write the machine stops (a full disk, a file size limit, a killed lexical process) is
one line and a non-zero exit, never a traceback, and leaves the index as it was."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from search import lexical_process as lp
from search.cli import cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The seeds indexed in the writing thread; the next write is a bulk one (a child process)."""
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    monkeypatch.delenv("SEARCH_INDEX", raising=False)
    monkeypatch.setattr(lp, "BULK_ARTICLES", 10**9)
    assert CliRunner().invoke(cli, ["index", "seeds"], catch_exceptions=False).exit_code == 0
    monkeypatch.setattr(lp, "BULK_ARTICLES", 1)
    return tmp_path


def _generations(root: Path) -> tuple[str, list[str]]:
    return (root / "CURRENT").read_text().strip(), sorted(p.name for p in root.iterdir())


def _fails_in_one_line(args: list[str], *words: str) -> str:
    root = Path("index")
    before = _generations(root)
    r = CliRunner().invoke(cli, args)
    assert isinstance(r.exception, SystemExit) and r.exit_code == 1, r.exception
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    for w in (*words, "the index is unchanged"):
        assert w in lines[0], lines[0]
    assert _generations(root) == before  # the failed generation is gone, the live one kept
    return lines[0]


def test_a_lexical_process_killed_mid_write_is_one_line(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_add = lp.Child.add

    def add_then_die(self: lp.Child, rows: list[lp.ArticleRow]) -> None:
        real_add(self, rows)
        self._proc.kill()

    monkeypatch.setattr(lp.Child, "add", add_then_die)
    _fails_in_one_line(["index", "seeds"], "lexical indexing process", "SIGKILL")


def test_a_file_size_limit_in_the_lexical_process_is_one_line(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = subprocess.Popen

    def limited(cmd: list[str], *args: Any, **kwargs: Any) -> Any:
        # The child alone may write no file over 1 KB: its whoosh segment fails with EFBIG.
        # A shell sets the limit and execs it: a preexec_fn (Python in the forked child)
        # aborted it when gRPC threads of an earlier Milvus test were running in this process.
        return real(["/bin/sh", "-c", 'ulimit -f 2 && exec "$@"', "sh", *cmd], *args, **kwargs)

    monkeypatch.setattr(lp.subprocess, "Popen", limited)
    _fails_in_one_line(["index", "seeds"], "File too large", "ulimit -f")


def test_a_full_disk_in_the_writing_thread_is_one_line(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from search.backends import local_write

    def full(directory: Path, name: str, *args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(directory / f"{name}.vec.npy"))

    monkeypatch.setattr(local_write, "write_segment", full)
    for bulk in (1, 10**9):  # the lexical side in a child process, and in this thread
        monkeypatch.setattr(lp, "BULK_ARTICLES", bulk)
        line = _fails_in_one_line(["index", "seeds"], "No space left on device", "free disk space")
        assert ".vec.npy" in line  # where


def test_a_full_disk_under_the_server_is_503_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from search.backends import local_write
    from search.engine import Engine
    from search.server import create_app

    def full(directory: Path, name: str, *args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(directory / f"{name}.vec.npy"))

    with Engine.open(tmp_path / "idx", create=True, embedder="hash") as e:
        e.index([ROOT / "seeds"])
        before = e.stats()["documents"]
        monkeypatch.setattr(local_write, "write_segment", full)
        doc = {"id": "new", "title": "New", "text": "Arsenal beat Chelsea in the final at Wembley."}
        with TestClient(create_app(e, token="tok"), base_url="http://127.0.0.1:8000") as c:
            r = c.post("/documents", json=doc, headers={"Authorization": "Bearer tok"})
        assert r.status_code == 503, r.text
        err = r.json()["error"]
        assert err["code"] == "write_failed" and "unchanged" in err["message"], err
        assert str(tmp_path) not in err["message"]  # where the index lives is not the client's business
        assert e.stats()["documents"] == before


_TERM_MID_WRITE = """
import os, signal, sys
from search import lexical_process as lp
from search.backends import local_write
from search.cli import main

lp.BULK_ARTICLES = 1
real = local_write.GenerationWriter.add

def add_then_term(self, batch):
    real(self, batch)
    open("child.pid", "w").write(str(self._lex._proc.pid))
    os.kill(os.getpid(), signal.SIGTERM)  # as `timeout`, `docker stop` or systemd do

local_write.GenerationWriter.add = add_then_term
signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as in a terminal: the test runner may be under nohup
main(["index", "seeds"])
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])  # SIGHUP: the terminal was closed
def test_sigterm_mid_write_cleans_up_as_ctrl_c_does(workdir: Path, sig: str) -> None:
    import sys

    before = _generations(Path("index"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    code = _TERM_MID_WRITE.replace("signal.SIGTERM", f"signal.{sig}")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines()[-1] == "Aborted!" and "Traceback" not in r.stderr, r.stderr
    assert _generations(Path("index")) == before  # no half-built generation left behind
    child = Path(f"/proc/{Path('child.pid').read_text()}/stat")
    assert not child.exists() or child.read_text().split(")")[1].split()[0] == "Z"  # ended


def test_a_short_write_says_to_free_disk_space() -> None:
    # What np.save raised when a tmpfs filled up under a bulk write (no errno, no file name).
    from search.errors import write_failed

    line = write_failed(OSError("3212544 requested and 1159040 written"))
    assert "3212544 requested and 1159040 written" in line and "free disk space" in line, line


def test_a_write_leaves_sigterm_as_it_found_it(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    seen: list[Any] = []
    real = lp.InProcess.add

    def add(self: lp.InProcess, rows: list[lp.ArticleRow]) -> None:
        seen.append(signal.getsignal(signal.SIGTERM))
        real(self, rows)

    monkeypatch.setattr(lp.InProcess, "add", add)
    monkeypatch.setattr(lp, "BULK_ARTICLES", 10**9)
    for before in (signal.SIG_DFL, signal.SIG_IGN):  # SIG_IGN: set on purpose, not overridden
        old = signal.signal(signal.SIGTERM, before)
        try:
            seen.clear()
            assert CliRunner().invoke(cli, ["index", "seeds"], catch_exceptions=False).exit_code == 0
            assert signal.getsignal(signal.SIGTERM) is before
            assert seen and (seen[0] is signal.SIG_IGN) == (before is signal.SIG_IGN)
        finally:
            signal.signal(signal.SIGTERM, old)
