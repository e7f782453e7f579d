"""The write path: articles stream in, go through chunking, NER and the encoder in batches,
and reach the index as each batch is ready (#17: a build that streams).

    read → chunk + sentences + NER (this thread) → encode (a second thread) → dedup + write

The encoder runs on its own thread (ONNX releases the GIL), so while it encodes batch
*i* this thread tags batch *i + 1* and hands batch *i - 1* to the backend (whoosh and the
segment files): the model's time hides the rest, and the second core is used. Memory
holds a few batches of articles and the compact per-document state of the write (ids,
signatures, the document table), never the corpus: a million passages are written as
segments of ``BATCH_ARTICLES`` articles and merged at the end.

Copies cost no model time (:mod:`search.memo`): each distinct text is tagged once per
batch and encoded once per batch and, while the write's memo keeps its vector, per write.

Stage times (:class:`Clock`): ``encode`` and ``ner`` are the time each model ran;
``rest`` is the wall time during which no model was running, the share of the build
that is not the models'.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .backends import WriteBatch
from .errors import IngestError
from .memo import VectorMemo, distinct
from .types import Article, Passage

if TYPE_CHECKING:
    from .engine import Engine
    from .writing import WriteReport

#: Articles per batch: big enough that the encoder's batches stay full and a segment is
#: worth writing (~2,300 passages of BBC Sport), small enough that memory stays flat.
BATCH_ARTICLES = 512
#: A small corpus is cut into about this many batches (of at least ``MIN_BATCH_ARTICLES``):
#: the encoder then hides all but the last batch's whoosh work and the first batch's chunking.
PIPELINE_BATCHES = 16
MIN_BATCH_ARTICLES = 32

Progress = Callable[[str, int, int], None]


class Clock:
    """When each model ran, so the rest of the wall time can be told apart."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def busy(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            with self._lock:
                self.spans.setdefault(stage, []).append((t, time.perf_counter()))

    def totals(self) -> dict[str, float]:
        return {k: sum(b - a for a, b in v) for k, v in self.spans.items()}

    def covered(self) -> float:
        """Seconds during which any model ran (overlaps counted once)."""
        spans = sorted(s for v in self.spans.values() for s in v)
        total, end = 0.0, float("-inf")
        for a, b in spans:
            if b <= end:
                continue
            total += b - max(a, end)
            end = b
        return total


@dataclass
class Prepared:
    """One batch between the stages."""

    articles: list[Article]
    passages: list[list[Passage]] = field(default_factory=list)
    sentences: list[list[list[tuple[int, int]]]] = field(default_factory=list)
    vectors: np.ndarray | None = None
    embedding: dict[str, Any] = field(default_factory=dict)
    entities: dict[str, Any] = field(default_factory=dict)  # how the entities were tagged (enrich.info())


def chunk_and_tag(articles: list[Article], tagger: Any, clock: Clock) -> Prepared:
    """Passages, sentence spans and entities of a batch (this thread: pure Python and spaCy)."""
    from .chunk import chunk, segment
    from .engine import CHUNK_OVERLAP, CHUNK_TARGET
    from .enrich import check_spans

    prep = Prepared(articles)
    for a in articles:
        segmented = segment(a.text)
        ps = chunk(a.id, a.text, target_chars=CHUNK_TARGET, overlap=CHUNK_OVERLAP, units=segmented)
        prep.passages.append(ps)
        # Sentence spans are stored with each passage (and the article) so the
        # query-time reranker and the answer stage never re-split text.
        units = [(u.start, u.end) for u in segmented if not u.heading]
        a.sentences = units
        prep.sentences.append([[(s, e) for s, e in units if s >= p.start and e <= p.end] for p in ps])
    # Each distinct text is tagged once (syndicated copies): spans are in the article's own
    # offsets, so a copy's are the same. (start, end, label) from any tagger, and a role
    # from search.enrich's: checked (ValueError) before anything of the batch is stored.
    firsts, where = distinct([a.text for a in articles])
    texts, ids = [articles[i].text for i in firsts], [articles[i].id for i in firsts]
    with clock.busy("ner"):
        tagged = check_spans(texts, tagger(texts), ids)
    for a, j in zip(articles, where):
        ents, roles = tagged[j]
        a.entities, a.roles = list(ents), list(roles)  # each copy its own lists
    return prep


def encode(
    embedder: Any,
    prep: Prepared,
    clock: Clock,
    tick: Callable[[int], None] | None,
    memo: VectorMemo | None = None,
) -> Prepared:
    """The batch's passage and sentence vectors (the encoder thread), each distinct text
    encoded once in the batch and not again while ``memo`` (one per write) keeps it."""
    from .engine import dense_text
    from .text import headline

    memo = memo or VectorMemo()
    arts = prep.articles
    texts = [dense_text(headline(a.title, a.text), p.text) for a, ps in zip(arts, prep.passages) for p in ps]
    if not texts:
        prep.vectors = np.zeros((0, 0), np.float32)
        return prep
    prep.vectors = memo.encode(embedder, texts, clock, tick)
    info = getattr(embedder, "info", None)
    prep.embedding = dict(info()) if callable(info) else {}
    # Each sentence is encoded too, so the answer stage can tell which sentence states the
    # asked fact in other words ("rose to head home" for "scored the winner") from vectors
    # stored now, with no model at query time.
    sent_texts = [a.text[s:e] for a in arts for s, e in a.sentences]
    sv = memo.encode(embedder, sent_texts, clock).astype(np.float16) if sent_texts else None
    at = 0
    for a in arts:
        n = len(a.sentences)
        a.sentence_vectors = sv[at : at + n] if sv is not None else None
        at += n
    return prep


def to_batch(prep: Prepared) -> WriteBatch:
    batch = WriteBatch(embedding=prep.embedding, entities=prep.entities)
    vectors = prep.vectors if prep.vectors is not None else np.zeros((0, 0), np.float32)
    at = 0
    for a, ps, ss in zip(prep.articles, prep.passages, prep.sentences):
        batch.articles.append(a)
        batch.passages.append(ps)
        batch.sentences.append(ss)
        batch.vectors.append(vectors[at : at + len(ps)])
        batch.duplicate_of.append(None)
        batch.minhash.append("")
        at += len(ps)
    return batch


class Duplicates:
    """Marks each new article that copies a story already indexed or earlier in the write."""

    def __init__(self, backend: Any, reset: bool) -> None:
        from . import dedup
        from .dedup_index import BandIndex

        self.index = BandIndex()
        if not reset:
            # A stored story with the id of a new one is skipped by id when compared.
            ids, groups, sigs = _stored_signatures(backend)
            if ids and sigs.shape[1]:
                self.index.hold(ids, dedup.narrow(sigs), groups)

    def mark(self, batch: WriteBatch, report: WriteReport) -> None:
        from . import dedup

        if not batch.articles:
            return
        sigs = dedup.signatures([a.text for a in batch.articles])
        found = self.index.assign([a.id for a in batch.articles], dedup.narrow(sigs))
        for i, (a, (group, _)) in enumerate(zip(batch.articles, found)):
            batch.minhash[i] = dedup.encode(sigs[i])
            batch.duplicate_of[i] = group
            if group:
                report.duplicates[a.id] = group


def _stored_signatures(backend: Any) -> tuple[list[str], list[str], np.ndarray]:
    fast = getattr(backend, "signature_arrays", None)
    if callable(fast):
        return fast()  # type: ignore[no-any-return]
    rows = [(d, g or d, s) for d, g, s in backend.signatures() if len(s)]
    if not rows:
        return [], [], np.zeros((0, 128), np.uint32)
    return [r[0] for r in rows], [r[1] for r in rows], np.stack([r[2] for r in rows])


class CollectingSink:
    """For a backend that writes one batch at a time: every batch joined into one write."""

    def __init__(self, backend: Any, reset: bool) -> None:
        self.backend = backend
        self.batch = WriteBatch(reset=reset)

    def add(self, batch: WriteBatch) -> None:
        b = self.batch
        for name in ("articles", "passages", "vectors", "duplicate_of", "minhash", "sentences"):
            getattr(b, name).extend(getattr(batch, name))
        b.embedding = batch.embedding or b.embedding
        b.entities = batch.entities or b.entities

    def finish(self, sources: list[str], write: bool) -> None:
        self.batch.sources = sources
        if write:
            self.backend.write(self.batch)

    def abort(self) -> None:
        self.batch = WriteBatch()


def estimate_articles(paths: Sequence[Path]) -> int:
    """About how many articles ``paths`` hold (JSONL lines, other files one each): for the ETA."""
    from .ingest import SUPPORTED_EXTENSIONS

    def count(f: Path) -> int:
        if f.suffix.lower() != ".jsonl":
            return 1
        n = 0
        try:
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    n += chunk.count(b"\n")
        except OSError:
            return 0
        return max(n, 1)

    total = 0
    for p in paths:
        if p.is_dir():
            for dirpath, dirnames, files in os.walk(p):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                total += sum(
                    count(Path(dirpath, f))
                    for f in files
                    if not f.startswith(".") and Path(f).suffix.lower() in SUPPORTED_EXTENSIONS
                )
        elif p.is_file():
            total += count(p)
    return total


def batches(items: Iterable[Article], size: int, grow: bool = False) -> Iterator[list[Article]]:
    """``items`` in lists of ``size``; with ``grow`` (a stream of unknown length) the first
    is ``MIN_BATCH_ARTICLES`` and each next one twice the last, up to ``size``, so a short
    stream is still cut into a few batches for the encoder to overlap, a long one into full
    batches."""
    step = min(size, MIN_BATCH_ARTICLES) if grow else size
    out: list[Article] = []
    for a in items:
        out.append(a)
        if len(out) >= step:
            yield out
            out = []
            step = min(size, step * 2)
    if out:
        yield out


def run(
    engine: Engine,
    articles: Iterable[Article],
    sink: Any,
    report: WriteReport,
    progress: Progress | None,
    expected: int | None,
    dups: Duplicates,
    clock: Clock,
) -> None:
    """Stream ``articles`` through the stages into ``sink`` (see the module's docstring).

    ``expected`` is about how many articles come (for the batch size and the progress
    totals), or None when that is not known: batches then grow to ``BATCH_ARTICLES``."""
    tagger = engine._tagger
    tagged: dict[str, Any] = {}
    if tagger is None:
        from .enrich import info
        from .enrich import tag as tagger

        tagged = info()
    done_articles = 0
    done_passages = 0
    lock = threading.Lock()

    def tick(n: int) -> None:
        nonlocal done_passages
        with lock:
            done_passages += n
            per = done_passages / max(done_articles, 1)
            total = max(done_passages, int(per * max(expected or 0, done_articles)))
        if progress:
            progress("encode", done_passages, total)

    def write(fut: Future[Prepared]) -> None:
        prep = fut.result()
        batch = to_batch(prep)
        dups.mark(batch, report)
        report.passages += sum(len(p) for p in batch.passages)
        sink.add(batch)

    # The model's own threads release the GIL (onnxruntime, torch, Ray's remote calls): it
    # runs beside this thread. The hash embedder is pure Python: beside this thread it only
    # contends for the GIL (a 100k build measured 2x slower threaded), so it runs inline.
    threaded = getattr(engine.embedder, "backend", None) != "hash"
    pool: Any = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode") if threaded else _Inline()
    pending: Future[Prepared] | None = None
    memo = VectorMemo()  # this write's only: the encoder thread alone uses it
    try:
        if expected is None:
            size = BATCH_ARTICLES
        else:
            size = min(BATCH_ARTICLES, max(MIN_BATCH_ARTICLES, expected // PIPELINE_BATCHES))
        for chunk in batches(articles, size, grow=expected is None):
            prep = chunk_and_tag(chunk, tagger, clock)
            prep.entities = tagged
            done_articles += len(chunk)
            if progress:
                progress("ner", done_articles, max(expected or 0, done_articles))
            nxt = pool.submit(encode, engine.embedder, prep, clock, tick, memo)
            if pending is not None:
                write(pending)
            pending = nxt
        if pending is not None:
            write(pending)
            pending = None
    finally:
        if pending is not None:
            pending.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


class _Inline:
    """An executor that runs each call at once, in the calling thread."""

    def submit(self, fn: Callable[..., Prepared], *args: Any) -> Future[Prepared]:
        fut: Future[Prepared] = Future()
        try:
            fut.set_result(fn(*args))
        except Exception as e:  # raised where the batch is written, as from the thread
            fut.set_exception(e)
        return fut

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def require_articles(reset: bool, wrote: int, paths: Sequence[Path], problems: list[str]) -> None:
    """A rebuild from nothing would empty the index: refuse, keep what is there."""
    if reset and not wrote:
        why = problems[0] if problems else "give .txt, .md, .jsonl, .html or feed files"
        raise IngestError(
            f"no articles could be read from {', '.join(map(str, paths)) or 'the input'}: {why}"
        )
