"""SIGKILL during a full `search index` rebuild, during `search reindex`, and during writes
on the Milvus backend (#14): the index opens with the old or the new documents, answers,
and the next writer succeeds. (tests/test_reindex.py kills `add`, `remove` and small
`index` runs on the local backend.)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from killing import campaign, write_corpus

pytestmark = pytest.mark.integration
# Kills per campaign, each at a random point of one run; three keep the suite inside CI's
# time while still landing before, during and after the swap over the runs of a campaign.
KILLS = 3


def _local(path: Path) -> dict[str, Any]:
    return {"path": str(path)}


def _assert_held(out: Any, kills: int) -> None:
    assert not out.failures, out.failures
    assert out.kills == kills


def test_sigkill_during_a_full_index_rebuild(tmp_path: Path) -> None:
    old = write_corpus(tmp_path / "old", "old", 30, seed=1)
    new = write_corpus(tmp_path / "new", "new", 120, seed=2)

    def make_base(path: Path) -> None:
        from search.embed import HashEmbedder
        from search.engine import Engine

        with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
            e.index([tmp_path / "old"])

    out = campaign(
        name="index",
        kills=KILLS,
        make_base=make_base,
        command=lambda idx: ["index", str(tmp_path / "new"), "--index", str(idx)],
        old=old,
        new=new,
        engine_kwargs=_local,
        work=tmp_path,
        rng=random.Random(14),
    )
    _assert_held(out, KILLS)


def test_sigkill_during_reindex(tmp_path: Path) -> None:
    """reindex rebuilds the articles the index holds (not its sources): a kill leaves them
    all, and the next reindex too, although ten removed articles' files are still there."""
    src = tmp_path / "src"
    old = write_corpus(src, "old", 40, seed=3)
    gone = set(sorted(old)[:10])
    held = old - gone

    def make_base(path: Path) -> None:
        from search.embed import HashEmbedder
        from search.engine import Engine

        with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
            e.index([src])
            e.remove(sorted(gone))

    out = campaign(
        name="reindex",
        kills=KILLS,
        make_base=make_base,
        command=lambda idx: ["reindex", "--index", str(idx)],
        old=held,
        new=held,
        engine_kwargs=_local,
        work=tmp_path,
        rng=random.Random(15),
    )
    _assert_held(out, KILLS)


def _milvus_or_skip() -> None:
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as e:
        pytest.skip(f"Milvus Lite cannot start: {e} (pip install 'search[milvus]')")


@pytest.mark.slow
def test_sigkill_during_milvus_writes(tmp_path: Path) -> None:
    _milvus_or_skip()
    old = write_corpus(tmp_path / "old", "old", 20, seed=5)
    more = write_corpus(tmp_path / "more", "more", 40, seed=6)

    def engine(path: Path, create: bool = False) -> Any:
        from search.embed import HashEmbedder
        from search.engine import Engine

        return Engine.open(
            path, create=create, embedder=HashEmbedder(), backend="milvus", uri=str(path / "m.db")
        )

    def make_base(path: Path) -> None:
        path.mkdir(parents=True)
        with engine(path, create=True) as e:
            e.add([tmp_path / "old"])

    out = campaign(
        name="milvus-add",
        kills=KILLS,
        make_base=make_base,
        command=lambda idx: [
            "add",
            str(tmp_path / "more"),
            "--index",
            str(idx),
            "--backend",
            "milvus",
            "--uri",
            str(idx / "m.db"),
        ],
        old=old,
        new=old | more,
        engine_kwargs=lambda p: {"path": str(p), "backend": "milvus", "uri": str(p / "m.db")},
        work=tmp_path,
        rng=random.Random(16),
    )
    _assert_held(out, KILLS)
