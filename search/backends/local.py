"""The local backend: whoosh BM25 + FAISS vectors + a passage store, in atomic generations.

Layout of an index directory::

    index/
      CURRENT                 name of the live generation ("gen-000007")
      .lock                   writer lock (fcntl), held only while writing
      gen-000007/
        manifest.json         format, model, chunking, counts, segments, times
        docs.json             the live documents: metadata, segment, rows (one JSON table)
        lexical/              whoosh indexes: the analysed passages (text + title fields) and,
                              as indexname "docs", one entry per article (title + whole text)
        seg-000003.npy        vectors of the passages written in one write
        seg-000003.jsonl      those passages: id, doc id, span
        seg-000003.articles.jsonl  the articles written in that write

A write copies the live generation with hard links (every file is immutable: whoosh
writes new segment files and a new table of contents, our segments are new files,
everything else is rewritten under a new name and renamed over), applies the change
to the copy, then switches ``CURRENT`` with one atomic rename. A reader opens the
generation ``CURRENT`` names and keeps it until it re-checks, so it sees the old or
the new state, never a mix; a writer killed at any moment leaves ``CURRENT`` on the
old generation and a ``*.tmp`` directory, or a renamed generation ``CURRENT`` never
named, which the next writer removes (:func:`_cleanup`).
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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .. import lexical as lx
from ..dedup import decode as dedup_decode
from ..errors import IndexFormatError, IndexMissingError, WriterBusyError
from ..facets import Facets
from ..filters import Filters
from ..fusion import doc_weight, with_documents
from ..text import analyze, headline
from ..types import Article, Passage
from ..vectors import (
    ANN_SUFFIX,
    DEFAULT_ANN,
    AnnSpec,
    VectorSegment,
    load_vectors,
    save_npy,
    save_vectors,
    search_segments,
    write_ann,
)
from . import DocRecord, WriteBatch
from .local_rows import RowSpace

log = logging.getLogger(__name__)

# 2: numpy segment files (spans, sentences, signatures); 3: docs.json table;
# 4: a title field on passages, the document-level index, title + passage as the dense text
FORMAT = 4
DOC_FIELDS = (
    "id", "title", "source", "url", "published", "path", "content_hash", "added", "passages", "duplicate_of",
    "segment", "row_start", "published_ts", "metadata",
)  # fmt: skip


def read_docs(gen_dir: Path) -> dict[str, dict[str, Any]]:
    """The document table: one JSON document (one parse, not one per line: 25k documents
    load in ~0.05 s instead of ~0.3 s)."""
    table = json.loads((gen_dir / "docs.json").read_text(encoding="utf-8"))
    fields = table["fields"]
    return {row[0]: dict(zip(fields, row)) for row in table["rows"]}


def write_docs(gen_dir: Path, docs: dict[str, dict[str, Any]]) -> None:
    rows = [[d.get(f) for f in DOC_FIELDS] for d in docs.values()]
    _write_text(
        gen_dir / "docs.json", json.dumps({"fields": list(DOC_FIELDS), "rows": rows}, ensure_ascii=False)
    )


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
        raise IndexMissingError(f"no index at {path}: build one with `search index [PATH...]`") from None
    if not name.startswith("gen-"):
        raise IndexFormatError(f"{path}/{CURRENT} is damaged: rebuild with `search reindex`")
    return name


@dataclass
class _Segment:
    """An immutable segment's contents, cached across generations by name.

    Files (``seg-N`` + suffix): ``.npy`` vectors ``float32 [rows, dim]``; ``.docs.jsonl``
    the articles written with it (full text, with their first row and row count);
    ``.spans.npy`` ``int32 [rows, 2]`` passage spans in article coordinates;
    ``.sents.npy`` ``int32 [n, 2]`` sentence spans and ``.sentoff.npy`` ``int64 [rows+1]``
    where each passage's sentences start; ``.minhash.npy`` ``uint32 [docs, 128]``
    near-duplicate signatures, in article order. All plain numpy, no pickle.
    """

    name: str
    vectors: np.ndarray
    articles: list[Article]
    row_start: np.ndarray  # int64 [docs]
    row_doc: np.ndarray  # int64 [rows]: index into ``articles``
    spans: np.ndarray
    sents: np.ndarray
    sentoff: np.ndarray
    minhash: np.ndarray
    by_id: dict[str, int]
    facet_cache: dict[str, Any] = field(default_factory=dict)  # derived once, for facets

    def pid(self, row: int) -> str:
        d = int(self.row_doc[row])
        return f"{self.articles[d].id}#{row - int(self.row_start[d])}"


SEGMENT_SUFFIXES = (
    ".npy",
    ".docs.jsonl",
    ".spans.npy",
    ".sents.npy",
    ".sentoff.npy",
    ".minhash.npy",
    ".sentvec.npy",
    ANN_SUFFIX,
)


def _load_segment(gen_dir: Path, name: str) -> _Segment:
    base = gen_dir / name
    vectors = load_vectors(gen_dir / f"{name}.npy")
    articles: list[Article] = []
    starts: list[int] = []
    counts: list[int] = []
    with open(f"{base}.docs.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            starts.append(r.pop("row_start"))
            counts.append(r.pop("rows"))
            articles.append(Article.from_dict(r))
    spans = np.load(f"{base}.spans.npy", allow_pickle=False)
    if len(spans) != len(vectors) or sum(counts) != len(vectors):
        raise IndexFormatError(
            f"{base}: {len(spans)} passages but {len(vectors)} vectors: rebuild with `search reindex`"
        )
    row_doc = np.repeat(np.arange(len(articles), dtype=np.int64), counts)
    sv_path = Path(f"{base}.sentvec.npy")
    if sv_path.exists():  # article sentence vectors, in article order (absent before entities)
        sv = np.load(sv_path, mmap_mode="r", allow_pickle=False)
        at = 0
        for a in articles:
            a.sentence_vectors = sv[at : at + len(a.sentences)]
            at += len(a.sentences)
    return _Segment(
        name=name,
        vectors=vectors,
        articles=articles,
        row_start=np.asarray(starts, dtype=np.int64),
        row_doc=row_doc,
        spans=spans,
        sents=np.load(f"{base}.sents.npy", allow_pickle=False),
        sentoff=np.load(f"{base}.sentoff.npy", allow_pickle=False),
        minhash=np.load(f"{base}.minhash.npy", allow_pickle=False),
        by_id={a.id: i for i, a in enumerate(articles)},
    )


def _ann_file(gen_dir: Path, name: str) -> Path | None:
    """The segment's ANN file in this generation (a cached segment's own path may name a
    generation since removed)."""
    p = gen_dir / f"{name}{ANN_SUFFIX}"
    return p if p.is_file() else None


def _write_segment(
    gen_dir: Path,
    name: str,
    articles: list[Article],
    passages: list[list[tuple[int, int]]],
    sentences: list[list[list[tuple[int, int]]]],
    vectors: np.ndarray,
    minhash: np.ndarray,
    ann: dict[str, Any],
) -> dict[str, Any]:
    """Write one immutable segment; returns its manifest entry (rows, and the ANN spec
    its index was built with, from the index's recorded ``ann``)."""
    lines: list[str] = []
    spans: list[tuple[int, int]] = []
    sents: list[tuple[int, int]] = []
    sentoff = [0]
    for a, ps, ss in zip(articles, passages, sentences):
        d = a.to_dict()
        d["row_start"], d["rows"] = len(spans), len(ps)
        lines.append(json.dumps(d, ensure_ascii=False) + "\n")
        for i, p in enumerate(ps):
            spans.append(p)
            sents.extend(ss[i] if i < len(ss) else [])
            sentoff.append(len(sents))
    base = gen_dir / name
    _write_text(Path(f"{base}.docs.jsonl"), "".join(lines))
    for suffix, arr in (
        (".spans.npy", np.asarray(spans, dtype=np.int32).reshape(-1, 2)),
        (".sents.npy", np.asarray(sents, dtype=np.int32).reshape(-1, 2)),
        (".sentoff.npy", np.asarray(sentoff, dtype=np.int64)),
        (".minhash.npy", np.asarray(minhash, dtype=np.uint32).reshape(len(articles), -1)),
    ):
        save_npy(Path(f"{base}{suffix}"), arr)
    save_vectors(gen_dir / f"{name}.npy", vectors)
    spec = write_ann(gen_dir / f"{name}.npy", vectors, AnnSpec.from_dict(ann))
    save_npy(
        Path(f"{base}.sentvec.npy"), _sentence_vectors(articles, vectors.shape[1] if vectors.ndim == 2 else 0)
    )
    return {"name": name, "rows": len(spans), **({"ann": spec.to_dict()} if spec else {})}


def _sentence_vectors(articles: list[Article], dim: int) -> np.ndarray:
    """The articles' sentence vectors stacked (zeros where an article has none)."""
    parts = [
        np.asarray(a.sentence_vectors, dtype=np.float16).reshape(len(a.sentences), -1)
        if a.sentence_vectors is not None and len(a.sentence_vectors) == len(a.sentences)
        else np.zeros((len(a.sentences), dim), np.float16)
        for a in articles
    ]
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float16)


class Snapshot:
    """One generation, opened: everything a query needs, immutable once built.

    Opening costs O(documents) (the document table), not O(passages): segments are
    loaded once per process and shared by every generation that holds them.
    """

    def __init__(self, root: Path, gen: str, cache: dict[str, _Segment], prev: Snapshot | None) -> None:
        self.root = root
        self.gen = gen
        self.dir = root / gen
        try:
            self.manifest: dict[str, Any] = json.loads(
                (self.dir / "manifest.json").read_text(encoding="utf-8")
            )
        except FileNotFoundError:
            raise IndexFormatError(
                f"{self.dir} has no manifest.json: rebuild with `search reindex`"
            ) from None
        if self.manifest.get("format") != FORMAT:
            raise IndexFormatError(
                f"{root} was built with index format {self.manifest.get('format')}, this version reads "
                f"format {FORMAT}: rebuild it with `search reindex`"
            )
        # The document table stays as parsed rows; a DocRecord is made when asked for.
        table = json.loads((self.dir / "docs.json").read_text(encoding="utf-8"))
        fi = {f: i for i, f in enumerate(table["fields"])}
        self._rows: list[list[Any]] = table["rows"]
        self._fields: list[str] = table["fields"]
        self._pos = {r[0]: i for i, r in enumerate(self._rows)}
        self._recs: dict[str, DocRecord] = {}
        i_seg, i_start, i_n = fi["segment"], fi["row_start"], fi["passages"]
        self._i_seg, self._i_start, self._i_n, self._i_dup = i_seg, i_start, i_n, fi["duplicate_of"]
        self.segments: dict[str, _Segment] = {}
        by_seg: dict[str, list[tuple[int, int]]] = {}
        for r in self._rows:
            by_seg.setdefault(r[i_seg], []).append((r[i_start], r[i_n]))
        prev_vsegs = {v.name: v for v in prev.vector_segments} if prev else {}
        vsegs: list[VectorSegment] = []
        for sm in self.manifest["segments"]:
            name = sm["name"]
            seg = cache.get(name) or _load_segment(self.dir, name)
            cache[name] = seg
            self.segments[name] = seg
            # Live rows: +1 at each live range's start, -1 past its end, then a running sum.
            edges = np.zeros(len(seg.row_doc) + 1, dtype=np.int32)
            ranges = np.asarray(by_seg.get(name, []), dtype=np.int64).reshape(-1, 2)
            np.add.at(edges, ranges[:, 0], 1)
            np.add.at(edges, ranges[:, 0] + ranges[:, 1], -1)
            live = np.cumsum(edges[:-1]) > 0
            old = prev_vsegs.get(name)
            vsegs.append(
                old.with_live(live, _ann_file(self.dir, name))
                if old is not None
                else VectorSegment(
                    name, seg.vectors, live, _ann_file(self.dir, name), AnnSpec.from_dict(sm.get("ann"))
                )
            )
        self.vector_segments: list[VectorSegment] = vsegs
        self.n_passages = sum(r[i_n] for r in self._rows)
        bm25 = self.manifest.get("bm25", {})
        k1, b = bm25.get("k1", 0.9), bm25.get("b", 0.4)
        self.lexical = lx.LexicalIndex(self.dir / "lexical", k1=k1, b=b)
        self.doc_lexical = lx.LexicalIndex(self.dir / "lexical", k1=k1, b=b, indexname=lx.DOCS)
        self._lex_lock = threading.Lock()
        self._rowspace: RowSpace | None = None

    @property
    def rows(self) -> RowSpace:
        """Filters, facets and date order over this generation (built on first use)."""
        if self._rowspace is None:
            with self._lex_lock:
                if self._rowspace is None:
                    self._rowspace = RowSpace(self)
        return self._rowspace

    def fields(self) -> dict[str, str]:
        """The extra metadata fields documents carry, and their kinds (for filters)."""
        return dict(self.rows.columns.kinds)

    def _docmask(self, filters: Filters | None) -> np.ndarray | None:
        return self.rows.doc_mask(filters) if filters else None

    # The reading interface, bound to this one generation: a query that uses a
    # snapshot for both retrievers can never mix two generations.
    def lexical_search(
        self,
        terms: Sequence[str],
        k: int,
        expansions: Sequence[str] | None = None,
        question: str | None = None,  # whoosh works on our own analysed terms
        filters: Filters | None = None,
    ) -> list[tuple[str, float]]:
        exp = list(expansions or [])
        dw = doc_weight(self.n_docs)
        docmask = self._docmask(filters)
        rows = self.rows if docmask is not None else None
        with self._lex_lock:
            allow = rows.lexical_allow(docmask) if rows is not None and docmask is not None else None
            passages = self.lexical.search(list(terms), k, exp, allow=allow)
            if dw <= 0:
                return passages
            dallow = rows.doclex_allow(docmask) if rows is not None and docmask is not None else None
            # Twice as deep: a passage near the cut should still find its document's score.
            docs = self.doc_lexical.search(list(terms), 2 * k, exp, allow=dallow)
        return with_documents(passages, docs, dw)[:k]

    def dense(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        docmask = self._docmask(filters)
        allowed = self.rows.segment_masks(docmask) if docmask is not None else None
        hits = search_segments(self.vector_segments, vector, k, allowed)
        return [(self.segments[name].pid(row), score) for score, name, row in hits]

    def facets(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        words: bool = True,
        question: str | None = None,
    ) -> Facets:
        """Facet counts over every matching passage (``words``: those the terms match,
        else every passage that passes the filters)."""
        rows = self.rows
        docmask = self._docmask(filters)
        if words:
            with self._lex_lock:
                docs, pns, _ = rows.lexical_matches(terms, expansions, docmask)
        else:
            docs, pns = rows.all_passages(docmask if docmask is not None else np.ones(rows.n_docs, bool))
        return rows.facets(docs, pns)

    def newest(
        self,
        terms: Sequence[str],
        expansions: Sequence[str],
        filters: Filters | None,
        limit: int,
        question: str | None = None,
    ) -> list[tuple[str, float | None, float]]:
        """The matching passages newest first (undated last), BM25 breaking ties:
        ``(passage id, timestamp, bm25)``, at least ``limit`` and every tie at the cut."""
        rows = self.rows
        with self._lex_lock:
            docs, pns, scores = rows.lexical_matches(terms, expansions, self._docmask(filters))
        ts = rows.published(docs)
        key = np.where(np.isnan(ts), -np.inf, ts)
        order = np.lexsort((pns, docs, -scores, -key))
        if limit < len(order):
            cut = key[order[limit - 1]]
            order = order[: limit + int(np.count_nonzero(key[order[limit:]] == cut))]
        return [
            (rows.pid(int(docs[i]), int(pns[i])), None if np.isnan(ts[i]) else float(ts[i]), float(scores[i]))
            for i in order.tolist()
        ]

    def loc(self, doc_id: str) -> tuple[str, int, int] | None:
        """(segment, first row, rows) of a live document."""
        i = self._pos.get(doc_id)
        if i is None:
            return None
        r = self._rows[i]
        return r[self._i_seg], r[self._i_start], r[self._i_n]

    def _row(self, pid: str) -> tuple[_Segment, int, int] | None:
        """(segment, row, article index) of a live passage id ``doc_id#n``."""
        doc_id, sep, n = pid.rpartition("#")
        loc = self.loc(doc_id) if sep else None
        if loc is None or not n.isdigit() or int(n) >= loc[2]:
            return None
        seg = self.segments[loc[0]]
        row = loc[1] + int(n)
        return seg, row, int(seg.row_doc[row])

    def passage(self, pid: str) -> Passage | None:
        r = self._row(pid)
        if r is None:
            return None
        seg, row, d = r
        st, en = (int(x) for x in seg.spans[row])
        art = seg.articles[d]
        return Passage(pid, art.id, st, en, art.text[st:en])

    def article(self, doc_id: str) -> Article | None:
        loc = self.loc(doc_id)
        if loc is None:
            return None
        seg = self.segments[loc[0]]
        return seg.articles[seg.by_id[doc_id]]

    def doc(self, doc_id: str) -> DocRecord | None:
        rec = self._recs.get(doc_id)
        if rec is None:
            i = self._pos.get(doc_id)
            if i is None:
                return None
            d = dict(zip(self._fields, self._rows[i]))
            d.pop("segment")
            d.pop("row_start")
            rec = self._recs[doc_id] = DocRecord(**d)
        return rec

    def all_docs(self) -> list[DocRecord]:
        return [r for d in self._pos if (r := self.doc(d)) is not None]

    @property
    def n_docs(self) -> int:
        return len(self._rows)

    def passages_of(self, doc_id: str) -> list[Passage]:
        rec = self.doc(doc_id)
        if rec is None:
            return []
        return [p for i in range(rec.passages) if (p := self.passage(f"{doc_id}#{i}")) is not None]

    def sentences(self, pid: str) -> list[str]:
        r = self._row(pid)
        if r is None:
            return []
        seg, row, d = r
        text = seg.articles[d].text
        lo, hi = int(seg.sentoff[row]), int(seg.sentoff[row + 1])
        return [text[a:b] for a, b in seg.sents[lo:hi].tolist()]

    def signatures(self) -> list[tuple[str, str | None, np.ndarray]]:
        """``(doc id, duplicate_of, MinHash signature)`` of every live document."""
        out = []
        for r in self._rows:
            doc_id, name = r[0], r[self._i_seg]
            seg = self.segments[name]
            out.append((doc_id, r[self._i_dup], seg.minhash[seg.by_id[doc_id]]))
        return out

    def idf(self, term: str) -> float:
        with self._lex_lock:
            return self.lexical.idf(term)

    def close(self) -> None:
        self.lexical.close()
        self.doc_lexical.close()


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

    def passages_of(self, doc_id: str) -> list[Passage]:
        return self.snap.passages_of(doc_id)

    def signatures(self) -> list[tuple[str, str | None, np.ndarray]]:
        return self.snap.signatures()

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
            write_generation(self.root, batch, self._cache)
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
    _cleanup(root, None)  # a writer killed before CURRENT was first written
    gen = "gen-000001"
    tmp = root / (gen + ".tmp")
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
    write_docs(tmp, {})
    os.rename(tmp, root / gen)
    _write_text(root / CURRENT, gen + "\n")
    _fsync_dir(root)


def recorded_sources(root: Path) -> list[str]:
    """The sources a (possibly unreadable) index recorded, read straight from its manifest."""
    try:
        gen = read_current(root)
        m = json.loads((root / gen / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, IndexFormatError, IndexMissingError):
        return []
    return [s for s in m.get("sources", []) if isinstance(s, str)]


def clear_index(root: Path) -> None:
    """Remove every generation of an index (under the writer lock), keeping the folder."""
    with writer_lock(root):
        (root / CURRENT).unlink(missing_ok=True)
        for p in root.iterdir():
            if p.name.startswith("gen-") and p.is_dir():
                shutil.rmtree(p, ignore_errors=True)


def _link_copy(src: Path, dst: Path) -> None:
    """Copy a generation directory with hard links (falls back to copying)."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link)


def _cleanup(root: Path, current: str | None) -> None:
    """Remove what a killed writer left and what no reader can still hold. Caller holds the lock.

    - ``gen-*.tmp``: a write that never finished;
    - generations newer than ``CURRENT`` (or any, when there is no ``CURRENT``): a writer
      killed after renaming its generation into place and before switching ``CURRENT``.
      ``CURRENT`` never named them, so no reader has them open;
    - generations older than the last ``KEEP_OLD_GENERATIONS``: readers that read
      ``CURRENT`` just before a switch may still be opening those.
    """
    cur = _gen_number(current) if current is not None else None
    for p in root.iterdir():
        if not p.name.startswith("gen-") or p.is_symlink() or not p.is_dir():
            continue
        if p.name.endswith(".tmp"):
            shutil.rmtree(p, ignore_errors=True)
            continue
        try:
            n = _gen_number(p.name)
        except ValueError:
            continue
        if cur is None and not (p / "lexical").is_dir():
            continue  # not one of ours: an index folder holds nothing else named gen-*
        if cur is None or n > cur:
            log.warning("removing %s: a writer was stopped before it switched to it", p.name)
            shutil.rmtree(p, ignore_errors=True)
        elif n < cur - KEEP_OLD_GENERATIONS:
            shutil.rmtree(p, ignore_errors=True)


def write_generation(root: Path, batch: WriteBatch, cache: dict[str, _Segment] | None = None) -> str:
    """Apply one batch as a new generation and switch to it. Caller holds the lock.

    ``cache`` holds segments already loaded by this process (immutable, so any
    generation's copy will do); the cost of a write is then the new segment, the
    document table and whoosh's commit, not the size of the index.
    """
    cache = {} if cache is None else cache
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
    docs = read_docs(src)

    segments = {s["name"]: s for s in manifest["segments"]}
    # Every segment is built with the ANN spec the index recorded (a rebuild takes the default).
    if batch.reset or "ann" not in manifest:
        manifest["ann"] = DEFAULT_ANN.to_dict()

    def seg(name: str) -> _Segment:
        if name not in cache:
            cache[name] = _load_segment(tmp, name)
        return cache[name]

    def analysed_passages(doc_id: str) -> tuple[dict[str, str | tuple[str, str]], str]:
        """What the passage index and the document index hold for one live document."""
        r = docs[doc_id]
        s = seg(r["segment"])
        art = s.articles[s.by_id[doc_id]]
        title = " ".join(analyze(headline(art.title, art.text)))
        out: dict[str, str | tuple[str, str]] = {}
        for i in range(r["passages"]):
            a, b = (int(x) for x in s.spans[r["row_start"] + i])
            out[f"{doc_id}#{i}"] = (" ".join(analyze(art.text[a:b])), title)
        return out, _doc_text(art)

    # Within one batch the last version of a document wins.
    last = {a.id: i for i, a in enumerate(batch.articles)}
    keep = [i for i, a in enumerate(batch.articles) if last[a.id] == i]

    def pick(xs: list[Any], default: Any) -> list[Any]:
        return [xs[i] if i < len(xs) else default for i in keep]

    articles = [batch.articles[i] for i in keep]
    passages = [batch.passages[i] for i in keep]
    vectors = [batch.vectors[i] for i in keep]
    duplicate_of = pick(batch.duplicate_of, None)
    sentences = pick(batch.sentences, [])
    minhash = pick(batch.minhash, "")
    writer = lx.LexicalWriter(tmp / "lexical")
    doc_writer = lx.LexicalWriter(tmp / "lexical", indexname=lx.DOCS)
    try:
        to_delete = set(batch.remove)
        if batch.reset:
            to_delete |= set(docs)
        to_delete |= {a.id for a in articles if a.id in docs}
        for doc_id in sorted(to_delete):
            if doc_id not in docs:
                continue
            in_passages, in_doc = analysed_passages(doc_id)
            writer.delete_doc(doc_id, in_passages)
            doc_writer.delete_doc(doc_id, {doc_id: in_doc})
            del docs[doc_id]

        if articles:
            name = f"seg-{manifest['next_segment']:06d}"
            manifest["next_segment"] += 1
            ts = now_iso()
            row = 0
            for i, art in enumerate(articles):
                ps = passages[i]
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
                    "duplicate_of": duplicate_of[i],
                    "segment": name,
                    "row_start": row,
                    "published_ts": art.published_ts,
                    "metadata": dict(art.metadata) or None,
                }
                row += len(ps)
                title = " ".join(analyze(headline(art.title, art.text)))
                for p in ps:
                    writer.add(p.id, p.doc_id, " ".join(analyze(p.text)), title)
                doc_writer.add(art.id, art.id, _doc_text(art))
            dim = int(manifest.get("embedding", {}).get("dim", 0)) or (vectors[0].shape[1] if vectors else 0)
            allv = np.concatenate([np.asarray(v, np.float32).reshape(-1, dim) for v in vectors])
            sigs = (
                np.stack([dedup_decode(m) for m in minhash])
                if all(minhash)
                else np.zeros((len(articles), 0), np.uint32)
            )
            segments[name] = _write_segment(
                tmp,
                name,
                articles,
                [[(p.start, p.end) for p in ps] for ps in passages],
                [ss or [[] for _ in ps] for ss, ps in zip(sentences, passages)],
                allv,
                sigs,
                manifest["ann"],
            )
        writer.commit()
        doc_writer.commit()
        _merge_vector_segments(tmp, manifest, segments, docs, seg)
    except BaseException:
        writer.cancel()
        doc_writer.cancel()
        shutil.rmtree(tmp, ignore_errors=True)
        raise

    # Segments no live document points at are dropped from this generation.
    used = {r["segment"] for r in docs.values()}
    for name in list(segments):
        if name not in used:
            del segments[name]
            for suffix in SEGMENT_SUFFIXES:
                (tmp / f"{name}{suffix}").unlink(missing_ok=True)

    if batch.embedding:
        # Record how the vectors were made (backend, ONNX hash, measured distance to the
        # sentence-transformers reference); model and dimension were checked on open.
        manifest.setdefault("embedding", {}).update(
            {k: v for k, v in batch.embedding.items() if k not in ("model_id", "dim")}
        )
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
    write_docs(tmp, docs)
    _write_text(tmp / "manifest.json", json.dumps(manifest, indent=2))
    _fsync_dir(tmp)
    os.rename(tmp, root / new)
    _fsync_dir(root)
    # The commit point: one atomic rename of a small file.
    _write_text(root / CURRENT, new + "\n")
    _fsync_dir(root)
    return new


def _doc_text(art: Article) -> str:
    """An article as the document-level index holds it: its title and whole text, analysed."""
    return " ".join(analyze(f"{headline(art.title, art.text)}\n{art.text}"))


def _tier(rows: int) -> int:
    return int(math.log10(max(rows, 1)))


def _merge_vector_segments(
    tmp: Path,
    manifest: dict[str, Any],
    segments: dict[str, dict[str, Any]],
    docs: dict[str, dict[str, Any]],
    seg: Any,
) -> None:
    """Merge segments that share a size tier once there are MERGE_FANOUT of them (LSM).

    A merge copies only live rows, so it also drops the rows of removed documents.
    """
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
        members = set(names)
        arts: list[Article] = []
        spans: list[list[tuple[int, int]]] = []
        sents: list[list[list[tuple[int, int]]]] = []
        vecs: list[np.ndarray] = []
        sigs: list[np.ndarray] = []
        moved: list[dict[str, Any]] = []
        for doc_id, r in docs.items():
            if r["segment"] not in members:
                continue
            s = seg(r["segment"])
            d = s.by_id[doc_id]
            lo, hi = r["row_start"], r["row_start"] + r["passages"]
            arts.append(s.articles[d])
            spans.append([tuple(x) for x in s.spans[lo:hi].tolist()])
            sents.append(
                [[tuple(y) for y in s.sents[s.sentoff[i] : s.sentoff[i + 1]].tolist()] for i in range(lo, hi)]
            )
            vecs.append(np.asarray(s.vectors[lo:hi], dtype=np.float32))
            sigs.append(s.minhash[d] if s.minhash.size else np.zeros(0, np.uint32))
            moved.append(r)
        minhash = (
            np.stack(sigs) if sigs and all(len(x) for x in sigs) else np.zeros((len(arts), 0), np.uint32)
        )
        segments[new] = _write_segment(
            tmp, new, arts, spans, sents, np.concatenate(vecs), minhash, manifest["ann"]
        )
        start = 0
        for r in moved:
            r["segment"], r["row_start"] = new, start
            start += r["passages"]
