"""What keeps the benchmark safe to run: a progress bar with an ETA, the memory and disk a
run will need (refused up front when it does not fit), and builds that leave either a
complete index or nothing.

Footprints are bytes per passage plus a fixed base per process. The declared figures come
from issue #17's measurements; once a run has measured a system at >= 10,000 passages,
``bench-measured.json`` in the work dir holds its figures and they are used instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MB = 1024**2
GB = 1024**3

# Declared footprints (bytes per passage, base bytes), from measured runs: ours built 1.13M
# passages at a 9.7 GB peak and served them in 3.9 GB (#17); bm25s + FAISS served 100k in
# 990 MB and txtai in 759 MB (#17); disk 404 / 253 / 340 MB at 100k (#17).
DECLARED: dict[str, dict[str, float]] = {
    "ours": {"build": 8_600, "serve": 3_500, "disk": 4_100, "base": 450 * MB},
    "bm25s-hnsw": {"build": 7_000, "serve": 6_000, "disk": 2_700, "base": 450 * MB},
    "txtai": {"build": 8_000, "serve": 5_000, "disk": 3_500, "base": 700 * MB},
}
# The corpus files beside the indexes: articles and the peers' passages, ~2 KB a passage.
CORPUS_DISK_PER_PASSAGE = 2_000
# A measurement at fewer passages is mostly the fixed base: do not extrapolate from it.
MIN_MEASURED_PASSAGES = 10_000
# Leave this share of MemAvailable to everything else on the machine.
MEMORY_MARGIN = 0.9
# Characters of article text per passage (chunk target 700 with one sentence of overlap),
# to estimate a user's corpus before it is chunked.
CHARS_PER_PASSAGE = 650


class Refused(SystemExit):
    """A run that would not fit (memory or disk), refused before it starts."""


def mem_available() -> int:
    """MemAvailable from /proc/meminfo, in bytes (what can be allocated without swapping)."""
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


@dataclass
class Footprint:
    system: str
    per_passage: dict[str, float]
    base: float
    how: str  # "measured at N passages" or "declared"

    def need(self, what: str, passages: int) -> float:
        extra = self.base if what != "disk" else 0.0
        return extra + self.per_passage[what] * passages


def footprints(work: Path, systems: list[str]) -> dict[str, Footprint]:
    measured = load_measured(work)
    out: dict[str, Footprint] = {}
    for s in systems:
        d = DECLARED[s]
        m = measured.get(s)
        if m and m.get("passages", 0) >= MIN_MEASURED_PASSAGES:
            per = {k: float(m.get(k, d[k])) for k in ("build", "serve", "disk")}
            out[s] = Footprint(s, per, d["base"], f"measured at {int(m['passages']):,} passages")
        else:
            out[s] = Footprint(s, {k: d[k] for k in ("build", "serve", "disk")}, d["base"], "declared")
    return out


def load_measured(work: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((work / "bench-measured.json").read_text()))
    except (OSError, ValueError):
        return {}


def save_measured(work: Path, system: str, passages: int, **figures: float) -> None:
    """Record bytes per passage measured at ``passages`` (base taken off), for the next run's checks."""
    if passages < MIN_MEASURED_PASSAGES:
        return
    base = DECLARED[system]["base"]
    data = load_measured(work)
    entry = dict(data.get(system, {}))
    entry["passages"] = passages
    for k, v in figures.items():
        entry[k] = round(max(v - (base if k != "disk" else 0.0), 0.0) / passages, 1)
    data[system] = entry
    tmp = work / "bench-measured.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(work / "bench-measured.json")


def _gb(x: float) -> str:
    return f"{x / GB:.1f} GB"


def check_fits(
    passages: int,
    fps: dict[str, Footprint],
    work: Path,
    build: set[str],
    corpus_on_disk: bool,
    available: int | None = None,
    free_disk: int | None = None,
    what: str = "--scale",
    smaller: str = "--scale",
) -> None:
    """Refuse (:class:`Refused`, exit 2) a run whose build, serving or disk would not fit.

    Builds run one at a time (the largest must fit); the serving processes of every system
    are alive together (their sum must fit). Only systems in ``build`` need disk.
    """
    avail = mem_available() if available is None else available
    budget = avail * MEMORY_MARGIN
    work.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(work).free if free_disk is None else free_disk

    def line(s: str, kind: str) -> str:
        f = fps[s]
        return (
            f"{_gb(f.need(kind, passages))} for {s} "
            f"({f.per_passage[kind]:,.0f} bytes per passage, {f.how}, + {f.base / MB:.0f} MB base)"
        )

    if build:
        worst = max(build, key=lambda s: fps[s].need("build", passages))
        if fps[worst].need("build", passages) > budget:
            raise Refused(
                f"refused: {what} {passages:,} passages does not fit in memory: building needs about "
                f"{line(worst, 'build')}, but MemAvailable is {_gb(avail)} ({MEMORY_MARGIN:.0%} usable): "
                f"choose a smaller {smaller}, or free memory"
            )
    serving = sum(f.need("serve", passages) for f in fps.values())
    if serving > budget:
        parts = "; ".join(line(s, "serve") for s in fps)
        raise Refused(
            f"refused: {what} {passages:,} passages does not fit in memory: serving needs about "
            f"{_gb(serving)} in all ({parts}), but MemAvailable is {_gb(avail)} ({MEMORY_MARGIN:.0%} usable): "
            f"choose a smaller {smaller}, or drop peers with --no-peers"
        )
    disk = sum(fps[s].need("disk", passages) for s in build)
    if corpus_on_disk:
        disk += CORPUS_DISK_PER_PASSAGE * passages
    if disk > free * MEMORY_MARGIN:
        raise Refused(
            f"refused: {what} {passages:,} passages does not fit on disk: the corpus and indexes need about "
            f"{_gb(disk)}, but {work} has {_gb(free)} free: choose a smaller {smaller} or another --work"
        )


# ----------------------------------------------------------------------------- progress


class Progress:
    """A progress bar with an ETA on stderr: redrawn in place on a terminal, a line every
    ~10% (or 30 s) otherwise, so logs stay readable."""

    def __init__(self, label: str, total: int | None, unit: str = "", eta_s: float | None = None) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.t0 = self.start = time.monotonic()
        self.starts: dict[str, float] = {label: self.t0}
        self.done = 0
        # For a step with no counts: the whole job's duration in an earlier run.
        self.eta_hint = eta_s
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0
        self.last_frac = -1.0
        self.new_label = True
        self.closed = False
        self.lock = threading.Lock()
        # A step with no counts (a bulk write) still shows its time and ETA going by.
        threading.Thread(target=self._tick, daemon=True, name="progress").start()

    def _tick(self) -> None:
        while not self.closed:
            time.sleep(1.0 if self.tty else 5.0)
            if not self.closed:
                with self.lock:
                    self._draw(final=False)

    def update(self, done: int, total: int | None = None, label: str | None = None) -> None:
        if total is not None:
            self.total = total
        with self.lock:
            if label is not None and label != self.label:
                self.label, self.last_frac, self.new_label = label, -1.0, True
                # Stages that run side by side (NER and encode) take turns on one bar:
                # each keeps its own start, so its rate and ETA survive the turns.
                self.t0 = self.starts.setdefault(label, time.monotonic())
            self.done = done
            self._draw(final=False)

    def _draw(self, final: bool) -> None:
        now = time.monotonic()
        el = now - self.t0
        if self.total:
            frac = min(self.done / self.total, 1.0)
            eta = el * (1 - frac) / frac if frac > 0 else None
            bar = "#" * int(frac * 24)
            text = (
                f"{self.label:<28} [{bar:<24}] {frac:4.0%} {self.done:,}/{self.total:,} {self.unit} "
                f"{el:5.0f} s"
            )
        else:
            frac = -1.0
            eta = max(self.eta_hint - (now - self.start), 0.0) if self.eta_hint is not None else None
            text = f"{self.label:<28} {el:5.0f} s"
        if not final:
            text += f"  ETA {eta:.0f} s" if eta is not None else "  ETA ?"
            if self.eta_hint is not None and not self.total:
                text += " (from the last run)"
        if self.tty:
            sys.stderr.write("\r" + text.ljust(110)[:110] + ("\n" if final else ""))
            sys.stderr.flush()
        elif (
            final
            or self.new_label
            or now - self.last_print > 30
            or (frac >= 0 and frac - self.last_frac >= 0.1)
        ):
            print(text, file=sys.stderr, flush=True)
            self.last_print, self.last_frac, self.new_label = now, frac, False

    def close(self) -> float:
        with self.lock:
            if self.closed:
                return time.monotonic() - self.start
            self.closed = True
            self._draw(final=True)
        return time.monotonic() - self.start


# ----------------------------------------------------------------------------- atomic builds


def temp_sibling(final: Path) -> Path:
    """Where ``final`` is built: a hidden sibling named after this process, renamed when complete."""
    return final.parent / f".{final.name}.building-{os.getpid()}"


def remove_stale(work: Path) -> list[Path]:
    """Half builds left by a process that no longer runs (killed with SIGKILL): remove them."""
    gone = []
    for p in work.glob(".*.building-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            gone.append(p)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def publish(tmp: Path, final: Path) -> None:
    """Swap a complete build into place: the old one stays until the new one is there."""
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    if final.exists():
        final.replace(old)
    tmp.replace(final)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()


@contextmanager
def atomic_build(final: Path) -> Iterator[Path]:
    """Yield a temp path to build ``final`` in; publish it on success, remove it on any
    failure or interruption (Ctrl-C, SIGTERM), so ``final`` is the previous complete build
    or absent, never half written."""
    tmp = temp_sibling(final)
    if tmp.exists():
        shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
    try:
        with sigterm_as_interrupt():
            yield tmp
        publish(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, so the same cleanup runs as for Ctrl-C."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
