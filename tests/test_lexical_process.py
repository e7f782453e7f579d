"""A bulk write's lexical side in a child process gives the index the writing thread gives (#17)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from search import lexical_process as lp
from search.embed import HashEmbedder
from search.engine import Engine
from search.errors import IndexWriteError
from search.lexical_postings import SUFFIX
from search.types import Article

ROOT = Path(__file__).resolve().parent.parent


def _articles(tag: str = "") -> list[Article]:
    seeds = sorted((ROOT / "seeds").glob("*.txt"))
    return [Article(id=p.name, title=tag, text=p.read_text(encoding="utf-8")) for p in seeds]


def _arrays(root: Path) -> list[dict[str, np.ndarray]]:
    """Every lexical segment's postings arrays, by name without the segment's random id."""
    gen = root / (root / "CURRENT").read_text().strip() / "lexical"
    segs: dict[str, dict[str, np.ndarray]] = {}
    for p in sorted(gen.glob(f"*{SUFFIX}.*.npy")):
        seg, rest = p.name.split(SUFFIX + ".")
        segs.setdefault(seg, {})[rest] = np.load(p)
    return sorted(segs.values(), key=lambda d: (len(d["lens.npy"][0]), d["keys.npy"].tobytes()))


def _build(path: Path, bulk: int, monkeypatch: pytest.MonkeyPatch, twice: bool = False) -> Engine:
    monkeypatch.setattr(lp, "BULK_ARTICLES", bulk)
    e = Engine.open(path, create=True, embedder=HashEmbedder())
    arts = _articles()
    # The same article twice in one write: its first version is deleted through the child.
    e.add(arts + (_articles("again")[:2] if twice else []))
    return e


@pytest.mark.parametrize("twice", [False, True])
def test_child_process_writes_the_same_lexical_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twice: bool
) -> None:
    started: list[Path] = []
    real = lp.Child.__init__

    def spy(self: lp.Child, path: Path) -> None:
        started.append(path)
        real(self, path)

    monkeypatch.setattr(lp.Child, "__init__", spy)
    a = _build(tmp_path / "child", 1, monkeypatch, twice)
    assert started  # the bulk path ran
    n = len(started)
    b = _build(tmp_path / "thread", 10**9, monkeypatch, twice)
    assert len(started) == n  # and this one did not
    try:
        got, want = _arrays(tmp_path / "child"), _arrays(tmp_path / "thread")
        assert len(got) == len(want) >= 2  # passages and documents
        for x, y in zip(got, want):
            assert x.keys() == y.keys()
            for k in x:
                assert np.array_equal(x[k], y[k]), k
        for q in ("who scored the winner", "Argentina Spain final", "penalty"):
            ha = [(h.passage.id, round(h.score, 6)) for h in a.search(q, mode="bm25", k=10)]
            hb = [(h.passage.id, round(h.score, 6)) for h in b.search(q, mode="bm25", k=10)]
            assert ha == hb and ha
        assert a.stats()["documents"] == b.stats()["documents"]
    finally:
        a.close()
        b.close()


def test_a_child_that_dies_fails_the_write_and_keeps_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lp, "BULK_ARTICLES", 1)
    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder())
    e.add(_articles()[:3])
    before = sorted(d.id for d in e.documents())
    real_add = lp.Child.add

    def add_then_die(self: lp.Child, rows: list[lp.ArticleRow]) -> None:
        real_add(self, rows)
        self._proc.kill()

    monkeypatch.setattr(lp.Child, "add", add_then_die)
    with pytest.raises(IndexWriteError, match="lexical indexing process stopped"):
        e.add(_articles("new"))
    monkeypatch.setattr(lp.Child, "add", real_add)
    assert sorted(d.id for d in e.documents()) == before
    assert e.search("who scored the winner", mode="bm25", k=3)
    root = tmp_path / "idx"
    assert not list(root.glob("*.tmp"))  # the failed generation is gone
    e.close()


def test_an_article_again_in_a_later_batch_of_a_bulk_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batch 2 repeats an article of batch 1: deleting it needs batch 1 committed, so the
    # child commits and the rest of the write goes on in this thread; the index ends the
    # same as a write that never used the child.
    from search import indexing

    monkeypatch.setattr(indexing, "BATCH_ARTICLES", 2)
    monkeypatch.setattr(indexing, "MIN_BATCH_ARTICLES", 2)
    arts = _articles()
    stream = arts[:2] + [Article(id=arts[0].id, title="again", text=arts[0].text)] + arts[2:]
    got = {}
    for bulk in (1, 10**9):
        monkeypatch.setattr(lp, "BULK_ARTICLES", bulk)
        e = Engine.open(tmp_path / f"idx{bulk}", create=True, embedder=HashEmbedder())
        e.add(iter(stream))
        got[bulk] = (
            sorted(d.id for d in e.documents()),
            [(h.passage.id, round(h.score, 6)) for h in e.search("winner penalty", mode="bm25", k=10)],
        )
        e.close()
    assert got[1] == got[10**9]
    assert len(got[1][0]) == len(arts) and got[1][1]
