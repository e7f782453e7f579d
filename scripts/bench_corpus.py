"""The benchmark's corpus, questions and model stand-ins.

Corpus: synthetic articles recombined from real BBC Sport sentences. Each article takes
3-9 paragraphs of 1-4 sentences drawn across articles (mostly from its own category),
a real or a spliced headline, one of several outlets, a date in 2004-2005 and its
category, so vocabulary, posting lists and vector neighbourhoods are those of real text,
not replayed copies. Generation stops when the chunked passages reach the asked count
(passages, as the engine chunks them: the old bench counted sentence texts).

Models (``--models``):
  real    the ONNX MiniLM encoder and spaCy NER run on every passage and sentence (slow);
  replay  no model runs during the build: every BBC sentence was encoded and tagged once by
          the real models (cached in the work dir), a passage's vector is the normalised
          mean of its sentences' real vectors and its entities are its sentences' own;
          questions are encoded by the real model, in the same vector space;
  hash    the tests' deterministic hash embedder, no NER, no model at all (fast checks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

MODELS = ("replay", "real", "hash")
SOURCES = ("BBC Sport", "AFP", "Reuters", "PA Media", "The Guardian", "ESPN", "Sky Sports", "The Times")
# Sentences from another category than the article's own, so topics mix a little.
CROSS_CATEGORY = 0.15
PREFIX = 16  # characters of a sentence that index the lookup table
_SPACE = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")


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


def articles(path: Path) -> list[Any]:
    """The corpus as the engine's Article objects (every extra field kept as metadata)."""
    from search.types import Article

    core = {"id", "title", "text", "source", "url", "published"}
    out = []
    for r in read_jsonl(path):
        out.append(
            Article(
                id=str(r["id"]),
                title=r.get("title") or "",
                text=r["text"],
                source=r.get("source") or "",
                url=r.get("url"),
                published=r.get("published"),
                metadata={k: v for k, v in r.items() if k not in core},
            )
        )
    return out


# ----------------------------------------------------------------------------- model stand-ins


def table_paths(work: Path) -> dict[str, Path]:
    return {
        "sentences": work / "bbc-sentences.json",
        "vectors": work / "bbc-sentence-vectors.npy",
        "entities": work / "bbc-sentence-entities.json",
    }


def make_table(records: list[dict[str, Any]], work: Path, tick: Callable[[str, int, int], None]) -> None:
    """Encode and tag every BBC sentence and headline once with the real models (cached)."""
    from search.embed import get_embedder
    from search.enrich import tag

    paths = table_paths(work)
    sents, _ = bbc_sentences(records)
    texts = sents + sorted({r["title"] for r in records} - set(sents))
    if paths["sentences"].exists() and json.loads(paths["sentences"].read_text()) == texts:
        if paths["vectors"].exists() and paths["entities"].exists():
            return
    emb = get_embedder("auto")
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        tick("encode BBC sentences (once)", done, len(texts))

    vecs = emb.encode(texts, progress=step)
    ents: list[list[tuple[int, int, str]]] = []
    for b in range(0, len(texts), 500):
        ents += tag(texts[b : b + 500])
        tick("tag BBC sentences (once)", min(b + 500, len(texts)), len(texts))
    for p, write in (
        (paths["vectors"], lambda t: np.save(t, vecs)),
        (paths["entities"], lambda t: t.write_text(json.dumps(ents))),
        (paths["sentences"], lambda t: t.write_text(json.dumps(texts))),
    ):
        tmp = p.with_name(p.name + ".tmp.npy" if p.suffix == ".npy" else p.name + ".tmp")
        write(tmp)
        tmp.replace(p)


class SentenceTable:
    """Known sentences found inside any text by their first characters, then an exact match."""

    def __init__(self, work: Path) -> None:
        paths = table_paths(work)
        self.texts: list[str] = json.loads(paths["sentences"].read_text())
        self.vectors = np.load(paths["vectors"])
        self.entities: list[list[list[Any]]] = json.loads(paths["entities"].read_text())
        self.prefix: dict[str, list[int]] = {}
        for i, s in enumerate(self.texts):
            if len(s) >= PREFIX:
                self.prefix.setdefault(s[:PREFIX], []).append(i)
        for ids in self.prefix.values():
            ids.sort(key=lambda i: -len(self.texts[i]))  # the longest match first
        self.found = self.missed = 0

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(offset, sentence index) of every known sentence in ``text``."""
        out: list[tuple[int, int]] = []
        i, n = 0, len(text)
        while i < n:
            m = _NON_SPACE.search(text, i)
            if m is None:
                break
            i = m.start()
            hit = None
            for idx in self.prefix.get(text[i : i + PREFIX], ()):
                if text.startswith(self.texts[idx], i):
                    hit = idx
                    break
            if hit is not None:
                out.append((i, hit))
                i += len(self.texts[hit])
            else:
                m = _SPACE.search(text, i)
                i = m.end() if m else n
        return out


class ReplayEmbedder:
    """Passage vectors from the real vectors of the sentences they hold (see the module doc).

    Claims the real model's id, so the index opens with the real model for questions.
    A text with no known sentence gets the hash embedder's vector (counted in ``missed``).
    """

    backend = "replay"

    def __init__(self, table: SentenceTable) -> None:
        from search.embed import DIM, MODEL_ID, HashEmbedder

        self.model_id, self.dim = MODEL_ID, DIM
        self.table = table
        self.fallback = HashEmbedder()

    def _vector(self, text: str) -> np.ndarray:
        idx = [i for _, i in self.table.spans(text)]
        if not idx:
            self.table.missed += 1
            return self.fallback.encode_query(text)
        self.table.found += 1
        v = self.table.vectors[idx].sum(axis=0)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for b in range(0, len(texts), batch_size):
            for j, t in enumerate(texts[b : b + batch_size], b):
                out[j] = self._vector(t)
            if progress is not None:
                progress(min(batch_size, len(texts) - b))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def info(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "backend": self.backend, "dim": self.dim}


class ReplayTagger:
    """Each article's entities: those the real NER found in each of its known sentences."""

    def __init__(self, table: SentenceTable) -> None:
        self.table = table

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        out = []
        for t in texts:
            ents = []
            for at, i in self.table.spans(t):
                ents += [(at + s, at + e, label) for s, e, label in self.table.entities[i]]
            out.append(ents)
        return out


def no_tagger(texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    return [[] for _ in texts]


def build_models(models: str, work: Path) -> tuple[Any, Any]:
    """(embedder, tagger) for a build: see the module doc."""
    if models == "real":
        from search.embed import get_embedder
        from search.enrich import tag

        return get_embedder("auto"), tag
    if models == "hash":
        from search.embed import HashEmbedder

        return HashEmbedder(), no_tagger
    table = SentenceTable(work)
    return ReplayEmbedder(table), ReplayTagger(table)


def query_embedder(models: str) -> Any:
    """What encodes questions when serving: the real model, or the hash embedder."""
    from search.embed import get_embedder

    return get_embedder("hash" if models == "hash" else "auto")


# ----------------------------------------------------------------------------- exact reference

EXACT_BATCH = 20_000


def exact_top(
    models: str,
    work: Path,
    passages: Path,
    qs: list[str],
    k: int = 10,
    max_hash: int = 20_000,
    tick: Callable[[int, int], None] | None = None,
) -> list[list[int]] | None:
    """Exact top-``k`` passage rows (in the passages file's order) for each question, by
    brute force over the same vectors the systems indexed: the reference for the vector
    stage's recall. None where recomputing every vector would cost a model run (real) or
    too long (the hash embedder beyond ``max_hash`` passages)."""
    rows = sum(1 for _ in open(passages, encoding="utf-8"))
    if models == "real" or (models == "hash" and rows > max_hash):
        return None
    emb, _ = build_models(models, work)
    qenc = query_embedder(models)
    q = np.stack([qenc.encode_query(x) for x in qs]).astype(np.float32)
    best_s = np.full((len(qs), k), -np.inf, dtype=np.float32)
    best_r = np.zeros((len(qs), k), dtype=np.int64)
    at = 0
    batch: list[str] = []

    def flush() -> None:
        nonlocal at, best_s, best_r
        s = q @ emb.encode(batch).T
        r = np.broadcast_to(np.arange(at, at + len(batch)), s.shape)
        all_s = np.concatenate([best_s, s], axis=1)
        all_r = np.concatenate([best_r, r], axis=1)
        top = np.argsort(-all_s, axis=1, kind="stable")[:, :k]
        best_s = np.take_along_axis(all_s, top, axis=1)
        best_r = np.take_along_axis(all_r, top, axis=1)
        at += len(batch)
        batch.clear()
        if tick is not None:
            tick(at, rows)

    for p in read_jsonl(passages):
        batch.append(p["dense"])
        if len(batch) == EXACT_BATCH:
            flush()
    if batch:
        flush()
    return [list(map(int, r)) for r in best_r]


def pid_rows(passages: Path) -> dict[str, int]:
    return {p["pid"]: i for i, p in enumerate(read_jsonl(passages))}
