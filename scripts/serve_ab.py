"""Serving latency before and after a change: fresh processes of two checkouts, alternating.

    python scripts/serve_ab.py --index DIR --questions FILE --before /tmp/base --after . [--pairs 3]

``--before`` and ``--after`` are checkouts of the code (``git archive REV | tar -x -C DIR``
makes one). Each process imports ``search`` from its checkout, loads the question encoder,
opens the index and answers every question with ``Engine.search`` (hybrid, k 10),
``Engine.ask`` as a Python caller gets it (no facets) and ``Engine.ask(facets=True)`` as the
faces ask, each stage timed as ``scripts/bench_serve.py`` times it (the embedder given to
``Engine.open``, the reader's ``lexical_search``/``dense``/``facets``, the answer step). The
processes alternate (before, after, before, ...) so the machine's load falls on both alike;
the load average is printed before each. Prints p50 / p95 per stage over all the processes
of a side, and each process's open time, first question and peak RSS. The machine is
shared: compare the two sides of one run, not runs made at different times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CALLS = ("search", "ask", "ask_facets")
STAGES = ("total", "encode", "bm25", "vector", "answer", "facets")


def serve(root: Path, index: Path, questions: Path, models: str) -> None:
    """One process: every question through the three calls; one JSON line on stdout."""
    sys.path[:0] = [str(root / "scripts"), str(root)]
    from bench_models import query_embedder
    from bench_serve import Clock, TimedEmbedder, TimedView

    import search.answer
    from search.engine import Engine

    qs: list[str] = json.loads(questions.read_text())
    encoder = query_embedder(models)
    encoder.encode_query("warm up")
    clock = Clock()
    t0 = time.perf_counter()
    engine = Engine.open(index, embedder=TimedEmbedder(encoder, clock))
    open_s = time.perf_counter() - t0
    backend = engine._backend
    reader, views = backend.reader, {}

    def timed_reader() -> Any:
        v = reader()
        if id(v) not in views:
            views.clear()
            views[id(v)] = TimedView(v, clock)
        return views[id(v)]

    backend.reader = timed_reader
    search.answer.build_answer = clock.timed("answer", search.answer.build_answer)
    calls = {
        "search": lambda q: engine.search(q, k=10, mode="hybrid"),
        "ask": lambda q: engine.ask(q, k=5, mode="hybrid"),
        "ask_facets": lambda q: engine.ask(q, k=5, mode="hybrid", facets=True),
    }
    t0 = time.perf_counter()
    for call in calls.values():
        call(qs[0])
    first_s = time.perf_counter() - t0
    times: dict[str, list[dict[str, float]]] = {c: [] for c in CALLS}
    for q in qs:
        for name, call in calls.items():
            clock.t = {}
            t0 = time.perf_counter()
            call(q)
            times[name].append({**clock.t, "total": time.perf_counter() - t0})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"open_s": open_s, "first_s": first_s, "peak_rss_mb": peak, "times": times}))


def pct(xs: list[float], p: float) -> float:
    import numpy as np

    return float(np.percentile(xs, p)) * 1000 if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True, help="a JSON list of questions")
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--models", default="replay", help="the question encoder (scripts/bench_models.py)")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the child: a checkout to run
    a = ap.parse_args()
    if a.serve is not None:
        serve(a.serve.resolve(), a.index, a.questions, a.models)
        return
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for i in range(a.pairs):
        for side in ("before", "after"):
            root = (a.before if side == "before" else a.after).resolve()
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            print(
                f"{time.strftime('%H:%M:%S')} {side} {i + 1}: load average {load}",
                file=sys.stderr,
                flush=True,
            )
            cmd = [sys.executable, __file__, "--serve", str(root), "--index", str(a.index)]
            cmd += ["--questions", str(a.questions), "--before", str(a.before), "--models", a.models]
            env = {**os.environ, "PYTHONPATH": str(root)}
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            runs[side].append(json.loads(out.strip().splitlines()[-1]))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{time.strftime('%H:%M:%S')} end: load average {load}", file=sys.stderr)
    print("| p50 / p95 ms | before | after |\n|---|---|---|")
    for call in CALLS:
        for stage in STAGES:
            cells = []
            for side in ("before", "after"):
                xs = [t[stage] for r in runs[side] for t in r["times"][call] if stage in t]
                cells.append(f"{pct(xs, 50):.1f} / {pct(xs, 95):.1f}" if xs else "")
            if any(cells):
                print(f"| {call}: {stage} | {cells[0]} | {cells[1]} |")
    for key in ("open_s", "first_s", "peak_rss_mb"):
        print(
            f"| {key} | {[round(r[key], 2) for r in runs['before']]} | {[round(r[key], 2) for r in runs['after']]} |"
        )


if __name__ == "__main__":
    main()
