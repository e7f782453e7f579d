"""BM25 at scale: build a lexical index of varied synthetic passages, then time the BM25 stage.

    python scripts/bm25_scale.py build --out /work/helpers/bm25_1m --passages 1000000
    python scripts/bm25_scale.py measure --index /work/helpers/bm25_1m [--json]

``build`` writes only the lexical side (whoosh, as the engine's local backend lays it out:
passages with text + title, and the document-level index ``docs``), no vectors. Articles
are recombined from real sentences: BBC Sport sentences shuffled across articles with
SciFact sentences mixed in for vocabulary, under headlines spliced from two BBC
headlines; they are packed into passages as the engine's chunker packs them (about 700
characters, one sentence of overlap). Replayed copies of one corpus would make posting
lists unrealistically regular. It commits every ``--commit-every`` passages (a streamed
build: several whoosh segments) and builds into ``OUT/lexical.tmp``, renamed to
``OUT/lexical`` at the end, so an interrupted build leaves no half index behind.

``measure`` times the BM25 stage as the engine runs it (passages top ``--k`` and the
document level twice as deep, with the football expansions) over the dev questions and
BBC headlines: ``main`` (the code in ``--main-code``: whoosh's posting blocks decoded per
query term), ``whoosh`` (this code reading whoosh's blocks) and ``arrays`` (this code on
the postings arrays written at commit). Each path runs alone in a fresh process (open
time, RSS, latency), and all of them in one more fresh process that asks each question
of every path in turn, so every path meets the same load on a shared machine. The
index's files are evicted from the page cache first: cold is the first pass over the
questions, warm the next. Wall and CPU time (on a shared machine the wall time also
measures the other processes). It also reports the build time and the disk used.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from search import lexical as lx  # noqa: E402
from search.chunk import DEFAULT_TARGET_CHARS, sentence_spans  # noqa: E402
from search.text import analyze  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
BBC_SHARE = 0.8  # the rest of an article's sentences come from SciFact abstracts


@dataclass
class Synthetic:
    id: str
    title: list[str]  # analysed
    passages: list[list[str]]  # analysed terms of each passage


def _sentences(path: Path, key: str = "text") -> tuple[list[str], list[str]]:
    """Every sentence of a JSONL corpus, and its titles."""
    sents: list[str] = []
    titles: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        text = rec[key]
        sents += [text[s:e] for s, e in sentence_spans(text)]
        titles.append(rec.get("title", ""))
    return sents, titles


def synthetic(data: Path, seed: int) -> Iterator[Synthetic]:
    """Articles recombined from BBC Sport and SciFact sentences, packed into passages.

    Sentences are analysed once each (a passage's terms are its sentences' terms: the
    analyser never joins words across the spaces between sentences).
    """
    bbc, titles = _sentences(data / "bbcsport" / "bbcsport.jsonl")
    sci, _ = _sentences(data / "scifact" / "corpus.jsonl")
    pools = [[(len(s), analyze(s)) for s in pool] for pool in (bbc, sci)]
    heads = [t.split() for t in titles if len(t.split()) >= 2]
    rng = random.Random(seed)
    i = 0
    while True:
        a, b = rng.choice(heads), rng.choice(heads)
        title = " ".join(a[: len(a) // 2] + b[len(b) // 2 :])
        sents = [
            rng.choice(pools[0] if rng.random() < BBC_SHARE else pools[1]) for _ in range(rng.randint(4, 30))
        ]
        yield Synthetic(f"a{i:07d}", analyze(title), _pack(sents))
        i += 1


def _pack(sents: list[tuple[int, list[str]]], target: int = DEFAULT_TARGET_CHARS) -> list[list[str]]:
    """search.chunk's packing over sentence lengths (one sentence of overlap, no headings)."""
    groups: list[list[tuple[int, list[str]]]] = []
    cur: list[tuple[int, list[str]]] = []
    fresh = 0
    for s in sents:
        size = sum(n + 1 for n, _ in cur) + s[0]
        if cur and fresh and size > target:
            groups.append(cur)
            carry = cur[-1:]
            cur = carry if carry[0][0] + 1 + s[0] <= target else []
            fresh = 0
        cur.append(s)
        fresh += 1
    if cur and fresh:
        groups.append(cur)
    return [[t for _, terms in g for t in terms] for g in groups]


def build(out: Path, passages: int, data: Path, seed: int, commit_every: int) -> dict[str, object]:
    final = out / "lexical"
    if final.is_dir():
        raise SystemExit(f"{final} exists: remove it to rebuild, or measure it")
    tmp = out / "lexical.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    lx.create(tmp)
    t0 = time.perf_counter()
    done = arts = since = commits = 0
    commit_s = 0.0
    w = lx.LexicalWriter(tmp)
    dw = lx.LexicalWriter(tmp, indexname=lx.DOCS)
    try:
        for art in synthetic(data, seed):
            title = " ".join(art.title)
            for n, terms in enumerate(art.passages):
                w.add(f"{art.id}#{n}", art.id, " ".join(terms), title)
            dw.add(art.id, art.id, " ".join(art.title + [t for p in art.passages for t in p]))
            done += len(art.passages)
            since += len(art.passages)
            arts += 1
            if since >= commit_every or done >= passages:
                c0 = time.perf_counter()
                w.commit()
                dw.commit()
                commit_s += time.perf_counter() - c0
                commits += 1
                since = 0
                el = time.perf_counter() - t0
                eta = el / done * max(passages - done, 0)
                print(
                    f"  {done:>9,}/{passages:,} passages, {arts:,} articles, {el:,.0f} s, "
                    f"{done / el:,.0f}/s, ETA {eta:,.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
                if done >= passages:
                    break
                w = lx.LexicalWriter(tmp)
                dw = lx.LexicalWriter(tmp, indexname=lx.DOCS)
    except BaseException:
        w.cancel()
        dw.cancel()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.rename(tmp, final)
    info: dict[str, object] = {
        "passages": done,
        "articles": arts,
        "seed": seed,
        "commit_every": commit_every,
        "commits": commits,
        "build_s": round(time.perf_counter() - t0, 1),
        "commit_s": round(commit_s, 1),
        # This code writes the postings arrays in each commit: their time is in build_s.
        "arrays_s": "in build_s",
        "disk_bytes": sum(p.stat().st_size for p in final.iterdir()),
    }
    (out / "build.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    return info


def derive(lexical: Path) -> float:
    """Write the postings arrays of every segment that lacks them (as a commit does); seconds."""
    from whoosh import index

    from search.lexical_writer import ensure_arrays

    t0 = time.perf_counter()
    for name in ("MAIN", lx.DOCS):
        n = ensure_arrays(lexical, index.open_dir(str(lexical), indexname=name, readonly=True))
        print(f"  {name}: arrays written for {n} segment(s)", file=sys.stderr, flush=True)
    return time.perf_counter() - t0


def disk(lexical: Path) -> dict[str, int]:
    files = [p for p in lexical.iterdir() if p.is_file()]
    arrays = sum(p.stat().st_size for p in files if ".bm25." in p.name)
    return {"whoosh_bytes": sum(p.stat().st_size for p in files) - arrays, "arrays_bytes": arrays}


def questions(data: Path, dev: Path, n_headlines: int, seed: int = 0) -> list[str]:
    """The dev questions and a fixed sample of BBC Sport headlines."""
    qs = [
        json.loads(line)["question"] for line in dev.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    titles = [
        json.loads(line)["title"] for line in (data / "bbcsport" / "bbcsport.jsonl").open(encoding="utf-8")
    ]
    return qs + random.Random(seed).sample(titles, n_headlines)


def _status() -> dict[str, float]:
    """RSS figures of this process in MB (RssFile: memory-mapped files, page cache shared)."""
    out = {}
    for line in open("/proc/self/status", encoding="utf-8"):
        key, _, val = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(val.split()[0]) / 1024
    return out


def _evict(lexical: Path) -> None:
    """Drop this index's files (only them) from the page cache, so a pass reads the disk."""
    for p in lexical.iterdir():
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _load(code: str) -> SimpleNamespace:
    """The engine's lexical pieces imported from the checkout ``code`` (a module set of its own)."""
    import importlib

    for name in [m for m in sys.modules if m == "search" or m.startswith("search.")]:
        del sys.modules[name]
    sys.path.insert(0, code)
    try:
        mods = {m: importlib.import_module(f"search.{m}") for m in ("lexical", "text", "vocab", "fusion")}
    finally:
        sys.path.remove(code)
    return SimpleNamespace(**mods)


class _Stage:
    """The BM25 stage as the local backend runs it: passages, and documents twice as deep."""

    def __init__(self, ns: SimpleNamespace, lexical: Path, path: str, k: int) -> None:
        kw = {} if path == "main" else {"arrays": path == "arrays"}
        t0 = time.perf_counter()
        self.lex = ns.lexical.LexicalIndex(lexical, **kw)
        self.docs = ns.lexical.LexicalIndex(lexical, indexname=ns.lexical.DOCS, **kw)
        self.lex._leaves()
        self.docs._leaves()
        self.open_s = time.perf_counter() - t0
        self.ns, self.k = ns, k
        self.football = ns.vocab.is_football(self.lex.idf)
        self.dw = ns.fusion.doc_weight(self.docs.doc_count())

    def __call__(self, question: str) -> list[tuple[str, float]]:
        terms = self.ns.text.query_terms(question)
        exp = self.ns.vocab.expand(terms) if self.football else []
        hits = self.lex.search(terms, self.k, exp)
        if self.dw > 0:
            hits = self.ns.fusion.with_documents(hits, self.docs.search(terms, 2 * self.k, exp), self.dw)[
                : self.k
            ]
        return hits


def _code(path: str, main_code: str) -> str:
    return main_code if path == "main" else str(ROOT)


def serve(index_dir: Path, path: str, qfile: Path, k: int, main_code: str) -> dict[str, object]:
    """One fresh process, one path (the index's files evicted first): open time, RSS, and
    the questions asked twice (cold, warm) with nothing else in the process."""
    lexical = index_dir / "lexical"
    ns = _load(_code(path, main_code))
    _evict(lexical)
    base = _status()
    stage = _Stage(ns, lexical, path, k)
    opened = _status()
    qs = [q for q in qfile.read_text(encoding="utf-8").splitlines() if q.strip()]
    wall: dict[str, list[float]] = {"cold": [], "warm": []}
    cpu: dict[str, list[float]] = {"cold": [], "warm": []}
    for name in ("cold", "warm"):
        for q in qs:
            t, c = time.perf_counter(), time.process_time()
            stage(q)
            wall[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.process_time() - c) * 1000)
    return {
        "path": path,
        "open_s": stage.open_s,
        "rss_mb": {"before_open": base, "after_open": opened, "after": _status()},
        "solo_ms": wall,
        "solo_cpu_ms": cpu,
    }


def race(index_dir: Path, paths: list[str], qfile: Path, k: int, main_code: str) -> dict[str, object]:
    """One fresh process, every path: each question asked of each path in turn (the order
    rotating), cold (the index's files evicted, first pass) then warm, so every path
    meets the same load on a shared machine. Wall and CPU time per question."""
    lexical = index_dir / "lexical"
    loaded = {code: _load(code) for code in {_code(p, main_code) for p in paths}}
    _evict(lexical)
    stages = {p: _Stage(loaded[_code(p, main_code)], lexical, p, k) for p in paths}
    qs = [q for q in qfile.read_text(encoding="utf-8").splitlines() if q.strip()]
    out: dict[str, dict[str, object]] = {p: {"ms": {}, "cpu_ms": {}, "top10": []} for p in paths}
    for name in ("cold", "warm"):
        wall: dict[str, list[float]] = {p: [] for p in paths}
        cpu: dict[str, list[float]] = {p: [] for p in paths}
        for i, q in enumerate(qs):
            for p in paths[i % len(paths) :] + paths[: i % len(paths)]:
                t, c = time.perf_counter(), time.process_time()
                hits = stages[p](q)
                wall[p].append((time.perf_counter() - t) * 1000)
                # CPU time as well: on a shared machine wall time also measures the others.
                cpu[p].append((time.process_time() - c) * 1000)
                if name == "warm":
                    out[p]["top10"].append([pid for pid, _ in hits[:10]])  # type: ignore[union-attr]
        for p in paths:
            out[p]["ms"][name] = wall[p]  # type: ignore[index]
            out[p]["cpu_ms"][name] = cpu[p]  # type: ignore[index]
    return out


def _pct(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(int(round(q / 100 * (len(ys) - 1))), len(ys) - 1)]


def measure(
    index_dir: Path, data: Path, dev: Path, paths: list[str], k: int, headlines: int, main_code: str
) -> dict[str, object]:
    import subprocess
    import tempfile

    lexical = index_dir / "lexical"
    info = json.loads((index_dir / "build.json").read_text(encoding="utf-8"))
    if "arrays_s" not in info:
        info["arrays_s"] = round(derive(lexical), 1)
        (index_dir / "build.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    info.update(disk(lexical))
    qs = questions(data, dev, headlines)
    out: dict[str, object] = {"build": info, "questions": len(qs), "k": k, "load_start": os.getloadavg()[0]}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(q.replace("\n", " ") for q in qs))

    def run(*args: str) -> dict[str, object]:
        cmd = [sys.executable, __file__, *args, "--index", str(index_dir), "--questions", f.name]
        cmd += ["--k", str(k), "--main-code", main_code]
        print(f"  {' '.join(cmd)}", file=sys.stderr, flush=True)
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)  # type: ignore[no-any-return]

    raced = run("race", "--paths", ",".join(paths))
    for path in paths:
        res = {**run("serve", "--path", path), **raced[path]}  # type: ignore[dict-item]
        out[path] = res
        ms, cpu = res["solo_ms"], res["solo_cpu_ms"]
        print(
            f"  {path}: open {res['open_s']:.2f} s, cold p50 {_pct(ms['cold'], 50):.1f} ms p95 "
            f"{_pct(ms['cold'], 95):.1f}, warm p50 {_pct(ms['warm'], 50):.2f} ms p95 {_pct(ms['warm'], 95):.2f} "
            f"(CPU {_pct(cpu['warm'], 50):.2f}), RSS {res['rss_mb']['after']['VmRSS']:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    os.unlink(f.name)
    out["load_end"] = os.getloadavg()[0]
    if "main" in out and "arrays" in out:
        a, m = out["arrays"]["top10"], out["main"]["top10"]  # type: ignore[index]
        out["same_top10"] = sum(x == y for x, y in zip(a, m))
    return out


def _seconds(x: object) -> str:
    return f"{x:,.1f} s" if isinstance(x, (int, float)) else str(x)


def table(res: dict[str, object]) -> str:
    b = res["build"]  # type: ignore[index]

    def pp(xs: list[float]) -> str:
        return f"{_pct(xs, 50):.2f} / {_pct(xs, 95):.2f}"

    paths = [p for p in ("main", "whoosh", "arrays") if isinstance(res.get(p), dict)]
    rows = [
        f"{b['passages']:,} passages, {b['articles']:,} articles, {res['questions']} questions, k={res['k']}, "  # type: ignore[index]
        f"load {res['load_start']:.1f} -> {res['load_end']:.1f}",
        "",
        "Each path alone in a fresh process (p50 / p95, ms):",
        "",
        "| path | open s | wall cold | wall warm | CPU cold | CPU warm | RSS after open MB | RSS after MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        r = res[path]  # type: ignore[index]
        ms, cpu, rss = r["solo_ms"], r["solo_cpu_ms"], r["rss_mb"]
        rows.append(
            f"| {path} | {r['open_s']:.2f} | {pp(ms['cold'])} | {pp(ms['warm'])} | {pp(cpu['cold'])} | "
            f"{pp(cpu['warm'])} | {rss['after_open']['VmRSS'] - rss['before_open']['VmRSS']:.0f} | "
            f"{rss['after']['VmRSS'] - rss['before_open']['VmRSS']:.0f} |"
        )
    rows += [
        "",
        "The paths in one process, each question asked of each in turn (p50 / p95, ms):",
        "",
        "| path | wall cold | wall warm | CPU cold | CPU warm |",
        "|---|---|---|---|---|",
    ]
    for path in paths:
        r = res[path]  # type: ignore[index]
        ms, cpu = r["ms"], r["cpu_ms"]
        rows.append(
            f"| {path} | {pp(ms['cold'])} | {pp(ms['warm'])} | {pp(cpu['cold'])} | {pp(cpu['warm'])} |"
        )
    rows.append(
        f"\nbuild {b['build_s']:,.0f} s (whoosh), arrays {_seconds(b['arrays_s'])}; disk whoosh "  # type: ignore[index]
        f"{b['whoosh_bytes'] / 2**20:,.0f} MB + arrays {b['arrays_bytes'] / 2**20:,.0f} MB"  # type: ignore[index]
    )
    if "same_top10" in res:
        rows.append(f"warm top 10 identical to main's on {res['same_top10']}/{res['questions']} questions")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the synthetic lexical index")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--passages", type=int, default=1_000_000)
    b.add_argument("--data", type=Path, default=DATA)
    b.add_argument("--seed", type=int, default=17)
    b.add_argument("--commit-every", type=int, default=100_000)
    m = sub.add_parser("measure", help="time the BM25 stage, each path in a fresh process")
    m.add_argument("--index", type=Path, required=True)
    m.add_argument("--data", type=Path, default=DATA)
    m.add_argument("--dev", type=Path, default=DATA.parent / "eval" / "dev.jsonl")
    m.add_argument("--paths", default="main,whoosh,arrays", help="main: /work/main's code; whoosh: this code "
                   "reading whoosh's blocks; arrays: this code on the postings arrays")  # fmt: skip
    m.add_argument(
        "--k", type=int, default=50, help="passages (documents: twice as many), as the engine asks"
    )
    m.add_argument("--headlines", type=int, default=225)
    m.add_argument("--json", action="store_true")
    m.add_argument("--main-code", default="/work/main", help="the checkout the 'main' path imports")
    for name in ("serve", "race"):  # the fresh processes measure runs
        s = sub.add_parser(name, help=argparse.SUPPRESS)
        s.add_argument("--index", type=Path, required=True)
        s.add_argument("--path" if name == "serve" else "--paths", required=True)
        s.add_argument("--questions", type=Path, required=True)
        s.add_argument("--k", type=int, default=50)
        s.add_argument("--main-code", default="/work/main")
    args = ap.parse_args()
    if args.cmd == "build":
        print(json.dumps(build(args.out, args.passages, args.data, args.seed, args.commit_every), indent=2))
    elif args.cmd == "measure":
        paths = args.paths.split(",")
        res = measure(args.index, args.data, args.dev, paths, args.k, args.headlines, args.main_code)
        print(json.dumps(res) if args.json else table(res))
    elif args.cmd == "serve":
        print(json.dumps(serve(args.index, args.path, args.questions, args.k, args.main_code)))
    else:
        print(json.dumps(race(args.index, args.paths.split(","), args.questions, args.k, args.main_code)))


if __name__ == "__main__":
    main()
