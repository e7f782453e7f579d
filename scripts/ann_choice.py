"""Which ANN index the vector stage builds: FAISS HNSW, IVF and IVF-HNSW, measured side by side.

    python scripts/ann_choice.py [--data ../shared] [--cache /work/helpers/vec_cache]
                                 [--scale N] [--only hnsw,ivf,ivf-hnsw,flat] [--json]

Vectors: real, unique MiniLM vectors (scripts/ann_vectors.py: ~102k SciFact and BBC Sport
passages and sentences, encoded once and cached); ``--scale N`` above that adds convex
combinations of two texts of one article, renormalised. Queries: ~1,850 SciFact claims,
BBC headlines and dev questions, none of them in the base set.

Every candidate is built with ``search.ann.build`` (every core), saved, read back the way
a reader does (memory-mapped), and searched through ``VectorSegment.search``, the engine's
own path: one query at a time on ``QUERY_THREADS`` thread(s), the ANN's candidates
re-scored from the rows as a segment stores them (int8 codes, :mod:`search.vector_codes`).
For each one, the table gives:

recall@10      top 10 of ``search(q, 10)`` against exact inner products, mean over queries
filtered       the same with a filter that lets a random 10% of rows through
p50/p95 ms     per query, ``k = 10``; ``k50`` is the p50 at the engine's retrieval depth 50
build s        wall time of training and adding (2 shared cores)
bytes/vec      the ANN file's size per vector (the ``.npy`` of codes, dim bytes, comes on top)

Timings are medians on a shared machine (the load average is printed): compare rows of
one run. Search sweeps (``ef_search``, ``nprobe``) reuse one build.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from ann_vectors import CACHE, real_set, scaled  # noqa: E402  (scripts/ is on sys.path)
from machine import machine  # noqa: E402

from search import ann  # noqa: E402
from search import vectors as vx  # noqa: E402
from search.ann import AnnSpec  # noqa: E402
from search.vector_codes import as_float32  # noqa: E402

#: (build spec, the search settings swept over that one build)
HNSW_EF = (16, 24, 32, 48, 64, 96, 128)
IVF_PROBES = (8, 12, 16, 24, 32, 48, 64, 96)
CANDIDATES: list[tuple[AnnSpec, list[dict[str, int]]]] = [
    (AnnSpec("ivf", "Flat", nlist_scale=2.0), [{"nprobe": 0}]),  # main before #17: nlist/4
    (AnnSpec("hnsw", "SQ8", m=16, ef_construction=40), [{"ef_search": e} for e in HNSW_EF]),
    (
        AnnSpec("hnsw", "SQ8", m=32, ef_construction=40),
        [{"ef_search": e} for e in HNSW_EF] + [{"ef_search": e, "rescore": e} for e in HNSW_EF],
    ),
    (AnnSpec("hnsw", "SQ8", m=32, ef_construction=80), [{"ef_search": e} for e in HNSW_EF]),
    (AnnSpec("hnsw", "Flat", m=32, ef_construction=40), [{"ef_search": e} for e in HNSW_EF]),
    (AnnSpec("ivf", "SQ8", nlist_scale=4.0), [{"nprobe": p} for p in IVF_PROBES]),
    (AnnSpec("ivf", "SQ8", nlist_scale=8.0), [{"nprobe": p} for p in IVF_PROBES]),
    (AnnSpec("ivf-hnsw", "SQ8", nlist_scale=8.0, ef_search=64), [{"nprobe": p} for p in IVF_PROBES]),
    (AnnSpec("ivf-hnsw", "SQ8", nlist_scale=16.0, ef_search=64), [{"nprobe": p} for p in IVF_PROBES]),
]
FILTER_SHARE = 0.10


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def exact_top(x: np.ndarray, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Exact top ``k`` rows per query (blocked matrix products)."""
    out = np.empty((len(q), k), dtype=np.int64)
    step = max(1, 2**25 // len(x))  # a block of scores stays near 128 MB
    for lo in range(0, len(q), step):
        s = q[lo : lo + step] @ x.T
        if allowed is not None:
            s[:, ~allowed] = -np.inf
        top = np.argpartition(-s, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(s, top, axis=1).argsort(axis=1)[:, ::-1]
        out[lo : lo + step] = np.take_along_axis(top, order, axis=1)
    return out


def recall(got: list[np.ndarray], want: np.ndarray) -> float:
    return float(np.mean([len(set(g.tolist()) & set(w.tolist())) / len(w) for g, w in zip(got, want)]))


def timed(
    seg: vx.VectorSegment, q: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[list[float], list[np.ndarray]]:
    secs, rows = [], []
    for qi in q:
        t = time.perf_counter()
        _, r = seg.search(qi, k, allowed)
        secs.append(time.perf_counter() - t)
        rows.append(r[0])
    return secs, rows


def measure(
    seg: vx.VectorSegment, q: np.ndarray, want: np.ndarray, want_f: np.ndarray, allowed: np.ndarray
) -> dict[str, Any]:
    seg.search(q[0], 10)  # load the index
    secs, rows = timed(seg, q, 10)
    secs50, _ = timed(seg, q, 50)
    _, rows_f = timed(seg, q[: len(q) // 4], 10, allowed)
    return {
        "recall@10": recall(rows, want),
        "recall@10_filtered": recall(rows_f, want_f[: len(rows_f)]),
        "p50_ms": 1000 * float(np.percentile(secs, 50)),
        "p95_ms": 1000 * float(np.percentile(secs, 95)),
        "k50_p50_ms": 1000 * float(np.percentile(secs50, 50)),
    }


def run(x: np.ndarray, q: np.ndarray, only: set[str], work: Path) -> list[dict[str, Any]]:
    n = len(x)
    log(f"exact top 10 of {len(q)} queries over {n:,} vectors")
    want = exact_top(x, q, 10)
    allowed = np.random.default_rng(1).random(n) < FILTER_SHARE
    want_f = exact_top(x, q[: len(q) // 4], 10, allowed)
    npy = work / "seg-000001.npy"
    vx.save_vectors(npy, x)
    vectors = vx.load_vectors(npy)
    live = np.ones(n, dtype=bool)
    rows: list[dict[str, Any]] = []
    if "flat" in only:
        r = measure(vx.VectorSegment("exact", vectors, live), q, want, want_f, allowed)
        rows.append(
            {
                "label": "exact (numpy over the stored rows)",
                "kind": "exact",
                **r,
                "build_s": 0.0,
                "bytes_per_vector": 0.0,
            }
        )
        log(f"exact: p50 {r['p50_ms']:.2f} ms")
    for spec, sweep in CANDIDATES:
        if spec.kind not in only:
            continue
        t = time.perf_counter()
        index, built = ann.build(vectors, spec, vx.QUERY_THREADS)
        build_s = time.perf_counter() - t
        out = ann.write(index, vx.ann_path(npy))
        del index
        size = out.stat().st_size
        for change in sweep:
            if change == {"nprobe": 0}:  # the rule of main before #17: a quarter of the lists
                change = {"nprobe": built.nlist // 4}
            s = replace(built, **change)
            seg = vx.VectorSegment("s", vectors, live, ann=s)
            r = measure(seg, q, want, want_f, allowed)
            row = {
                "label": s.label(),
                "kind": s.kind,
                "spec": s.to_dict(),
                **r,
                "build_s": build_s,
                "bytes_per_vector": size / n,
            }
            rows.append(row)
            log(
                f"{row['label']}: recall {r['recall@10']:.3f} (filtered {r['recall@10_filtered']:.3f}), "
                f"p50 {r['p50_ms']:.2f} p95 {r['p95_ms']:.2f} k50 {r['k50_p50_ms']:.2f} ms, "
                f"build {build_s:.1f} s, {size / n:.0f} B/vec"
            )
        out.unlink()
    return rows


SHARES = (0.025, 0.05, 0.1, 0.2, 0.4)


def filtered(x: np.ndarray, q: np.ndarray, specs: list[AnnSpec], work: Path) -> list[dict[str, Any]]:
    """Filtered search at k = 50 (the engine's depth) for a few shares of allowed rows:
    recall@10 and p50 through the index (whatever ``EXACT_ALLOWED_ROWS`` says), against
    gathering the allowed rows and scoring them exactly."""
    n = len(x)
    npy = work / "seg-000001.npy"
    vx.save_vectors(npy, x)
    vectors = vx.load_vectors(npy)
    live = np.ones(n, dtype=bool)
    masks = {sh: np.random.default_rng(7).random(n) < sh for sh in SHARES}
    wants = {sh: exact_top(x, q, 10, m) for sh, m in masks.items()}
    exact_ms = {}
    for sh, m in masks.items():
        ts = []
        for qi in q:
            t = time.perf_counter()
            rows = np.flatnonzero(m)
            vx._numpy_top(as_float32(vectors[rows]), None, qi, 50)
            ts.append(time.perf_counter() - t)
        exact_ms[sh] = 1000 * float(np.percentile(ts, 50))
    out: list[dict[str, Any]] = [
        {
            "label": "exact over the allowed rows",
            "shares": {
                sh: {"allowed": int(m.sum()), "recall@10": 1.0, "p50_ms": exact_ms[sh]}
                for sh, m in masks.items()
            },
        }
    ]
    keep = vx.EXACT_ALLOWED_ROWS
    vx.EXACT_ALLOWED_ROWS = 0  # always through the index here
    try:
        for spec in specs:
            index, built = ann.build(vectors, spec, vx.QUERY_THREADS)
            path = ann.write(index, vx.ann_path(npy))
            del index
            seg = vx.VectorSegment("s", vectors, live, ann=built)
            seg.search(q[0], 10)
            row: dict[str, Any] = {"label": built.label(), "shares": {}}
            for sh, m in masks.items():
                secs, found = timed(seg, q, 50, m)
                row["shares"][sh] = {
                    "allowed": int(m.sum()),
                    "recall@10": recall([r[:10] for r in found], wants[sh]),
                    "p50_ms": 1000 * float(np.percentile(secs, 50)),
                }
                log(f"filtered {row['label']} {sh:.1%}: {row['shares'][sh]}")
            out.append(row)
            path.unlink()
    finally:
        vx.EXACT_ALLOWED_ROWS = keep
    return out


def filter_table(rows: list[dict[str, Any]]) -> str:
    shares = list(rows[0]["shares"])
    head = " | ".join(f"{sh:.1%} ({rows[0]['shares'][sh]['allowed']:,} rows)" for sh in shares)
    lines = [f"| k=50, p50 ms (recall@10) | {head} |", "|---|" + "---|" * len(shares)]
    for r in rows:
        cells = " | ".join(f"{v['p50_ms']:.2f} ({v['recall@10']:.3f})" for v in r["shares"].values())
        lines.append(f"| {r['label']} | {cells} |")
    return "\n".join(lines)


def table(rows: list[dict[str, Any]], dim: int) -> str:
    lines = [
        "| index | recall@10 | filtered 10% | p50 ms | p95 ms | k50 p50 ms | build s | ANN bytes/vec | + floats |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['recall@10']:.3f} | {r['recall@10_filtered']:.3f} | {r['p50_ms']:.2f} | "
            f"{r['p95_ms']:.2f} | {r['k50_p50_ms']:.2f} | {r['build_s']:.1f} | {r['bytes_per_vector']:.0f} | "
            f"{r['bytes_per_vector'] + 4 * dim:.0f} |"
        )
    return "\n".join(lines)


def winners(rows: list[dict[str, Any]], bar: float = 0.95) -> list[dict[str, Any]]:
    """Per kind, the fastest setting (k50 p50) that reaches the recall bar."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["recall@10"] >= bar and (
            r["kind"] not in best or r["k50_p50_ms"] < best[r["kind"]]["k50_p50_ms"]
        ):
            best[r["kind"]] = r
    return sorted(best.values(), key=lambda r: r["k50_p50_ms"])


def _num(v: str) -> Any:
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--scale", type=int, default=0, help="vectors (default: the real set, ~102k)")
    ap.add_argument("--queries", type=int, default=0, help="use only the first N queries")
    ap.add_argument("--only", default="flat,hnsw,ivf,ivf-hnsw")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument(
        "--filters",
        default="",
        help="only the filtered-search table, for these specs: kind:field=value,...;...",
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.work is not None:
        a.work.mkdir(parents=True, exist_ok=True)  # the temp dirs below go inside it
    print(machine(), flush=True)
    x, groups, q = real_set(a.data, a.cache)
    if a.scale:
        x = scaled(x, groups, a.scale)
    if a.queries:
        q = q[: a.queries]
    if a.filters:
        specs = [
            AnnSpec(**{k: _num(v) for k, v in (kv.split("=") for kv in f.split(","))})
            for f in a.filters.split(";")
        ]
        with tempfile.TemporaryDirectory(dir=a.work) as tmp:
            frows = filtered(x, q, specs, Path(tmp))
        print(f"\n{len(x):,} vectors, {len(q):,} queries; load average {os.getloadavg()[0]:.1f} at the end\n")
        print(filter_table(frows))
        if a.json:
            print(json.dumps({"vectors": len(x), "queries": len(q), "filtered": frows}))
        return
    with tempfile.TemporaryDirectory(dir=a.work) as tmp:
        rows = run(x, q, set(a.only.split(",")), Path(tmp))
    print(f"\n{len(x):,} vectors, {len(q):,} queries; load average {os.getloadavg()[0]:.1f} at the end\n")
    print(table(rows, x.shape[1]))
    print("\nFastest per kind at recall@10 >= 0.95 (k50 p50):")
    for r in winners(rows):
        print(
            f"  {r['label']}: {r['k50_p50_ms']:.2f} ms, recall {r['recall@10']:.3f}, {r['bytes_per_vector']:.0f} B/vec"
        )
    if a.json:
        print(json.dumps({"vectors": len(x), "queries": len(q), "rows": rows}))


if __name__ == "__main__":
    main()
