"""One write to a local index: a new generation built beside the live one, switched in at the end.

A :class:`GenerationWriter` copies the live generation with hard links (every file is
immutable: whoosh writes new segment files and a new table of contents, our segments are
new files, everything else is rewritten under a new name and renamed over), then takes
any number of batches, each written at once as a segment of its own and added to whoosh,
so a bulk build streams. :meth:`GenerationWriter.finish` commits whoosh, merges the
write's segments into one (streaming the bytes), merges size tiers (LSM), writes the
document table and the manifest, and switches ``CURRENT`` with one atomic rename. Until
then readers see the old generation; a writer killed at any moment leaves a ``*.tmp``
directory (or a renamed generation ``CURRENT`` never named), which the next writer
removes.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .. import lexical as lx
from .. import lexical_process as lp
from ..ann import cores
from ..errors import IndexWriteError, write_failed
from ..text import analyze, headline
from ..types import Article
from ..vectors import DEFAULT_ANN
from . import WriteBatch, record_entities
from .local_gen import (
    CURRENT,
    _cleanup,
    _fsync_dir,
    _gen_number,
    _link_copy,
    _write_text,
    now_iso,
    read_current,
)
from .local_rows import _countries
from .local_store import Segment, merge_segments, remove_segment, write_segment
from .local_table import Table, TableBuilder

MERGE_FANOUT = 8  # merge vector segments once this many share a size tier


def _tier(rows: int) -> int:
    return int(math.log10(max(rows, 1)))


@contextmanager
def _disk() -> Iterator[None]:
    """A full disk, a read-only folder or a file size limit: one line, as the package's own
    error (the caller's ``abort`` then removes the half-built generation)."""
    try:
        yield
    except OSError as e:
        raise IndexWriteError(write_failed(e)) from e


class GenerationWriter:
    """Build the next generation of the index at ``root``; the caller holds the writer lock."""

    def __init__(self, root: Path, cache: dict[str, Segment], reset: bool = False) -> None:
        with _disk():
            self._start(root, cache, reset)

    def _start(self, root: Path, cache: dict[str, Segment], reset: bool) -> None:
        self.root = root
        self.cache = cache
        self.reset = reset
        current = read_current(root)
        _cleanup(root, current)
        src = root / current
        self.number = _gen_number(current) + 1
        self.name = f"gen-{self.number:06d}"
        self.tmp = root / (self.name + ".tmp")
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        _link_copy(src, self.tmp)
        self.manifest: dict[str, Any] = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
        self.segments: dict[str, dict[str, Any]] = {s["name"]: s for s in self.manifest["segments"]}
        # Every segment is built with the ANN spec the index recorded (a rebuild takes the default).
        if reset or "ann" not in self.manifest:
            self.manifest["ann"] = DEFAULT_ANN.to_dict()
        self.table = TableBuilder(None if reset else Table(src))
        if reset:
            # Everything goes: a fresh whoosh directory instead of deleting every passage.
            shutil.rmtree(self.tmp / "lexical")
            lx.create(self.tmp / "lexical")
        self._lex: lp.InProcess | lp.Child | None = None
        self._uncommitted: set[str] = set()  # ids added to whoosh since its last commit
        self.written: list[str] = []  # segments this write added
        self._opened: dict[str, Segment] = {}  # a few segments not in the process's cache
        self.embedding: dict[str, Any] = {}
        self.entities: dict[str, Any] = {}
        self.added_at = now_iso()
        self.done = False

    # -- whoosh ----------------------------------------------------------------------
    def _lexical(self, articles: int = 0) -> lp.InProcess | lp.Child:
        """The write's lexical side: in a child process when the write is a bulk one (its
        first batch ``lp.BULK_ARTICLES`` or more articles) and there is a second core."""
        if self._lex is None:
            path = self.tmp / "lexical"
            # The cores this process may run on (taskset, a container's cpuset), not the machine's.
            bulk = articles >= lp.BULK_ARTICLES and cores() > 1
            self._lex = lp.start(path) if bulk else lp.InProcess(path)
        return self._lex

    def _commit_lexical(self) -> None:
        if self._lex is not None:
            self._lex.commit()
            self._lex = None
        self._uncommitted.clear()

    def segment(self, name: str) -> Segment:
        """A segment of this generation: the process's open one, or opened now (not kept:
        a bulk write's hundreds of batch segments are merged away)."""
        seg = self.cache.get(name) or self._opened.get(name)
        if seg is None:
            seg = self._opened[name] = Segment(self.tmp, name)
            while len(self._opened) > 4:
                self._opened.pop(next(iter(self._opened)))
        return seg

    # -- changes ---------------------------------------------------------------------
    def remove(self, doc_ids: list[str]) -> list[str]:
        """Remove documents from the new generation; returns those that were there."""
        gone = []
        for doc_id in sorted(set(doc_ids)):
            where = self.table.where(doc_id)
            if where is None:
                continue
            if doc_id in self._uncommitted:
                self._commit_lexical()  # whoosh deletes committed documents only
            seg = self.segment(where[0])
            d = where[1]
            text, title = seg.text(d), seg.record(d).get("title") or ""
            first = seg.row_start(d)
            atitle = " ".join(analyze(headline(title, text)))
            passages: dict[str, str | tuple[str, str]] = {
                f"{doc_id}#{i}": (" ".join(analyze(text[int(a) : int(b)])), atitle)
                for i, (a, b) in enumerate(seg.spans[first : first + self.table.passages(doc_id)].tolist())
            }
            self._lexical().delete(doc_id, passages, lp.doc_text(title, text))
            self.table.remove(doc_id)
            gone.append(doc_id)
        return gone

    def add(self, batch: WriteBatch) -> None:
        """Write one batch of articles (a document already there is replaced) as a new segment."""
        with _disk():
            self._add(batch)

    def _add(self, batch: WriteBatch) -> None:
        self._lexical(len(batch.articles))  # in a child process or not: the first batch decides
        if batch.remove:
            self.remove(batch.remove)
        # Within one batch the last version of a document wins.
        last = {a.id: i for i, a in enumerate(batch.articles)}
        keep = [i for i, a in enumerate(batch.articles) if last[a.id] == i]
        if not keep:
            return

        def pick(xs: list[Any], default: Any) -> list[Any]:
            return [xs[i] if i < len(xs) else default for i in keep]

        articles: list[Article] = [batch.articles[i] for i in keep]
        passages = [batch.passages[i] for i in keep]
        vectors = [batch.vectors[i] for i in keep]
        duplicate_of = pick(batch.duplicate_of, None)
        sentences = pick(batch.sentences, [])
        minhash = pick(batch.minhash, "")
        self.remove([a.id for a in articles if self.table.where(a.id) is not None])
        # First, so a child process analyses and indexes them while this thread goes on.
        self._lexical(len(articles)).add(
            [
                (a.id, a.title, a.text, [(p.id, p.start, p.end) for p in ps])
                for a, ps in zip(articles, passages)
            ]
        )
        if batch.embedding:
            self.embedding = dict(batch.embedding)
        if batch.entities:
            self.entities = dict(batch.entities)
        from ..dedup import decode as dedup_decode

        name = f"seg-{self.manifest['next_segment']:06d}"
        self.manifest["next_segment"] += 1
        dim = int(self.manifest.get("embedding", {}).get("dim", 0)) or (vectors[0].shape[1] if vectors else 0)
        allv = np.concatenate([np.asarray(v, np.float32).reshape(-1, dim) for v in vectors])
        sigs = (
            np.stack([dedup_decode(m) for m in minhash])
            if all(minhash)
            else np.zeros((len(articles), 0), np.uint32)
        )
        self.segments[name] = write_segment(
            self.tmp,
            name,
            articles,
            [[(p.start, p.end) for p in ps] for ps in passages],
            [ss or [[] for _ in ps] for ss, ps in zip(sentences, passages)],
            allv,
            sigs,
            [{"added": self.added_at, "duplicate_of": dup} for dup in duplicate_of],
            _countries(),
            self.manifest["ann"],
        )
        self.written.append(name)
        row = 0
        for i, art in enumerate(articles):
            ps = passages[i]
            self.table.add(
                art.id,
                name,
                i,
                row,
                len(ps),
                art.published_ts,
                duplicate_of[i],
                art.source,
                dict(art.metadata),
            )
            self._uncommitted.add(art.id)
            row += len(ps)

    # -- the switch ------------------------------------------------------------------
    def finish(self, sources: list[str] | None = None, write: bool = True) -> str | None:
        """Commit everything as the next generation and switch ``CURRENT`` to it."""
        if not write:
            self.abort()
            return None
        with _disk():
            return self._finish(sources)

    def _finish(self, sources: list[str] | None) -> str:
        # The lexical commit runs in its child (a bulk write) beside the vector merges.
        if self._lex is not None:
            self._lex.start_commit()
        self.table.seal()
        if len(self.written) > 1:  # one segment per write, as a write of everything at once
            self._merge(self.written)
        self._merge_tiers()
        used = set(self.table.live_rows())
        for name in list(self.segments):
            if name not in used:
                del self.segments[name]
        for p in self.tmp.glob("seg-*"):
            if p.name.split(".", 1)[0] not in used:
                p.unlink(missing_ok=True)
        if self._lex is not None:
            self._lex.wait()
            self._lex = None
        self._uncommitted.clear()
        m = self.manifest
        if self.embedding:
            # Record how the vectors were made (backend, ONNX hash, measured distance to the
            # sentence-transformers reference); model and dimension were checked on open.
            m.setdefault("embedding", {}).update(
                {k: v for k, v in self.embedding.items() if k not in ("model_id", "dim")}
            )
        record_entities(m, self.entities, self.reset)
        m["segments"] = sorted(self.segments.values(), key=lambda s: s["name"])
        m["generation"] = self.number
        m["updated"] = now_iso()
        docs = self.table.write(self.tmp, [s["name"] for s in m["segments"]])
        m["counts"] = {"documents": docs, "passages": int(self.table.loc[:, 3].sum())}
        if sources:
            srcs = [] if self.reset else list(m.get("sources", []))
            for s in sources:
                if s not in srcs:
                    srcs.append(s)
            m["sources"] = srcs
        _write_text(self.tmp / "manifest.json", json.dumps(m, indent=2))
        _fsync_dir(self.tmp)
        self.tmp.rename(self.root / self.name)
        _fsync_dir(self.root)
        # The commit point: one atomic rename of a small file.
        _write_text(self.root / CURRENT, self.name + "\n")
        _fsync_dir(self.root)
        self.done = True
        return self.name

    def abort(self) -> None:
        if self._lex is not None:
            self._lex.cancel()
            self._lex = None
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.done = True

    # -- merges ----------------------------------------------------------------------
    def _merge(self, names: list[str]) -> str:
        """Merge segments into a new one (live rows only), streaming; returns its name."""
        new = f"seg-{self.manifest['next_segment']:06d}"
        self.manifest["next_segment"] += 1
        members = self.table.members(names)
        entry = merge_segments(
            self.tmp, new, list(zip(names, members)), self.segment, ann=self.manifest["ann"]
        )
        self.table.relocate(names, new)
        for n in names:
            self.segments.pop(n, None)
            self._opened.pop(n, None)
            remove_segment(self.tmp, n)
        self.segments[new] = entry
        return new

    def _merge_tiers(self) -> None:
        """Merge segments that share a size tier once there are MERGE_FANOUT of them (LSM).

        A merge copies only live rows, so it also drops the rows of removed documents.
        """
        live = self.table.live_rows()
        tiers: dict[int, list[str]] = {}
        for name in sorted(self.segments):
            if name in live:
                tiers.setdefault(_tier(live[name]), []).append(name)
        for _tier_no, names in sorted(tiers.items()):
            if len(names) >= MERGE_FANOUT:
                self._merge(names)
