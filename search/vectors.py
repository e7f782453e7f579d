"""Dense retrieval: passage vectors in immutable segments, searched exactly or with an ANN index.

Each write adds a segment file (``float32 [rows, dim]``, or int8 codes for a segment with
an ANN index: :mod:`search.vector_codes`; saved with numpy, ``allow_pickle=False``); a
segment is never modified, so index generations can share it through hard links. Rows whose passages were removed or replaced are masked out, so
they never come back from a search. Small segments are merged by the writer (LSM-style)
so a query searches only a handful.

Vectors are L2-normalised, so inner product is cosine similarity.

How a segment is searched depends on its size (``search_method``):

``numpy``  (rows <= ``NUMPY_MAX_ROWS``)
    Exact inner products with numpy (one matrix-vector product and a partial sort).
    Same results as FAISS ``IndexFlatIP`` (tested), and a query never imports faiss,
    which costs 0.1-0.3 s of a cold start.
``flat``   (larger, without an ANN file)
    Exact FAISS ``IndexFlatIP``.
``ann``    (a ``seg-N.faiss`` file beside ``seg-N.npy``)
    The index :mod:`search.ann` describes (``DEFAULT_ANN`` for a new index: see the
    measurements beside it), built once at write time by :func:`write_ann` for segments
    of at least ``ANN_MIN_ROWS`` rows. It holds 8-bit codes, not floats; its candidates
    are re-scored from the ``.npy`` (int8 codes decoded to unit float32 rows; float16
    in an older index). A reader never builds one: a large segment without its file is
    searched exactly, which is slower but never wrong.

Liveness masks apply to every method: numpy masks scores, FAISS takes an
``IDSelectorBitmap``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import ann
from .ann import AnnSpec
from .vector_codes import as_float32, as_stored, passage_dtype

log = logging.getLogger(__name__)

#: Segments up to this many rows are searched with numpy. Measured (docs/benchmarks.md,
#: 2 cores): ~1 ms a query at 10k rows, ~2 ms at 20k, against ~1 ms for IVF at 100k;
#: below this size exact search is cheap and a cold query skips faiss's import.
NUMPY_MAX_ROWS = 20_000
#: Segments of at least this many rows get an ANN index at write time.
ANN_MIN_ROWS = 20_000
#: One query is searched on one thread: a matrix-vector product gains little from a
#: second core, and on a busy machine OpenMP/BLAS threads spin-waiting for a core
#: turned 1 ms into 50-80 ms (measured). Index building uses every core.
QUERY_THREADS = 1
#: A filtered search over at most this many allowed rows gathers them and scores them
#: exactly with numpy; above it FAISS searches with a bitmap selector (FILTERS_NOTES.md).
EXACT_ALLOWED_ROWS = 2_048
ANN_SUFFIX = ".faiss"
#: The ANN index a new index builds its large segments with (an index keeps the spec it
#: recorded in its manifest; see :mod:`search.ann`).
DEFAULT_ANN = AnnSpec(kind="hnsw", codes="SQ8", m=32, ef_construction=40, ef_search=64, rescore=0)


_faiss_ready = False


def _faiss() -> Any:  # faiss costs 0.1-0.3 s to import: only when FAISS is used
    global _faiss_ready
    import faiss

    if not _faiss_ready:
        faiss.omp_set_num_threads(QUERY_THREADS)
        _faiss_ready = True
    return faiss


def save_vectors(path: Path, vectors: np.ndarray, dtype: Any = None) -> None:
    """Write a segment's vectors atomically (temp file, then rename), in ``dtype``: by
    default int8 codes when the segment is large enough for an ANN index, else float32
    (:func:`search.vector_codes.passage_dtype`)."""
    dt = stored_dtype(len(vectors)) if dtype is None else np.dtype(dtype)
    save_npy(path, np.ascontiguousarray(as_stored(vectors, dt)))


def stored_dtype(rows: int) -> np.dtype:
    """The dtype a segment of ``rows`` passage vectors is written in (int8 with an ANN)."""
    return passage_dtype(rows, ANN_MIN_ROWS)


def save_npy(path: Path, arr: np.ndarray) -> None:
    """Write one numpy array atomically and durably (temp file, fsync, rename); no pickle."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, arr, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_vectors(path: Path, mmap: bool = True) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


class Rows:
    """Rows of a 2-d .npy file read with ``pread`` when asked for, never mapped: the
    sentence vectors of a million passages (gigabytes) cost a serving process nothing
    until the answer stage reads an article's few rows. An ANN search reads the float rows
    it re-scores this way too: through the map each row pinned a page into the serving
    process's resident set (954 MB of it at 1M passages); read, the pages stay in the
    kernel's page cache, shared and droppable."""

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
        self._whole: np.ndarray | None = None  # the whole file, once gather() read it

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: slice | np.ndarray) -> np.ndarray:
        width = self.shape[1] * self.dtype.itemsize
        if not isinstance(rows, slice):  # given rows, one read each (an ANN's candidates)
            idx = np.asarray(rows).tolist()
            fd, base = self._file.fileno(), self.offset
            raw = b"".join(os.pread(fd, width, base + int(r) * width) for r in idx)
            return np.frombuffer(raw, dtype=self.dtype).reshape(len(idx), self.shape[1])
        a, b, _ = rows.indices(self.shape[0])
        b = max(a, b)
        raw = (
            os.pread(self._file.fileno(), (b - a) * width, self.offset + a * width)
            if b > a and width
            else b""
        )
        return np.frombuffer(raw, dtype=self.dtype).reshape(b - a, self.shape[1])

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """The given rows, in that order (repeats allowed). A file of at most
        ``GATHER_IN_MEMORY`` bytes is read whole once and kept (rows shared across articles
        lie anywhere in it: a read each cost ~4 us, ~70 us an article at 100k passages);
        a larger one is read one run of nearby distinct rows at a time (gaps up to
        ``GATHER_GAP`` rows read through)."""
        idx = np.asarray(rows, dtype=np.int64)
        width = self.shape[1] * self.dtype.itemsize
        if self.shape[0] * width <= GATHER_IN_MEMORY:
            whole = self._whole
            if whole is None:
                whole = self._whole = self[0 : self.shape[0]]
            return whole[idx]
        if not len(idx):
            return self[0:0]
        u, inv = np.unique(idx, return_inverse=True)
        cut = np.flatnonzero(np.diff(u) > GATHER_GAP) + 1
        starts, ends = np.concatenate([[0], cut]), np.concatenate([cut, [len(u)]])
        lo, hi = u[starts], u[ends - 1] + 1
        fd, base = self._file.fileno(), self.offset
        raw = b"".join(
            os.pread(fd, int(h - a) * width, base + int(a) * width) for a, h in zip(lo.tolist(), hi.tolist())
        )
        got = np.frombuffer(raw, dtype=self.dtype).reshape(-1, self.shape[1])
        # where each distinct row landed: its run's place in ``got`` plus its offset in the run
        at = np.repeat(np.concatenate([[0], np.cumsum(hi - lo)[:-1]]) - lo, ends - starts) + u
        return got[at[inv]]

    def __del__(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()


#: Rows.gather reads through gaps of up to this many rows rather than issue another read.
GATHER_GAP = 8
#: Rows.gather keeps a file of at most this many bytes in memory, read whole once.
GATHER_IN_MEMORY = 64 << 20


# ----------------------------------------------------------------------------- ANN files


def ann_path(npy_path: Path) -> Path:
    """Where the ANN index of the segment ``seg-N.npy`` lives: ``seg-N.faiss``."""
    p = Path(npy_path)
    return p.with_name(p.stem + ANN_SUFFIX)


def build_ann(vectors: np.ndarray, spec: AnnSpec = DEFAULT_ANN) -> Any:
    """An ANN index over ``vectors`` (row i has id i), built on every core."""
    return ann.build(vectors, spec, QUERY_THREADS)[0]


def write_ann(
    npy_path: Path, vectors: np.ndarray | None = None, spec: AnnSpec | None = None
) -> AnnSpec | None:
    """The writer's hook: build and save ``seg-N.faiss`` beside a segment that needs one.

    Call it after :func:`save_vectors` for every new segment (including LSM merges), in
    the generation being written, with the spec the index recorded (``DEFAULT_ANN`` when
    None). Returns the spec resolved for the segment's size, to record in the manifest,
    or None when the segment is small enough to be searched exactly. Atomic (temp file,
    then rename).
    """
    x = vectors if vectors is not None else load_vectors(Path(npy_path))
    if len(x) < ANN_MIN_ROWS:
        return None
    index, resolved = ann.build(x, spec or DEFAULT_ANN, QUERY_THREADS)
    ann.write(index, ann_path(Path(npy_path)))
    return resolved


# ----------------------------------------------------------------------------- segments


def _numpy_top(
    vectors: np.ndarray, live: np.ndarray | None, q: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``k`` by inner product, ties by row: what IndexFlatIP returns."""
    # einsum, not ``vectors @ q``: the same sums without BLAS's thread pool (see QUERY_THREADS).
    # int8 or float16 rows (a segment written for an ANN whose index is missing) are
    # decoded to float32 first.
    scores = np.einsum("ij,j->i", as_float32(vectors), q)
    if live is not None:
        scores = np.where(live, scores, -np.inf)
    n = len(scores)
    if k < n:
        top = np.argpartition(-scores, k - 1)[:k]
    else:
        top = np.arange(n)
    order = top[np.lexsort((top, -scores[top]))]
    return scores[order].astype(np.float32, copy=False), order.astype(np.int64)


@dataclass
class VectorSegment:
    """One segment's vectors, a liveness mask, and how it is searched.

    ``ann_file``: the segment's ANN index; by default ``seg-N.faiss`` beside the
    memory-mapped ``seg-N.npy`` the vectors were loaded from, when that file exists.
    ``ann``: the spec the manifest recorded for it (its search parameters); without one
    the parameters saved in the file are used.
    """

    name: str
    vectors: np.ndarray
    live: np.ndarray  # bool [rows]
    ann_file: Path | None = None
    ann: AnnSpec | None = None

    def __post_init__(self) -> None:
        self._index: Any = None
        self._spec: AnnSpec | None = None  # what the loaded index is searched with
        self._params: Any = None
        self._keep: list[Any] = []  # objects the FAISS parameters point at
        self._bitmap: np.ndarray | None = None
        self._all_live = bool(self.live.all())
        self._n_live = int(self.live.sum())
        src = getattr(self.vectors, "filename", None)  # np.memmap knows its file
        if self.ann_file is None:
            if src:
                cand = ann_path(Path(src))
                if cand.is_file():
                    self.ann_file = cand
        # The float rows an ANN search re-scores, read by pread; opened now, as the map
        # was: an old generation's files may be unlinked while a reader still holds them.
        self._rows: Rows | None = None
        if self.ann_file is not None:
            try:
                self._rows = Rows(src) if src and self.vectors.ndim == 2 else None
            except (OSError, ValueError):  # unlinked already (with_live shares the reader it had)
                pass

    @property
    def n_live(self) -> int:
        return self._n_live

    @property
    def search_method(self) -> str:
        rows = len(self.vectors)
        if self.ann_file is not None or (self._index is not None and self._spec is not None):
            return "ann"
        return "numpy" if rows <= NUMPY_MAX_ROWS else "flat"

    def with_live(self, live: np.ndarray, ann_file: Path | None = None) -> VectorSegment:
        """The same vectors (and FAISS index) under another liveness mask; ``ann_file``:
        where a later generation holds the ANN file, if it was not read yet."""
        seg = VectorSegment(self.name, self.vectors, live, ann_file or self.ann_file, self.ann)
        seg._index, seg._spec = self._index, self._spec
        seg._rows = self._rows or seg._rows
        return seg

    def _ensure(self) -> None:
        faiss = _faiss()
        if self._index is None and self.ann_file is not None:
            try:
                index = ann.read(self.ann_file)
            except RuntimeError as e:  # gone or damaged: slower, never wrong
                log.warning("cannot read %s, searching %s exactly: %s", self.ann_file, self.name, e)
                self.ann_file = None
            else:
                if index.ntotal != len(self.vectors):
                    raise ValueError(
                        f"{self.ann_file} holds {index.ntotal} rows, the segment {len(self.vectors)}"
                    )
                kind = ann.kind_of(index)
                # The manifest's record, unless the file is of another kind (replaced by hand).
                self._spec = (
                    self.ann if self.ann is not None and self.ann.kind == kind else ann.spec_of(index)
                )
                self._index = index
        if self._index is None:
            idx = faiss.IndexFlatIP(int(self.vectors.shape[1]))
            idx.add(np.ascontiguousarray(as_float32(self.vectors)))
            self._index = idx
        if self._params is None and not self._all_live:
            # IDSelectorBitmap reads bit i of byte i >> 3, least significant bit first.
            self._bitmap = np.packbits(self.live.astype(np.uint8), bitorder="little")
            self._params = faiss.IDSelectorBitmap(len(self.live), faiss.swig_ptr(self._bitmap))

    def _faiss_search(self, q: np.ndarray, k: int, sel: Any, n_allowed: int) -> tuple[np.ndarray, np.ndarray]:
        """FAISS top ``k`` among the rows ``sel`` lets through (all when None); an ANN
        index's candidates re-scored exactly from the float vectors."""
        faiss = _faiss()
        spec = self._spec
        if spec is None:  # exact flat index
            if sel is None:
                return self._index.search(q, k)
            return self._index.search(q, k, params=faiss.SearchParameters(sel=sel))
        cand = min(max(k, spec.rescore), n_allowed)
        params, keep = ann.search_params(spec, cand, sel, n_allowed / len(self.vectors))
        _, found = self._index.search(q, cand, params=params)
        del keep  # alive until here
        out = [ann.rescore(self._rows or self.vectors, qi, fi, k) for qi, fi in zip(q, found)]
        return np.stack([s for s, _ in out]), np.stack([r for _, r in out])

    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` live rows per query: ``(scores, rows)``, rows -1 where fewer exist.

        ``allowed`` (bool [rows]) restricts the search to those rows, inside the index
        (a metadata filter): the result is the best ``k`` allowed rows, never fewer
        than there are, as :func:`allowed_search` explains.
        """
        if allowed is not None:
            return self._allowed_search(queries, k, allowed)
        n_live = self.n_live
        dim = self.vectors.shape[1]
        q = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, dim)
        if n_live == 0:
            return np.full((len(q), 0), -np.inf, np.float32), np.full((len(q), 0), -1, np.int64)
        kk = min(k, n_live)
        if self.search_method == "numpy":
            live = None if self._all_live else self.live
            out = [_numpy_top(self.vectors, live, qi, kk) for qi in q]
            return np.stack([s for s, _ in out]), np.stack([r for _, r in out])
        self._ensure()
        return self._faiss_search(q, kk, self._params, n_live)

    def _allowed_search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Search only the live rows that ``allowed`` marks.

        Two ways, chosen by how many rows pass (measured in FILTERS_NOTES.md, 2 cores,
        384 dims): up to ``EXACT_ALLOWED_ROWS`` rows, exact inner products over just those
        rows (gathering them costs less than searching the index, and nothing is missed);
        above it, FAISS with an ``IDSelectorBitmap`` of the allowed rows, which costs about
        what an unfiltered search does (HNSW widens its candidate list as the filter
        narrows: ``ann.MAX_FILTERED_EF``). An ANN search can find fewer than ``k``
        allowed rows when the filter leaves few near the query; then the exact path answers.
        """
        dim = self.vectors.shape[1]
        q = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, dim)
        ok = np.asarray(allowed, dtype=bool) & self.live
        rows = np.flatnonzero(ok)
        if not len(rows):
            return np.full((len(q), 0), -np.inf, np.float32), np.full((len(q), 0), -1, np.int64)
        kk = min(k, len(rows))
        if self.search_method != "numpy" and len(rows) > EXACT_ALLOWED_ROWS:
            self._ensure()
            faiss = _faiss()
            bitmap = np.packbits(ok.astype(np.uint8), bitorder="little")
            sel = faiss.IDSelectorBitmap(len(ok), faiss.swig_ptr(bitmap))
            scores, found = self._faiss_search(q, kk, sel, len(rows))
            if (found >= 0).sum(axis=1).min() >= kk:
                return scores, found
        if self.search_method == "numpy":
            out = [_numpy_top(self.vectors, ok, qi, kk) for qi in q]
        else:
            sub = as_float32(self.vectors[rows])
            out = [(s, rows[r]) for s, r in (_numpy_top(sub, None, qi, kk) for qi in q)]
        return np.stack([s for s, _ in out]), np.stack([r for _, r in out])


def search_segments(
    segments: list[VectorSegment],
    query: np.ndarray,
    k: int,
    allowed: dict[str, np.ndarray] | None = None,
) -> list[tuple[float, str, int]]:
    """Merge the top ``k`` of every segment: ``(score, segment_name, row)``, best first.

    ``allowed`` maps a segment name to the rows a filter lets through (bool [rows]);
    with it, a segment it does not name is skipped.
    """
    out: list[tuple[float, str, int]] = []
    for seg in segments:
        if allowed is not None:
            mask = allowed.get(seg.name)
            if mask is None or not mask.any():
                continue
            scores, rows = seg.search(query, k, mask)
        else:
            scores, rows = seg.search(query, k)
        for s, r in zip(scores[0].tolist(), rows[0].tolist()):
            if r >= 0:
                out.append((s, seg.name, r))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    return out[:k]
