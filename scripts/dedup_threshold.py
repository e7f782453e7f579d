"""Measure MinHash similarities on real articles to justify the near-duplicate threshold.

    python scripts/dedup_threshold.py --data ../shared/data/bbcsport/bbcsport.jsonl

Reports: the similarity of exact duplicates, the highest similarity between distinct
articles, and the similarity of lightly edited copies (one sentence changed, one
added, a paragraph dropped) made from every article.
"""

from __future__ import annotations

import argparse
import json
import random
import re

import numpy as np

from search.dedup import THRESHOLD, narrow, signature


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/bbcsport/bbcsport.jsonl")
    args = ap.parse_args()
    docs = [json.loads(line) for line in open(args.data, encoding="utf-8")]
    texts = [d["title"] + "\n" + d["text"] for d in docs]
    sigs = np.stack([signature(t) for t in texts])
    n = len(texts)
    exact, distinct = [], []
    for i in range(n):
        sims = (sigs[i + 1 :] == sigs[i]).mean(axis=1)
        for j, s in zip(range(i + 1, n), sims):
            (exact if texts[i] == texts[j] else distinct).append(float(s))
    rng = random.Random(0)
    edited = []
    for t in texts:
        sents = re.split(r"(?<=[.!?])\s+", t)
        if len(sents) < 6:
            continue
        s = list(sents)
        k = rng.randrange(len(s))
        s[k] = "This sentence was rewritten by the copy desk for the syndicated version."
        s.insert(rng.randrange(len(s)), "Additional reporting by a news agency.")
        del s[rng.randrange(len(s))]
        edited.append(float((signature(" ".join(s)) == signature(t)).mean()))
    distinct_a = np.array(distinct)
    print(f"articles: {n}; exact-duplicate pairs: {len(exact)} (similarity min {min(exact):.3f})")
    print(
        f"distinct pairs: {len(distinct)}; max {distinct_a.max():.3f}; 99.99th pct {np.percentile(distinct_a, 99.99):.3f}; "
        f"pairs >= {THRESHOLD}: {(distinct_a >= THRESHOLD).sum()}"
    )
    # what a local index stores and compares: each minimum's low 16 bits (search.dedup.narrow)
    small = narrow(sigs)
    narrow_sims = []
    for i in range(n):
        narrow_sims += ((small[i + 1 :] == small[i]).mean(axis=1)).tolist()
    narrow_a = np.array(narrow_sims)
    full_a = np.array([s for i in range(n) for s in ((sigs[i + 1 :] == sigs[i]).mean(axis=1)).tolist()])
    flips = int(((full_a >= THRESHOLD) != (narrow_a >= THRESHOLD)).sum())
    print(
        f"16-bit minima: pairs whose similarity moved {(narrow_a != full_a).sum()} "
        f"(max {np.abs(narrow_a - full_a).max():.4f}); decisions at {THRESHOLD} that differ: {flips}"
    )
    e = np.array(edited)
    print(
        f"lightly edited copies: {len(e)}; min {e.min():.3f}; 1st pct {np.percentile(e, 1):.3f}; median {np.median(e):.3f}"
    )


if __name__ == "__main__":
    main()
