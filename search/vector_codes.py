"""How vectors are kept on disk compactly, and read back (#17 item 4: store each vector once,
and no larger than it needs to be).

Sentence vectors (a segment's ``.sentvec.npy``) are int8 codes, one byte a dimension: per
row ``round(v / max|v| * 127)``. The vectors are L2-normalised, so no scale is stored: a
row is read back as its codes re-normalised to unit length (:func:`decode_unit`), and an
all-zero row (an article without vectors) stays zero. Measured on SciFact's 46,860 MiniLM
sentence vectors against 300 of them as questions, a cosine moves by 0.0003 on average and
0.0023 at most, against the 0.15-0.6 range the answer stage reads it in; float16, the
format before, takes twice the bytes (4-bit codes would move it by 0.005 on average and
0.049 at most: too coarse). A reader decides by the file's dtype: float16 and float32
files are read as they are.

Passage vectors (``seg-N.npy``) of a segment with an ANN index are int8 codes too
(:func:`passage_dtype`), read back the same way (:func:`as_float32`): the index holds
8-bit codes that find candidates, and the stored rows only re-score those candidates (a few
dozen rows a query), where a cosine moving by ~0.0003 only swaps near-ties (float16, the
format before, took twice the bytes; measured in docs/benchmarks.md). Smaller segments keep
float32: numpy scans every row of them for each query, and a float32 array is scanned as it
is mapped. A reader takes any of the three dtypes, and a merge converts rows to the dtype of
the segment it writes (:func:`as_stored`).

A segment stores a sentence-vector row once when rows repeat byte for byte (a story filed
twice, a line every report carries): :func:`row_digests` and :func:`shared_rows` find them,
and a map says which stored row each sentence reads (``.sentmap.npy``,
:mod:`search.backends.local_store`). Lossless: a sentence reads the very codes it had.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: The largest code: codes lie in [-127, 127], so negating a row never overflows.
CODE_MAX = 127


def _row_dots(x: np.ndarray) -> np.ndarray:
    """Each row's dot product with itself: ``np.vecdot`` (numpy 2) in half einsum's time."""
    return _VECDOT(x, x) if _VECDOT is not None else np.einsum("ij,ij->i", x, x)


_VECDOT = getattr(np, "vecdot", None)


def encode_unit(vectors: np.ndarray) -> np.ndarray:
    """int8 codes of unit-length rows: each row scaled by its largest magnitude to 127."""
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array of rows, got shape {x.shape}")
    peak = np.abs(x).max(axis=1, keepdims=True) if x.shape[1] else np.zeros((len(x), 1), np.float32)
    scale = np.divide(CODE_MAX, peak, out=np.zeros_like(peak), where=peak > 0)
    return np.rint(x * scale).astype(np.int8)


def decode_unit(rows: np.ndarray) -> np.ndarray:
    """Rows as float32 unit vectors: int8 codes re-normalised (zero rows stay zero); float
    rows (an older file) are returned as they are stored."""
    if rows.dtype != np.int8:
        return rows
    x = rows.astype(np.float32)
    norm = _row_dots(x)
    # A row of codes is all zeros or has a 127 in it: flooring the squared norm at 1
    # leaves every other row's norm alone and a zero row zero (the answer stage reads a
    # few hundred rows a question, so this runs in place, a handful of numpy calls).
    np.sqrt(np.maximum(norm, 1.0, out=norm), out=norm)
    x /= norm[:, None]
    return x


def to_codes(rows: np.ndarray) -> np.ndarray:
    """Rows of a sentence-vector file as int8 codes: copied when they are codes already
    (a merge of new segments), encoded when they are floats (a segment of an older index)."""
    return rows if rows.dtype == np.int8 else encode_unit(rows)


def passage_dtype(rows: int, ann_min_rows: int) -> np.dtype:
    """The dtype passage vectors of a segment of ``rows`` rows are written in: int8 codes
    when the segment gets an ANN index (its rows only re-score candidates), float32 when
    numpy scans it whole."""
    return np.dtype(np.int8 if rows >= ann_min_rows else np.float32)


def as_float32(rows: np.ndarray) -> np.ndarray:
    """Stored vector rows as float32: int8 codes decoded to unit rows, float16 widened,
    float32 as they are (a memory-mapped array is not copied)."""
    a = np.asarray(rows)
    return decode_unit(a) if a.dtype == np.int8 else a.astype(np.float32, copy=False)


def as_stored(rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Vector rows converted to a file's ``dtype``: codes copied or encoded (from floats),
    floats decoded (from codes) or cast."""
    a = np.asarray(rows)
    if np.dtype(dtype) == np.int8:
        return to_codes(a)
    return as_float32(a).astype(dtype, copy=False)


# ----------------------------------------------------------------------------- shared rows


def row_digests(codes: np.ndarray) -> np.ndarray:
    """uint64 [rows, 2]: a 128-bit BLAKE2b digest of each row's bytes (rows equal byte for
    byte, and only those, share a digest)."""
    a = np.ascontiguousarray(codes)
    width = a.shape[1] * a.dtype.itemsize if a.ndim == 2 else 0
    if not width:
        return np.zeros((len(a), 2), np.uint64)
    mv = memoryview(a.tobytes())
    digest = hashlib.blake2b
    raw = b"".join(
        digest(mv[i : i + width], digest_size=16).digest() for i in range(0, len(a) * width, width)
    )
    return np.frombuffer(raw, dtype=np.uint64).reshape(len(a), 2)


def shared_rows(digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, rowmap)`` for rows with these digests: ``first`` the positions of each
    distinct row's first occurrence, ascending (the rows to store), and ``rowmap`` int32
    [rows] where each row is among them (``stored[rowmap[i]]`` is row ``i``)."""
    n = len(digests)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    order = np.lexsort((digests[:, 1], digests[:, 0]))  # stable: each group's first row first
    d = digests[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (d[1:] != d[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    heads = order[new]
    rank = np.empty(len(heads), dtype=np.int64)
    rank[np.argsort(heads, kind="stable")] = np.arange(len(heads))
    rowmap = np.empty(n, dtype=np.int32)
    rowmap[order] = rank[group]
    return np.sort(heads), rowmap


def worth_sharing(rows: int, distinct: int, dim: int, itemsize: int = 1) -> bool:
    """Whether storing distinct rows once plus a 4-byte map a row takes fewer bytes than
    every row."""
    return (rows - distinct) * dim * itemsize > 4 * rows
