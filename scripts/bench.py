"""The engine against the peers a user would pick instead, at a scale you choose.

    nice -n 5 python scripts/bench.py --scale 100000 [--models replay|real|hash] [--no-peers]
        [--corpus FILE.jsonl] [--data ../shared] [--work /tmp/search-bench] [--rounds 5] [--json]

1. Corpus: ``--scale`` passages (as the engine chunks them) of synthetic articles
   recombined from real BBC Sport sentences (see scripts/bench_corpus.py), or your own
   JSONL with ``--corpus`` (all of it). Reused from ``--work`` when already there.
2. Builds, each in its own process (wall time, peak RSS, disk): ours (``Engine.add``),
   bm25s + FAISS HNSW, and txtai's hybrid index if txtai is installed, on the same
   passages with the same vectors. ``--models`` says where vectors and entities come from
   (replay: the real models' outputs for the BBC sentences, recombined; real: the models
   run; hash: no model). Each build goes to a temp dir renamed when complete, so Ctrl-C
   leaves the previous index or none. Kept indexes are reused; ``--rebuild`` rebuilds.
3. Serving: a fresh process per system opens its index and answers the same >= 200
   questions (the dev questions and BBC headlines) in interleaved rounds; p50/p95 per
   stage, open time and the serving process's peak RSS.
4. One table, with the machine and its load average. ``--json`` prints the JSON instead.

A run that would not fit in memory or on disk is refused before it starts, with the
estimate (see scripts/bench_guard.py). Figures are medians on a shared machine: compare
ratios within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import bench_guard as G  # noqa: E402
from bench_corpus import MODELS, bbc_records, questions, read_jsonl, synthetic, write_corpus  # noqa: E402
from bench_models import exact_top, pid_rows  # noqa: E402
from bench_report import report, summarise  # noqa: E402

PEERS = {"bm25s-hnsw": "bm25s", "txtai": "txtai"}  # system -> the module it needs
MIN_QUESTIONS = 200


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", "--passages", dest="scale", type=int, default=100_000, help="passages")
    ap.add_argument("--corpus", type=Path, help="your own JSONL corpus (id, title, text, ...) instead")
    ap.add_argument("--models", choices=MODELS, default="replay")
    ap.add_argument("--data", type=Path, default=Path("../shared"), help="the shared/ folder")
    ap.add_argument("--work", type=Path, default=Path("/tmp/search-bench"))
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--rebuild", action="store_true", help="rebuild indexes even if kept")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds over the questions")
    ap.add_argument("--questions", type=int, default=0, help="how many (default all; >= 200 to report)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.scale < 1:
        ap.error("--scale must be a positive number of passages")
    if a.rounds < 1 or a.questions < 0:
        ap.error("--rounds must be at least 1 and --questions not negative")
    if a.corpus is not None and not a.corpus.is_file():
        ap.error(f"--corpus {a.corpus}: no such file")
    return a


def peers_to_run(no_peers: bool) -> tuple[list[str], list[str]]:
    """(systems, notes): ours and each installed peer, and a line for each one skipped."""
    systems, notes = ["ours"], []
    if no_peers:
        return systems, ["peers: skipped (--no-peers)"]
    for system, module in PEERS.items():
        if importlib.util.find_spec(module) is None:
            notes.append(f"{system}: skipped, {module} is not installed (pip install {module})")
        else:
            systems.append(system)
    return systems, notes


def run_worker(cmd: list[str], bar: G.Progress, log_path: Path) -> dict[str, Any]:
    """Run a worker, drive ``bar`` from its ``@progress`` lines, return its ``@result``."""
    result: dict[str, Any] = {}
    with open(log_path, "w", encoding="utf-8") as errs:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errs, text=True)
        try:
            assert p.stdout is not None
            for line in p.stdout:
                parts = line.split()
                if parts[:1] == ["@progress"]:
                    # A line that is not "@progress LABEL DONE TOTAL" is skipped, not fatal: a
                    # child the worker forks mid-print may flush a copy of its buffer into it.
                    if len(parts) == 4 and parts[2].isdigit() and parts[3].isdigit():
                        bar.update(int(parts[2]), int(parts[3]), parts[1].replace("_", " "))
                elif line.startswith("@result "):
                    result = json.loads(line[len("@result ") :])
            rc = p.wait()
        except BaseException:  # Ctrl-C or SIGTERM: stop the worker before its temp dir goes
            p.terminate()
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            raise
        finally:
            bar.close()
    if rc != 0:
        tail = "".join(open(log_path, encoding="utf-8", errors="replace").readlines()[-15:])
        raise SystemExit(f"{' '.join(cmd[1:3])} failed (exit {rc}); the end of {log_path}:\n{tail}")
    return result


def prepare_corpus(a: argparse.Namespace, tag: str) -> tuple[Path, Path, dict[str, Any]]:
    """The articles and the peers' passages, generated (or read) once, kept in --work."""
    corpus = a.corpus or a.work / f"corpus-{tag}.jsonl"
    passages = a.work / f"passages-{tag}.jsonl"
    meta_path = a.work / f"passages-{tag}.json"
    if passages.exists() and meta_path.exists() and corpus.exists():
        return corpus, passages, json.loads(meta_path.read_text())
    records: Any
    if a.corpus is not None:
        records, limit, label = read_jsonl(a.corpus), None, f"chunk {a.corpus.name}"
    else:
        records = synthetic(bbc_records(a.data / "data" / "bbcsport" / "bbcsport.jsonl"))
        limit, label = a.scale, "generate corpus"
    bar = G.Progress(label, limit, "passages")
    with G.sigterm_as_interrupt():
        tmp_c, tmp_p = G.temp_sibling(corpus), G.temp_sibling(passages)
        try:
            n_art, n_pass = write_corpus(
                records, None if a.corpus else tmp_c, tmp_p, limit, lambda n: bar.update(n)
            )
            if a.corpus is None:
                tmp_c.replace(corpus)
            tmp_p.replace(passages)
        finally:
            tmp_c.unlink(missing_ok=True)
            tmp_p.unlink(missing_ok=True)
    meta = {"articles": n_art, "passages": n_pass, "generate_s": bar.close()}
    meta_path.write_text(json.dumps(meta))
    return corpus, passages, meta


def build(
    a: argparse.Namespace, system: str, corpus: Path, passages: Path, n: int, final: Path
) -> dict[str, Any]:
    info = final.with_name(final.name + ".build.json")
    if final.exists() and info.exists() and not a.rebuild:
        return dict(json.loads(info.read_text()), reused=True)
    hint = G.load_measured(a.work).get(system, {}).get("build_s")
    bar = G.Progress(f"build {system}", None, "", eta_s=hint * n if hint else None)
    with G.atomic_build(final) as tmp:
        cmd = [sys.executable, str(HERE / "bench_build.py"), system, "--corpus", str(corpus)]
        cmd += ["--passages-file", str(passages), "--passages", str(n), "--out", str(tmp)]
        cmd += ["--work", str(a.work), "--models", a.models]
        res = run_worker(cmd, bar, a.work / f"build-{system}.log")
    info.write_text(json.dumps(res))
    G.save_measured(a.work, system, n, build=res["peak_rss_mb"] * G.MB, disk=res.get("disk_mb", 0) * G.MB)
    m = G.load_measured(a.work)
    m.setdefault(system, {})["build_s"] = res["build_s"] / n
    (a.work / "bench-measured.json").write_text(json.dumps(m, indent=1))
    return res


def serve(a: argparse.Namespace, indexes: dict[str, Path], qs: list[str]) -> dict[str, Any]:
    """Every system in its own process, all open together, given the same slices in turn."""
    qfile = a.work / "questions.json"
    qfile.write_text(json.dumps(qs))
    procs: dict[str, subprocess.Popen[str]] = {}
    out: dict[str, Any] = {s: {"times": {}} for s in indexes}
    try:
        for s, path in indexes.items():
            cmd = [sys.executable, str(HERE / "bench_serve.py"), s, "--index", str(path)]
            cmd += ["--questions", str(qfile), "--models", a.models]
            errs = open(a.work / f"serve-{s}.log", "w", encoding="utf-8")
            procs[s] = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errs, text=True
            )
            out[s].update(_reply(procs[s], s, a.work))
        step = -(-len(qs) // a.rounds)
        bar = G.Progress("serve (interleaved rounds)", len(qs) * len(procs), "answers")
        done = 0
        for r, lo in enumerate(range(0, len(qs), step)):
            names = list(procs)
            for s in names[r % len(names) :] + names[: r % len(names)]:  # each goes first in turn
                procs[s].stdin.write(json.dumps({"from": lo, "to": lo + step}) + "\n")  # type: ignore[union-attr]
                procs[s].stdin.flush()  # type: ignore[union-attr]
                for what, rows in _reply(procs[s], s, a.work).items():
                    out[s]["times"].setdefault(what, []).extend(rows)
                done += min(step, len(qs) - lo)
                bar.update(done)
        bar.close()
        for s, p in procs.items():
            p.stdin.write("quit\n")  # type: ignore[union-attr]
            p.stdin.flush()  # type: ignore[union-attr]
            out[s].update(_reply(p, s, a.work))
            p.wait()
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                p.wait()
    return out


def _reply(p: subprocess.Popen[str], system: str, work: Path) -> dict[str, Any]:
    line = p.stdout.readline() if p.stdout else ""
    if not line:
        p.wait()
        tail = "".join(open(work / f"serve-{system}.log", encoding="utf-8").readlines()[-15:])
        raise SystemExit(f"serving {system} failed (exit {p.returncode}):\n{tail}")
    return dict(json.loads(line))


def machine() -> dict[str, Any]:
    return {
        "cores": len(os.sched_getaffinity(0)),
        "ram_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / G.GB, 1),
        "mem_available_gb": round(G.mem_available() / G.GB, 1),
        "python": sys.version.split()[0],
        "loadavg_start": open("/proc/loadavg").read().split()[:3],
    }


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    for p in G.remove_stale(a.work):
        log(f"removed a half build left by a killed run: {p}")
    systems, notes = peers_to_run(a.no_peers)
    res: dict[str, Any] = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"), "models": a.models}
    if a.corpus is not None:
        tag, est = a.corpus.stem, a.corpus.stat().st_size // G.CHARS_PER_PASSAGE
        what = f"--corpus {a.corpus.name}: about"
    else:
        tag, est, what = f"syn-{a.scale}", a.scale, "--scale"
    names = {s: a.work / f"{s}-{tag}-{a.models}" for s in systems}
    todo = {s for s in systems if a.rebuild or not names[s].exists()}
    fps = G.footprints(a.work, systems)
    smaller = "--scale" if a.corpus is None else "--corpus"
    G.check_fits(est, fps, a.work, todo, corpus_on_disk=a.corpus is None, what=what, smaller=smaller)
    for n in notes:
        log(n)
    if a.models == "replay":
        bar = G.Progress("replay table", None)
        cmd = [sys.executable, str(HERE / "bench_build.py"), "table", "--work", str(a.work)]
        run_worker(
            cmd + ["--corpus", str(a.data / "data" / "bbcsport" / "bbcsport.jsonl")],
            bar,
            a.work / "table.log",
        )
    corpus, passages, meta = prepare_corpus(a, tag)
    n = meta["passages"]
    # The same check with the real count (a --corpus was estimated from its size; a kept index
    # must still fit to be served).
    G.check_fits(
        n,
        fps,
        a.work,
        todo,
        corpus_on_disk=False,
        what=what if todo else "the kept index of",
        smaller=smaller,
    )
    qs = questions(a.data)[: a.questions or None]
    if len(qs) < MIN_QUESTIONS:
        notes.append(f"only {len(qs)} questions: below {MIN_QUESTIONS}, not a figure to report")
    res.update(corpus=str(corpus), articles=meta["articles"], passages=n, questions=len(qs), notes=notes)
    res["builds"] = {s: build(a, s, corpus, passages, n, names[s]) for s in systems}
    served = serve(a, names, qs)
    for s, r in served.items():
        G.save_measured(a.work, s, n, serve=r["peak_rss_mb"] * G.MB)
    # The reference for the vector stage's recall, computed after serving so it costs no one.
    bar = G.Progress("exact top 10 (recall)", None, "passages")
    exact = exact_top(a.models, a.work, passages, qs, tick=lambda d, t: bar.update(d, t))
    bar.close()
    res["serving"] = summarise(served, exact, pid_rows(passages) if exact is not None else None)
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    (a.work / f"bench-result-{tag}-{a.models}.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res) if a.json else report(res))
    return 0


if __name__ == "__main__":
    # A shell starts background jobs with SIGINT ignored, and Python keeps that: Ctrl-C (or
    # kill -INT) must still stop the run and remove its half build.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with G.sigterm_as_interrupt():
            sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: no half-built index left behind (builds go to a temp dir first)", file=sys.stderr)
        sys.exit(130)
    except G.Refused as e:
        print(e, file=sys.stderr)
        sys.exit(2)
