"""The local store at scale: build and serve ~1M passages of varied text (#17 items 1, 3, 5).

    python scripts/scale_store.py [--articles 250000] [--work /work/helpers/store_1m]
                                  [--data /work/shared] [--questions 200] [--what corpus,build,serve]

corpus  ``--articles`` synthetic articles recombined from the real BBC Sport sentences:
        each article takes a real article's paragraph shape and fills it with sentences of
        one category drawn at random from every article of that category, so posting lists,
        vectors and documents are varied (no copies); titles splice two real headlines,
        sources, dates and categories vary. Written once as ``corpus-N.jsonl`` and reused.
build   ``Engine.index([corpus])`` in a child process, through the engine's whole write path
        (streamed ingest, chunking, dedup, whoosh, segments) with the hash embedder and a
        regex tagger, so the build measures the engine, not the models: wall time, and peak
        RSS from the child's rusage. The index is cached in ``index-N/`` and reused.
serve   A fresh child process opens the index: open time, RSS after open, then ``--questions``
        headline questions (the BBC football titles), ``Engine.search`` hybrid and
        ``Engine.ask`` interleaved: p50/p95 of each, RSS after, peak RSS, and the BM25 and
        vector stages alone.

Progress (with an ETA) goes to stderr; one JSON line with everything measured goes to
stdout. Run it under ``nice``: the machine is shared, compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUTLETS = (
    "BBC Sport",
    "AFP",
    "Reuters",
    "The Guardian",
    "Press Association",
    "ESPN",
    "Sky Sports",
    "The Times",
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Progress:
    """``done/total`` with the rate and an ETA, at most every ``every`` seconds."""

    def __init__(self, what: str, total: int, every: float = 10.0) -> None:
        self.what, self.total, self.every = what, max(total, 1), every
        self.t0 = self.last = time.monotonic()

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-9)
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        log(
            f"{self.what}: {done:,}/{self.total:,} ({100 * done / self.total:.0f}%), {rate:,.0f}/s, ETA {eta:,.0f} s"
        )


# ----------------------------------------------------------------------------- corpus


def bbc_shapes(data: Path) -> tuple[dict[str, list[str]], dict[str, list[list[int]]], dict[str, list[str]]]:
    """Per category: every sentence, the paragraph shapes (sentences per paragraph), the titles."""
    sys.path.insert(0, str(ROOT))
    from search.chunk import segment

    sents: dict[str, list[str]] = {}
    shapes: dict[str, list[list[int]]] = {}
    titles: dict[str, list[str]] = {}
    with open(data / "data" / "bbcsport" / "bbcsport.jsonl", encoding="utf-8") as f:
        for line in f:
            a = json.loads(line)
            cat = a.get("category") or "sport"
            shape = []
            for para in re.split(r"\n\s*\n", a["text"]):
                units = [para[u.start : u.end] for u in segment(para) if not u.heading]
                units = [" ".join(u.split()) for u in units if len(u) > 1]
                if units:
                    sents.setdefault(cat, []).extend(units)
                    shape.append(len(units))
            if shape:
                shapes.setdefault(cat, []).append(shape)
            titles.setdefault(cat, []).append(a["title"])
    return sents, shapes, titles


def make_corpus(data: Path, out: Path, n: int, seed: int = 17) -> dict[str, Any]:
    """Write ``n`` recombined articles as JSONL (atomically); returns counts."""
    sents, shapes, titles = bbc_shapes(data)
    cats = sorted(shapes)
    weights = [len(shapes[c]) for c in cats]
    rng = random.Random(seed)
    day0 = 1_041_379_200  # 2003-01-01 UTC
    span = 23 * 365 * 86_400
    tmp = out.with_name(out.name + ".tmp")
    prog = Progress("corpus", n)
    chars = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(n):
            cat = rng.choices(cats, weights)[0]
            pool = sents[cat]
            shape = rng.choice(shapes[cat])
            paras = [" ".join(rng.choice(pool) for _ in range(k)) for k in shape]
            text = "\n\n".join(paras)
            t1, t2 = rng.choice(titles[cat]).split(), rng.choice(titles[cat]).split()
            title = " ".join(t1[: max(1, len(t1) // 2)] + t2[len(t2) // 2 :])
            ts = day0 + rng.randrange(span)
            rec = {
                "id": f"syn/{cat}/{i:07d}",
                "title": title,
                "text": text,
                "source": OUTLETS[rng.randrange(len(OUTLETS))],
                "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)),
                "category": cat,
            }
            chars += len(text)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            prog(i + 1)
    os.replace(tmp, out)
    return {"articles": n, "chars": chars, "sentences": sum(len(v) for v in sents.values())}


# ----------------------------------------------------------------------------- build

EMBEDDERS = r"""
import zlib
import numpy as np
from search.embed import HashEmbedder


class WordHashEmbedder:
    # The hash embedder's idea (hashed words, signed) in numpy, 50x faster, so a 1M build
    # measures the engine: HashEmbedder's character n-grams cost ~0.6 ms a text, an hour
    # for the ~6M passages and sentences of a 1M-passage corpus.
    model_id = "hash-words"
    backend = "hash"
    dim = 384

    def _matrix(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        rows, cols, signs = [], [], []
        for i, t in enumerate(texts):
            for w in t.lower().split():
                h = zlib.crc32(w.encode("utf-8", "surrogatepass"))
                rows.append(i); cols.append(h % self.dim); signs.append(1.0 if h & 0x80000000 else -1.0)
        np.add.at(out, (np.asarray(rows, np.int64), np.asarray(cols, np.int64)), np.asarray(signs, np.float32))
        out[:, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode(self, texts, batch_size=64, progress=None):
        out = self._matrix(list(texts))
        if progress:
            progress(len(texts))
        return out

    def encode_query(self, text):
        return self._matrix([text])[0]

    def info(self):
        return {"model_id": self.model_id, "backend": self.backend, "dim": self.dim}


def embedder(name):
    return WordHashEmbedder() if name == "words" else HashEmbedder()
"""

BUILD = r"""
import json, re, resource, sys, time
sys.path.insert(0, sys.argv[1])
from search.engine import Engine
exec(sys.argv[4])

NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")

def tagger(texts):
    # Capitalised runs as PERSON (two words or more) or ORG: as many spans as spaCy gives,
    # at no model cost, so the build measures the engine's handling of entities.
    return [[(m.start(), m.end(), "PERSON" if " " in m.group() else "ORG") for m in NAME.finditer(t)]
            for t in texts]

path, corpus = sys.argv[2], sys.argv[3]
t0 = time.monotonic()
last = [t0]
def progress(stage, done, n):
    now = time.monotonic()
    if now - last[0] >= 15 or done >= n:
        last[0] = now
        rate = done / max(now - t0, 1e-9)
        eta = (n - done) / rate if rate > 0 else float("inf")
        rss = int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
        print(f"[{time.strftime('%H:%M:%S')}] build {stage}: {done:,}/{n:,}, ETA {eta:,.0f} s, RSS {rss:,.0f} MB",
              file=sys.stderr, flush=True)
t = time.perf_counter()
with Engine.open(path, create=True, embedder=embedder(sys.argv[5]), tagger=tagger) as e:
    rep = e.index([corpus], progress=progress)
    took = time.perf_counter() - t
    st = e.stats()
print(json.dumps({"build_s": took, "stages": rep.stages, "passages": rep.passages, "documents": st["documents"],
                  "size_bytes": st["size_bytes"], "problems": rep.problems[:5],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build(work: Path, corpus: Path, path: Path, code: Path, rebuild: bool, emb: str) -> dict[str, Any]:
    done = path.with_name(path.name + ".build.json")
    if path.exists() and done.exists() and not rebuild:
        out = json.loads(done.read_text())
        out["reused"] = True
        return out
    if path.exists():
        import shutil

        shutil.rmtree(path)
    log(f"building {path} from {corpus}")
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", BUILD, str(code), str(path), str(corpus), EMBEDDERS, emb],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "SEARCH_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1"},
    )
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"the build failed (exit {r.returncode})")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    out["child_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    done.write_text(json.dumps(out))
    out["reused"] = False
    return out


# ----------------------------------------------------------------------------- serve

SERVE = r"""
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1])
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
exec(sys.argv[4])
from search.engine import Engine
from search.text import query_terms
path, qfile = sys.argv[2], sys.argv[3]
qs = json.load(open(qfile))
base = rss()
t0 = time.perf_counter()
e = Engine.open(path, embedder=embedder(sys.argv[5]))
snap = e._backend.reader()
open_s = time.perf_counter() - t0
res = {"open_s": open_s, "rss_before_open_mb": base, "rss_open_mb": rss(), "search": [], "ask": [], "bm25": [],
       "dense": []}
t = time.perf_counter(); e.search(qs[0], k=10); res["first_search_s"] = time.perf_counter() - t
for q in qs:  # search and ask interleaved, so the machine's load falls on both alike
    t = time.perf_counter(); e.search(q, k=10, mode="hybrid"); res["search"].append(time.perf_counter() - t)
    t = time.perf_counter(); e.ask(q, k=5, mode="hybrid"); res["ask"].append(time.perf_counter() - t)
b = e._backend
for q in qs:
    terms = query_terms(q)
    t = time.perf_counter(); b.lexical(terms, 50); res["bm25"].append(time.perf_counter() - t)
    v = e.embedder.encode_query(q)
    t = time.perf_counter(); b.dense(v, 50); res["dense"].append(time.perf_counter() - t)
res["rss_after_mb"] = rss()
res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
res["passages"] = snap.n_passages
print(json.dumps(res))
"""


STORE = r"""
import json, os, resource, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from search.backends.local_store import Segment, merge_segments, write_segment
from search.backends.local_table import Table, TableBuilder
from search.types import Article
corpus, out, n = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
if sys.argv[5] == "no-ann":  # the store's own peak, without the ANN build (search.vectors)
    import search.backends.local_segment_write as lsw  # where write_segment/merge_segments look it up
    lsw.write_ann = lambda *a, **k: None
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
tb = TableBuilder(None)
names, t0, arts = [], time.perf_counter(), []
def flush():
    name = f"seg-{len(names):06d}"
    spans = [[(m, m + len(p)) for p, m in zip(a.text.split("\n\n"), np.cumsum([0] + [len(p) + 2 for p in a.text.split("\n\n")])[:-1].tolist())] for a in arts]
    vec = rng.standard_normal((sum(map(len, spans)), 384)).astype(np.float32)
    write_segment(out, name, arts, spans, [[[] for _ in ps] for ps in spans], vec, np.zeros((len(arts), 0), np.uint32),
                  [{"added": "x", "duplicate_of": None} for _ in arts], frozenset())
    row = 0
    for i, (a, ps) in enumerate(zip(arts, spans)):
        tb.add(a.id, name, i, row, len(ps), a.published_ts, None, a.source, dict(a.metadata)); row += len(ps)
    names.append(name); arts.clear()
with open(corpus, encoding="utf-8") as f:
    for k, line in enumerate(f):
        if k >= n:
            break
        r = json.loads(line)
        arts.append(Article(id=r["id"], title=r["title"], text=r["text"], source=r["source"], published=r["published"],
                            metadata={"category": r["category"]}))
        if len(arts) == 4096:
            flush()
if arts:
    flush()
write_s = time.perf_counter() - t0
write_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
tb.seal()
t = time.perf_counter()
rows = merge_segments(out, "seg-merged", list(zip(names, tb.members(names))), lambda nm: Segment(out, nm))
tb.relocate(names, "seg-merged")
merge_s = time.perf_counter() - t
for nm in names:
    for p in out.glob(nm + ".*"):
        p.unlink()
t = time.perf_counter(); docs = tb.write(out, ["seg-merged"]); table_s = time.perf_counter() - t
build_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"docs": docs, "rows": rows, "write_s": write_s, "merge_s": merge_s, "table_write_s": table_s,
                  "write_peak_rss_mb": write_peak, "build_peak_rss_mb": build_peak, "ann": sys.argv[5]}))
"""

STORE_OPEN = r"""
import json, random, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
from search.backends.local_store import Segment
from search.backends.local_table import Table, ORD
out = Path(sys.argv[2])
base = rss()
t = time.perf_counter()
table = Table(out); seg = Segment(out, "seg-merged")
open_s = time.perf_counter() - t
opened = rss()
ids = [table.id(i) for i in random.Random(1).sample(range(table.n), min(2000, table.n))]
t = time.perf_counter()
for d in ids:
    i = table.find(d); seg.text(int(table.loc[i, ORD])); seg.record(int(table.loc[i, ORD]))
look_ms = (time.perf_counter() - t) / len(ids) * 1000
t = time.perf_counter()
for d in ids[:500]:
    seg.article(int(table.loc[table.find(d), ORD]))
art_ms = (time.perf_counter() - t) / len(ids[:500]) * 1000
print(json.dumps({"open_s": open_s, "rss_open_delta_mb": opened - base, "lookup_text_record_ms": look_ms,
                  "article_ms": art_ms, "rss_after_mb_delta": rss() - base, "docs": table.n, "rows": seg.rows}))
"""


def store_only(work: Path, corpus: Path, n: int, code: Path, ann: bool = True) -> dict[str, Any]:
    """The store alone at scale (segments and the table, no whoosh; the ANN file unless
    ``ann`` is off): build, then open."""
    out = work / (f"store-{n}" if ann else f"store-{n}-no-ann")
    if not (out / "table.json").exists():
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        log(f"writing the store alone for {n:,} articles to {out}")
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                STORE,
                str(code),
                str(corpus),
                str(out),
                str(n),
                "ann" if ann else "no-ann",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        if r.returncode:
            raise SystemExit("the store build failed")
        built = json.loads(r.stdout.strip().splitlines()[-1])
        (out / "build.json").write_text(json.dumps(built))
    built = json.loads((out / "build.json").read_text())
    r = subprocess.run(
        [sys.executable, "-c", STORE_OPEN, str(code), str(out)], stdout=subprocess.PIPE, text=True
    )
    if r.returncode:
        raise SystemExit("opening the store failed")
    return {
        "build": built,
        "open": json.loads(r.stdout.strip().splitlines()[-1]),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def questions(data: Path, n: int) -> list[str]:
    with open(data / "data" / "bbcsport" / "football.jsonl", encoding="utf-8") as f:
        titles = [json.loads(line)["title"] for line in f]
    return titles[:n]


def serve(work: Path, path: Path, code: Path, qs: list[str], emb: str) -> dict[str, Any]:
    qfile = work / "questions.json"
    qfile.write_text(json.dumps(qs))
    log(f"serving {path}: {len(qs)} questions in a fresh process")
    r = subprocess.run(
        [sys.executable, "-c", SERVE, str(code), str(path), str(qfile), EMBEDDERS, emb],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if r.returncode != 0:
        raise SystemExit(f"serving failed (exit {r.returncode})")
    raw = json.loads(r.stdout.strip().splitlines()[-1])
    out = {k: v for k, v in raw.items() if not isinstance(v, list)}
    for key in ("search", "ask", "bm25", "dense"):
        out[key] = {
            "p50_ms": pct(raw[key], 50) * 1000,
            "p95_ms": pct(raw[key], 95) * 1000,
            "n": len(raw[key]),
        }
    out["loadavg"] = open("/proc/loadavg").read().split()[:3]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--articles", type=int, default=250_000)
    ap.add_argument("--work", type=Path, default=Path("/work/helpers/store_1m"))
    ap.add_argument("--data", type=Path, default=Path("/work/shared"))
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--what", default="corpus,build,serve")
    ap.add_argument("--rebuild", action="store_true", help="build the index again even if one is cached")
    ap.add_argument("--label", default="", help="a name for this index and run (e.g. the branch)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose search package runs")
    ap.add_argument(
        "--embedder",
        choices=("hash", "words"),
        default="words",
        help="hash: the tests' HashEmbedder; words: the same idea in numpy (the default: the build is the engine's)",
    )
    args = ap.parse_args()
    what = set(args.what.split(","))
    args.work.mkdir(parents=True, exist_ok=True)
    n = args.articles
    corpus = args.work / f"corpus-{n}.jsonl"
    index = args.work / (f"index-{n}-{args.label}" if args.label else f"index-{n}")
    res: dict[str, Any] = {
        "label": args.label,
        "code": str(args.code),
        "articles": n,
        "loadavg_start": open("/proc/loadavg").read().split()[:3],
    }
    if "corpus" in what or not corpus.exists():
        if corpus.exists():
            log(f"reusing {corpus}")
        else:
            log(f"writing {n:,} articles to {corpus}")
            res["corpus"] = make_corpus(args.data, corpus, n)
    if "store" in what or "store-no-ann" in what:
        res["store"] = store_only(args.work, corpus, n, args.code, ann="store-no-ann" not in what)
        log(f"store: {json.dumps(res['store'])}")
    if "build" in what:
        res["build"] = build(args.work, corpus, index, args.code, args.rebuild, args.embedder)
        log(f"build: {json.dumps(res['build'])}")
    if "serve" in what:
        res["serve"] = serve(args.work, index, args.code, questions(args.data, args.questions), args.embedder)
        log(f"serve: {json.dumps(res['serve'])}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
