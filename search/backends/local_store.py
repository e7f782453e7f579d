"""Immutable segments: passage vectors and the articles written with them, read lazily.

A segment is what one write (or one merge) adds; it is never modified, so index
generations share it through hard links and a process loads it once. Files of
segment ``seg-N`` (plain numpy and bytes, no pickle):

``.npy``          float32 [rows, dim] passage vectors (:mod:`search.vectors`), memory-mapped
``.faiss``        its ANN index, when the segment is large enough (:mod:`search.vectors`)
``.store.bin``    per article: its text (UTF-8), then a JSON record of what a document
                  record shows, then a JSON record of its entities and sentence spans
``.store.npy``    int64 [docs + 1, 5]: where each article's text, record and enrichment start
                  in ``.store.bin``, its first passage row and its first sentence; the last
                  row holds the ends
``.spans.npy``    int32 [rows, 2] passage spans in article coordinates
``.sents.npy``    int32 [n, 2] sentence spans of the passages; ``.sentoff.npy`` int64
                  [rows + 1] where each passage's sentences start
``.minhash.npy``  uint32 [docs, 128] near-duplicate signatures (or [docs, 0])
``.sentvec.npy``  float16 [sentences, dim] the articles' sentence vectors, in article order
``.ents.npy``     int32 [m] the people and teams each passage names (codes, by passage row),
                  ``.entoff.npy`` int64 [rows + 1], ``.ents.json`` the codes' [group, name]

Nothing but these arrays' headers is read when a segment opens: an article's text and
records are read (``pread``) when a query asks for them, and a small LRU keeps the
articles a query is reading, so a serving process holds no article objects for the
corpus (a million passages opened in milliseconds instead of seconds and gigabytes).
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexFormatError
from ..facets import entity_group
from ..types import Article
from ..vectors import ANN_SUFFIX, AnnSpec, load_vectors, save_npy, save_vectors, write_ann

# Columns of ``.store.npy``.
TEXT, RECORD, ENRICH, ROW, SENT = range(5)
#: Articles and texts kept decoded per segment: a query reads at most a few dozen
#: articles (the answer stage reads 20), and the same stories come back question after question.
ARTICLE_CACHE = 256
TEXT_CACHE = 1024
#: Bytes copied at a time when segments are merged: merges stream, whatever the segment size.
COPY_BYTES = 32 << 20
#: The fields of an article kept in its record (the rest are its text and enrichment).
RECORD_FIELDS = (
    "id",
    "title",
    "source",
    "url",
    "published",
    "published_ts",
    "path",
    "content_hash",
    "metadata",
)

SEGMENT_SUFFIXES = (
    ".npy",
    ".store.bin",
    ".store.npy",
    ".spans.npy",
    ".sents.npy",
    ".sentoff.npy",
    ".minhash.npy",
    ".sentvec.npy",
    ".ents.npy",
    ".entoff.npy",
    ".ents.json",
    ANN_SUFFIX,
)


def mapped(path: str | Path) -> np.ndarray:
    """A .npy file memory-mapped, as a plain ndarray view (indexing a ``np.memmap`` runs
    Python hooks on every access: ~3x slower for the scalar reads a query makes).

    Read-ahead is off: a query touches scattered rows, and the kernel's read-ahead
    would map (and count in the process's RSS) pages around each of them.
    """
    m = np.load(path, mmap_mode="r", allow_pickle=False)
    mm = getattr(m, "_mmap", None)
    if mm is not None and hasattr(mmap, "MADV_RANDOM"):
        mm.madvise(mmap.MADV_RANDOM)
    return m.view(np.ndarray)


class Rows:
    """Rows of a 2-d .npy file read with ``pread`` when asked for, never mapped: the
    sentence vectors of a million passages (gigabytes) cost a serving process nothing
    until the answer stage reads an article's few rows."""

    def __init__(self, path: str | Path) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed with the object)
        f = open(path, "rb")  # noqa: SIM115
        with f:
            version = np.lib.format.read_magic(f)
            read = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read(f)
            self.offset = f.tell()
        if fortran or len(shape) != 2:
            raise ValueError(f"{path}: expected a 2-d C-order array")
        self.shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
        self.dtype = np.dtype(dtype)
        self.ndim = 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: slice) -> np.ndarray:
        a, b, _ = rows.indices(self.shape[0])
        b = max(a, b)
        width = self.shape[1] * self.dtype.itemsize
        raw = (
            os.pread(self._file.fileno(), (b - a) * width, self.offset + a * width)
            if b > a and width
            else b""
        )
        return np.frombuffer(raw, dtype=self.dtype).reshape(b - a, self.shape[1])

    def __del__(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def _json(obj: Any) -> bytes:
    return _utf8(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


class _LRU:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)


class Segment:
    """One segment, opened: arrays memory-mapped, articles read from disk when asked for."""

    def __init__(self, gen_dir: Path, name: str) -> None:
        base = f"{gen_dir / name}"
        self.name = name
        self.vectors = load_vectors(gen_dir / f"{name}.npy")

        def arr(suffix: str) -> np.ndarray:
            return mapped(f"{base}{suffix}")

        try:
            self.offsets = arr(".store.npy")
            self._file = open(f"{base}.store.bin", "rb", buffering=0)  # noqa: SIM115 (closed with the segment)
        except FileNotFoundError:
            if Path(f"{base}.docs.jsonl").exists():
                raise IndexFormatError(
                    f"{base} is a segment of an older index format: rebuild with `search reindex`"
                ) from None
            raise
        self.spans = arr(".spans.npy")
        self.sents = arr(".sents.npy")
        self.sentoff = arr(".sentoff.npy")
        self.minhash = arr(".minhash.npy")
        self.sentvec = Rows(f"{base}.sentvec.npy")
        # Everything is opened now (maps and small reads), nothing later by path: a
        # generation's directory may be removed while a reader still holds its segments.
        self._entoff = arr(".entoff.npy")
        self._entcodes = arr(".ents.npy")
        self._entvocab_raw = Path(f"{base}.ents.json").read_bytes()
        self._ents: tuple[np.ndarray, np.ndarray, list[tuple[str, str]]] | None = None
        self.n_docs = len(self.offsets) - 1
        self.rows = int(self.offsets[-1, ROW])
        if len(self.spans) != len(self.vectors) or self.rows != len(self.vectors):
            raise IndexFormatError(
                f"{base}: {len(self.spans)} passages but {len(self.vectors)} vectors: rebuild with `search reindex`"
            )
        self._texts = _LRU(TEXT_CACHE)
        self._articles = _LRU(ARTICLE_CACHE)
        self.facet_cache: dict[str, Any] = {}

    def close(self) -> None:
        self._file.close()

    def __del__(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()

    # -- rows and documents ------------------------------------------------------------
    def row_start(self, d: int) -> int:
        return int(self.offsets[d, ROW])

    def doc_of_row(self, row: int) -> int:
        """The article (ordinal in this segment) a passage row belongs to."""
        return int(np.searchsorted(self.offsets[:, ROW], row, side="right")) - 1

    def pid(self, row: int) -> str:
        d = self.doc_of_row(row)
        return f"{self.record(d)['id']}#{row - self.row_start(d)}"

    # -- reading from disk ---------------------------------------------------------------
    def _read(self, start: int, end: int) -> bytes:
        return os.pread(self._file.fileno(), end - start, start)

    def text(self, d: int) -> str:
        """Article ``d``'s whole text (one read, cached)."""
        got = self._texts.get(d)
        if got is None:
            a, b = int(self.offsets[d, TEXT]), int(self.offsets[d, RECORD])
            got = self._read(a, b).decode("utf-8", "surrogatepass")
            self._texts.put(d, got)
        return got  # type: ignore[no-any-return]

    def record(self, d: int) -> dict[str, Any]:
        """Article ``d``'s record: id, title, source, url, dates, path, hash, metadata, added, duplicate_of."""
        a, b = int(self.offsets[d, RECORD]), int(self.offsets[d, ENRICH])
        return json.loads(self._read(a, b))  # type: ignore[no-any-return]

    def article(self, d: int) -> Article:
        """Article ``d`` whole: text, record, entities, sentence spans and vectors (cached)."""
        got = self._articles.get(d)
        if got is not None:
            return got  # type: ignore[no-any-return]
        a, b, c, e = (
            int(x) for x in self.offsets[d, [TEXT, RECORD, ENRICH]].tolist() + [self.offsets[d + 1, TEXT]]
        )
        raw = self._read(a, e)
        text = raw[: b - a].decode("utf-8", "surrogatepass")
        rec = json.loads(raw[b - a : c - a])
        enr = json.loads(raw[c - a :])
        art = Article.from_dict(
            {**rec, "text": text, "entities": enr.get("entities"), "sentences": enr.get("sentences")}
        )
        s0, s1 = int(self.offsets[d, SENT]), int(self.offsets[d + 1, SENT])
        if s1 - s0 == len(art.sentences) and self.sentvec.ndim == 2 and self.sentvec.shape[1]:
            art.sentence_vectors = self.sentvec[s0:s1]
        self._articles.put(d, art)
        return art

    def sentences(self, row: int) -> list[tuple[int, int]]:
        lo, hi = int(self.sentoff[row]), int(self.sentoff[row + 1])
        return [(int(a), int(b)) for a, b in self.sents[lo:hi].tolist()]

    def entities(self) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
        """The facet entities: (offsets by passage row, codes, vocabulary code -> (group, name))."""
        if self._ents is None:
            vocab = json.loads(self._entvocab_raw)
            self._ents = (self._entoff, self._entcodes, [(g, n) for g, n in vocab])
        return self._ents


# ----------------------------------------------------------------------------- writing


class _Npy:
    """An .npy file written in pieces (header first, rows appended), then fsynced and renamed:
    a merge of a million rows never holds them all."""

    def __init__(self, path: Path, dtype: Any, shape: tuple[int, ...]) -> None:
        self.path = path
        self.tmp = path.with_name(path.name + ".tmp")
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.f = open(self.tmp, "wb")  # noqa: SIM115 (closed in close())
        np.lib.format.write_array_header_1_0(
            self.f,
            {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": shape},
        )
        self.written = 0

    def write(self, x: np.ndarray) -> None:
        x = np.ascontiguousarray(x, dtype=self.dtype)
        self.f.write(x.tobytes())
        self.written += len(x)

    def close(self) -> None:
        if self.written != self.shape[0]:
            raise ValueError(f"{self.path}: wrote {self.written} rows of {self.shape[0]}")
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.f.close()
        self.tmp.unlink(missing_ok=True)


def _write_bytes(path: Path, chunks: Iterable[bytes]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        for c in chunks:
            f.write(c)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def facet_entities(
    articles: Sequence[Article], spans: Sequence[Sequence[tuple[int, int]]], countries: frozenset[str]
) -> tuple[list[list[int]], list[tuple[str, str]]]:
    """Per passage (in row order) the codes of the people and teams it names, and the vocabulary.

    An entity inside two overlapping passages counts in both, as each passage names it.
    """
    vocab: dict[tuple[str, str], int] = {}
    per_row: list[list[int]] = []
    for art, ps in zip(articles, spans):
        rows: list[list[int]] = [[] for _ in ps]
        for s, e, label in art.entities:
            group = entity_group(label, art.text[s:e], countries)
            if group is None:
                continue
            code = vocab.setdefault((group, " ".join(art.text[s:e].split())), len(vocab))
            for j, (ps_, pe) in enumerate(ps):
                if ps_ <= s and e <= pe:
                    rows[j].append(code)
        per_row.extend(rows)
    return per_row, list(vocab)


def write_segment(
    gen_dir: Path,
    name: str,
    articles: list[Article],
    passages: list[list[tuple[int, int]]],
    sentences: list[list[list[tuple[int, int]]]],
    vectors: np.ndarray,
    minhash: np.ndarray,
    extra: list[dict[str, Any]],
    countries: frozenset[str],
    ann: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write one immutable segment from articles in memory; returns its manifest entry:
    its row count, and the ANN spec its index was built with (from the index's recorded
    ``ann``; none when the segment is small enough to be searched exactly).

    ``extra`` per article: what its record adds to the article's own fields (``added``,
    ``duplicate_of``).
    """
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    chunks: list[bytes] = []
    offsets = np.zeros((len(articles) + 1, 5), dtype=np.int64)
    spans: list[tuple[int, int]] = []
    sents: list[tuple[int, int]] = []
    sentoff = [0]
    at = n_sent = 0
    for d, (a, ps, ss, ex) in enumerate(zip(articles, passages, sentences, extra)):
        rec = {f: getattr(a, f) for f in RECORD_FIELDS}
        rec["metadata"] = dict(a.metadata) or None
        rec.update(ex)
        enr = {"entities": [list(e) for e in a.entities], "sentences": [list(s) for s in a.sentences]}
        parts = (_utf8(a.text), _json(rec), _json(enr))
        offsets[d] = (at, at + len(parts[0]), at + len(parts[0]) + len(parts[1]), len(spans), n_sent)
        chunks.extend(parts)
        at += sum(len(p) for p in parts)
        n_sent += len(a.sentences)
        for i, p in enumerate(ps):
            spans.append(p)
            sents.extend(ss[i] if i < len(ss) else [])
            sentoff.append(len(sents))
    offsets[-1] = (at, at, at, len(spans), n_sent)
    base = gen_dir / name
    _write_bytes(Path(f"{base}.store.bin"), chunks)
    ent_rows, vocab = facet_entities(articles, passages, countries)
    entoff = np.zeros(len(ent_rows) + 1, dtype=np.int64)
    entoff[1:] = np.cumsum([len(r) for r in ent_rows])
    for suffix, arr in (
        (".store.npy", offsets),
        (".spans.npy", np.asarray(spans, dtype=np.int32).reshape(-1, 2)),
        (".sents.npy", np.asarray(sents, dtype=np.int32).reshape(-1, 2)),
        (".sentoff.npy", np.asarray(sentoff, dtype=np.int64)),
        (".minhash.npy", np.asarray(minhash, dtype=np.uint32).reshape(len(articles), -1)),
        (".entoff.npy", entoff),
        (".ents.npy", np.asarray([c for r in ent_rows for c in r], dtype=np.int32)),
        (".sentvec.npy", _sentence_vectors(articles, dim)),
    ):
        save_npy(Path(f"{base}{suffix}"), arr)
    _write_bytes(Path(f"{base}.ents.json"), [_json([list(v) for v in vocab])])
    save_vectors(gen_dir / f"{name}.npy", vectors)
    return _entry(name, len(spans), write_ann(gen_dir / f"{name}.npy", vectors, AnnSpec.from_dict(ann)))


def _entry(name: str, rows: int, spec: AnnSpec | None) -> dict[str, Any]:
    """A segment's manifest entry."""
    return {"name": name, "rows": rows, **({"ann": spec.to_dict()} if spec else {})}


def _sentence_vectors(articles: list[Article], dim: int) -> np.ndarray:
    """The articles' sentence vectors stacked (zeros where an article has none)."""
    parts = [
        np.asarray(a.sentence_vectors, dtype=np.float16).reshape(len(a.sentences), -1)
        if a.sentence_vectors is not None and len(a.sentence_vectors) == len(a.sentences)
        else np.zeros((len(a.sentences), dim), np.float16)
        for a in articles
    ]
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float16)


def _runs(ordinals: np.ndarray) -> list[tuple[int, int]]:
    """Sorted ordinals as half-open runs of consecutive values."""
    if not len(ordinals):
        return []
    breaks = np.flatnonzero(np.diff(ordinals) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(ordinals)]])
    return [(int(ordinals[s]), int(ordinals[e - 1]) + 1) for s, e in zip(starts, ends)]


def merge_segments(
    gen_dir: Path,
    name: str,
    members: list[tuple[str, np.ndarray]],
    open_segment: Callable[[str], Segment],
    progress: Callable[[int], None] | None = None,
    ann: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write segment ``name`` from the given articles (ordinals, ascending) of other segments,
    in that order: a streaming copy of bytes and array rows, never the whole segment in memory.

    Returns its manifest entry (as :func:`write_segment`). The vectors are copied row for
    row and the ANN index built, with the index's recorded spec ``ann``, from the new file (:func:`search.vectors.write_ann`). Members are opened one at a
    time (``open_segment``), so a merge of hundreds of segments holds one open.
    """
    runs_of = [_runs(np.asarray(ords, dtype=np.int64)) for _, ords in members]

    def total(col: int, seg: Segment, runs: list[tuple[int, int]]) -> int:
        return sum(int(seg.offsets[b, col] - seg.offsets[a, col]) for a, b in runs)

    docs = sum(b - a for runs in runs_of for a, b in runs)
    rows = n_sentvec = n_sents = n_ents = 0
    dim = sv_dim = mh_dim = -1
    vocab: dict[tuple[str, str], int] = {}
    remaps: list[np.ndarray] = []
    for (seg_name, _), r in zip(members, runs_of):
        s = open_segment(seg_name)
        rows += total(ROW, s, r)
        n_sentvec += total(SENT, s, r)
        n_sents += sum(int(s.sentoff[s.offsets[b, ROW]] - s.sentoff[s.offsets[a, ROW]]) for a, b in r)
        entoff, _, v = s.entities()
        n_ents += sum(int(entoff[s.offsets[b, ROW]] - entoff[s.offsets[a, ROW]]) for a, b in r)
        remaps.append(np.asarray([vocab.setdefault((g, n), len(vocab)) for g, n in v], dtype=np.int32))
        if dim < 0:
            dim = s.vectors.shape[1]
            sv_dim = s.sentvec.shape[1] if s.sentvec.ndim == 2 else 0
            mh_dim = s.minhash.shape[1] if s.minhash.ndim == 2 else 0
        if s.minhash.shape[1:] != (mh_dim,):
            mh_dim = 0  # some member has no signatures: the merged segment has none
        del s
    dim, sv_dim, mh_dim = max(dim, 0), max(sv_dim, 0), max(mh_dim, 0)
    base = gen_dir / name
    outs = {
        "vec": _Npy(gen_dir / f"{name}.npy", np.float32, (rows, dim)),
        "off": _Npy(Path(f"{base}.store.npy"), np.int64, (docs + 1, 5)),
        "spans": _Npy(Path(f"{base}.spans.npy"), np.int32, (rows, 2)),
        "sents": _Npy(Path(f"{base}.sents.npy"), np.int32, (n_sents, 2)),
        "sentoff": _Npy(Path(f"{base}.sentoff.npy"), np.int64, (rows + 1,)),
        "minhash": _Npy(Path(f"{base}.minhash.npy"), np.uint32, (docs, mh_dim)),
        "sentvec": _Npy(Path(f"{base}.sentvec.npy"), np.float16, (n_sentvec, sv_dim)),
        "entoff": _Npy(Path(f"{base}.entoff.npy"), np.int64, (rows + 1,)),
        "ents": _Npy(Path(f"{base}.ents.npy"), np.int32, (n_ents,)),
    }
    store_tmp = Path(f"{base}.store.bin.tmp")
    try:
        with open(store_tmp, "wb") as store:
            at = np.zeros(5, dtype=np.int64)  # bytes, -, -, rows, sentences written so far
            n_s = n_e = 0
            outs["sentoff"].write(np.zeros(1, np.int64))
            outs["entoff"].write(np.zeros(1, np.int64))
            for (seg_name, _), runs, remap in zip(members, runs_of, remaps):
                seg = open_segment(seg_name)
                entoff, ents, _ = seg.entities()
                for a, b in runs:
                    off = np.asarray(seg.offsets[a : b + 1], dtype=np.int64)
                    shift = at - off[0]
                    shift[RECORD] = shift[ENRICH] = shift[TEXT]
                    outs["off"].write(off[:-1] + shift)
                    lo, hi = int(off[0, TEXT]), int(off[-1, TEXT])
                    for c in range(lo, hi, COPY_BYTES):
                        store.write(seg._read(c, min(hi, c + COPY_BYTES)))
                    r0, r1 = int(off[0, ROW]), int(off[-1, ROW])
                    for c in range(r0, r1, max(1, COPY_BYTES // max(4 * dim, 1))):
                        outs["vec"].write(
                            np.asarray(seg.vectors[c : min(r1, c + COPY_BYTES // max(4 * dim, 1))])
                        )
                    outs["spans"].write(np.asarray(seg.spans[r0:r1]))
                    so = np.asarray(seg.sentoff[r0 : r1 + 1], dtype=np.int64)
                    outs["sents"].write(np.asarray(seg.sents[so[0] : so[-1]]))
                    outs["sentoff"].write(so[1:] - so[0] + n_s)
                    n_s += int(so[-1] - so[0])
                    eo = np.asarray(entoff[r0 : r1 + 1], dtype=np.int64)
                    outs["ents"].write(remap[np.asarray(ents[eo[0] : eo[-1]], dtype=np.int64)])
                    outs["entoff"].write(eo[1:] - eo[0] + n_e)
                    n_e += int(eo[-1] - eo[0])
                    outs["minhash"].write(
                        np.asarray(seg.minhash[a:b]) if mh_dim else np.zeros((b - a, 0), np.uint32)
                    )
                    s0, s1 = int(off[0, SENT]), int(off[-1, SENT])
                    step = max(1, COPY_BYTES // max(2 * sv_dim, 1))
                    for c in range(s0, s1, step):
                        outs["sentvec"].write(np.asarray(seg.sentvec[c : min(s1, c + step)]))
                    at += off[-1] - off[0]
                    at[RECORD] = at[ENRICH] = at[TEXT]
                    if progress:
                        progress(b - a)
            outs["off"].write(at.reshape(1, 5))
            store.flush()
            os.fsync(store.fileno())
        os.replace(store_tmp, Path(f"{base}.store.bin"))
        for o in outs.values():
            o.close()
    except BaseException:
        for o in outs.values():
            if not o.f.closed:
                o.abort()
        store_tmp.unlink(missing_ok=True)
        raise
    _write_bytes(Path(f"{base}.ents.json"), [_json([list(v) for v in vocab])])
    return _entry(name, rows, write_ann(gen_dir / f"{name}.npy", None, AnnSpec.from_dict(ann)))


def remove_segment(gen_dir: Path, name: str) -> None:
    for suffix in SEGMENT_SUFFIXES:
        (gen_dir / f"{name}{suffix}").unlink(missing_ok=True)
