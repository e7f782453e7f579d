"""The local backend: whoosh BM25 + FAISS vectors + a passage store, in atomic generations.

Layout of an index directory::

    index/
      CURRENT                 name of the live generation ("gen-000007")
      .lock                   writer lock (fcntl), held only while writing
      gen-000007/
        manifest.json         format, model, chunking, counts, segments, times
        docs.jsonl            one line per live document (metadata, segment, rows)
        lexical/              whoosh index of the analysed passages
        seg-000003.npy        vectors of the passages written in one write
        seg-000003.jsonl      those passages: id, doc id, span
        seg-000003.articles.jsonl  the articles written in that write

A write copies the live generation with hard links (every file is immutable: whoosh
writes new segment files and a new table of contents, our segments are new files,
everything else is rewritten under a new name and renamed over), applies the change
to the copy, then switches ``CURRENT`` with one atomic rename. A reader opens the
generation ``CURRENT`` names and keeps it until it re-checks, so it sees the old or
the new state, never a mix; a writer killed at any moment leaves ``CURRENT`` on the
old generation and a ``*.tmp`` directory that the next writer removes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import math
import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .. import lexical as lx
from ..errors import IndexFormatError, IndexMissingError, WriterBusyError
from ..text import analyze
from ..types import Article, Passage
from ..vectors import VectorSegment, load_vectors, save_vectors, search_segments
from . import DocRecord, WriteBatch

log = logging.getLogger(__name__)

FORMAT = 1
CURRENT = "CURRENT"
LOCK = ".lock"
KEEP_OLD_GENERATIONS = 2  # readers that just read CURRENT may still be opening these
MERGE_FANOUT = 8  # merge vector segments once this many share a size tier


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def is_index(path: Path) -> bool:
    return (Path(path) / CURRENT).is_file()


def read_current(path: Path) -> str:
    try:
        name = (Path(path) / CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise IndexMissingError(
            f"no index at {path}: build one with `search index [PATH...]`"
        ) from None
    if not name.startswith("gen-"):
        raise IndexFormatError(f"{path}/{CURRENT} is damaged: rebuild with `search reindex`")
    return name


@dataclass
class _Segment:
    """An immutable segment's contents, cached across generations by name."""

    name: str
    vectors: np.ndarray
    pids: list[str]
    doc_ids: list[str]
    spans: list[tuple[int, int]]
    sents: list[list[tuple[int, int]]]
    articles: dict[str, Article]


def _load_segment(gen_dir: Path, name: str) -> _Segment:
    vectors = load_vectors(gen_dir / f"{name}.npy")
    pids: list[str] = []
    doc_ids: list[str] = []
    spans: list[tuple[int, int]] = []
    sents: list[list[tuple[int, int]]] = []
    with open(gen_dir / f"{name}.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            pids.append(r["id"])
            doc_ids.append(r["doc_id"])
            spans.append((r["start"], r["end"]))
            sents.append([(a, b) for a, b in r.get("sents", [])])
    articles: dict[str, Article] = {}
    with open(gen_dir / f"{name}.articles.jsonl", encoding="utf-8") as f:
        for line in f:
            a = Article.from_dict(json.loads(line))
            articles[a.id] = a
    if len(pids) != len(vectors):
        raise IndexFormatError(f"{gen_dir}/{name}: {len(pids)} passages but {len(vectors)} vectors")
    return _Segment(name, vectors, pids, doc_ids, spans, sents, articles)


class Snapshot:
    """One generation, opened: everything a query needs, immutable once built."""

    def __init__(self, root: Path, gen: str, cache: dict[str, _Segment], prev: Snapshot | None) -> None:
        self.root = root
        self.gen = gen
        self.dir = root / gen
        try:
            self.manifest: dict[str, Any] = json.loads((self.dir / "manifest.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexFormatError(f"{self.dir} has no manifest.json: rebuild with `search reindex`") from None
        if self.manifest.get("format") != FORMAT:
            raise IndexFormatError(
                f"{root} was built with index format {self.manifest.get('format')}, this version reads "
                f"format {FORMAT}: rebuild it with `search reindex`"
            )
        self.docs: dict[str, DocRecord] = {}
        doc_segment: dict[str, str] = {}
        live_ranges: dict[str, list[tuple[int, int]]] = {}
        with open(self.dir / "docs.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                seg = r.pop("segment")
                start = r.pop("row_start")
                extra = r.pop("extra", {}) or {}
                self.docs[r["id"]] = DocRecord(**r, extra=extra)
                doc_segment[r["id"]] = seg
                live_ranges.setdefault(seg, []).append((start, start + r["passages"]))
        self.segments: dict[str, _Segment] = {}
        self.passages: dict[str, Passage] = {}
        self.locations: dict[str, tuple[str, int]] = {}
        self.articles: dict[str, Article] = {}
        self.doc_passages: dict[str, list[str]] = {}
        vsegs: list[VectorSegment] = []
        prev_vsegs = {v.name: v for v in prev.vector_segments} if prev else {}
        for s in self.manifest["segments"]:
            name = s["name"]
            seg = cache.get(name) or _load_segment(self.dir, name)
            cache[name] = seg
            self.segments[name] = seg
            live = np.zeros(len(seg.pids), dtype=bool)
            for lo, hi in live_ranges.get(name, []):
                live[lo:hi] = True
            for doc_id, art in seg.articles.items():
                if doc_segment.get(doc_id) == name:
                    self.articles[doc_id] = art
            for row in np.flatnonzero(live):
                pid, doc_id = seg.pids[row], seg.doc_ids[row]
                st, en = seg.spans[row]
                self.passages[pid] = Passage(pid, doc_id, st, en, self.articles[doc_id].text[st:en])
                self.locations[pid] = (name, int(row))
                self.doc_passages.setdefault(doc_id, []).append(pid)
            old = prev_vsegs.get(name)
            vsegs.append(old.with_live(live) if old is not None else VectorSegment(name, seg.vectors, live))
        self.vector_segments = vsegs
        bm25 = self.manifest.get("bm25", {})
        self.lexical = lx.LexicalIndex(self.dir / "lexical", k1=bm25.get("k1", 0.9), b=bm25.get("b", 0.4))
        self._lex_lock = threading.Lock()

    # The reading interface, bound to this one generation: a query that uses a
    # snapshot for both retrievers can never mix two generations.
    def lexical_search(
        self, terms: Sequence[str], k: int, expansions: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        with self._lex_lock:
            return self.lexical.search(list(terms), k, list(expansions or []))

    def dense(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        hits = search_segments(self.vector_segments, vector, k)
        return [(self.segments[name].pids[row], score) for score, name, row in hits]

    def passage(self, pid: str) -> Passage | None:
        return self.passages.get(pid)

    def article(self, doc_id: str) -> Article | None:
        return self.articles.get(doc_id)

    def doc(self, doc_id: str) -> DocRecord | None:
        return self.docs.get(doc_id)

    def sentences(self, pid: str) -> list[str]:
        loc = self.locations.get(pid)
        if loc is None:
            return []
        seg = self.segments[loc[0]]
        text = self.articles[seg.doc_ids[loc[1]]].text
        return [text[a:b] for a, b in seg.sents[loc[1]]]

    def idf(self, term: str) -> float:
        with self._lex_lock:
            return self.lexical.idf(term)

    def close(self) -> None:
        self.lexical.close()


class LocalBackend:
    """Whoosh + FAISS on disk; readers refresh to new generations between queries."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.root = Path(path)
        self._cache: dict[str, _Segment] = {}
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
            self._snap = snap
            live = {s["name"] for s in snap.manifest["segments"]}
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

    def lexical(self, terms: Sequence[str], k: int, expansions: Sequence[str] | None = None) -> list[tuple[str, float]]:
        return self.snap.lexical_search(terms, k, expansions)

    def dense(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self.snap.dense(vector, k)

    def passage(self, pid: str) -> Passage | None:
        return self.snap.passage(pid)

    def article(self, doc_id: str) -> Article | None:
        return self.snap.article(doc_id)

    def doc(self, doc_id: str) -> DocRecord | None:
        return self.snap.doc(doc_id)

    def docs(self) -> list[DocRecord]:
        return list(self.snap.docs.values())

    def passages_of(self, doc_id: str) -> list[Passage]:
        snap = self.snap
        return [snap.passages[p] for p in snap.doc_passages.get(doc_id, [])]

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
            "documents": len(snap.docs),
            "passages": len(snap.passages),
            "vector_segments": len(snap.vector_segments),
            "size_bytes": size,
            "embedding": m.get("embedding"),
            "chunking": m.get("chunking"),
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
    def write(self, batch: WriteBatch, wait: float = 30.0) -> None:
        with writer_lock(self.root, wait):
            write_generation(self.root, batch)
        self.refresh()


@contextmanager
def writer_lock(root: Path, wait: float = 30.0) -> Iterator[None]:
    """Hold the index's writer lock; wait up to ``wait`` seconds, then fail clearly."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise WriterBusyError(
                        f"another process is writing to {root} (waited {wait:.0f} s): "
                        "try again when it finishes"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _gen_number(name: str) -> int:
    return int(name.split("-", 1)[1])


def create_index(root: Path, manifest_settings: dict[str, Any]) -> None:
    """Create an empty index (generation 1) unless one exists. Caller holds the lock."""
    if is_index(root):
        return
    root.mkdir(parents=True, exist_ok=True)
    gen = "gen-000001"
    tmp = root / (gen + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    lx.create(tmp / "lexical")
    ts = now_iso()
    manifest = {
        "format": FORMAT,
        "package_version": __version__,
        "generation": 1,
        "created": ts,
        "updated": ts,
        "segments": [],
        "next_segment": 1,
        "sources": [],
        "counts": {"documents": 0, "passages": 0},
        **manifest_settings,
    }
    _write_text(tmp / "manifest.json", json.dumps(manifest, indent=2))
    _write_text(tmp / "docs.jsonl", "")
    os.rename(tmp, root / gen)
    _write_text(root / CURRENT, gen + "\n")
    _fsync_dir(root)


def _link_copy(src: Path, dst: Path) -> None:
    """Copy a generation directory with hard links (falls back to copying)."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link)


def _cleanup(root: Path, current: str) -> None:
    cur = _gen_number(current)
    for p in root.iterdir():
        if not p.name.startswith("gen-") or not p.is_dir():
            continue
        if p.name.endswith(".tmp"):
            shutil.rmtree(p, ignore_errors=True)
            continue
        try:
            n = _gen_number(p.name)
        except ValueError:
            continue
        if n < cur - KEEP_OLD_GENERATIONS:
            shutil.rmtree(p, ignore_errors=True)


def write_generation(root: Path, batch: WriteBatch) -> str:
    """Apply one batch as a new generation and switch to it. Caller holds the lock."""
    current = read_current(root)
    _cleanup(root, current)
    src = root / current
    n = _gen_number(current) + 1
    new = f"gen-{n:06d}"
    tmp = root / (new + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    _link_copy(src, tmp)
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    docs: dict[str, dict[str, Any]] = {}
    with open(src / "docs.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            docs[r["id"]] = r

    segments = {s["name"]: s for s in manifest["segments"]}
    cache: dict[str, _Segment] = {}

    def seg(name: str) -> _Segment:
        if name not in cache:
            cache[name] = _load_segment(src, name)
        return cache[name]

    def analysed_passages(doc_id: str) -> dict[str, str]:
        r = docs[doc_id]
        s = seg(r["segment"])
        text = s.articles[doc_id].text
        return {
            s.pids[i]: " ".join(analyze(text[s.spans[i][0] : s.spans[i][1]]))
            for i in range(r["row_start"], r["row_start"] + r["passages"])
        }

    # Within one batch the last version of a document wins.
    last = {a.id: i for i, a in enumerate(batch.articles)}
    keep = [i for i, a in enumerate(batch.articles) if last[a.id] == i]
    batch = WriteBatch(
        articles=[batch.articles[i] for i in keep],
        passages=[batch.passages[i] for i in keep],
        vectors=[batch.vectors[i] for i in keep],
        duplicate_of=[batch.duplicate_of[i] if i < len(batch.duplicate_of) else None for i in keep],
        minhash=[batch.minhash[i] if i < len(batch.minhash) else "" for i in keep],
        sentences=[batch.sentences[i] if i < len(batch.sentences) else [] for i in keep],
        remove=batch.remove,
        sources=batch.sources,
        reset=batch.reset,
    )
    writer = lx.LexicalWriter(tmp / "lexical")
    try:
        to_delete = set(batch.remove)
        if batch.reset:
            to_delete |= set(docs)
        to_delete |= {a.id for a in batch.articles if a.id in docs}
        for doc_id in sorted(to_delete):
            if doc_id not in docs:
                continue
            writer.delete_doc(doc_id, analysed_passages(doc_id))
            del docs[doc_id]

        if batch.articles:
            name = f"seg-{manifest['next_segment']:06d}"
            manifest["next_segment"] += 1
            ts = now_iso()
            rows: list[dict[str, Any]] = []
            vecs: list[np.ndarray] = []
            arts: list[str] = []
            for i, art in enumerate(batch.articles):
                ps = batch.passages[i]
                dup = batch.duplicate_of[i] if i < len(batch.duplicate_of) else None
                docs[art.id] = {
                    "id": art.id,
                    "title": art.title,
                    "source": art.source,
                    "url": art.url,
                    "published": art.published,
                    "path": art.path,
                    "content_hash": art.content_hash,
                    "added": ts,
                    "passages": len(ps),
                    "duplicate_of": dup,
                    "minhash": batch.minhash[i],
                    "segment": name,
                    "row_start": len(rows),
                }
                arts.append(json.dumps(art.to_dict(), ensure_ascii=False))
                sents = batch.sentences[i] if batch.sentences[i] else [[] for _ in ps]
                for p, ss in zip(ps, sents):
                    rows.append({"id": p.id, "doc_id": p.doc_id, "start": p.start, "end": p.end, "sents": ss})
                    writer.add(p.id, p.doc_id, " ".join(analyze(p.text)))
                vecs.append(np.asarray(batch.vectors[i], dtype=np.float32).reshape(len(ps), -1))
            dim = int(manifest.get("embedding", {}).get("dim", 0)) or (vecs[0].shape[1] if vecs else 0)
            allv = np.concatenate(vecs) if vecs else np.zeros((0, dim), np.float32)
            save_vectors(tmp / f"{name}.npy", allv)
            _write_text(tmp / f"{name}.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            _write_text(tmp / f"{name}.articles.jsonl", "".join(a + "\n" for a in arts))
            segments[name] = {"name": name, "rows": len(rows)}
        writer.commit()
    except BaseException:
        writer.cancel()
        shutil.rmtree(tmp, ignore_errors=True)
        raise

    _merge_vector_segments(tmp, manifest, segments, docs, seg)

    # Segments no live document points at are dropped from this generation.
    used = {r["segment"] for r in docs.values()}
    for name in list(segments):
        if name not in used:
            del segments[name]
            for suffix in (".npy", ".jsonl", ".articles.jsonl"):
                (tmp / f"{name}{suffix}").unlink(missing_ok=True)

    manifest["segments"] = sorted(segments.values(), key=lambda s: s["name"])
    manifest["generation"] = n
    manifest["updated"] = now_iso()
    manifest["counts"] = {"documents": len(docs), "passages": sum(r["passages"] for r in docs.values())}
    if batch.sources:
        srcs = [] if batch.reset else list(manifest.get("sources", []))
        for s in batch.sources:
            if s not in srcs:
                srcs.append(s)
        manifest["sources"] = srcs
    _write_text(tmp / "docs.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in docs.values()))
    _write_text(tmp / "manifest.json", json.dumps(manifest, indent=2))
    _fsync_dir(tmp)
    os.rename(tmp, root / new)
    _fsync_dir(root)
    # The commit point: one atomic rename of a small file.
    _write_text(root / CURRENT, new + "\n")
    _fsync_dir(root)
    return new


def _tier(rows: int) -> int:
    return int(math.log10(max(rows, 1)))


def _merge_vector_segments(
    tmp: Path,
    manifest: dict[str, Any],
    segments: dict[str, dict[str, Any]],
    docs: dict[str, dict[str, Any]],
    seg: Any,
) -> None:
    """Merge segments that share a size tier once there are MERGE_FANOUT of them (LSM)."""
    live_rows: dict[str, int] = {}
    for r in docs.values():
        live_rows[r["segment"]] = live_rows.get(r["segment"], 0) + r["passages"]
    tiers: dict[int, list[str]] = {}
    for name in segments:
        if name in live_rows:
            tiers.setdefault(_tier(live_rows[name]), []).append(name)
    for _tier_no, names in sorted(tiers.items()):
        if len(names) < MERGE_FANOUT:
            continue
        new = f"seg-{manifest['next_segment']:06d}"
        manifest["next_segment"] += 1
        rows: list[dict[str, Any]] = []
        vecs: list[np.ndarray] = []
        arts: list[str] = []
        members = set(names)
        for doc_id, r in docs.items():
            if r["segment"] not in members:
                continue
            s = _segment_in(tmp, r["segment"], seg)
            lo, hi = r["row_start"], r["row_start"] + r["passages"]
            arts.append(json.dumps(s.articles[doc_id].to_dict(), ensure_ascii=False))
            new_start = len(rows)
            for i in range(lo, hi):
                rows.append(
                    {"id": s.pids[i], "doc_id": doc_id, "start": s.spans[i][0], "end": s.spans[i][1], "sents": s.sents[i]}
                )
            vecs.append(np.asarray(s.vectors[lo:hi], dtype=np.float32))
            r["segment"], r["row_start"] = new, new_start
        save_vectors(tmp / f"{new}.npy", np.concatenate(vecs))
        _write_text(tmp / f"{new}.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        _write_text(tmp / f"{new}.articles.jsonl", "".join(a + "\n" for a in arts))
        segments[new] = {"name": new, "rows": len(rows)}


def _segment_in(tmp: Path, name: str, seg: Any) -> _Segment:
    # Segments written by this very batch are only in the new directory.
    path = tmp / f"{name}.npy"
    try:
        return seg(name)
    except FileNotFoundError:
        return _load_segment(path.parent, name)
