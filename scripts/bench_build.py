"""Build one system's index, in its own process, so its wall time and peak RSS are its own.

    python scripts/bench_build.py {ours,bm25s-hnsw,txtai} --corpus C --passages-file F --passages P
                                  --out DIR --work W --models {replay,real,hash}
    python scripts/bench_build.py table --corpus bbcsport.jsonl --work W   (the replay table, once)

Run by scripts/bench.py, which builds into a temp dir and renames it when this exits 0.
Writes ``@progress LABEL DONE TOTAL`` lines while it works and one ``@result {json}``
line at the end on stdout. Ours indexes the articles (``Engine.add`` of a stream read from
the corpus file as the write goes: chunking, NER, encode, dedup, BM25, vectors); the peers
index the same passages, pre-chunked, each with its headline (what our encoder sees), and
the same vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from bench_corpus import Articles, bbc_records, read_jsonl  # noqa: E402
from bench_guard import sigterm_as_interrupt  # noqa: E402
from bench_models import build_models, make_table  # noqa: E402

BATCH = 10_000  # passages per step of the peers' builds (a progress tick each)
HNSW_M = 32  # FAISS's usual graph degree; efConstruction stays FAISS's default (40)


def progress(label: str, done: int, total: int) -> None:
    print(f"@progress {label.replace(' ', '_')} {done} {total}", flush=True)


def peak_rss_mb() -> float:
    """This process's peak plus the largest peak of any process it started (ours: a bulk
    write's lexical child), an upper bound of their peak together."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (own + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


def rss_mb() -> float:
    """Resident now: before a build, what the imports, models or stand-ins and the open
    engine take, so the build's own growth is ``peak_rss_mb - base_rss_mb``."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024**2


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1024**2


def build_ours(a: argparse.Namespace) -> dict[str, Any]:
    from search.engine import Engine

    t0 = time.perf_counter()
    # A stream: each article is read from the file as the engine takes it and let go once
    # its batch is written, so the peak is the engine's write (plus the stand-ins' tables,
    # ``base_rss_mb``), not the corpus held as articles with their sentence vectors.
    arts = Articles(a.corpus)
    read_s = time.perf_counter() - t0  # counting the records; reading is inside the build
    progress("read corpus", arts.count, arts.count)
    embedder, tagger = build_models(a.models, a.work)
    e = Engine.open(a.out, create=True, embedder=embedder, tagger=tagger)
    base_rss = rss_mb()
    total = a.passages

    def cb(stage: str, done: int, n: int) -> None:
        if stage == "encode":
            progress("ours: encode passages", done, n)
            if done >= n:  # what follows has no counts: sentences, dedup, BM25, vectors, files
                progress("ours: write", 0, 0)
        else:
            progress(f"ours: {stage}", done, n)

    t0 = time.perf_counter()
    rep = e.add(arts, reset=True, progress=cb)
    build_s = time.perf_counter() - t0
    stats = e.stats()
    e.close()
    out = {
        "system": "ours",
        "passages": stats.get("passages", total),
        "documents": stats.get("documents"),
        "read_s": read_s,
        "build_s": build_s,
        "stages_s": dict(rep.stages),
        "peak_rss_mb": peak_rss_mb(),
        "base_rss_mb": base_rss,
    }
    table = getattr(embedder, "table", None)
    if table is not None:
        out["replay_found"], out["replay_missed"] = table.found, table.missed
    return out


def peer_passages(path: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for p in read_jsonl(path):
        ids.append(p["pid"])
        texts.append(p["dense"])
    return ids, texts


def build_bm25s_hnsw(a: argparse.Namespace) -> dict[str, Any]:
    import bm25s
    import faiss
    import numpy as np
    from bm25s.tokenization import Tokenized, Tokenizer
    from whoosh.lang.porter import stem

    from search.text import STOP_WORDS

    t0 = time.perf_counter()
    ids, texts = peer_passages(a.passages_file)
    read_s = time.perf_counter() - t0
    embedder, _ = build_models(a.models, a.work)
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    t0 = time.perf_counter()
    # The same analysis as ours: our stop words, Porter stems.
    tok = Tokenizer(stopwords=sorted(STOP_WORDS), stemmer=stem)
    token_ids: list[list[int]] = []
    for b in range(0, len(texts), BATCH):
        token_ids += tok.tokenize(
            texts[b : b + BATCH], update_vocab=True, return_as="ids", show_progress=False
        )
        progress("bm25s: tokenize", min(b + BATCH, len(texts)), len(texts))
    model = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    progress("bm25s: index", 0, 0)
    model.index(Tokenized(ids=token_ids, vocab=tok.get_vocab_dict()), show_progress=False)
    a.out.mkdir(parents=True)
    model.save(
        str(a.out / "bm25s"),
        corpus=[{"id": i, "text": t} for i, t in zip(ids, texts)],
        show_progress=False,
    )
    tok.save_vocab(str(a.out / "bm25s"))
    tok.save_stopwords(str(a.out / "bm25s"))
    del model, token_ids
    bm25_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = faiss.IndexHNSWFlat(embedder.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    encode_s = 0.0
    for b in range(0, len(texts), BATCH):
        t1 = time.perf_counter()
        v = embedder.encode(texts[b : b + BATCH])
        encode_s += time.perf_counter() - t1
        index.add(np.ascontiguousarray(v, dtype=np.float32))
        progress("hnsw: add vectors", min(b + BATCH, len(texts)), len(texts))
    faiss.write_index(index, str(a.out / "hnsw.faiss"))
    vec_s = time.perf_counter() - t0
    return {
        "system": "bm25s-hnsw",
        "passages": len(texts),
        "read_s": read_s,
        "build_s": bm25_s + vec_s,
        "stages_s": {"bm25": bm25_s, "encode": encode_s, "vectors": vec_s - encode_s},
        "peak_rss_mb": peak_rss_mb(),
    }


def build_txtai(a: argparse.Namespace) -> dict[str, Any]:
    from txtai import Embeddings

    t0 = time.perf_counter()
    ids, texts = peer_passages(a.passages_file)
    read_s = time.perf_counter() - t0
    embedder, _ = build_models(a.models, a.work)
    encode_s = 0.0

    def transform(batch: list[str]) -> Any:
        nonlocal encode_s
        t = time.perf_counter()
        v = embedder.encode(list(batch))
        encode_s += time.perf_counter() - t
        return v

    def docs() -> Any:
        for n, (i, t) in enumerate(zip(ids, texts), 1):
            if n % BATCH == 0 or n == len(ids):
                progress("txtai: read and encode", n, len(ids))
                if n == len(ids):
                    progress("txtai: index and save", 0, 0)
            yield {"id": i, "text": t}

    t0 = time.perf_counter()
    emb = Embeddings(method="external", transform=transform, content=True, hybrid=True, backend="faiss")
    emb.index(docs())
    emb.save(str(a.out))
    build_s = time.perf_counter() - t0
    return {
        "system": "txtai",
        "passages": len(texts),
        "read_s": read_s,
        "build_s": build_s,
        "stages_s": {"encode": encode_s, "rest": build_s - encode_s},
        "components": (emb.config or {}).get("build", {}).get("settings", {}).get("components"),
        "peak_rss_mb": peak_rss_mb(),
    }


def build_table(a: argparse.Namespace) -> dict[str, Any]:
    """The replay table: every BBC sentence encoded and tagged once by the real models."""
    make_table(bbc_records(a.corpus), a.work, progress)
    return {"system": "table"}


BUILDERS = {"ours": build_ours, "bm25s-hnsw": build_bm25s_hnsw, "txtai": build_txtai, "table": build_table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("system", choices=sorted(BUILDERS))
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--passages-file", type=Path)
    ap.add_argument("--passages", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--models", default="replay")
    a = ap.parse_args()
    with sigterm_as_interrupt():
        res = BUILDERS[a.system](a)
    if a.out is not None and a.out.exists():
        res["disk_mb"] = disk_mb(a.out)
    res["models"] = a.models
    print("@result " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
