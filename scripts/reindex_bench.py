"""Cost of incremental updates on a large index (issues #4, #17): add one article, remove one.

    python scripts/reindex_bench.py --data ../shared/data/bbcsport/bbcsport.jsonl --passages 100000
    python scripts/reindex_bench.py --existing /tmp/b1m/ours-syn-1000000-replay --models replay --work /tmp/b1m

``--existing DIR`` measures on an index already built (say scripts/bench.py's 1M build)
instead, with the models it was built with (``--models``, as bench.py names them, and its
``--work`` for the replay tables); each article added is removed again, so the index ends
as it began. The cost beyond the models is the add's time less its own encode and NER stages.

The large index is built once by repeating the BBC Sport articles under new ids
(``copyN/<id>``) until it holds ``--passages`` passages. Vectors for the bulk build come
from the fast fake embedder: the target is the cost *beyond encoding*, and the fake
writes the same 384-dim float32 vectors; the real model's encode time for the added
article is measured and reported separately. Prints a markdown table (or --json).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from search.embed import HashEmbedder, get_embedder
from search.engine import Engine
from search.types import Article


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data/bbcsport/bbcsport.jsonl")
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--index", default=None, help="where to build the large index (default: a temp dir)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--existing", type=Path, default=None, help="measure on this index, already built")
    ap.add_argument("--models", default="hash", help="with --existing: replay, real or hash (as bench.py)")
    ap.add_argument(
        "--work", type=Path, default=Path("/tmp/search-bench"), help="with --existing: bench.py's --work"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    docs = [json.loads(line) for line in open(args.data, encoding="utf-8")]
    tmp = Path(args.index) if args.index else Path(tempfile.mkdtemp(prefix="reindex-bench-"))
    path = tmp / "idx"
    if args.existing:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_models import build_models

        embedder, tagger = build_models(args.models, args.work)
        t0 = time.perf_counter()
        e = Engine.open(args.existing, embedder=embedder, tagger=tagger)
        open_s = time.perf_counter() - t0
    else:
        e = Engine.open(path, create=True, embedder=HashEmbedder())
        open_s = 0.0
    t0 = time.perf_counter()
    copy = 0
    while not args.existing and e.stats()["passages"] < args.passages:
        arts = [
            Article(id=f"copy{copy}/{d['id']}", title=d["title"], text=f"[{copy}] " + d["text"]) for d in docs
        ]
        e.add(arts)
        copy += 1
    build_s = time.perf_counter() - t0
    st = e.stats()

    fresh = docs[0]
    real = get_embedder("auto")
    adds, removes, encodes, beyond = [], [], [], []
    stages: list[dict[str, float]] = []
    for i in range(args.repeats):
        art = Article(id=f"new/{i}", title=fresh["title"], text=f"Update {i}. " + fresh["text"])
        t0 = time.perf_counter()
        real.encode([art.text])  # what encoding this one article costs with the real model
        from search.chunk import chunk

        passages = chunk(art.id, art.text)
        t1 = time.perf_counter()
        real.encode([p.text for p in passages])
        encodes.append(time.perf_counter() - t1)
        t0 = time.perf_counter()
        rep: Any = e.add([art])
        adds.append(time.perf_counter() - t0)
        # The models' share (encode, NER: loading them too, on the first add) is not the index's.
        beyond.append(adds[-1] - rep.stages.get("encode", 0.0) - rep.stages.get("ner", 0.0))
        stages.append({k: round(v, 3) for k, v in rep.stages.items()})
        t0 = time.perf_counter()
        e.remove([art.id])
        removes.append(time.perf_counter() - t0)
    out = {
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "documents": st["documents"],
        "passages": st["passages"],
        **({"index": str(args.existing), "open_s": round(open_s, 2)} if args.existing else {}),
        **({} if args.existing else {"build_s_fake_vectors": round(build_s, 1)}),
        "add_one_s_median": round(statistics.median(adds), 3),
        "add_one_beyond_its_models_s_median": round(statistics.median(beyond), 3),
        "add_one_beyond_its_models_s_max": round(max(beyond), 3),
        "add_one_s_max": round(max(adds), 3),
        "add_stages_s": stages,
        "remove_one_s_median": round(statistics.median(removes), 3),
        "remove_one_s_max": round(max(removes), 3),
        "encode_one_article_real_model_s_median": round(statistics.median(encodes), 3),
        "note": f"add/remove timed with the {args.models if args.existing else 'hash'} embedder; "
        "the real model's encode of the article shown apart",
    }
    if args.json:
        print(json.dumps(out))
    else:
        print("| measure | value |\n|---|---|")
        for k, v in out.items():
            print(f"| {k} | {v} |")
    e.close()
    if not args.index:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
