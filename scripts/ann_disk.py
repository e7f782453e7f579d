"""Disk of an index at N passages, by kind of file: how much of it is vectors (#17 item 4).

    python scripts/ann_disk.py [--passages 100000] [--data ../shared] [--work /tmp/ann-disk]

Builds an index through ``Engine.add`` (one write) from BBC Sport copied with varied ids
until it holds ``--passages`` passages, with the fake ``HashEmbedder`` (384 dimensions:
file sizes do not depend on what the vectors mean) and a regex tagger instead of spaCy
(the entities' share is not what this measures). Then sums the live generation's files
by suffix: ``.npy`` passage vectors, ``.faiss`` ANN indexes, ``.sentvec.npy`` sentence
vectors (and their ``.sentmap.npy``: the copies share their sentences' rows), ``lexical/`` whoosh, the rest. Uses only the public API, so it runs on any
version of the package: the one on ``PYTHONPATH`` (``PYTHONPATH=. python scripts/ann_disk.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from search import Engine
from search.embed import HashEmbedder
from search.types import Article

ROOT = Path(__file__).resolve().parent.parent

NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")


def tagger(texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    return [
        [(m.start(), m.end(), "PERSON" if " " in m.group() else "ORG") for m in NAME.finditer(t)]
        for t in texts
    ]


def kind(path: Path, gen: Path) -> str:
    rel = path.relative_to(gen)
    if rel.parts[0] == "lexical":
        return "lexical (whoosh)"
    name = path.name
    if name.endswith((".sentvec.npy", ".sentmap.npy")):
        return "sentence vectors (.sentvec.npy, .sentmap.npy)"
    if re.fullmatch(r"seg-\d+\.npy", name):
        return "passage vectors (.npy)"
    if name.endswith(".faiss"):
        return "ANN index (.faiss)"
    return "other (docs, spans, manifest)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ann-disk"))
    a = ap.parse_args()
    rows = [
        json.loads(line) for line in open(a.data / "data" / "bbcsport" / "bbcsport.jsonl", encoding="utf-8")
    ]
    path = a.work / "index"
    shutil.rmtree(path, ignore_errors=True)
    a.work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def copy(c: int) -> list[Article]:
        return [
            Article(id=f"c{c:03d}/{r['id']}", title=r["title"], text=r["text"], source="BBC Sport")
            for r in rows
        ]

    with Engine.open(path, create=True, embedder=HashEmbedder(), tagger=tagger) as e:
        e.add(copy(0))  # one copy first, to learn how many passages a copy makes
        per_copy = e.stats()["passages"]
        more = max(0, round(a.passages / per_copy) - 1)
        e.add([art for c in range(1, more + 1) for art in copy(c)])  # the rest in one write
        st = e.stats()
    gen = path / (path / "CURRENT").read_text().strip()
    sizes: dict[str, int] = {}
    for f in gen.rglob("*"):
        if f.is_file():
            sizes[kind(f, gen)] = sizes.get(kind(f, gen), 0) + f.stat().st_size
    n = st["passages"]
    print(f"{n:,} passages, {st['documents']:,} documents, built in {time.perf_counter() - t0:.0f} s")
    print("| files | MB | bytes per passage |\n|---|---|---|")
    for k, v in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {v / 1e6:.1f} | {v / n:.0f} |")
    total = sum(sizes.values())
    print(f"| total | {total / 1e6:.1f} | {total / n:.0f} |")


if __name__ == "__main__":
    main()
