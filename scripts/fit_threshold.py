"""Fit the confidence a short answer needs on corpora that are not football (confidence.json's
``threshold_other``).

    python scripts/fit_threshold.py INDEX:QUESTIONS.jsonl [INDEX:QUESTIONS.jsonl ...] [--precision 0.9] [--dry-run]

The answer models are fitted on football questions (scripts/fit_answer.py), and their
threshold is the lowest confidence whose out-of-fold short answers keep precision 0.9
there. On a corpus that is not football (search.vocab.is_football) the same confidence is
right less often: the models learned football's reports. So that corpus gets its own
threshold, chosen the same way (the lowest confidence at which the short answers given keep
the asked precision, a question no article answers counting as wrong whenever it gets one;
the median over bootstrap resamples of the questions) on question sets over other sports.
Run it after fit_answer.py, on indexes of other sports only, never on a set that is to
measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_answer import _threshold  # noqa: E402

from search.answer import decide  # noqa: E402
from search.answer.confidence import confidence  # noqa: E402
from search.engine import ANSWER_DEPTH, Engine  # noqa: E402
from search.evaluate import normalise, read_questions  # noqa: E402
from search.vocab import is_football  # noqa: E402

HERE = Path(__file__).resolve().parent.parent / "search" / "answer"


def collect(pairs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each question's confidence in its first value, and whether that value is right."""
    conf: list[float] = []
    right: list[bool] = []
    for pair in pairs:
        index, path = pair.split(":", 1)
        with Engine.open(index) as e:
            if is_football(e._backend.reader().idf):
                sys.exit(f"{index} is a football corpus: fit this threshold on other sports only")
            for q in read_questions(path):
                hits, vec = e._search(q.question, ANSWER_DEPTH, "hybrid", None)
                d = decide(q.question, hits, e, vec)
                if not d.clusters or d.features is None:
                    continue  # no value to give: never a short answer
                gold = [normalise(a) for a in q.answers]
                conf.append(confidence(d.features))
                right.append(any(g in normalise(d.clusters[0].text) for g in gold))
        print(f"{pair}: {len(conf)} questions with a value so far", file=sys.stderr)
    return np.array(conf), np.array(right)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="+", help="INDEX:QUESTIONS.jsonl (other sports)")
    ap.add_argument("--precision", type=float, default=0.9)
    ap.add_argument("--min-shown", type=int, default=10)
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    c, y = collect(args.pairs)
    rng = np.random.default_rng(0)
    draws = [rng.integers(0, len(c), len(c)) for _ in range(args.boot)]
    found = [_threshold(c[i], y[i], args) for i in draws]  # fit_answer.py's rule
    threshold = float(np.median(found)) if found else _threshold(c, y, args)
    shown = c >= threshold
    print(
        f"{len(c)} questions with a value; threshold {threshold:.4f}: {int(shown.sum())} short answers, "
        f"{int((shown & y).sum())} right"
    )
    if args.dry_run:
        return
    path = HERE / "confidence.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["threshold_other"] = round(threshold, 4)
    data["other_fitted_on"] = sorted({Path(p.split(":", 1)[1]).stem for p in args.pairs})
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote threshold_other to {path}")


if __name__ == "__main__":
    main()
