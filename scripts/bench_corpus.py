"""The benchmark's corpus, questions and model stand-ins.

Corpus: synthetic articles recombined from real BBC Sport sentences. Each article takes
3-9 paragraphs of 1-4 sentences drawn across articles (mostly from its own category),
a real or a spliced headline, one of several outlets, a date in 2004-2005 and its
category, so vocabulary, posting lists and vector neighbourhoods are those of real text,
not replayed copies. Generation stops when the chunked passages reach the asked count
(passages, as the engine chunks them: the old bench counted sentence texts).

Models (``--models``, made in scripts/bench_models.py):
  real    the ONNX MiniLM encoder and spaCy NER run on every passage and sentence (slow);
  replay  no model runs during the build: every BBC sentence was encoded and tagged once by
          the real models (cached in the work dir), a passage's vector is the normalised
          mean of its sentences' real vectors and its entities are its sentences' own;
          questions are encoded by the real model, in the same vector space;
  hash    the tests' deterministic hash embedder, no NER, no model at all (fast checks).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

MODELS = ("replay", "real", "hash")
SOURCES = ("BBC Sport", "AFP", "Reuters", "PA Media", "The Guardian", "ESPN", "Sky Sports", "The Times")
# Sentences from another category than the article's own, so topics mix a little.
CROSS_CATEGORY = 0.15


def bbc_records(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def bbc_sentences(records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Every sentence of the BBC articles (the engine's own segmenter), and its category."""
    from search.chunk import segment

    sents: list[str] = []
    cats: list[str] = []
    seen: set[str] = set()
    for r in records:
        for u in segment(r["text"]):
            s = r["text"][u.start : u.end]
            if u.heading or s in seen or "\n" in s:
                continue
            seen.add(s)
            sents.append(s)
            cats.append(r.get("category", ""))
    return sents, cats


def questions(shared: Path) -> list[str]:
    """The dev questions and the BBC football headlines (290 with the shared data)."""
    out: list[str] = []
    dev = shared / "eval" / "dev.jsonl"
    if dev.exists():
        out += [json.loads(line)["question"] for line in open(dev, encoding="utf-8") if line.strip()]
    foot = shared / "data" / "bbcsport" / "football.jsonl"
    out += [r["title"] for r in bbc_records(foot)]
    if not out:
        raise SystemExit(f"no questions in {shared}: give --data the shared/ folder")
    return out


# ----------------------------------------------------------------------------- synthetic corpus


def synthetic(records: list[dict[str, Any]], seed: int = 17) -> Iterator[dict[str, Any]]:
    """An endless stream of varied articles recombined from the BBC Sport sentences."""
    rng = np.random.default_rng(seed)
    sents, cats = bbc_sentences(records)
    by_cat: dict[str, list[int]] = {}
    for i, c in enumerate(cats):
        by_cat.setdefault(c, []).append(i)
    titles: dict[str, list[str]] = {}
    for r in records:
        titles.setdefault(r.get("category", ""), []).append(r["title"])
    names = sorted(by_cat)
    weights = np.array([len(by_cat[c]) for c in names], dtype=float)
    weights /= weights.sum()
    start = datetime(2004, 1, 1, tzinfo=timezone.utc)
    n = 0
    while True:
        cat = names[int(rng.choice(len(names), p=weights))]
        own = by_cat[cat]
        paragraphs = []
        for _ in range(int(rng.integers(3, 10))):
            picked = []
            for _ in range(int(rng.integers(1, 5))):
                pool = own if rng.random() > CROSS_CATEGORY else range(len(sents))
                picked.append(sents[pool[int(rng.integers(len(pool)))]])
            paragraphs.append(" ".join(picked))
        ts = titles[cat]
        a, b = ts[int(rng.integers(len(ts)))], ts[int(rng.integers(len(ts)))]
        if rng.random() < 0.5:  # a spliced headline: the first half of one, the second of another
            wa, wb = a.split(), b.split()
            title = " ".join(wa[: max(1, len(wa) // 2)] + wb[len(wb) // 2 :])
        else:
            title = a
        when = start + timedelta(minutes=int(rng.integers(0, 730 * 24 * 60)))
        yield {
            "id": f"syn/{cat}/{n:07d}",
            "title": title,
            "text": "\n\n".join(paragraphs),
            "source": SOURCES[int(rng.integers(len(SOURCES)))],
            "published": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "category": cat,
        }
        n += 1


def passages_of(rec: dict[str, Any]) -> list[dict[str, str]]:
    """The passages the engine makes of a record, with the text its encoder sees."""
    from search import engine as E
    from search.chunk import chunk
    from search.text import headline

    head = headline(rec.get("title") or "", rec["text"])
    return [
        {"pid": p.id, "text": p.text, "dense": E.dense_text(head, p.text)}
        for p in chunk(rec["id"], rec["text"], target_chars=E.CHUNK_TARGET, overlap=E.CHUNK_OVERLAP)
    ]


def write_corpus(
    records: Iterator[dict[str, Any]],
    corpus: Path | None,
    passages: Path,
    limit: int | None,
    tick: Callable[[int], None],
) -> tuple[int, int]:
    """Write the articles (when ``corpus``) and their passages, up to ``limit`` passages.

    Returns (articles, passages). ``tick(passages so far)`` after each article.
    """
    n_art = n_pass = 0
    fa = open(corpus, "w", encoding="utf-8") if corpus is not None else None
    try:
        with open(passages, "w", encoding="utf-8") as fp:
            for rec in records:
                if limit is not None and n_pass >= limit:
                    break
                ps = passages_of(rec)
                if fa is not None:
                    fa.write(json.dumps(rec, ensure_ascii=False) + "\n")
                for p in ps:
                    fp.write(json.dumps(p, ensure_ascii=False) + "\n")
                n_art += 1
                n_pass += len(ps)
                tick(n_pass)
    finally:
        if fa is not None:
            fa.close()
    return n_art, n_pass


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as e:
                    raise SystemExit(f"{path}:{i}: not a JSON record ({e})") from None


class Articles:
    """The corpus as the engine's Article objects (every extra field kept as metadata), read
    from the file as they are taken, one pass per iteration: never all held at once, so a
    build measures the engine's write, not the corpus in memory. Knows its length
    (``__length_hint__``, a count of lines) for the engine's batch size and ETA."""

    CORE = ("id", "title", "text", "source", "url", "published")

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as f:
            self.count = sum(1 for line in f if line.strip())

    def __length_hint__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Any]:
        from search.types import Article

        for r in read_jsonl(self.path):
            yield Article(
                id=str(r["id"]),
                title=r.get("title") or "",
                text=r["text"],
                source=r.get("source") or "",
                url=r.get("url"),
                published=r.get("published"),
                metadata={k: v for k, v in r.items() if k not in self.CORE},
            )
