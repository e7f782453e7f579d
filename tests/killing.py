"""SIGKILL a `search` writer at a random moment, then check what it left (#14).

Shared by tests/test_kill.py and scripts/hostile.py. A kill may land anywhere: before the
write, while it encodes, between the rename and the switch, after the commit. Whatever it
hit, the index must open, hold exactly the old or the new documents, answer a query, and
take the next write.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def env() -> dict[str, str]:
    e = {**os.environ, "SEARCH_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    e["PYTHONPATH"] = os.environ.get("PYTHONPATH", str(ROOT))
    return e


def write_corpus(folder: Path, prefix: str, n: int, seed: int = 0) -> set[str]:
    """``n`` small distinct match reports as .txt files; returns their document ids."""
    rng = random.Random(seed)
    players = ["Kane", "Saka", "Messi", "Mbappe", "Salah", "Haaland", "Son", "Rice", "Foden", "Bellingham"]
    folder.mkdir(parents=True, exist_ok=True)
    ids = set()
    for i in range(n):
        p, q = rng.sample(players, 2)
        text = (
            f"{prefix} report {i}\n\n{p} scored in the {rng.randint(1, 90)}th minute against {prefix} {i}. "
            f"{q} replied before half-time, and the crowd of {rng.randint(1000, 90000)} saw a {prefix} derby.\n"
        )
        (folder / f"{prefix}-{i}.txt").write_text(text, encoding="utf-8")
        ids.add(f"{prefix}-{i}.txt")
    return ids


def cli(args: list[str], extra: list[str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "search", *args, *(extra or [])],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: a kill reaches any child it started
    )


def kill_group(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


_CHECK = """
import json, sys
from search.embed import HashEmbedder
from search.engine import Engine
kw = json.loads(sys.argv[1])
with Engine.open(kw.pop("path"), embedder=HashEmbedder(), **kw) as e:
    ids = sorted(d.id for d in e.documents())
    hits = e.search("who scored in the derby", k=3, mode="hybrid")
print(json.dumps({"ids": ids, "answered": bool(hits)}))
"""


def look(engine_kwargs: dict[str, Any]) -> tuple[set[str], bool]:
    """The documents an index holds and whether it answers, read by a fresh process (a
    Milvus Lite database is open to one process at a time, and stays open in the one
    that searched it)."""
    import json

    r = subprocess.run(
        [sys.executable, "-c", _CHECK, json.dumps(engine_kwargs)], env=env(), capture_output=True, text=True
    )
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["the check failed"])[-1])
    d = json.loads(r.stdout.strip().splitlines()[-1])
    return set(d["ids"]), bool(d["answered"])


def kill_at(i: int, kills: int, span: float, rng: random.Random) -> float:
    """A random moment in the i-th of ``kills`` equal slices of ``span`` seconds."""
    return rng.uniform(i * span / kills, (i + 1) * span / kills)


@dataclass
class Outcome:
    kills: int = 0
    old: int = 0
    new: int = 0
    failures: list[str] = field(default_factory=list)


def campaign(
    *,
    name: str,
    kills: int,
    make_base: Callable[[Path], None],
    command: Callable[[Path], list[str]],
    old: set[str],
    new: set[str],
    engine_kwargs: Callable[[Path], dict[str, Any]],
    work: Path,
    rng: random.Random,
    next_writer: Callable[[Path], list[str]] | None = None,
    after_next: Callable[[set[str]], set[str]] | None = None,
) -> Outcome:
    """``kills`` runs of ``command`` on a fresh copy of the base index, each SIGKILLed at a
    random moment up to 1.4x one uninterrupted run (so some land after the commit): the
    i-th in the i-th of ``kills`` equal slices of that span, so a few kills cover all of it.

    Then ``next_writer`` (by default ``command`` again) must succeed and leave
    ``after_next(found)`` (by default the new state)."""
    next_writer = next_writer or command
    out = Outcome()
    base = work / f"{name}-base"
    make_base(base)
    trial = work / f"{name}-trial"
    shutil.copytree(base, trial)
    t0 = time.monotonic()
    rc = cli(command(trial)).wait()
    duration = time.monotonic() - t0
    if rc != 0:
        out.failures.append(f"{name}: an uninterrupted run failed ({rc})")
        return out
    shutil.rmtree(trial)
    for i in range(kills):
        run = work / f"{name}-{i}"
        shutil.copytree(base, run)
        p = cli(command(run))
        time.sleep(kill_at(i, kills, 1.4 * duration, rng))
        kill_group(p)
        out.kills += 1
        try:
            ids, answered = look(engine_kwargs(run))
            if ids == old:
                out.old += 1
            elif ids == new:
                out.new += 1
            else:
                out.failures.append(f"{name} kill {i}: {len(ids)} documents, neither old nor new")
            if not answered:
                out.failures.append(f"{name} kill {i}: the index does not answer")
            # The next writer succeeds, and leaves the new state.
            done = subprocess.run(
                [sys.executable, "-m", "search", *next_writer(run)], env=env(), capture_output=True, text=True
            )
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or [""])[-1]
                out.failures.append(f"{name} kill {i}: the next writer failed ({done.returncode}): {last}")
            elif look(engine_kwargs(run))[0] != (after_next(ids) if after_next else new):
                out.failures.append(f"{name} kill {i}: the next writer did not reach the new state")
        except Exception as e:
            out.failures.append(f"{name} kill {i}: {type(e).__name__}: {e}")
        shutil.rmtree(run, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    return out
