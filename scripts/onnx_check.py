"""Check the ONNX backends against sentence-transformers, and time every backend.

    python scripts/onnx_check.py --data ../shared [--passages 1000] [--repeats 3]

Prints, as JSON lines: agreement of "onnx" (our fp32 export) and "onnx-int8" with the
reference (min/mean cosine, max abs diff, top-10 overlap of retrieval over the passages with
the sentences as queries), then passages/s for each backend and batch size (median of
``--repeats`` runs). Not a test: it reads ../shared, which tests must not depend on.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import numpy as np

from search.embed import compare, get_embedder

_SENT = re.compile(r"(?<=[.!?])\s+")


def load_texts(shared: Path, n_passages: int) -> tuple[list[str], list[str]]:
    """Sentences (queries) and ~120-word passages from the seeds and BBC football."""
    articles = [p.read_text(encoding="utf-8") for p in sorted((shared / "seeds").glob("*.txt"))]
    with open(shared / "data" / "bbcsport" / "football.jsonl", encoding="utf-8") as f:
        articles += [json.loads(line)["text"] for line in f]
    sentences: list[str] = []
    passages: list[str] = []
    for text in articles:
        sents = [s.strip() for s in _SENT.split(text) if s.strip()]
        sentences += sents[:4]
        words = text.split()
        passages += [" ".join(words[i : i + 120]) for i in range(0, len(words), 100)]
    return sentences, passages[:n_passages]


def top10_overlap(q_ref: np.ndarray, q: np.ndarray, p_ref: np.ndarray, p: np.ndarray) -> float:
    a = np.argsort(-(q_ref @ p_ref.T), axis=1)[:, :10]
    b = np.argsort(-(q @ p.T), axis=1)[:, :10]
    return float(np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a, b, strict=True)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared"))
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-sizes", default="16,32,64,128")
    args = ap.parse_args()

    sentences, passages = load_texts(args.data, args.passages)
    ref = get_embedder("sentence-transformers")
    embedders = {
        "sentence-transformers": ref,
        "onnx": get_embedder("onnx"),
        "onnx-int8": get_embedder("onnx-int8"),
    }
    q_ref, p_ref = ref.encode(sentences), ref.encode(passages)
    for name in ("onnx", "onnx-int8"):
        e = embedders[name]
        stats = compare(e, ref, sentences + passages)
        q, p = e.encode(sentences), e.encode(passages)
        cos = np.concatenate([(q * q_ref).sum(1), (p * p_ref).sum(1)])
        print(
            json.dumps(
                {
                    "backend": name,
                    "texts": len(sentences) + len(passages),
                    **stats,
                    "mean_cosine": float(cos.mean()),
                    "top10_overlap": top10_overlap(q_ref, q, p_ref, p),
                    "top1_same": float(np.mean((q_ref @ p_ref.T).argmax(1) == (q @ p.T).argmax(1))),
                }
            ),
            flush=True,
        )

    for name, e in embedders.items():
        for bs in (int(b) for b in args.batch_sizes.split(",")):
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                e.encode(passages, batch_size=bs)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            print(
                json.dumps(
                    {"backend": name, "batch_size": bs, "passages_per_s": round(len(passages) / med, 1)}
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
