"""Real, unique MiniLM vectors for measuring ANN indexes (used by scripts/ann_choice.py).

    python scripts/ann_vectors.py [--data ../shared] [--cache /work/helpers/vec_cache]

The base set: every SciFact title, and the passages (the engine's chunking, 700
characters, one sentence of overlap), the shorter passages (300 characters, no overlap)
and the sentences of every SciFact abstract and BBC Sport article, each distinct text
once (~102k). The queries, none of them a member of the base set: SciFact's 1,109 claims,
BBC Sport's 737 headlines (the base holds the articles' text, never their titles) and the
dev questions. All encoded with the engine's own embedder (``get_embedder("auto")``, the
ONNX export of all-MiniLM-L6-v2), once: the matrices are cached as ``.npy`` with a key of
the texts' hash, so a rerun only loads them.

``scaled(base, groups, n)`` makes a varied set of ``n`` vectors from it: the real vectors,
then random convex combinations ``t·a + (1-t)·b`` (t uniform in [0.2, 0.8]) of two texts
of the same article, renormalised. Never copies with noise: those sit in tight clumps that
make any ANN look perfect.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from search.chunk import chunk, sentence_spans  # noqa: E402

CACHE = Path("/work/helpers/vec_cache")


def base_texts(data: Path) -> tuple[list[str], np.ndarray]:
    """The distinct base texts and, for each, the article it first came from."""
    seen: dict[str, int] = {}
    group: list[int] = []
    doc = 0

    def add(text: str) -> None:
        text = text.strip()
        if len(text) >= 12 and text not in seen:
            seen[text] = len(group)
            group.append(doc)

    def article(text: str) -> None:
        for p in chunk("x", text, 700, 1):
            add(p.text)
        for p in chunk("x", text, 300, 0):
            add(p.text)
        for s, e in sentence_spans(text):
            add(text[s:e])

    with open(data / "data" / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            add(r.get("title") or "")
            article(r["text"])
            doc += 1
    with open(data / "data" / "bbcsport" / "bbcsport.jsonl", encoding="utf-8") as f:
        for line in f:
            article(json.loads(line)["text"])
            doc += 1
    return list(seen), np.asarray(group, dtype=np.int32)


def query_texts(data: Path, base: set[str]) -> list[str]:
    out: list[str] = []
    with open(data / "data" / "scifact" / "queries.jsonl", encoding="utf-8") as f:
        out += [json.loads(line)["text"] for line in f]
    with open(data / "data" / "bbcsport" / "bbcsport.jsonl", encoding="utf-8") as f:
        out += [json.loads(line)["title"] for line in f]
    dev = data / "eval" / "dev.jsonl"
    if dev.exists():
        out += [json.loads(line)["question"] for line in open(dev, encoding="utf-8") if line.strip()]
    seen: set[str] = set()
    keep = []
    for q in (q.strip() for q in out):
        if q and q not in base and q not in seen:
            seen.add(q)
            keep.append(q)
    return keep


def _digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


PART = 8_192  # rows encoded and saved at a time, so an interrupted encode resumes


def _encode(texts: list[str], path: Path, what: str) -> np.ndarray:
    """The texts' vectors, cached at ``path`` (built in parts under ``path.parts/``)."""
    key = path.with_suffix(".json")
    digest = _digest(texts)
    if path.exists() and key.exists() and json.loads(key.read_text()).get("digest") == digest:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    from search.embed import get_embedder

    emb = get_embedder("auto")
    parts = path.with_suffix(".parts") / digest
    parts.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = []
    for lo in range(0, len(texts), PART):
        f = parts / f"{lo:08d}.npy"
        if not f.exists():
            t = time.perf_counter()
            x = emb.encode(texts[lo : lo + PART], batch_size=64)
            np.save(f.with_suffix(".tmp.npy"), x, allow_pickle=False)
            f.with_suffix(".tmp.npy").rename(f)
            rate = len(x) / (time.perf_counter() - t)
            print(f"  {what}: {lo + len(x):,}/{len(texts):,} ({rate:.0f}/s)", file=sys.stderr, flush=True)
        out.append(np.load(f, allow_pickle=False))
    x = np.concatenate(out)
    np.save(path, x, allow_pickle=False)
    key.write_text(
        json.dumps(
            {
                "digest": digest,
                "rows": len(texts),
                "model": emb.info(),
                "encode_s": round(time.perf_counter() - t0, 1),
            }
        )
    )
    return x


def real_set(data: Path, cache: Path = CACHE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(base, groups, queries)``: float32 unit vectors (cached), article of each base row."""
    texts, groups = base_texts(data)
    queries = query_texts(data, set(texts))
    q = _encode(queries, cache / "queries.npy", "queries")
    x = _encode(texts, cache / "base.npy", "base")
    return np.asarray(x, dtype=np.float32), groups, np.asarray(q, dtype=np.float32)


def scaled(base: np.ndarray, groups: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` vectors: ``base`` then convex combinations of two texts of one article."""
    if n <= len(base):
        return np.ascontiguousarray(base[:n])
    rng = np.random.default_rng(seed)
    extra = n - len(base)
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    starts = np.searchsorted(g, g, side="left")
    ends = np.searchsorted(g, g, side="right")
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    out[: len(base)] = base
    step = 200_000
    for lo in range(0, extra, step):
        m = min(step, extra - lo)
        i = rng.integers(0, len(base), m)  # positions in ``order``
        j = starts[i] + (rng.random(m) * (ends[i] - starts[i])).astype(np.int64)
        same = j == i  # a text with itself (or an article of one text): any other text
        j[same] = (i[same] + rng.integers(1, len(base), int(same.sum()))) % len(base)
        t = rng.uniform(0.2, 0.8, (m, 1)).astype(np.float32)
        v = t * base[order[i]] + (1 - t) * base[order[j]]
        out[len(base) + lo : len(base) + lo + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--cache", type=Path, default=CACHE)
    a = ap.parse_args()
    x, groups, q = real_set(a.data, a.cache)
    print(f"base {x.shape}, {len(np.unique(groups))} articles; queries {q.shape}")


if __name__ == "__main__":
    main()
