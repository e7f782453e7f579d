"""Dense retrieval: passage vectors in immutable segments, searched with FAISS.

Each write adds a segment file (``float32 [rows, dim]``, saved with numpy,
``allow_pickle=False``); a segment is never modified, so index generations can share
it through hard links. Rows whose passages were removed or replaced are masked out
with FAISS's ID selector, so they never come back from a search. Small segments are
merged by the writer (LSM-style) so a query searches only a handful.

Vectors are L2-normalised, so inner product is cosine similarity.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def _faiss():  # faiss costs ~0.2 s to import: only when a vector search is made
    import faiss

    return faiss


def save_vectors(path: Path, vectors: np.ndarray) -> None:
    """Write a segment's vectors atomically (temp file, then rename)."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, arr, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_vectors(path: Path, mmap: bool = True) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


@dataclass
class VectorSegment:
    """One segment's vectors, a liveness mask, and its FAISS index (built on first search)."""

    name: str
    vectors: np.ndarray
    live: np.ndarray  # bool [rows]

    def __post_init__(self) -> None:
        self._index = None
        self._params = None
        self._bitmap: np.ndarray | None = None

    @property
    def n_live(self) -> int:
        return int(self.live.sum())

    def with_live(self, live: np.ndarray) -> VectorSegment:
        """The same vectors (and FAISS index) under another liveness mask."""
        seg = VectorSegment(self.name, self.vectors, live)
        seg._index = self._index
        return seg

    def _ensure(self) -> None:
        faiss = _faiss()
        if self._index is None:
            idx = faiss.IndexFlatIP(int(self.vectors.shape[1]))
            idx.add(np.ascontiguousarray(self.vectors, dtype=np.float32))
            self._index = idx
        if self._params is None and not bool(self.live.all()):
            # IDSelectorBitmap reads bit i of byte i >> 3, least significant bit first.
            self._bitmap = np.packbits(self.live.astype(np.uint8), bitorder="little")
            sel = faiss.IDSelectorBitmap(len(self.live), faiss.swig_ptr(self._bitmap))
            self._params = faiss.SearchParameters(sel=sel)
            self._sel = sel  # keep the selector alive as long as the parameters

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` live rows per query: ``(scores, rows)``, rows -1 where fewer exist."""
        n_live = self.n_live
        q = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.vectors.shape[1])
        if n_live == 0:
            return np.full((len(q), 0), -np.inf, np.float32), np.full((len(q), 0), -1, np.int64)
        self._ensure()
        kk = min(k, n_live)
        if self._params is not None:
            scores, rows = self._index.search(q, kk, params=self._params)
        else:
            scores, rows = self._index.search(q, kk)
        return scores, rows


def search_segments(
    segments: list[VectorSegment], query: np.ndarray, k: int
) -> list[tuple[float, str, int]]:
    """Merge the top ``k`` of every segment: ``(score, segment_name, row)``, best first."""
    out: list[tuple[float, str, int]] = []
    for seg in segments:
        scores, rows = seg.search(query, k)
        for s, r in zip(scores[0], rows[0]):
            if r >= 0:
                out.append((float(s), seg.name, int(r)))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    return out[:k]
