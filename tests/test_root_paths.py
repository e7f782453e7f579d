"""Ids relative to the corpus root however the paths are spelled (hardening).

``search add ../shared/raw/cricket/106.txt --root ../shared/raw`` must give the same id,
``cricket/106.txt``, as the absolute path does: a ``..`` or a symlinked folder in the path
or the root is not a different place. The symlink rule is unchanged: a link whose target
leaves the root is never read, however the path is spelled.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from search.cli import cli
from search.embed import HashEmbedder
from search.engine import Engine
from search.ingest import read_path
from search.types import Article

BODY = "Windies women upbeat ahead of the series. More words follow here about the tour.\n"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/checkout (the working directory) beside tmp/shared/raw/{cricket,tennis}/NNN.txt."""
    raw = tmp_path / "shared" / "raw"
    for cat in ("cricket", "tennis"):
        (raw / cat).mkdir(parents=True)
        for n in ("105", "106"):
            (raw / cat / f"{n}.txt").write_text(f"{cat} {n}\n{cat.title()} {n}: {BODY}", encoding="utf-8")
    (tmp_path / "checkout").mkdir()
    monkeypatch.chdir(tmp_path / "checkout")
    return raw


def ids(items: object) -> list[str]:
    return sorted(a.id for a in items if isinstance(a, Article))  # type: ignore[attr-defined]


def test_read_path_with_dotdot_in_the_file_or_the_root(layout: Path) -> None:
    rel_file = Path("../shared/raw/cricket/106.txt")
    assert ids(read_path(rel_file, root=layout.resolve())) == ["cricket/106.txt"]
    assert ids(read_path(rel_file, root="../shared/raw")) == ["cricket/106.txt"]
    assert ids(read_path(layout / "cricket" / "106.txt", root="../shared/raw")) == ["cricket/106.txt"]
    assert ids(read_path("../shared/raw/tennis/../cricket/106.txt", root="../shared/raw")) == [
        "cricket/106.txt"
    ]
    # a folder given relatively, its root relatively too
    assert ids(read_path("../shared/raw/cricket", root="../shared/raw")) == [
        "cricket/105.txt",
        "cricket/106.txt",
    ]
    assert ids(read_path("../shared/raw/cricket")) == ["105.txt", "106.txt"]  # its own root
    # a file outside the root keeps its name, as before
    assert ids(read_path("../shared/raw/cricket/106.txt", root="../shared/raw/tennis")) == ["106.txt"]


def test_read_path_through_a_symlinked_root(layout: Path, tmp_path: Path) -> None:
    link = tmp_path / "raw-link"
    link.symlink_to(layout, target_is_directory=True)
    assert ids(read_path(link / "cricket" / "106.txt", root=link)) == ["cricket/106.txt"]
    assert ids(read_path(layout / "cricket" / "106.txt", root=link)) == ["cricket/106.txt"]
    assert ids(read_path(link / "cricket" / "106.txt", root=layout)) == ["cricket/106.txt"]
    assert ids(read_path("../raw-link/cricket", root="../shared/raw")) == [
        "cricket/105.txt",
        "cricket/106.txt",
    ]


def test_symlink_leaving_the_root_is_still_refused_with_dotdot(layout: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("Secret\nroot:x:0:0:the password file of this machine\n", encoding="utf-8")
    (layout / "cricket" / "passwd.txt").symlink_to(secret)
    (layout / "cricket" / "inside.txt").symlink_to(layout / "tennis" / "105.txt")
    got = list(read_path("../shared/raw/cricket/../cricket", root="../shared/raw"))
    assert ids(got) == ["cricket/105.txt", "cricket/106.txt", "cricket/inside.txt"]
    assert any("outside the corpus" in p.message for p in got if not isinstance(p, Article))
    got = list(read_path("../shared/raw/cricket/passwd.txt", root="../shared/raw"))
    assert ids(got) == [] and "outside the corpus" in got[0].message  # type: ignore[union-attr]


def test_engine_add_with_relative_root_gives_the_documented_id(layout: Path, tmp_path: Path) -> None:
    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder()) as e:
        r = e.add(["../shared/raw/cricket/106.txt"], root="../shared/raw")
        assert r.added == ["cricket/106.txt"], r.problems
        r = e.add([layout / "cricket" / "106.txt"], root=layout)  # the same file, absolutely
        assert r.unchanged == ["cricket/106.txt"] and not r.added
        r = e.add(["../shared/raw/tennis"], root="../shared/raw")
        assert r.added == ["tennis/105.txt", "tennis/106.txt"], r.problems


def test_engine_add_after_index_keeps_the_id_without_root(layout: Path, tmp_path: Path) -> None:
    """No --root: a file under a folder indexed before gets its id there, ``..`` or not."""
    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder()) as e:
        e.index(["../shared/raw"])
        assert sorted(d.id for d in e.documents())[0] == "cricket/105.txt"
        r = e.add(["../shared/raw/cricket/106.txt"])
        assert r.unchanged == ["cricket/106.txt"] and not r.added, r
        (layout / "cricket" / "107.txt").write_text("cricket 107\nCricket 107: " + BODY, encoding="utf-8")
        r = e.add(["../shared/raw/tennis/../cricket/107.txt"])
        assert r.added == ["cricket/107.txt"], r.problems


def test_cli_add_with_relative_root(layout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    monkeypatch.delenv("SEARCH_INDEX", raising=False)
    index = str(tmp_path / "idx")
    runner = CliRunner()
    res = runner.invoke(cli, ["index", "--index", index, "../shared/raw/tennis"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        cli,
        ["add", "--index", index, "../shared/raw/cricket/106.txt", "--root", "../shared/raw", "--json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["added"] == ["cricket/106.txt"]
    assert os.path.isdir(index)


def test_adding_a_folder_inside_an_indexed_folder_keeps_its_ids(layout: Path, tmp_path: Path) -> None:
    """``search add raw/cricket`` after ``search index raw`` gives ``cricket/105.txt``, as
    adding its files one by one does, not ``105.txt``; a folder outside stays its own root."""
    other = tmp_path / "elsewhere" / "golf"
    other.mkdir(parents=True)
    (other / "201.txt").write_text("golf 201\nGolf 201: " + BODY, encoding="utf-8")
    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder()) as e:
        e.index([layout])  # records raw
        r = e.add([other])
        assert r.added == ["201.txt"], r.problems
        (layout / "cricket" / "107.txt").write_text("cricket 107\nCricket 107: " + BODY, encoding="utf-8")
        r = e.add(["../shared/raw/cricket"])
        assert r.added == ["cricket/107.txt"] and sorted(r.unchanged) == [
            "cricket/105.txt",
            "cricket/106.txt",
        ]
