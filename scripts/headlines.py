"""An article's own headline, asked as a question, should find that article first.

    python scripts/headlines.py --index /tmp/bbc-index [--build seeds ../shared/data/bbcsport/raw/football]
        [--offset 0] [--every 5] [--n 50] [--json]

The index holds the seeds and the BBC football reports. The headlines asked are those of
every ``--every``-th football article (sorted by file name) from ``--offset`` on, the first
``--n`` of them; articles that are syndicated copies of another (exact or near duplicates,
as the engine marks them) and the articles they copy are skipped. Offset 0 is the
reporting set; fit on another offset (1 to 4), never on offset 0. A hit counts when the
first result is the article or a copy collapsed into it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from search.engine import Engine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--build", nargs="*", help="(re)build the index from these paths first")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--modes", default="hybrid,bm25,dense")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    if args.build:
        e = Engine.open(args.index, create=True)
        e.index(args.build)
    else:
        e = Engine.open(args.index)
    docs = e.documents()
    copied = {d.duplicate_of for d in docs if d.duplicate_of}
    football = sorted(
        (
            d
            for d in docs
            if "/football/" in (d.path or "") and not d.duplicate_of and d.id not in copied and d.title
        ),
        key=lambda d: d.path or d.id,
    )
    chosen = football[args.offset :: args.every][: args.n]
    out: dict[str, object] = {"n": len(chosen), "offset": args.offset, "every": args.every}
    for mode in args.modes.split(","):
        ok = 0
        misses = []
        for d in chosen:
            hits = e.search(d.title, k=1, mode=mode)
            top = hits[0] if hits else None
            if top is not None and (top.passage.doc_id == d.id or d.id in top.duplicates):
                ok += 1
            else:
                misses.append(d.id)
        out[mode] = ok
        out[f"{mode}_misses"] = misses
    e.close()
    if args.json:
        print(json.dumps(out))
        return
    print(f"{out['n']} headlines (every {args.every}th football article from {args.offset}):")
    for mode in args.modes.split(","):
        print(f"  {mode:7s} {out[mode]}/{out['n']} first   misses: {' '.join(out[f'{mode}_misses'])}")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
