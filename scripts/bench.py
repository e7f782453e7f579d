"""Speed, memory and scale of the engine, with peers measured in the same run.

    python scripts/bench.py [--what cold,index,warm,scale] [--passages 100000] [--scale 1000000]
                            [--data ../shared] [--work /tmp/search-bench] [--json]

cold   ``search ask "who scored the winner"`` on the seeds index in a new process, hybrid
       and ``--mode bm25``: median wall time of ``--runs`` runs (and whether bm25 imported torch).
index  Indexing throughput on BBC Sport (737 articles): the model's own encode rate, and
       everything else the engine does on a write (chunking, dedup, whoosh, vector
       segments, generation files) timed with the vectors replayed, in the same run.
warm   In-process query latency over ``--passages`` passages (BBC Sport repeated with
       varied ids; each copy's vectors are the real vectors of the text plus small random
       noise, renormalised: the target is index/serve behaviour, not model speed), over
       >= 200 questions (BBC football headlines + the dev questions): hybrid, bm25, dense
       and query-encode p50/p95; exact vector search against the IVF index (recall@10);
       whoosh's own searcher against our postings path; peers bm25s (Lucene) and
       sentence-transformers + FAISS flat over the same passages.
scale  The same at ``--scale`` passages: index time, peak serving memory (RSS of a fresh
       process) and hybrid p50 for exact, IVF-Flat and IVF-SQ8 vector search.

Figures are medians of a noisy shared machine: compare ratios within one run.
``--json`` prints one JSON line with everything measured.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from machine import machine  # noqa: E402  (scripts/ is on sys.path)

QUESTION = "who scored the winner"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


# ----------------------------------------------------------------------------- data


def bbc_articles(data: Path) -> list[dict[str, Any]]:
    with open(data / "data" / "bbcsport" / "bbcsport.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def questions(data: Path, n: int = 200) -> list[str]:
    out: list[str] = []
    dev = data / "eval" / "dev.jsonl"
    if dev.exists():
        out += [json.loads(line)["question"] for line in open(dev, encoding="utf-8") if line.strip()]
    with open(data / "data" / "bbcsport" / "football.jsonl", encoding="utf-8") as f:
        out += [json.loads(line)["title"] for line in f]
    return out[: max(n, 200)]


class ReplayEmbedder:
    """Real vectors of known texts (plus optional noise), without running the model.

    Writes go through the engine's whole path (chunking, dedup, whoosh, segments); only
    the model is skipped. Questions are encoded by the real model.
    """

    def __init__(self, real: Any, table: dict[str, np.ndarray], noise: float = 0.0, seed: int = 0) -> None:
        self.real = real
        self.model_id, self.dim = real.model_id, real.dim
        self.backend = getattr(real, "backend", "onnx")
        self.table = table
        self.noise = noise
        self.rng = np.random.default_rng(seed)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.table})
        if missing:  # texts the table was not built with (a new article): the real model
            self.table.update(zip(missing, self.real.encode(missing)))
        x = np.stack([self.table[t] for t in texts]).astype(np.float32)
        if self.noise:
            x += self.rng.standard_normal(x.shape).astype(np.float32) * self.noise
            x /= np.linalg.norm(x, axis=1, keepdims=True)
        if progress:
            progress(len(texts))
        return x

    def encode_query(self, text: str) -> np.ndarray:
        return self.real.encode_query(text)

    def info(self) -> dict[str, Any]:
        return self.real.info()


def passage_table(
    arts: list[dict[str, Any]], embedder: Any, work: Path
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Every BBC passage text → its real vector (encoded once, cached), and timings."""
    from search import engine as E
    from search.chunk import chunk, segment

    t0 = time.perf_counter()
    from search.text import headline

    # what the engine encodes: the article's headline, then the passage (E.dense_text)
    texts = [
        E.dense_text(headline(a.get("title") or "", a["text"]), p.text)
        for a in arts
        for p in chunk(a["id"], a["text"], target_chars=E.CHUNK_TARGET, overlap=E.CHUNK_OVERLAP)
    ]
    # The sentences are encoded at index time too (the answer stage compares them with the question).
    texts += [a["text"][u.start : u.end] for a in arts for u in segment(a["text"]) if not u.heading]
    chunk_s = time.perf_counter() - t0
    uniq = sorted(set(texts))
    cache = work / "bbc-vectors.npy"
    keyf = work / "bbc-vectors.json"
    timing = {"chunk_s": chunk_s, "passages": len(texts), "unique": len(uniq)}
    if (
        cache.exists()
        and keyf.exists()
        and json.loads(keyf.read_text()) == {"n": len(uniq), "first": uniq[0][:80]}
    ):
        vecs = np.load(cache)
    else:
        log(f"encoding {len(uniq)} unique BBC passages with the real model (once)")
        t0 = time.perf_counter()
        vecs = embedder.encode(uniq)
        timing["encode_all_s"] = time.perf_counter() - t0
        np.save(cache, vecs)
        keyf.write_text(json.dumps({"n": len(uniq), "first": uniq[0][:80]}))
    return dict(zip(uniq, vecs)), timing


class ReplayTagger:
    """The NER stage replayed: each distinct text tagged once by the real model, then looked up."""

    def __init__(self) -> None:
        self.memo: dict[str, list[tuple[int, int, str]]] = {}

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        from search.enrich import tag

        new = sorted({t for t in texts if t not in self.memo})
        self.memo.update(zip(new, tag(new)))
        return [self.memo[t] for t in texts]


def copies(arts: list[dict[str, Any]], n_copies: int) -> list[Any]:
    from search.types import Article

    return [
        Article(id=f"c{c:04d}/{a['id']}", title=a["title"], text=a["text"])
        for c in range(n_copies)
        for a in arts
    ]


# ----------------------------------------------------------------------------- cold


def cold(work: Path, runs: int, data: Path) -> dict[str, Any]:
    from search.engine import Engine
    from search.types import Article

    idx = work / "seeds-index"
    if not idx.exists():
        arts = [
            Article(
                id=p.name,
                title=p.read_text(encoding="utf-8").strip().split("\n", 1)[0],
                text=p.read_text(encoding="utf-8"),
            )
            for p in sorted((ROOT / "seeds").glob("*.txt"))
        ]
        with Engine.open(idx, create=True) as e:
            e.add(arts, reset=True)
    out: dict[str, Any] = {}
    probe = (
        "import sys,json,time; t=time.perf_counter(); from search.cli import main\n"
        "try: main(sys.argv[1:])\nexcept SystemExit: pass\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'faiss': 'faiss' in sys.modules}), file=sys.stderr)"
    )
    for mode in ("hybrid", "bm25"):
        times: list[float] = []
        cpu: list[float] = []
        mods: dict[str, bool] = {}
        for _ in range(runs):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-c", probe, "ask", QUESTION, "--mode", mode, "--index", str(idx)],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            times.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU time (user + system) is what a busy shared machine cannot inflate much.
            cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            if r.returncode != 0:
                raise SystemExit(f"cold {mode} failed: {r.stderr[-500:]}")
            mods = json.loads(r.stderr.strip().splitlines()[-1])
        out[mode] = {
            "median_s": statistics.median(times),
            "min_s": min(times),
            "cpu_median_s": statistics.median(cpu),
            "runs": runs,
            **mods,
        }
        log(
            f"cold {mode}: median {out[mode]['median_s']:.3f} s wall, {out[mode]['cpu_median_s']:.3f} s CPU "
            f"over {runs} runs {mods}"
        )
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    out["python_numpy_floor_s"] = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["python_numpy_floor_cpu_s"] = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return out


# ----------------------------------------------------------------------------- index


def index_throughput(work: Path, arts: list[dict[str, Any]], real: Any) -> dict[str, Any]:
    from search.engine import Engine

    table, t = passage_table(arts, real, work)
    texts = list(table)
    sample = texts[:: max(1, len(texts) // 512)][:512]  # a spread of lengths
    t0 = time.perf_counter()
    real.encode(sample)
    model_rate = len(sample) / (time.perf_counter() - t0)
    path = work / "index-throughput"
    shutil.rmtree(path, ignore_errors=True)
    with Engine.open(path, create=True, embedder=ReplayEmbedder(real, table), tagger=ReplayTagger()) as e:
        t0 = time.perf_counter()
        rep = e.add(copies(arts, 1), reset=True)
        rest_s = time.perf_counter() - t0
    model_s = rep.passages / model_rate
    out = {
        "passages": rep.passages,
        "model_passages_per_s": model_rate,
        "engine_without_model_s": rest_s,
        "chunk_s": t["chunk_s"],
        "model_s_estimated": model_s,
        "ratio": model_s / (model_s + rest_s),
        "indexing_passages_per_s": rep.passages / (model_s + rest_s),
    }
    log(
        f"index: model {model_rate:.1f} p/s, engine without the model {rest_s:.1f} s for {rep.passages} "
        f"passages (chunking {t['chunk_s']:.1f} s): ratio {out['ratio']:.3f}"
    )
    return out


# ----------------------------------------------------------------------------- warm / scale


def build_copies(
    work: Path, arts: list[dict[str, Any]], real: Any, n_passages: int, name: str
) -> dict[str, Any]:
    """An index of about ``n_passages`` passages (copies of BBC Sport), in one write."""
    from search.engine import Engine

    table, t = passage_table(arts, real, work)
    per_copy = t["passages"]
    n_copies = max(1, round(n_passages / per_copy))
    path = work / name
    if path.exists():
        from search.errors import SearchError

        try:
            with Engine.open(path, embedder=ReplayEmbedder(real, table), tagger=ReplayTagger()) as e:
                n = e.stats()["passages"]
        except SearchError:  # another index format: build it again
            n = -n_passages
        if abs(n - n_passages) / n_passages < 0.1:
            return {"path": str(path), "passages": n, "reused": True}
        shutil.rmtree(path)
    log(f"building {name}: {n_copies} copies of {len(arts)} articles ({per_copy} unique passages)")
    e = Engine.open(
        path, create=True, embedder=ReplayEmbedder(real, table, noise=0.01, seed=1), tagger=ReplayTagger()
    )
    t0 = time.perf_counter()
    rep = e.add(copies(arts, n_copies), reset=True)
    took = time.perf_counter() - t0
    e.close()
    log(f"built {rep.passages} passages in {took:.0f} s")
    return {"path": str(path), "passages": rep.passages, "build_s": took, "reused": False}


def segment_files(path: Path) -> list[Path]:
    gen = (path / "CURRENT").read_text().strip()
    return sorted(f for f in (path / gen).glob("seg-*.npy") if re.fullmatch(r"seg-\d+\.npy", f.name))


def set_ann(path: Path, quantizer: str | None) -> float:
    """The writer hook, applied by hand: (re)write or remove every segment's IVF file."""
    from search import vectors as vx

    t0 = time.perf_counter()
    for npy in segment_files(path):
        vx.ann_path(npy).unlink(missing_ok=True)
        if quantizer:
            vx.write_ann(npy, quantizer=quantizer)
    return time.perf_counter() - t0


SERVE = r"""
import json, resource, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from search.engine import Engine
path, qfile, whoosh_n = sys.argv[2], sys.argv[3], int(sys.argv[4])
qs = json.load(open(qfile))
t0 = time.perf_counter()
e = Engine.open(path)
b = e._backend
snap = b.reader() if hasattr(b, "reader") else b.snap
open_s = time.perf_counter() - t0
from search.text import query_terms
e.search(qs[0], k=10)  # load the model and the first postings
res = {"open_s": open_s, "hybrid": [], "ask": [], "bm25": [], "dense": [], "encode": [], "whoosh": [], "dense_top10": [],
       "method": [getattr(s, "search_method", "?") for s in snap.vector_segments]}
for q in qs:  # search and ask interleaved, so the machine's load falls on both alike
    t = time.perf_counter(); e.search(q, k=10, mode="hybrid"); res["hybrid"].append(time.perf_counter() - t)
    t = time.perf_counter(); e.ask(q, k=10, mode="hybrid"); res["ask"].append(time.perf_counter() - t)
for q in qs:
    terms = query_terms(q)
    t = time.perf_counter(); b.lexical(terms, 100); res["bm25"].append(time.perf_counter() - t)
    t = time.perf_counter(); v = e.embedder.encode_query(q); res["encode"].append(time.perf_counter() - t)
    t = time.perf_counter(); d = b.dense(v, 100); res["dense"].append(time.perf_counter() - t)
    res["dense_top10"].append([p for p, _ in d[:10]])
lex = snap.lexical
if whoosh_n:
    for q in qs[:whoosh_n]:
        terms = query_terms(q)
        t = time.perf_counter(); lex.search_whoosh(terms, 100); res["whoosh"].append(time.perf_counter() - t)
res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(res))
"""


def serve(path: str, qs: list[str], work: Path, whoosh_n: int = 0) -> dict[str, Any]:
    qfile = work / "questions.json"
    qfile.write_text(json.dumps(qs))
    r = subprocess.run(
        [sys.executable, "-c", SERVE, str(ROOT), path, str(qfile), str(whoosh_n)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise SystemExit(f"serving {path} failed: {r.stderr[-2000:]}")
    raw = json.loads(r.stdout.strip().splitlines()[-1])
    out: dict[str, Any] = {
        "open_s": raw["open_s"],
        "peak_rss_mb": raw["peak_rss_mb"],
        "method": raw["method"],
        "questions": len(qs),
    }
    for key in ("hybrid", "ask", "bm25", "dense", "encode", "whoosh"):
        if raw[key]:
            out[key] = {
                "p50_ms": pct(raw[key], 50) * 1000,
                "p95_ms": pct(raw[key], 95) * 1000,
                "n": len(raw[key]),
            }
    out["_dense_top10"] = raw["dense_top10"]
    return out


def exact_top10(path: Path, real: Any, qs: list[str]) -> list[list[str]]:
    """Exact top-10 passage ids by brute force over every live row (the ANN reference)."""
    from search.engine import Engine

    with Engine.open(path, embedder=real) as e:
        b = e._backend
        snap = b.reader() if hasattr(b, "reader") else b.snap
        out = []
        qv = np.stack([real.encode_query(q) for q in qs])
        best: list[list[tuple[float, str]]] = [[] for _ in qs]
        for seg in snap.vector_segments:
            v = np.asarray(seg.vectors)
            s = qv @ v.T
            s[:, ~seg.live] = -np.inf
            top = np.argsort(-s, axis=1)[:, :10]
            for i in range(len(qs)):
                best[i] += [(float(s[i, r]), snap.segments[seg.name].pid(int(r))) for r in top[i]]
        for b_ in best:
            b_.sort(key=lambda t: -t[0])
            out.append([p for _, p in b_[:10]])
    return out


def recall10(got: list[list[str]], want: list[list[str]]) -> float:
    return float(np.mean([len(set(g) & set(w)) / max(len(w), 1) for g, w in zip(got, want)]))


def peers(work: Path, arts: list[dict[str, Any]], real: Any, n_copies: int, qs: list[str]) -> dict[str, Any]:
    """bm25s (Lucene) and sentence-transformers + FAISS flat over the same passages."""
    import bm25s
    import faiss
    from whoosh.lang.porter import stem

    from search import engine as E
    from search.chunk import chunk
    from search.text import STOP_WORDS

    class Porter:
        def stemWords(self, ws: list[str]) -> list[str]:  # noqa: N802
            return [stem(w) for w in ws]

    table, _ = passage_table(arts, real, work)
    base = [
        p.text
        for a in arts
        for p in chunk(a["id"], a["text"], target_chars=E.CHUNK_TARGET, overlap=E.CHUNK_OVERLAP)
    ]
    texts = base * n_copies
    out: dict[str, Any] = {"passages": len(texts)}
    t0 = time.perf_counter()
    tok = bm25s.tokenize(texts, stopwords=sorted(STOP_WORDS), stemmer=Porter(), show_progress=False)
    m = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    m.index(tok, show_progress=False)
    out["bm25s_index_s"] = time.perf_counter() - t0
    ts = []
    for q in qs:
        t = time.perf_counter()
        qt = bm25s.tokenize([q], stopwords=sorted(STOP_WORDS), stemmer=Porter(), show_progress=False)
        m.retrieve(qt, k=100, show_progress=False, n_threads=1)
        ts.append(time.perf_counter() - t)
    out["bm25s"] = {"p50_ms": pct(ts, 50) * 1000, "p95_ms": pct(ts, 95) * 1000}
    del m, tok
    vecs = np.stack([table[t] for t in base] * n_copies).astype(np.float32)
    index = faiss.IndexFlatIP(vecs.shape[1])
    index.add(vecs)
    del vecs
    from search.embed import SentenceTransformerEmbedder

    st = SentenceTransformerEmbedder()
    ts, enc = [], []
    for q in qs:
        t = time.perf_counter()
        v = st.model.encode([q], normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
        t1 = time.perf_counter()
        index.search(v, 100)
        ts.append(time.perf_counter() - t)
        enc.append(t1 - t)
    out["st_faiss"] = {
        "p50_ms": pct(ts, 50) * 1000,
        "p95_ms": pct(ts, 95) * 1000,
        "encode_p50_ms": pct(enc, 50) * 1000,
    }
    log(f"peers: bm25s p50 {out['bm25s']['p50_ms']:.1f} ms, ST+FAISS p50 {out['st_faiss']['p50_ms']:.1f} ms")
    return out


def warm(
    work: Path,
    data: Path,
    arts: list[dict[str, Any]],
    real: Any,
    n: int,
    name: str,
    quantizers: Sequence[str | None],
    with_peers: bool,
    whoosh_n: int,
) -> dict[str, Any]:
    qs = questions(data)
    built = build_copies(work, arts, real, n, name)
    path = Path(built["path"])
    want = exact_top10(path, real, qs)
    out: dict[str, Any] = {"build": built, "runs": {}}
    for qz in quantizers:
        label = qz or "exact"
        ann_s = set_ann(path, qz)
        r = serve(str(path), qs, work, whoosh_n if qz == quantizers[0] else 0)
        r["ann_build_s"] = ann_s
        r["recall@10_vs_exact"] = recall10(r.pop("_dense_top10"), want)
        out["runs"][label] = r
        log(
            f"{name} {label}: hybrid p50 {r['hybrid']['p50_ms']:.1f} p95 {r['hybrid']['p95_ms']:.1f} ms, "
            f"ask p50 {r['ask']['p50_ms']:.1f} ms, "
            f"bm25 p50 {r['bm25']['p50_ms']:.1f}, dense p50 {r['dense']['p50_ms']:.1f}, "
            f"recall@10 {r['recall@10_vs_exact']:.3f}, rss {r['peak_rss_mb']:.0f} MB, methods {set(r['method'])}"
        )
    if with_peers:
        n_copies = max(1, round(built["passages"] / 2911))
        out["peers"] = peers(work, arts, real, n_copies, qs)
    return out


# ----------------------------------------------------------------------------- report


def table(res: dict[str, Any]) -> str:
    lines = [f"Machine: {res['machine']}. Date: {res['date']}.", ""]
    if "cold" in res:
        c = res["cold"]
        lines += [
            "| cold start (new process, seeds) | median wall s | min wall s | median CPU s | torch imported | "
            "faiss imported |",
            "|---|---|---|---|---|---|",
        ]
        for mode in ("hybrid", "bm25"):
            lines.append(
                f'| `search ask "{QUESTION}" --mode {mode}` ({c[mode]["runs"]} runs) | '
                f"{c[mode]['median_s']:.3f} | {c[mode]['min_s']:.3f} | {c[mode]['cpu_median_s']:.3f} | "
                f"{c[mode]['torch']} | {c[mode]['faiss']} |"
            )
        lines.append(
            f"| `python -c 'import numpy'` (floor) | {c['python_numpy_floor_s']:.3f} | | "
            f"{c['python_numpy_floor_cpu_s']:.3f} | | |"
        )
        lines.append("")
    if "index" in res:
        i = res["index"]
        lines += [
            "| indexing (BBC Sport, 737 articles) | value |",
            "|---|---|",
            f"| passages | {i['passages']} |",
            f"| model encode rate (ONNX, passages/s) | {i['model_passages_per_s']:.1f} |",
            f"| engine write without the model (s) | {i['engine_without_model_s']:.1f} |",
            f"| of which chunking (s) | {i['chunk_s']:.1f} |",
            f"| indexing rate (passages/s) | {i['indexing_passages_per_s']:.1f} |",
            f"| indexing rate / model rate (target >= 0.9) | {i['ratio']:.3f} |",
            "",
        ]
    for key in ("warm", "scale"):
        if key not in res:
            continue
        w = res[key]
        lines += [
            f"| {key}: {w['build']['passages']:,} passages | hybrid p50 | hybrid p95 | bm25 p50 | dense p50 | "
            "encode p50 | recall@10 vs exact | peak RSS MB | open s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for label, r in w["runs"].items():
            lines.append(
                f"| vectors: {label} ({', '.join(sorted(set(r['method'])))}) | {r['hybrid']['p50_ms']:.1f} | "
                f"{r['hybrid']['p95_ms']:.1f} | {r['bm25']['p50_ms']:.1f} | {r['dense']['p50_ms']:.2f} | "
                f"{r['encode']['p50_ms']:.1f} | {r['recall@10_vs_exact']:.3f} | {r['peak_rss_mb']:.0f} | "
                f"{r['open_s']:.1f} |"
            )
        first = next(iter(w["runs"].values()))
        if "whoosh" in first:
            lines.append(
                f"\nwhoosh's own searcher, same index: p50 {first['whoosh']['p50_ms']:.1f} ms over "
                f"{first['whoosh']['n']} questions; ours (postings in numpy) {first['bm25']['p50_ms']:.1f} ms: "
                f"ratio ours/whoosh {first['bm25']['p50_ms'] / first['whoosh']['p50_ms']:.2f}."
            )
        if "build_s" in w["build"]:
            lines.append(f"\nIndex build (engine write, vectors replayed): {w['build']['build_s']:.0f} s.")
        if "peers" in w:
            p = w["peers"]
            best = min(w["runs"].values(), key=lambda r: r["dense"]["p50_ms"])
            lines += [
                "",
                f"| peers, same {p['passages']:,} passages | p50 ms | p95 ms | ours p50 ms | ours/peer |",
                "|---|---|---|---|---|",
                f"| bm25s (Lucene BM25, top 100) | {p['bm25s']['p50_ms']:.2f} | {p['bm25s']['p95_ms']:.2f} | "
                f"{first['bm25']['p50_ms']:.2f} | {first['bm25']['p50_ms'] / p['bm25s']['p50_ms']:.2f} |",
                f"| sentence-transformers + FAISS flat (encode + search) | {p['st_faiss']['p50_ms']:.2f} | "
                f"{p['st_faiss']['p95_ms']:.2f} | {best['encode']['p50_ms'] + best['dense']['p50_ms']:.2f} | "
                f"{(best['encode']['p50_ms'] + best['dense']['p50_ms']) / p['st_faiss']['p50_ms']:.2f} |",
                f"\nbm25s index time {p['bm25s_index_s']:.1f} s.",
            ]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--what", default="cold,index,warm")
    ap.add_argument("--data", type=Path, default=Path("../shared"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/search-bench"))
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--scale", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--whoosh-questions", type=int, default=50)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    what = set(args.what.split(","))
    res: dict[str, Any] = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M")}
    if "cold" in what:
        res["cold"] = cold(args.work, args.runs, args.data)
    real = None
    if what & {"index", "warm", "scale"}:
        from search.embed import get_embedder

        real = get_embedder("auto")
        arts = bbc_articles(args.data)
    if "index" in what:
        res["index"] = index_throughput(args.work, arts, real)
    if "warm" in what:
        res["warm"] = warm(
            args.work,
            args.data,
            arts,
            real,
            args.passages,
            f"warm-{args.passages}",
            [None, "flat"],
            not args.no_peers,
            args.whoosh_questions,
        )
    if "scale" in what:
        res["scale"] = warm(
            args.work, args.data, arts, real, args.scale, f"scale-{args.scale}", ["sq8", "flat"], False, 0
        )
    res["peak_rss_mb_bench"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(json.dumps(res))
    else:
        print(table(res))


if __name__ == "__main__":
    main()
