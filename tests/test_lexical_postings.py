"""Postings arrays written at commit (#17): the same scores as whoosh, and a pruned top k
that equals the exhaustive one exactly, with deletes, titles, expansions and filters."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search import impacts
from search import lexical as lx
from search import lexical_postings as lp
from search import lexical_writer as lw
from search.text import analyze

WORDS = (
    "goal winner equaliser header minute england argentina messi kane stoppage penalty save cross "
    "corner keeper striker defender referee var offside final semi league cup derby volley"
).split()


@pytest.fixture
def pruning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prune however short the lists (a corpus this small is otherwise scored whole)."""
    monkeypatch.setattr(impacts, "EXHAUSTIVE_BELOW", 0)


def _zipf_text(rng: random.Random, n: int) -> str:
    # Skewed like real text: the first words are common, the last rare.
    return " ".join(WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)] for _ in range(n))


def _passages(seed: int, n: int, prefix: str) -> dict[str, tuple[str, str]]:
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        title = (
            _zipf_text(rng, rng.randint(0, 4)) if i % 3 == 0 else out.get(f"{prefix}{i // 3}#0", ("", ""))[1]
        )
        out[f"{prefix}{i // 3}#{i % 3}"] = (_zipf_text(rng, rng.randint(2, 40)), title)
    return out


def _add(w: lx.LexicalWriter, docs: dict[str, tuple[str, str]]) -> None:
    for pid, (text, title) in docs.items():
        w.add(pid, pid.split("#")[0], " ".join(analyze(text)), " ".join(analyze(title)))


def _analysed(docs: dict[str, tuple[str, str]], doc: str) -> dict[str, str | tuple[str, str]]:
    return {
        p: (" ".join(analyze(t)), " ".join(analyze(h)))
        for p, (t, h) in docs.items()
        if p.startswith(doc + "#")
    }


def _index(path: Path) -> dict[str, tuple[str, str]]:
    """Two commits (two segments), then deletes in both without a merge."""
    first, second = _passages(1, 500, "d"), _passages(2, 300, "e")
    lx.create(path)
    w = lx.LexicalWriter(path)
    _add(w, first)
    w.commit()
    w = lx.LexicalWriter(path)
    _add(w, second)
    w.commit(merge=False)
    w = lx.LexicalWriter(path)
    for doc in ("d3", "d40", "d41", "e7", "e60"):
        w.delete_doc(doc, _analysed({**first, **second}, doc))
    w.commit(merge=False)
    return {
        p: v
        for p, v in {**first, **second}.items()
        if p.split("#")[0] not in ("d3", "d40", "d41", "e7", "e60")
    }


def _exhaustive(ix: lx.LexicalIndex, terms: list[str], limit: int, **kw: object) -> list[tuple[str, float]]:
    docs, scores = ix.scores(terms, **kw)  # type: ignore[arg-type]
    order = np.lexsort((docs, -scores))[:limit]
    return [(ix._pid(int(d)), float(s)) for d, s in zip(docs[order], scores[order])]


def test_pruned_top_k_equals_exhaustive(pruning: None, tmp_path: Path) -> None:
    _index(tmp_path / "lex")
    ix = lx.LexicalIndex(tmp_path / "lex")
    assert len(ix._leaves()) == 2 and all(isinstance(s, lp.SegmentPostings) for s, _, _ in ix._leaves())
    assert all(dead is not None for _, _, dead in ix._leaves())
    rng = random.Random(5)
    n = ix._n_docs()
    stats: dict[str, int] = {}
    for trial in range(120):
        terms = [t for w in rng.sample(WORDS, rng.randint(1, 6)) for t in analyze(w)]
        exp = [t for w in rng.sample(WORDS, rng.randint(0, 3)) for t in analyze(w)]
        limit = rng.choice([1, 3, 10, 50])
        tw = rng.choice([0.0, 1.0, 2.0])
        allow = None
        if trial % 3:
            allow = np.array([rng.random() < rng.choice([0.03, 0.3]) for _ in range(n - rng.randint(0, 20))])
        kw = {"expansions": exp, "expansion_weight": 0.5, "title_weight": tw, "allow": allow}
        got = ix.search(terms, limit, stats=stats, **kw)  # type: ignore[arg-type]
        want = _exhaustive(ix, terms, limit, **kw)
        assert got == want, (terms, exp, limit, tw)  # the very same floats, the same order
    assert stats["read"] < stats["postings"] / 2, stats  # common terms' lists mostly unread
    assert stats["filter_first"] > 0, stats  # selective filters were applied before the lists
    ix.close()


def test_a_common_terms_list_is_not_read(pruning: None, tmp_path: Path) -> None:
    _index(tmp_path / "lex")
    ix = lx.LexicalIndex(tmp_path / "lex")
    stats: dict[str, int] = {}
    terms = analyze("goal derby")  # the most and one of the least frequent words
    assert ix.search(terms, 5, stats=stats) == _exhaustive(ix, terms, 5)
    # "goal"'s list is the longest: only looked up for the few documents "derby" finds.
    assert stats["read"] < stats["postings"] / 4, stats
    ix.close()


def test_filter_returns_every_allowed_match_when_fewer_than_k(pruning: None, tmp_path: Path) -> None:
    docs = _index(tmp_path / "lex")
    ix = lx.LexicalIndex(tmp_path / "lex")
    keys = ix.docnum_keys()
    terms = analyze("goal")
    allowed = {p for p, (t, h) in docs.items() if p.startswith("e1")}  # e1, e10..e19, e100..
    allow = np.array([k in allowed for k in keys])
    matching = {p for p in allowed if "goal" in docs[p][0].split() or "goal" in docs[p][1].split()}
    got = ix.search(terms, 1000, allow=allow)
    assert {p for p, _ in got} == matching and len(got) == len(matching) > 0
    ix.close()


def test_arrays_equal_whoosh_blocks_and_whoosh_searcher(tmp_path: Path) -> None:
    _index(tmp_path / "lex")
    fast = lx.LexicalIndex(tmp_path / "lex")
    old = lx.LexicalIndex(tmp_path / "lex", arrays=False)
    assert all(isinstance(s, lp.WhooshSegment) for s, _, _ in old._leaves())
    for q in ["goal winner", "messi header messi", "england argentina referee var", "derby"]:
        terms = analyze(q)
        for tw in (0.0, 2.0):
            assert fast.search(terms, 50, title_weight=tw) == old.search(terms, 50, title_weight=tw)
        ref = fast.search_whoosh(terms, 50)
        got = fast.search(terms, 50, title_weight=0.0)
        assert [p for p, _ in got] == [p for p, _ in ref]
        assert [s for _, s in got] == pytest.approx([s for _, s in ref], rel=1e-9)
        assert fast.idf(terms[0]) == old.idf(terms[0])
    assert fast.docnum_keys() == old.docnum_keys()
    fast.close()
    old.close()


def test_arrays_follow_whoosh_segments(tmp_path: Path) -> None:
    path = tmp_path / "lex"
    _index(path)

    def segids() -> set[str]:
        ix = lx.LexicalIndex(path)
        out = set(lx._segment_names(ix._ix))
        ix.close()
        return out

    before = segids()
    assert {p.name.split(".")[0] for p in path.glob("*.bm25.json")} == before
    w = lx.LexicalWriter(path)
    w.commit(optimize=True)  # whoosh merges every segment into one, dropping deleted documents
    after = segids()
    assert len(after) == 1 and not after & before
    # The merged-away segments' arrays went with them; the new segment has its own.
    assert {p.name.split(".")[0] for p in path.glob("*.bm25.*")} == after
    # An index written before arrays (or with them removed) reads whoosh's blocks.
    ix = lx.LexicalIndex(path)
    want = ix.search(analyze("goal keeper"), 20)
    ix.close()
    for f in path.glob("*.bm25.*"):
        f.unlink()
    ix = lx.LexicalIndex(path)
    assert isinstance(ix._leaves()[0][0], lp.WhooshSegment)
    assert ix.search(analyze("goal keeper"), 20) == want
    ix.close()


def test_a_postings_format_from_the_future_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lex"
    lx.create(path)
    w = lx.LexicalWriter(path)
    w.add("a#0", "a", "goal")
    w.commit()
    (meta,) = path.glob("MAIN_*.bm25.json")
    meta.write_text(meta.read_text().replace('"format": 1', '"format": 99'))
    with pytest.raises(ValueError, match="postings format 99"):
        lx.LexicalIndex(path).search(["goal"], 1)


def test_concurrent_queries_agree_with_one_at_a_time(pruning: None, tmp_path: Path) -> None:
    # One accumulator per index, taken by whichever query finds it free; the others use
    # their own. Either way each query leaves the shared one zeroed for the next.
    from concurrent.futures import ThreadPoolExecutor

    _index(tmp_path / "lex")
    ix = lx.LexicalIndex(tmp_path / "lex")
    rng = random.Random(9)
    queries = [[t for w in rng.sample(WORDS, rng.randint(1, 5)) for t in analyze(w)] for _ in range(40)]
    want = [ix.search(q, 10) for q in queries]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            assert list(pool.map(lambda q: ix.search(q, 10), queries)) == want
    assert ix._acc is not None and not ix._acc.any()
    ix.close()


def test_an_index_without_arrays_gets_them_on_its_next_write(tmp_path: Path) -> None:
    path = tmp_path / "lex"
    _index(path)
    for f in path.glob("*.bm25.*"):
        f.unlink()  # as an index written before postings arrays
    w = lx.LexicalWriter(path)
    w.add("z0#0", "z0", "nothing of note")
    w.commit(merge=False)
    ix, old = lx.LexicalIndex(path), lx.LexicalIndex(path, arrays=False)
    assert len(ix._leaves()) == 3 and all(isinstance(s, lp.SegmentPostings) for s, _, _ in ix._leaves())
    assert ix.search(analyze("goal keeper"), 20) == old.search(analyze("goal keeper"), 20)
    ix.close()
    old.close()


def test_a_commit_opens_only_the_segments_without_arrays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which segments lack arrays comes from the table of contents, and only those are
    opened: whoosh's index reader loads every segment's term index (0.36 s of adding one
    article at 1M passages)."""
    from whoosh import index as wix

    path = tmp_path / "lex"
    _index(path)
    opened: list[str] = []
    real = lw.SegmentReader

    def counted(storage, schema, segment):  # type: ignore[no-untyped-def]
        opened.append(segment.segment_id())
        return real(storage, schema, segment)

    def never(*a, **kw):  # type: ignore[no-untyped-def]
        raise AssertionError("the whole index's reader was opened")

    monkeypatch.setattr(lw, "SegmentReader", counted)
    monkeypatch.setattr(wix.FileIndex, "reader", never)
    ix = wix.FileIndex(lw.FileStorage(str(path)), indexname="MAIN")
    assert lw.ensure_arrays(path, ix) == 0 and not opened
    victim = sorted(path.glob("*.bm25.json"))[0].name.split(".")[0]
    for f in path.glob(f"{victim}.bm25.*"):
        f.unlink()
    assert lw.ensure_arrays(path, ix) == 1 and opened == [victim]
    monkeypatch.undo()
    fast, old = lx.LexicalIndex(path), lx.LexicalIndex(path, arrays=False)
    assert all(isinstance(seg, lp.SegmentPostings) for seg, _, _ in fast._leaves())
    assert fast.search(analyze("goal keeper"), 20) == old.search(analyze("goal keeper"), 20)
    fast.close()
    old.close()


def test_arrays_written_in_chunks_equal_arrays_written_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _passages(4, 200, "d")

    def arrays(path: Path) -> dict[str, np.ndarray]:
        lx.create(path)
        w = lx.LexicalWriter(path)
        _add(w, docs)
        w.commit()
        (meta,) = path.glob("MAIN_*.bm25.json")
        prefix = meta.name[: -len(".json")]
        return {f.name[len(prefix) :]: np.load(f) for f in path.glob(f"{prefix}.*.npy")}

    whole = arrays(tmp_path / "whole")
    monkeypatch.setattr(lw, "WRITE_CHUNK", 7)  # a flush every few terms
    chunked = arrays(tmp_path / "chunked")
    assert whole.keys() == chunked.keys() and len(whole) == 13
    for name, a in whole.items():
        assert a.dtype == chunked[name].dtype and np.array_equal(a, chunked[name]), name
    assert not list((tmp_path / "chunked").glob("*.raw"))


def test_binary_searches_on_the_query_path_never_mix_dtypes(
    pruning: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """np.searchsorted casts both sides to a common dtype: int64 keys into an int32
    memory-mapped array copy the whole array first (a posting list, or every title
    position of a segment: 4.5 ms a term at 1M passages, #17). Every binary search a query
    makes must use the array's own dtype."""
    _index(tmp_path / "lex")
    ix = lx.LexicalIndex(tmp_path / "lex")
    seen: list[tuple[np.dtype, np.dtype]] = []
    real = np.searchsorted

    def checked(a: Any, v: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(a, np.ndarray) and a.dtype.kind in "iu" and a.size > 1:
            seen.append((a.dtype, np.asarray(v).dtype))
        return real(a, v, *args, **kw)

    for mod in (lp, impacts):
        monkeypatch.setattr(mod.np, "searchsorted", checked)
    rng = random.Random(8)
    for _ in range(40):
        terms = [t for w in rng.sample(WORDS, rng.randint(1, 6)) for t in analyze(w)]
        ix.search(terms, rng.choice([1, 10]), title_weight=1.0)
    assert seen and all(a == v for a, v in seen), {(str(a), str(v)) for a, v in seen if a != v}
    ix.close()


class _Recording(np.ndarray):
    """An accumulator that records the dtype of every integer array indexing it."""

    seen: list[np.dtype]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, np.ndarray) and key.dtype.kind in "iu":
            self.seen.append(key.dtype)
        return np.asarray(super().__getitem__(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, np.ndarray) and key.dtype.kind in "iu":
            self.seen.append(key.dtype)
        super().__setitem__(key, value)


def test_the_accumulator_is_indexed_with_intp_only(pruning: None, tmp_path: Path) -> None:
    """numpy converts an int32 index array to intp on every fancy index: a scatter of 60k
    shares into the accumulator of 1M passages took 0.52 ms with the stored int32 document
    numbers and 0.14 ms with intp (#17). The document numbers a term scores are converted
    once, so every gather and scatter over the accumulator (and the length codes) is intp,
    and the result is unchanged."""
    _index(tmp_path / "lex")
    ix = lx.LexicalIndex(tmp_path / "lex")
    rng = random.Random(11)
    for trial in range(40):
        terms = [t for w in rng.sample(WORDS, rng.randint(2, 6)) for t in analyze(w)]
        allow = np.array([rng.random() < 0.3 for _ in range(ix._n_docs())]) if trial % 4 == 3 else None
        q = ix._query(terms, ["goal"], 0.5, 2.0, allow)
        acc = np.zeros(q.n_docs).view(_Recording)
        acc.seen = []
        docs, scores = impacts.top_k(q, ix._params(2.0), 10, acc)
        assert acc.seen and set(acc.seen) == {np.dtype(np.intp)}, set(acc.seen)
        assert not np.asarray(acc).any()  # left zero for the next query
        for term in q.terms:
            assert impacts.contributions(q, term, ix._params(2.0))[0].dtype == np.intp
        got = [(ix._pid(int(d)), float(s)) for d, s in zip(docs.tolist(), scores.tolist())]
        assert got == _exhaustive(ix, terms, 10, expansions=["goal"], title_weight=2.0, allow=allow)
    ix.close()


@pytest.mark.parametrize(
    ("n", "k"), [(10, 3), (5, 9), (200_000, 50), (100_000, 10_000), (70_000, 8_000), (300_000, 16_384)]
)
def test_kth_largest_is_exact_whatever_the_sample_says(n: int, k: int) -> None:
    """kth_largest cuts a long array at a value a strided sample suggests, deep k included
    (#17: every fourth element for the facets' 16,384 of a few hundred thousand); the value
    is exact: ties, sorted input, and a sample that misleads (only the sampled elements
    large) which sends it back to the full partition."""
    rng = np.random.default_rng(n + k)
    cases = [rng.random(n), np.round(rng.random(n) * 20, 1), np.sort(rng.random(n))]
    fooled = np.zeros(n)
    fooled[::4] = 100 + np.arange(len(fooled[::4]))
    cases.append(fooled)
    for x in cases:
        want = float(np.sort(x)[-k]) if n >= k else -np.inf
        assert impacts.kth_largest(x, k) == want
