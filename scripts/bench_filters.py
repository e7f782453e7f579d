"""Warm hybrid latency with one metadata filter against none, at ~100k passages (#16).

    python scripts/bench_filters.py [--copies 34] [--data ../shared] [--work /tmp/search-bench-filters]

The index is BBC Sport (737 articles, ~2,911 passages) copied ``--copies`` times with
varied ids, in one write (so one vector segment with its IVF file, as a bulk index
has). Each copy keeps the BBC ``category``, gets one of four sources and a date spread
over 2004-2005. Vectors come from the fake HashEmbedder (deterministic, no model): the
figure of interest is the ratio of filtered to unfiltered time for the same questions,
which depends on how a filter is applied, not on what the vectors mean.

Every question is asked once to warm the caches (postings, filter bitmaps), then the
timed pass runs unfiltered and each filter interleaved, question by question, so the
shared machine's load falls on all alike. Also timed: the filtered dense search's two
paths (exact over the allowed rows, FAISS IVF with an IDSelectorBitmap) at several
selectivities, which sets ``search.vectors.EXACT_ALLOWED_ROWS``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCES = ["BBC Sport", "AFP", "Reuters", "The Guardian"]
FILTERS: dict[str, Any] = {
    "category=football (36%)": {"category": "football"},
    "source=AFP (25%)": {"source": "AFP"},
    "since 2005-06-01 (~20%)": {"since": "2005-06-01"},
    "category=tennis + source=AFP (3%)": {"category": "tennis", "source": "AFP"},
}


def no_entities(texts: Any) -> list[list[tuple[int, int, str]]]:
    return [[] for _ in texts]


def build(path: Path, data: Path, copies: int) -> int:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.types import Article

    if (path / "CURRENT").exists():
        with Engine.open(path, embedder=HashEmbedder()) as e:
            return int(e.stats()["passages"])
    recs = [
        json.loads(line) for line in open(data / "data" / "bbcsport" / "bbcsport.jsonl", encoding="utf-8")
    ]
    arts = []
    for c in range(copies):
        for i, r in enumerate(recs):
            day = (c * 737 + i) % 540  # 2004-01-01 + up to ~18 months
            y, doy = (2004, day) if day < 366 else (2005, day - 366)
            month, dom = 1 + doy // 31 % 12, 1 + doy % 28
            arts.append(
                Article(
                    id=f"c{c:03d}/{r['id']}",
                    title=r["title"],
                    text=r["text"],
                    source=SOURCES[(c + i) % 4],
                    published=f"{y}-{month:02d}-{dom:02d}",
                    metadata={"category": r["category"]},
                )
            )
    t0 = time.perf_counter()
    with Engine.open(path, create=True, embedder=HashEmbedder(), tagger=no_entities) as e:
        rep = e.add(arts, reset=True)
    print(f"built {rep.passages} passages in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return rep.passages


def questions(data: Path) -> list[str]:
    out = [json.loads(line)["question"] for line in open(data / "eval" / "dev.jsonl", encoding="utf-8")]
    out += [
        json.loads(line)["title"]
        for line in open(data / "data" / "bbcsport" / "football.jsonl", encoding="utf-8")
    ]
    return out[:300]


def warm(path: Path, qs: list[str]) -> dict[str, Any]:
    from search.embed import HashEmbedder
    from search.engine import Engine

    e = Engine.open(path, embedder=HashEmbedder())
    runs: dict[str, list[float]] = {"unfiltered": [], **{name: [] for name in FILTERS}}
    counts: dict[str, int] = {}
    for q in qs:  # warm-up: postings, the rows maps, the filter bitmaps
        e.search(q, k=10)
        for f in FILTERS.values():
            e.search(q, k=10, filters=f)
    jobs: list[tuple[str, Any]] = [("unfiltered", None), *FILTERS.items()]
    for n, q in enumerate(qs):
        # the order turns with each question, so no variant always runs first (cold) or last
        for name, f in jobs[n % len(jobs) :] + jobs[: n % len(jobs)]:
            t = time.perf_counter()
            hits = e.search(q, k=10, filters=f)
            runs[name].append(time.perf_counter() - t)
            counts[name] = min(counts.get(name, 10), len(hits))
    t = time.perf_counter()
    facets = [e.facets(q, filters=FILTERS["category=football (36%)"]) for q in qs[:50]]
    facet_ms = (time.perf_counter() - t) / len(facets) * 1000
    t = time.perf_counter()
    for q in qs[:50]:
        e.ask(q, k=10, filters=FILTERS["category=football (36%)"], facets=False)
    ask_ms = (time.perf_counter() - t) / 50 * 1000
    t = time.perf_counter()
    for q in qs[:50]:
        e.ask(q, k=10, filters=FILTERS["category=football (36%)"], facets=True)
    ask_facets_ms = (time.perf_counter() - t) / 50 * 1000
    base = statistics.median(runs["unfiltered"]) * 1000
    # fewest hits of k=10 over the questions: the copies of one story collapse to one hit
    # (collapse_duplicates), so a question whose candidates are copies of a few stories
    # gets fewer than 10, filtered or not; with collapse off every query has 10.
    nocollapse = min(
        len(e.search(q, k=10, filters=FILTERS["category=football (36%)"], collapse=False)) for q in qs
    )
    counts["category=football (36%), collapse off"] = nocollapse
    out: dict[str, Any] = {"questions": len(qs), "hybrid_p50_ms": {}, "ratio": {}, "fewest_hits": counts}
    for name, xs in runs.items():
        p50 = statistics.median(xs) * 1000
        out["hybrid_p50_ms"][name] = round(p50, 2)
        out["ratio"][name] = round(p50 / base, 3)
    out["facets_ms_mean"] = round(facet_ms, 1)
    out["ask_ms_mean"] = {"without_facets": round(ask_ms, 1), "with_facets": round(ask_facets_ms, 1)}
    snap = e._backend.reader()
    out["segments"] = [(s.name, len(s.vectors), s.search_method) for s in snap.vector_segments]
    e.close()
    return out


def dense_paths(path: Path, reps: int = 40) -> dict[str, Any]:
    """Filtered dense search at several selectivities: exact over allowed rows vs IVF + bitmap."""
    from search import vectors as vx
    from search.embed import HashEmbedder
    from search.engine import Engine

    e = Engine.open(path, embedder=HashEmbedder())
    seg = max(e._backend.reader().vector_segments, key=lambda s: len(s.vectors))
    rng = np.random.default_rng(0)
    q = e.embedder.encode_query("who scored the winner")
    out: dict[str, Any] = {"rows": len(seg.vectors), "method": seg.search_method, "ms": {}}
    saved = vx.EXACT_ALLOWED_ROWS
    for frac in (0.005, 0.02, 0.05, 0.1, 0.2, 0.4):
        allowed = rng.random(len(seg.vectors)) < frac
        row: dict[str, float] = {}
        for label, limit in (("exact", 10**9), ("ivf_bitmap", 0)):
            vx.EXACT_ALLOWED_ROWS = limit
            seg.search(q, 50, allowed)
            t = time.perf_counter()
            for _ in range(reps):
                seg.search(q, 50, allowed)
            row[label] = round((time.perf_counter() - t) / reps * 1000, 3)
        vx.EXACT_ALLOWED_ROWS = saved
        t = time.perf_counter()
        for _ in range(reps):
            seg.search(q, 50)
        row["unfiltered"] = round((time.perf_counter() - t) / reps * 1000, 3)
        out["ms"][f"{int(allowed.sum())} rows ({frac:.1%})"] = row
    e.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=34)
    ap.add_argument("--data", type=Path, default=Path("../shared"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/search-bench-filters"))
    ap.add_argument("--what", default="warm,dense")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    path = args.work / f"bbc-x{args.copies}"
    res: dict[str, Any] = {"passages": build(path, args.data, args.copies)}
    if "dense" in args.what:
        res["dense_paths"] = dense_paths(path)
    if "warm" in args.what:
        res["warm"] = warm(path, questions(args.data))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
