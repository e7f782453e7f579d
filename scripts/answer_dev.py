"""Dev harness for the answer module: build a seed index, run question files, show answers.

    python scripts/answer_dev.py [--index /tmp/ans-idx] [--questions FILE ...] [--extra] [--held-out] [--rebuild] [-v]
    python scripts/answer_dev.py --questions --bbc [--bbc-index /tmp/ans3]   # BBC set only

``--bbc`` runs BBC questions against an existing index holding the seeds plus the 265 BBC Sport
football articles (/work/shared/data/bbcsport/raw/football); it is never built here.

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
from search.engine import ANSWER_DEPTH, Engine  # noqa: E402
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

# Written after the answer module first met questions outside dev (wording unlike dev and
# EXTRA). ``None`` among the accepted answers means "no short answer" is right: nothing in
# the seeds states it (a question about someone no article names must not get the most
# talked-about player). With only ``None``, any short answer is wrong.
HELD_OUT = [
    ("h01", "who was the referee", [None]),
    ("h02", "who officiated the semi-final", [None]),
    ("h03", "who is Argentina's goalkeeper", ["Emiliano Martinez", None]),
    ("h04", "who did Argentina beat in the round of 16", ["Egypt"]),
    ("h05", "which team did Argentina knock out in the last 16", ["Egypt"]),
    ("h06", "who did Spain beat in the semi-final", ["France"]),
    ("h07", "who did Argentina beat in the final", [None]),
    ("h08", "who did England beat in the quarter-final", [None]),
    ("h09", "who is England's keeper", ["Pickford"]),
    ("h10", "who is the Spain coach", [None]),
    ("h11", "who was Argentina's captain", [None]),
    ("h12", "who captains England", ["Kane"]),
    ("h13", "who is Argentina's manager", ["Scaloni"]),
    ("h14", "who set up Fernandez's equaliser", ["Messi"]),
    ("h15", "who was booked", [None]),
    ("h16", "who scored England's goal", ["Gordon"]),
    ("h17", "who will Spain meet in the final", ["Argentina"]),
    ("h18", "who did England play in the semi-final", ["Argentina"]),
    ("h19", "what year did England win the World Cup", ["1966"]),
    ("h20", "which goalkeeper did Fernandez beat", ["Pickford"]),
    ("h21", "who gave England the lead", ["Gordon"]),
    ("h22", "what minute did Gordon score", ["55"]),
    ("h23", "who headed the winner", ["Lautaro Martinez"]),
    ("h24", "who will England play in the third-place match", ["France"]),
    ("h25", "who was sent off", [None]),
    # Written once h01-h25 passed, to check the rules on wording they were not built on.
    # First run: 10/14 (h32, h35, h38, h39 wrong; h35 was wrong before these rules too).
    ("h26", "who was England's manager", ["Tuchel"]),
    ("h27", "who is the Argentina skipper", [None]),
    ("h28", "which defender was beaten by Gordon", ["Molina"]),
    ("h29", "who did Argentina defeat in the semi-final", ["England"]),
    ("h30", "who did Argentina play against in the round of 16", ["Egypt"]),
    ("h31", "who was the fourth official", [None]),
    ("h32", "who scored for Argentina in the final", [None]),
    ("h33", "who is Spain's goalkeeper", [None]),
    ("h34", "who was the man of the match", [None]),
    ("h35", "who crossed for the winner", ["Messi"]),
    ("h36", "who did Argentina beat in 2022", [None]),
    ("h37", "who coaches Argentina", ["Scaloni"]),
    ("h38", "who was Argentina's goalscorer in the 85th minute", ["Fernandez"]),
    ("h39", "who did England face in the semi-final", ["Argentina"]),
]


# Written over the BBC Sport football articles (not the seeds), read by hand; ids are the files.
# Appointments, sackings, signings, scores, places, dates, counts and quotes; b16-b18 are
# not answered by any article. First run, before the appointment/sacking rules: 10/18 (b01,
# b02 "Stuart Gray" from "Wolves caretaker boss Stuart Gray"; b05, b07, b14, b15, b16, b18).
# After: 17/18 (b07 still picks "Leicester" from a cup-draw sentence about "the winners").
BBC = [
    ("b01", "who did Wolves appoint as manager", ["Hoddle"]),  # 132
    ("b02", "who will be the new Wolves manager", ["Hoddle"]),  # 132
    ("b03", "who will be the new Southampton manager", ["Redknapp"]),  # 139
    ("b04", "who was sacked as Valencia coach", ["Ranieri"]),  # 067
    ("b05", "who will take over as the new Valencia coach", ["Lopez"]),  # 067
    ("b06", "who did Chelsea sack", ["Mutu"]),  # 105
    ("b07", "who scored Newcastle's winner against Bolton", ["Dyer"]),  # 011
    ("b08", "what was the score between Morocco and Kenya", ["5-1"]),  # 265
    ("b09", "who did Bolton sign from Roma", ["Candela"]),  # 091
    ("b10", "who scored a hat-trick for Morocco", ["Zairi"]),  # 265
    ("b11", "where did Morocco play Kenya", ["Rabat"]),  # 265
    ("b12", "how many goals has Leroy Lita scored this season", ["13"]),  # 130
    ("b13", "when will Redknapp be unveiled", ["Wednesday", "1500 GMT"]),  # 139
    ("b14", "what did Santini say about Tottenham", ["memorable", "deep regret"]),  # 108
    ("b15", "who did the Scottish FA appoint as caretaker boss", ["Burns"]),  # 114
    ("b16", "who did Celtic appoint as manager", [None]),
    ("b17", "who was the referee for Newcastle against Bolton", [None]),
    ("b18", "who did Liverpool sack as manager", [None]),
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
    ap.add_argument(
        "--k", type=int, default=ANSWER_DEPTH, help="passages read (Engine.ask reads ANSWER_DEPTH)"
    )
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--extra", action="store_true", help="also run the built-in held-out-style questions")
    ap.add_argument("--held-out", action="store_true", help="also run HELD_OUT (some expect no short answer)")
    ap.add_argument("--bbc", action="store_true", help="also run BBC against --bbc-index")
    ap.add_argument(
        "--bbc-index", default="/tmp/ans3", help="seeds + BBC Sport football index (not built here)"
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    engines: dict[str, Engine] = {}

    def engine_for(name: str) -> Engine:
        path = args.bbc_index if name == "bbc" else args.index
        if path not in engines:
            if name == "bbc":
                if not (Path(path) / "CURRENT").exists():
                    raise SystemExit(f"--bbc needs an existing seeds + BBC index at {path}")
                engines[path] = Engine.open(Path(path))
            else:
                engines[path] = open_engine(path, args.rebuild)
            engines[path].search("warm up", k=args.k, mode=args.mode)
        return engines[path]

    times: list[float] = []
    warm: list[float] = []
    sets = [
        (qf, [json.loads(x) for x in Path(qf).read_text(encoding="utf-8").splitlines() if x.strip()])
        for qf in args.questions
    ]
    if args.extra:
        sets.append(("extra", [{"id": i, "question": q, "answers": a} for i, q, a in EXTRA]))
    if args.held_out:
        sets.append(("held-out", [{"id": i, "question": q, "answers": a} for i, q, a in HELD_OUT]))
    if args.bbc:
        sets.append(("bbc", [{"id": i, "question": q, "answers": a} for i, q, a in BBC]))
    for qf, rows in sets:
        e = engine_for(qf)
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
            want = r.get("answers", [])
            if None in want:  # "no short answer" is right; a short answer must be an accepted one
                ok = a.text is None or any(x is not None and x.lower() in a.text.lower() for x in want)
            else:
                ok = bool(got) and any(x.lower() in got.lower() for x in want)
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
    if not times:
        return 0
    print(
        f"build_answer first call: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms; "
        f"warm: median {statistics.median(warm):.2f} ms, max {max(warm):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
