"""Dev harness for the answer module: build a seed index, run question files, show answers.

    python scripts/answer_dev.py [--index /tmp/ans-idx] [--questions FILE ...] [--rebuild] [-v]

Prints each question's answer, whether it contains an accepted answer, the conflicts, the
answer@1 per file and the median time ``build_answer`` adds to a warm query.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search.answer import build_answer  # noqa: E402
from search.engine import Engine  # noqa: E402
from search.errors import SearchError  # noqa: E402
from search.types import Article  # noqa: E402

# Held-out-style questions written apart from dev.jsonl (paraphrases and other types), to
# check that the rules generalise. Not used for tuning weights.
EXTRA = [
    ("e01", "who got the winning goal", ["Lautaro Martinez", "Martinez"]),
    ("e02", "which player scored the equalizer", ["Fernandez"]),
    ("e03", "who opened the scoring", ["Gordon"]),
    ("e04", "in what minute did Gordon score", ["55"]),
    ("e05", "who will Argentina play in the final", ["Spain"]),
    ("e06", "who did Argentina beat", ["England"]),
    ("e07", "what was the score against Egypt", ["3-2", "2-0"]),
    ("e08", "who is the England goalkeeper", ["Pickford"]),
    ("e09", "which stadium will host the final", ["MetLife"]),
    ("e10", "where is the final", ["MetLife", "New Jersey"]),
    ("e11", "how old is Messi", ["39"]),
    ("e12", "how many World Cup assists does Messi have", ["12"]),
    ("e13", "how many World Cup goals has Messi scored", ["21"]),
    ("e14", "what did Kane say", ["gutted", "capitalize", "similar story"]),
    ("e15", "who crossed for Gordon's goal", ["Rogers"]),
    ("e16", "who will England face in the third-place play-off", ["France"]),
    ("e17", "where will the third-place play-off be played", ["Miami"]),
    ("e18", "which club does Fernandez play for", ["Chelsea"]),
    ("e19", "when did Lautaro Martinez come on", ["81st"]),
    ("e20", "who hit the post", ["Mac Allister"]),
    ("e21", "what did Lautaro Martinez say about his goal", ["emotional", "dreamed"]),
    ("e22", "why did England lose", ["passive", "defensive", "sit back", "hold on", "retreated", "deep"]),
    ("e23", "which celebrities were in the crowd", ["Beckham", "Jagger"]),
    ("e24", "when did Spain beat France", ["Tuesday"]),
    ("e25", "what share of possession did England have", ["12%"]),
    ("e26", "when did the equaliser come", ["85th", "86th"]),
]


def open_engine(path: str, rebuild: bool) -> Engine:
    p = Path(path)
    fresh = rebuild or not (p / "CURRENT").exists()
    if rebuild and p.exists():
        import shutil

        shutil.rmtree(p)
    try:
        e = Engine.open(p, create=True)
    except SearchError:  # built by an older version: rebuild
        import shutil

        shutil.rmtree(p)
        e = Engine.open(p, create=True)
        fresh = True
    if fresh:
        seeds = sorted((ROOT / "seeds").glob("*.txt"))
        e.add([Article(id=f.name, title="", text=f.read_text(encoding="utf-8")) for f in seeds])
    return e


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default="/tmp/ans-idx")
    ap.add_argument("--questions", nargs="*", default=["/work/shared/eval/dev.jsonl"])
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--extra", action="store_true", help="also run the built-in held-out-style questions")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    e = open_engine(args.index, args.rebuild)
    e.search("warm up", k=args.k, mode=args.mode)
    times: list[float] = []
    warm: list[float] = []
    sets = [
        (qf, [json.loads(x) for x in Path(qf).read_text(encoding="utf-8").splitlines() if x.strip()])
        for qf in args.questions
    ]
    if args.extra:
        sets.append(("extra", [{"id": i, "question": q, "answers": a} for i, q, a in EXTRA]))
    for qf, rows in sets:
        ok_n = 0
        for r in rows:
            hits = e.search(r["question"], k=args.k, mode=args.mode)
            t0 = time.perf_counter()
            a = build_answer(r["question"], hits, e)
            times.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            build_answer(r["question"], hits, e)  # again, with the per-article caches warm
            warm.append((time.perf_counter() - t0) * 1000)
            got = a.text if a.text else (a.sentences[0].text if a.sentences else None)
            ok = bool(got) and any(x.lower() in got.lower() for x in r.get("answers", []))
            ok_n += ok
            mark = "ok " if ok else "BAD"
            print(f"{mark} {r['id']:>4} {r['question']!r} -> {got!r} (support {a.support})")
            for c in a.conflicts:
                print(
                    f"        conflict: {c.text!r} support {c.support} [{', '.join(str(s.passage_rank) for s in c.sentences)}]"
                )
            if args.verbose or not ok:
                for s in a.sentences[:2]:
                    print(f"        [{s.passage_rank}] {s.text[:140]!r}")
                if not ok:
                    print(f"        want {r.get('answers')}")
        print(f"== {qf}: answer@1 {ok_n}/{len(rows)} = {ok_n / len(rows):.3f}")
    print(
        f"build_answer first call: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms; "
        f"warm: median {statistics.median(warm):.2f} ms, max {max(warm):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
