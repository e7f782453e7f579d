"""scripts/bench.py as a user's tool: its arguments, its refusals, its passage counts, and
that an interrupted build leaves no half index (#17). Small corpora made here, the hash
embedder, no model and no shared data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))

import bench  # noqa: E402
import bench_corpus as C  # noqa: E402
import bench_guard as G  # noqa: E402
import bench_models as M  # noqa: E402

WORDS = (
    "striker keeper midfield header volley corner penalty referee stadium crowd season league cup "
    "final derby manager coach injury transfer contract wing defence attack tackle save goal"
).split()


def _sentence(rng: np.random.Generator) -> str:
    words = [WORDS[int(i)] for i in rng.integers(len(WORDS), size=int(rng.integers(8, 20)))]
    return " ".join(words).capitalize() + f" in minute {int(rng.integers(1, 95))}."


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A tiny stand-in for shared/: BBC-like articles in two categories and a few questions."""
    rng = np.random.default_rng(3)
    root = tmp_path / "shared"
    (root / "data" / "bbcsport").mkdir(parents=True)
    (root / "eval").mkdir()
    recs = []
    for i in range(40):
        cat = ("football", "tennis")[i % 2]
        paras = [" ".join(_sentence(rng) for _ in range(3)) for _ in range(4)]
        recs.append(
            {
                "id": f"{cat}/{i:03d}",
                "category": cat,
                "title": f"Headline {i} {cat}",
                "text": "\n\n".join(paras),
            }
        )
    lines = "".join(json.dumps(r) + "\n" for r in recs)
    (root / "data" / "bbcsport" / "bbcsport.jsonl").write_text(lines)
    (root / "data" / "bbcsport" / "football.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in recs if r["category"] == "football")
    )
    (root / "eval" / "dev.jsonl").write_text(
        json.dumps({"id": "d1", "question": "who scored the winner"}) + "\n"
    )
    return root


def run_bench(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "bench.py"), *args], capture_output=True, text=True, env=env, **kw
    )


# ----------------------------------------------------------------------------- arguments


def test_passages_is_an_alias_of_scale_and_counts_passages() -> None:
    assert bench.parse(["--passages", "1234"]).scale == 1234
    assert bench.parse(["--scale", "99"]).scale == 99


@pytest.mark.parametrize("argv", [["--scale", "0"], ["--rounds", "0"], ["--models", "gpu"]])
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench.parse(argv)
    assert e.value.code == 2


def test_a_missing_corpus_file_is_an_argument_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        bench.parse(["--corpus", str(tmp_path / "nope.jsonl")])
    assert "no such file" in capsys.readouterr().err


# ----------------------------------------------------------------------------- refusals


def fps(tmp_path: Path) -> dict[str, G.Footprint]:
    return G.footprints(tmp_path, ["ours", "bm25s-hnsw"])


def test_a_build_that_does_not_fit_in_memory_is_refused_with_the_estimate(tmp_path: Path) -> None:
    with pytest.raises(G.Refused) as e:
        G.check_fits(
            10_000_000, fps(tmp_path), tmp_path, {"ours"}, True, available=8 * G.GB, free_disk=10**15
        )
    msg = str(e.value)
    assert msg.startswith("refused: --scale 10,000,000 passages does not fit in memory: building needs about")
    assert "8,600 bytes per passage, declared" in msg and "MemAvailable is 8.0 GB" in msg


def test_serving_counts_every_system_open_together(tmp_path: Path) -> None:
    # 1M passages: ours serves in ~3.9 GB, the peer in ~6.4 GB: each alone fits 9 GB, both do not.
    f = fps(tmp_path)
    assert f["ours"].need("serve", 10**6) < 9 * G.GB * G.MEMORY_MARGIN
    with pytest.raises(G.Refused, match=r"serving needs about .* in all .*--no-peers"):
        G.check_fits(10**6, f, tmp_path, set(), False, available=9 * G.GB, free_disk=10**15)


def test_a_corpus_that_does_not_fit_on_disk_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        G.Refused, match=r"does not fit on disk: .* need about .* GB, but .* has 0\.1 GB free"
    ):
        G.check_fits(10**6, fps(tmp_path), tmp_path, {"ours"}, True, available=10**12, free_disk=10**8)


def test_measured_footprints_replace_the_declared_ones(tmp_path: Path) -> None:
    G.save_measured(tmp_path, "ours", 50_000, build=G.DECLARED["ours"]["base"] + 50_000 * 1_000.0)
    f = G.footprints(tmp_path, ["ours"])["ours"]
    assert f.per_passage["build"] == 1_000.0 and f.how == "measured at 50,000 passages"
    G.save_measured(tmp_path, "bm25s-hnsw", 500, build=1e9)  # too few passages to extrapolate
    assert G.footprints(tmp_path, ["bm25s-hnsw"])["bm25s-hnsw"].how == "declared"


def test_the_cli_refuses_a_scale_larger_than_memory_before_doing_anything(
    tmp_path: Path, shared: Path
) -> None:
    work = tmp_path / "work"
    r = run_bench("--scale", "1000000000000", "--models", "hash", "--data", str(shared), "--work", str(work))
    assert r.returncode == 2, r.stderr
    assert "refused: --scale 1,000,000,000,000 passages does not fit in memory" in r.stderr
    assert "bytes per passage" in r.stderr and "MemAvailable" in r.stderr
    assert not [p for p in work.iterdir() if "corpus" in p.name or "ours" in p.name]


def test_the_cli_refuses_a_corpus_that_does_not_fit(tmp_path: Path, shared: Path) -> None:
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.truncate(2**40)  # sparse: a terabyte of "articles" that takes no disk
    r = run_bench(
        "--corpus", str(big), "--models", "hash", "--data", str(shared), "--work", str(tmp_path / "w")
    )
    assert r.returncode == 2, r.stderr
    assert "refused: --corpus big.jsonl: about" in r.stderr and "choose a smaller --corpus" in r.stderr


# ----------------------------------------------------------------------------- counting passages


def test_the_corpus_stops_at_the_asked_number_of_passages_as_the_engine_chunks_them(
    shared: Path, tmp_path: Path
) -> None:
    recs = C.bbc_records(shared / "data" / "bbcsport" / "bbcsport.jsonl")
    seen: list[int] = []
    n_art, n_pass = C.write_corpus(
        C.synthetic(recs), tmp_path / "c.jsonl", tmp_path / "p.jsonl", 120, seen.append
    )
    arts = list(C.read_jsonl(tmp_path / "c.jsonl"))
    per_article = [len(C.passages_of(a)) for a in arts]
    assert n_art == len(arts) and n_pass == sum(per_article) == len(list(C.read_jsonl(tmp_path / "p.jsonl")))
    assert 120 <= n_pass < 120 + max(per_article)  # passages, not sentences (the old bug)
    assert len({a["title"] for a in arts}) > 1 and len({a["source"] for a in arts}) > 1


def test_the_built_index_holds_exactly_the_counted_passages(shared: Path, tmp_path: Path) -> None:
    recs = C.bbc_records(shared / "data" / "bbcsport" / "bbcsport.jsonl")
    corpus, passages = tmp_path / "c.jsonl", tmp_path / "p.jsonl"
    _, n = C.write_corpus(C.synthetic(recs), corpus, passages, 60, lambda _: None)
    cmd = [sys.executable, str(SCRIPTS / "bench_build.py"), "ours", "--corpus", str(corpus)]
    cmd += ["--passages-file", str(passages), "--passages", str(n), "--out", str(tmp_path / "idx")]
    cmd += ["--work", str(tmp_path), "--models", "hash"]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1].removeprefix("@result "))
    assert res["passages"] == n and res["peak_rss_mb"] > 0 and res["disk_mb"] > 0
    assert 0 < res["base_rss_mb"] <= res["peak_rss_mb"]
    assert any(line.startswith("@progress ours:_encode_passages") for line in r.stdout.splitlines())


def test_the_build_reads_the_corpus_as_a_stream_of_articles(shared: Path, tmp_path: Path) -> None:
    """Ours is given the corpus as a stream (not a list it would keep, with every article's
    sentence vectors, for the whole build) that still says how long it is."""
    import operator
    from collections.abc import Sequence

    recs = C.bbc_records(shared / "data" / "bbcsport" / "bbcsport.jsonl")
    corpus = tmp_path / "c.jsonl"
    n_art, _ = C.write_corpus(C.synthetic(recs), corpus, tmp_path / "p.jsonl", 40, lambda _: None)
    arts = C.Articles(corpus)
    assert not isinstance(arts, Sequence) and operator.length_hint(arts) == n_art
    got = list(arts)
    assert [a.id for a in got] == [r["id"] for r in C.read_jsonl(corpus)] == [a.id for a in arts]
    assert got[0].metadata == {"category": next(C.read_jsonl(corpus))["category"]}


# ----------------------------------------------------------------------------- replay stand-ins


def test_replayed_vectors_are_the_mean_of_the_known_sentences(tmp_path: Path) -> None:
    sents = ["The striker scored twice in the final.", "Rain stopped play before tea on day two."]
    vecs = np.eye(2, 384, dtype=np.float32)
    p = M.table_paths(tmp_path)
    p["sentences"].write_text(json.dumps(sents))
    np.save(p["vectors"], vecs)
    p["entities"].write_text(json.dumps([[[4, 11, "ROLE", "nsubj score"]], []]))  # as enrich.tag
    table = M.SentenceTable(tmp_path)
    text = "Headline\n" + sents[1] + " " + sents[0]
    assert [i for _, i in table.spans(text)] == [1, 0]
    v = M.ReplayEmbedder(table).encode([text])[0]
    assert np.allclose(v[:2], [2**-0.5, 2**-0.5]) and np.isclose(np.linalg.norm(v), 1.0)
    at = text.index(sents[0])
    assert M.ReplayTagger(table)([text]) == [[(at + 4, at + 11, "ROLE", "nsubj score")]]


def test_the_replay_table_is_made_in_a_work_folder_that_does_not_exist_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_build.py table --work W with a new W: the models' work must not be lost."""
    from search.embed import HashEmbedder

    monkeypatch.setattr("search.embed.get_embedder", lambda name: HashEmbedder())
    monkeypatch.setattr("search.enrich.tag", lambda texts: [[(0, 3, "ORG", "")] for _ in texts])
    records = [{"id": "f/1", "title": "Head", "text": "The striker scored twice. Rain stopped play."}]
    work = tmp_path / "new" / "work"
    M.make_table(records, work, lambda *a: None)
    table = M.SentenceTable(work)
    assert table.texts and len(table.vectors) == len(table.texts) == len(table.entities)


# ----------------------------------------------------------------------------- no half index


def test_a_failed_build_keeps_the_previous_index_and_leaves_no_temp(tmp_path: Path) -> None:
    final = tmp_path / "ours-x"
    final.mkdir()
    (final / "marker").write_text("previous")
    with pytest.raises(KeyboardInterrupt):
        with G.atomic_build(final) as tmp:
            tmp.mkdir()
            (tmp / "half").write_text("")
            raise KeyboardInterrupt
    assert (final / "marker").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["ours-x"]
    with G.atomic_build(final) as tmp:
        tmp.mkdir()
        (tmp / "new").write_text("")
    assert [p.name for p in final.iterdir()] == ["new"] and [p.name for p in tmp_path.iterdir()] == ["ours-x"]


def test_half_builds_of_dead_processes_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f".ours-x.building-{int(dead.stdout)}"
    stale.mkdir()
    mine = tmp_path / f".ours-y.building-{os.getpid()}"
    mine.mkdir()
    assert G.remove_stale(tmp_path) == [stale] and mine.exists()


@pytest.mark.integration
def test_ctrl_c_during_a_build_leaves_no_index_dir(tmp_path: Path, shared: Path) -> None:
    work = tmp_path / "work"
    args = ["--scale", "3000", "--models", "hash", "--no-peers", "--data", str(shared), "--work", str(work)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "bench.py"), *args], stderr=subprocess.PIPE, text=True, env=env
    )
    # Wait until the build worker has started writing its temp index (or the run ended).
    while p.poll() is None and not any(work.glob(".ours-*.building-*/*")):
        time.sleep(0.05)
    assert p.poll() is None, "the build finished before it could be interrupted: raise --scale"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate()
    assert p.returncode == 130, err
    assert "interrupted: no half-built index left behind" in err
    left = sorted(x.name for x in work.iterdir())
    assert not [n for n in left if n.startswith("ours-") or ".building-" in n], left


def test_recall_maps_our_passage_ids_to_the_peers_rows() -> None:
    from bench_report import recall

    assert recall([[1, 2]], [[2, 3]], None) == 0.5
    assert recall([["a#0", "b#1"], ["zz"]], [[0, 1], [5]], {"a#0": 0, "b#1": 1}) == 0.5


def test_exact_top_is_the_brute_force_over_the_indexed_vectors(shared: Path, tmp_path: Path) -> None:
    recs = C.bbc_records(shared / "data" / "bbcsport" / "bbcsport.jsonl")
    _, n = C.write_corpus(C.synthetic(recs), None, tmp_path / "p.jsonl", 40, lambda _: None)
    qs = ["striker header", "penalty save in the final minute"]
    got = M.exact_top("hash", tmp_path, tmp_path / "p.jsonl", qs, k=3)
    from search.embed import HashEmbedder

    h = HashEmbedder()
    v = h.encode([p["dense"] for p in C.read_jsonl(tmp_path / "p.jsonl")])
    want = [list(np.argsort(-(v @ h.encode_query(q)), kind="stable")[:3]) for q in qs]
    assert got == want and n == len(v)


def test_progress_keeps_each_stage_s_own_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """NER and encode report in turns on one bar: each stage's elapsed time and ETA count
    from its own first report, not from the last switch (which showed "0 s  ETA 0 s")."""
    now = [100.0]
    monkeypatch.setattr(G.time, "monotonic", lambda: now[0])
    bar = G.Progress("encode", 100)
    bar.closed = True  # no ticking thread redraws
    bar.update(10, 100, "encode")
    now[0] += 50.0
    bar.update(5, 100, "ner")
    now[0] += 50.0
    bar.update(20, 100, "encode")
    assert bar.t0 == 100.0  # encode started at 100: 100 s elapsed, 20% done, ETA 400 s


def test_a_garbled_progress_line_is_skipped_and_the_result_still_read(tmp_path: Path) -> None:
    """A worker that forks mid-print can leave two progress lines run together; the build's
    result must still come through (it raised "too many values to unpack")."""
    worker = (
        "print('@progress ours:_encode 10 100@progress ours:_encode 20 100', flush=True)\n"
        "print('@progress ours:_encode 100 100', flush=True)\n"
        "print('@result {\"passages\": 100}', flush=True)\n"
    )
    bar = G.Progress("build ours", None)
    try:
        got = bench.run_worker([sys.executable, "-c", worker], bar, tmp_path / "log")
    finally:
        bar.close()
    assert got == {"passages": 100} and bar.done == 100
