"""The benchmark's model stand-ins and its exact reference (see scripts/bench_corpus.py
for what ``--models`` means): the table of real sentence vectors and entities, the replay
embedder and tagger built from it, and brute-force top-k over the indexed vectors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from bench_corpus import bbc_sentences, read_jsonl

PREFIX = 16  # characters of a sentence that index the lookup table
_SPACE = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")


# ----------------------------------------------------------------------------- model stand-ins


def table_paths(work: Path) -> dict[str, Path]:
    return {
        "sentences": work / "bbc-sentences.json",
        "vectors": work / "bbc-sentence-vectors.npy",
        "entities": work / "bbc-sentence-entities-roles.json",  # spans with roles
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
    work.mkdir(parents=True, exist_ok=True)  # bench_build.py table --work W: W may be new
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        tick("encode BBC sentences (once)", done, len(texts))

    vecs = emb.encode(texts, progress=step)
    ents: list[list[tuple[int, int, str, str]]] = []
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

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[Any, ...]]]:
        out = []
        for t in texts:
            ents: list[tuple[Any, ...]] = []
            for at, i in self.table.spans(t):  # (start, end, label, role), as search.enrich.tag
                ents += [(at + s, at + e, *rest) for s, e, *rest in self.table.entities[i]]
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
