"""The local backend: whoosh BM25 + FAISS vectors + a passage store, in atomic generations.

Layout of an index directory::

    index/
      CURRENT                 name of the live generation ("gen-000007")
      .lock                   writer lock (fcntl), held only while writing
      gen-000007/
        manifest.json         format, model, chunking, counts, segments, times
        table.*               the live documents as memory-mapped columns (local_table)
        lexical/              whoosh indexes: the analysed passages (text + title fields) and,
                              as indexname "docs", one entry per article (title + whole text)
        seg-000003.*          one write's passages: vectors, spans, sentences, and its
                              articles' texts and records, read on demand (local_store)

A write builds the next generation beside the live one and switches ``CURRENT`` with
one atomic rename (:mod:`.local_write`, :mod:`.local_gen`). A reader opens the
generation ``CURRENT`` names and keeps it until it re-checks, so it sees the old or the
new state, never a mix.

This module is the backend: opening, refreshing to a new generation, and writing through
:mod:`.local_write`. One opened generation, with all the reading (BM25, dense search,
facets, passages, articles, records), is a :class:`~.local_snapshot.Snapshot`
(:mod:`.local_snapshot`, re-exported here).

Opening a generation maps its files and reads a few small headers: no document, passage
or article becomes a Python object until a query asks for it, so a serving process's
memory does not grow with the text it serves (#17).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexMissingError
from ..types import Article, Passage
from . import DocRecord, WriteBatch
from .local_gen import (  # re-exported: the engine and scripts import them from here
    CURRENT,
    FORMAT,
    KEEP_OLD_GENERATIONS,
    LOCK,
    clear_index,
    create_index,
    is_index,
    now_iso,
    read_current,
    recorded_sources,
    writer_lock,
)
from .local_snapshot import Snapshot, rows_to_docs  # both re-exported: they lived here
from .local_store import SEGMENT_SUFFIXES, Segment
from .local_write import GenerationWriter

__all__ = [
    "CURRENT",
    "FORMAT",
    "KEEP_OLD_GENERATIONS",
    "LOCK",
    "SEGMENT_SUFFIXES",
    "GenerationWriter",
    "LocalBackend",
    "Snapshot",
    "clear_index",
    "create_index",
    "is_index",
    "now_iso",
    "read_current",
    "recorded_sources",
    "rows_to_docs",
    "writer_lock",
]


#: The files every query reads at random (ANN graph and codes, re-scoring vectors, BM25
#: arrays, the document table), asked of the kernel when a generation opens. Not the
#: article store (read a few articles a query) or whoosh's segments (writes only), nor
#: the MinHash signatures (writes only).
PREFETCH_SUFFIXES = (".faiss", ".npy", ".bin")
PREFETCH_SKIP = (".store.bin", ".minhash.npy")


#: Files read ahead by this process (device, inode, size, mtime): a generation after an add
#: links the unchanged segments of the one before, which are not read again.
_READ_AHEAD: set[tuple[int, int, int, int]] = set()


def prefetch(folder: Path) -> None:
    """Read a generation's query files once, in the background, so their pages are in the
    page cache before queries fault them in one at a time (a fresh process at 1M passages
    ran its first round of questions at hybrid p50 25 ms, against 9 once the pages were
    in, #17). Plain sequential reads into one buffer: no memory of ours stays, and the
    kernel may drop the pages again. ``posix_fadvise(WILLNEED)`` was tried first and read
    nothing measurable. The thread runs at a low priority, behind queries. Lucene's
    MMapDirectory preload does the same."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):  # not Linux, or not allowed: read anyway
        pass
    try:
        files = [
            f
            for f in folder.rglob("*")
            if f.name.endswith(PREFETCH_SUFFIXES) and not f.name.endswith(PREFETCH_SKIP)
        ]
    except OSError:
        return
    buf = bytearray(1 << 22)
    for f in sorted(files, key=lambda f: not f.name.endswith(".faiss")):  # the ANN first
        try:
            with open(f, "rb", buffering=0) as fh:
                st = os.fstat(fh.fileno())
                key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                if key in _READ_AHEAD:  # a segment the next generation links, read already
                    continue
                while fh.readinto(buf):
                    pass
                _READ_AHEAD.add(key)
        except OSError:  # removed by a writer since: nothing to read
            continue


class LocalBackend:
    """Whoosh + FAISS on disk; readers refresh to new generations between queries."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.root = Path(path)
        self._cache: dict[str, Segment] = {}
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()
        self._open_current()

    # -- reading -------------------------------------------------------------------
    def _open_current(self) -> None:
        for attempt in range(5):
            gen = read_current(self.root)
            try:
                snap = Snapshot(self.root, gen, self._cache, self._snap)
            except FileNotFoundError:
                # A writer removed this generation between our reading CURRENT and
                # opening its files: CURRENT has moved on, read it again.
                if attempt == 4:
                    raise
                time.sleep(0.05)
                continue
            # The old snapshot is not closed here: another thread may be in the
            # middle of a query on it. It is freed when the last query drops it.
            if self._snap is None or self._snap.gen != gen:
                threading.Thread(
                    target=prefetch, args=(self.root / gen,), daemon=True, name="prefetch"
                ).start()
            self._snap = snap
            live = set(snap.segments)
            for name in list(self._cache):
                if name not in live:
                    del self._cache[name]
            return

    def refresh(self) -> bool:
        """Open the newest generation if a writer has switched; True when it did."""
        try:
            gen = read_current(self.root)
        except IndexMissingError:
            return False
        if self._snap is not None and gen == self._snap.gen:
            return False
        with self._lock:
            if self._snap is not None and read_current(self.root) == self._snap.gen:
                return False
            self._open_current()
        return True

    @property
    def snap(self) -> Snapshot:
        assert self._snap is not None
        return self._snap

    def reader(self) -> Snapshot:
        """The newest generation, as one consistent view for a whole query."""
        self.refresh()
        return self.snap

    def lexical(
        self, terms: Sequence[str], k: int, expansions: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        return self.snap.lexical_search(terms, k, expansions)

    def dense(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self.snap.dense(vector, k)

    def fields(self) -> dict[str, str]:
        return self.snap.fields()

    def passage(self, pid: str) -> Passage | None:
        return self.snap.passage(pid)

    def article(self, doc_id: str) -> Article | None:
        return self.snap.article(doc_id)

    def doc(self, doc_id: str) -> DocRecord | None:
        return self.snap.doc(doc_id)

    def docs(self) -> list[DocRecord]:
        return self.snap.all_docs()

    def doc_ids(self) -> list[str]:
        return self.snap.doc_ids()

    def passages_of(self, doc_id: str) -> list[Passage]:
        return self.snap.passages_of(doc_id)

    def signatures(self) -> list[tuple[str, str | None, np.ndarray]]:
        return self.snap.signatures()

    def signature_arrays(self) -> tuple[list[str], list[str], np.ndarray]:
        return self.snap.signature_arrays()

    def manifest(self) -> dict[str, Any]:
        return dict(self.snap.manifest)

    def stats(self) -> dict[str, Any]:
        snap = self.snap
        m = snap.manifest
        size = sum(f.stat().st_size for f in snap.dir.rglob("*") if f.is_file())
        return {
            "backend": "local",
            "path": str(self.root.resolve()),
            "generation": m["generation"],
            "documents": snap.n_docs,
            "passages": snap.n_passages,
            "vector_segments": len(snap.vector_segments),
            "size_bytes": size,
            "embedding": m.get("embedding"),
            "chunking": m.get("chunking"),
            "entities": m.get("entities"),
            "bm25": m.get("bm25"),
            "created": m.get("created"),
            "updated": m.get("updated"),
            "format": m.get("format"),
            "package_version": m.get("package_version"),
        }

    def close(self) -> None:
        if self._snap is not None:
            self._snap.close()
            self._snap = None

    # -- writing -------------------------------------------------------------------
    @contextmanager
    def writing(self, reset: bool = False, wait: float = 30.0) -> Iterator[GenerationWriter]:
        """Hold the writer lock and build the next generation: ``add`` batches as they come,
        then ``finish``; an exception (or no ``finish``) leaves the index as it was."""
        with writer_lock(self.root, wait):
            w = GenerationWriter(self.root, self._cache, reset=reset)
            try:
                yield w
            finally:
                if not w.done:
                    w.abort()
        self.refresh()

    def write(self, batch: WriteBatch, wait: float = 30.0) -> None:
        with self.writing(reset=batch.reset, wait=wait) as w:
            w.add(batch)
            w.finish(batch.sources)
