"""The fast paths give the same answers as the slow ones (no timing here: see scripts/bench.py).

* BM25-only questions never import torch (nor faiss).
* numpy exact vector search equals FAISS IndexFlatIP, with and without a liveness mask.
* The IVF index written beside a large segment is found, respects the mask, and keeps
  recall@10 against exact search high on a clustered sample.
* The lexical fast path (postings read into numpy) equals whoosh's own searcher,
  including after deletes and with weighted expansion terms.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search import lexical as lx
from search import vectors as vx
from search.text import analyze, query_terms

ROOT = Path(__file__).resolve().parent.parent


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _clustered(rng: np.random.Generator, n: int, d: int = 48, centres: int = 40) -> np.ndarray:
    c = rng.standard_normal((centres, d))
    return _unit(c[rng.integers(0, centres, n)] + 0.35 * rng.standard_normal((n, d)))


# ----------------------------------------------------------------------------- imports


def test_bm25_question_imports_neither_torch_nor_faiss(tmp_path: Path) -> None:
    from search.engine import Engine
    from search.types import Article

    idx = tmp_path / "idx"
    with Engine.open(idx, create=True) as e:  # the real model: the CLI refuses a fake one
        e.add([Article(id="a", title="t", text="Lautaro Martinez headed the winner in stoppage time.")])
    code = (
        "import sys, json\n"
        "from search.cli import main\n"
        "try:\n"
        f"    main(['ask', 'who scored the winner', '--mode', 'bm25', '--json', '--index', {str(idx)!r}])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "mods = sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'faiss', 'onnxruntime')\n"
        "              if m in sys.modules)\n"
        "print(json.dumps(mods))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    assert "Martinez" in out.stdout


# ----------------------------------------------------------------------------- vectors


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("k", [1, 10, 100, 1000])
def test_numpy_exact_equals_faiss_flat(masked: bool, k: int) -> None:
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(3)
    x = _unit(rng.standard_normal((600, 32)))
    live = rng.random(600) > 0.25 if masked else np.ones(600, dtype=bool)
    seg = vx.VectorSegment("s", x, live)
    assert seg.search_method == "numpy"
    flat = faiss.IndexFlatIP(32)
    flat.add(x)
    params = None
    if masked:
        bitmap = np.packbits(live.astype(np.uint8), bitorder="little")
        params = faiss.SearchParameters(sel=faiss.IDSelectorBitmap(600, faiss.swig_ptr(bitmap)))
    for _ in range(10):
        q = _unit(rng.standard_normal((1, 32)))
        kk = min(k, int(live.sum()))
        want_s, want_r = flat.search(q, kk, params=params) if params else flat.search(q, kk)
        got_s, got_r = seg.search(q, k)
        assert got_r.tolist() == want_r.tolist()
        np.testing.assert_allclose(got_s, want_s, atol=1e-5)
        assert all(live[r] for r in got_r[0])


def test_numpy_ties_go_to_the_lower_row() -> None:
    x = _unit(np.array([[1, 0], [0, 1], [1, 0], [1, 0]], dtype=np.float32))
    seg = vx.VectorSegment("s", x, np.array([True, True, False, True]))
    s, r = seg.search(np.array([1, 0], dtype=np.float32), 3)
    assert r[0].tolist() == [0, 3, 1]


def test_ann_file_is_written_found_and_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("faiss")
    monkeypatch.setattr(vx, "ANN_MIN_ROWS", 1000)
    rng = np.random.default_rng(5)
    x = _clustered(rng, 4000)
    small = tmp_path / "seg-000001.npy"
    vx.save_vectors(small, x[:500])
    assert vx.write_ann(small) is None  # below the threshold: exact search, no file
    npy = tmp_path / "seg-000002.npy"
    vx.save_vectors(npy, x)
    assert vx.write_ann(npy) == vx.DEFAULT_ANN.resolved(4000)
    out = vx.ann_path(npy)
    assert out == tmp_path / "seg-000002.faiss" and out.is_file()
    live = rng.random(4000) > 0.3
    seg = vx.VectorSegment("seg-000002", vx.load_vectors(npy), live)
    assert seg.search_method == "ann" and seg.ann_file == out
    exact = vx.VectorSegment("e", x, live)
    hits = []
    for _ in range(50):
        q = _unit(x[rng.integers(0, 4000, 1)] + 0.2 * rng.standard_normal((1, 48)))
        _, got = seg.search(q, 10)
        _, want = exact.search(q, 10)
        assert all(live[r] for r in got[0] if r >= 0)
        hits.append(len(set(got[0].tolist()) & set(want[0].tolist())) / 10)
    assert np.mean(hits) >= 0.95
    # The same index under another mask (a later generation) is reused, not rebuilt.
    later = seg.with_live(np.ones(4000, dtype=bool))
    assert later._index is seg._index and later.search_method == "ann"


def test_sq8_ann_recall_on_a_small_sample() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(9)
    x = _clustered(rng, 3000)
    index = vx.build_ann(x)  # the default: 8-bit codes
    qs = _unit(x[:40] + 0.2 * rng.standard_normal((40, 48)))
    _, got = index.search(qs, 10)
    want = np.argsort(-(qs @ x.T), axis=1)[:, :10]
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got.tolist(), want.tolist())]) >= 0.9


# ----------------------------------------------------------------------------- lexical


def _corpus(seed: int, n: int) -> dict[str, str]:
    rng = random.Random(seed)
    words = (
        "goal winner equaliser header minute england argentina messi kane stoppage penalty save "
        "cross corner keeper striker defender referee var offside"
    ).split()
    return {
        f"d{i // 3}#{i % 3}": " ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for i in range(n)
    }


def _build(path: Path, docs: dict[str, str]) -> None:
    lx.create(path)
    w = lx.LexicalWriter(path)
    for pid, text in docs.items():
        w.add(pid, pid.split("#")[0], " ".join(analyze(text)))
    w.commit()


def _same(fast: list[tuple[str, float]], slow: list[tuple[str, float]]) -> None:
    assert [p for p, _ in fast] == [p for p, _ in slow]
    assert [s for _, s in fast] == pytest.approx([s for _, s in slow], rel=1e-9)


@pytest.mark.parametrize("limit", [1, 5, 50, 10_000])
def test_lexical_fast_path_equals_whoosh(tmp_path: Path, limit: int) -> None:
    docs = _corpus(1, 600)
    _build(tmp_path / "lex", docs)
    ix = lx.LexicalIndex(tmp_path / "lex")
    for q in [
        "winner",
        "who scored the winner",
        "messi header messi",
        "keeper save penalty corner",
        "nothing",
    ]:
        terms = query_terms(q)
        _same(ix.search(terms, limit), ix.search_whoosh(terms, limit))
    terms = query_terms("striker goal")
    exp = [*analyze("keeper"), *analyze("offside")]
    _same(ix.search(terms, limit, exp, 0.4), ix.search_whoosh(terms, limit, exp, 0.4))
    ix.close()


def test_lexical_fast_path_after_deletes_and_several_segments(tmp_path: Path) -> None:
    path = tmp_path / "lex"
    docs = _corpus(2, 300)
    _build(path, docs)
    more = {f"e{k}": v for k, v in _corpus(3, 120).items()}
    w = lx.LexicalWriter(path)
    for pid, text in more.items():
        w.add(pid, pid.split("#")[0], " ".join(analyze(text)))
    for doc in ["d3", "d10", "d50"]:
        w.delete_doc(doc, {p: " ".join(analyze(t)) for p, t in docs.items() if p.startswith(doc + "#")})
    w.commit(merge=False)
    ix = lx.LexicalIndex(path)
    assert len(list(ix._reader.leaf_readers())) == 2
    for q in ["winner goal", "england argentina referee", "var"]:
        terms = query_terms(q)
        fast, slow = ix.search(terms, 1000), ix.search_whoosh(terms, 1000)
        _same(fast, slow)
        assert not any(p.split("#")[0] in ("d3", "d10", "d50") for p, _ in fast)
    ix.close()


# ----------------------------------------------------------------------------- overlap


def test_hybrid_encodes_beside_bm25_with_the_same_results(hash_engine: Any) -> None:
    """A hybrid question is encoded on the engine's worker thread while BM25 runs (#17);
    the hits are exactly those of encoding first, and BM25 and dense modes never use it."""
    import threading

    from search.types import Article

    e = hash_engine
    e.add(
        [
            Article(id=f"a{i}", title=f"Match {i}", text=f"{name} scored the winner in minute {10 + i}. " * 3)
            for i, name in enumerate(["Kane", "Saka", "Rice", "Foden", "Palmer", "Kane and Saka"])
        ]
    )
    threads: list[str] = []
    real = e.embedder.encode_query

    def spy(q: str) -> Any:
        threads.append(threading.current_thread().name)
        return real(q)

    e.embedder.encode_query = spy
    for q in ["who scored the winner", "Kane minute", "Palmer"]:
        e.overlap_encode = True
        got = [(h.passage.id, h.score) for h in e.search(q, k=5)]
        e.overlap_encode = False
        want = [(h.passage.id, h.score) for h in e.search(q, k=5)]
        assert got == want and got
    assert threads[0::2] == ["encode_0"] * 3 and all(t != "encode_0" for t in threads[1::2])
    e.overlap_encode = True
    e.search("Kane", k=3, mode="dense")
    assert threads[-1] != "encode_0"


def test_the_encode_overlaps_bm25_only_while_a_core_is_spare(
    hash_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default (overlap_encode None) a hybrid question is encoded beside BM25 while the
    load average leaves a core spare, and before it on a busy machine, where the two only
    contend (#17); the hits are the same either way. The load is read at most once a second."""
    import threading

    import search.retrieve as r
    from search.types import Article

    e = hash_engine
    e.add(
        [
            Article(id=f"a{i}", title=f"Match {i}", text=f"Kane scored in minute {10 + i}. " * 3)
            for i in range(4)
        ]
    )
    assert e.overlap_encode is None
    threads: list[str] = []
    real = e.embedder.encode_query

    def spy(q: str) -> Any:
        threads.append(threading.current_thread().name)
        return real(q)

    e.embedder.encode_query = spy
    load = [0.0]
    reads: list[float] = []

    def getloadavg() -> tuple[float, float, float]:
        reads.append(load[0])
        return (load[0], 0.0, 0.0)

    monkeypatch.setattr(r.os, "getloadavg", getloadavg)
    got = {}
    for busy in (False, True):
        load[0] = r._cores() + r.SPARE_LOAD + (3.0 if busy else -0.5)
        monkeypatch.setattr(r, "_load", [-1.0, 0.0])  # read it afresh
        got[busy] = [(h.passage.id, h.score) for h in e.search("Kane minute", k=3)]
        assert (threads[-1] == "encode_0") == (not busy), threads
    assert got[False] == got[True] and got[False]
    assert r.spare_core(now=r._load[0] + 0.5) is False and len(reads) == 2  # cached for a second
    load[0] = 0.0
    assert r.spare_core(now=r._load[0] + 1.5) is True and len(reads) == 3


def test_ann_rescoring_reads_float_rows_without_the_map(tmp_path: Path) -> None:
    """The float rows an ANN search re-scores are read with pread (page cache, not the
    serving process's resident set, #17): the same values as the map, even after the file
    is unlinked, as an old generation's files may be while a reader holds them."""
    rng = np.random.default_rng(3)
    x = _unit(rng.standard_normal((300, 16)))
    path = tmp_path / "seg-000001.npy"
    np.save(path, x)
    rows = vx.Rows(path)
    want = np.array([0, 7, 8, 299])
    path.unlink()
    assert np.array_equal(rows[want], x[want]) and np.array_equal(rows[5:9], x[5:9])


def test_a_new_generation_is_read_ahead_but_not_its_store(tmp_path: Path, monkeypatch) -> None:
    """A fresh process at 1M passages faulted its query files in one question at a time
    (first round hybrid p50 25 ms against 9 warm): opening a generation reads the ANN, the
    arrays and the table once, in the background; the article store and MinHash not."""
    import builtins

    from search.backends import local

    folder = tmp_path / "gen-000001"
    (folder / "lexical").mkdir(parents=True)
    names = ["seg-1.faiss", "seg-1.npy", "seg-1.store.bin", "seg-1.minhash.npy", "lexical/a.bm25.docs.npy"]
    names += ["table.ids.bin", "lexical/MAIN_x.seg", "manifest.json"]
    for n in names:
        (folder / n).write_bytes(b"x" * 10)
    read: list[str] = []
    real_open = builtins.open

    def spy(f, *a, **kw):  # type: ignore[no-untyped-def]
        read.append(Path(f).relative_to(folder).as_posix())
        return real_open(f, *a, **kw)

    monkeypatch.setattr(local, "open", spy, raising=False)
    local.prefetch(folder)
    assert read[0] == "seg-1.faiss"  # the ANN first
    assert sorted(read) == sorted(["seg-1.faiss", "seg-1.npy", "lexical/a.bm25.docs.npy", "table.ids.bin"])
    local.prefetch(tmp_path / "gone")  # a generation removed since: nothing, no error
    # The next generation links the same files: they are not read again, a new one is.
    known = set(local._READ_AHEAD)
    (folder / "seg-2.npy").write_bytes(b"y" * 10)
    local.prefetch(folder)
    assert len(local._READ_AHEAD - known) == 1
