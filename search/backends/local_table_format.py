"""The names and shapes the document table's files share between the side that reads
them (:mod:`.local_table`, which describes the files) and the side that writes them
(:mod:`.local_table_write`): the header's file name, the columns of ``table.loc.npy``,
the key of the publication-month facet, and :class:`Strings`, a column of strings stored
as one blob and its offsets (the ids and near-duplicate columns). Kept apart so that
neither side imports the other to agree on them.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..vectors import save_npy
from .local_store import mapped

TABLE = "table.json"
SEG, ORD, ROW, NPASS, SEQ = range(5)
MONTH = "\x00month"  # the publication month facet (not a field: a metadata "month" may exist)


class Strings:
    """A read-only column of strings: offsets and one blob (memory-mapped)."""

    def __init__(self, offsets: np.ndarray, blob: bytes | mmap.mmap) -> None:
        self.offsets = offsets
        self.blob = blob

    @classmethod
    def load(cls, base: Path) -> Strings:
        offsets = mapped(f"{base}.npy")
        with open(f"{base}.bin", "rb") as f:
            size = os.fstat(f.fileno()).st_size
            blob: bytes | mmap.mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        return cls(offsets, blob)

    @staticmethod
    def save(base: Path, values: Sequence[bytes]) -> None:
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(v) for v in values], dtype=np.int64) if values else []
        tmp = Path(f"{base}.bin.tmp")
        with open(tmp, "wb") as f:
            f.write(b"".join(values))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, f"{base}.bin")
        save_npy(Path(f"{base}.npy"), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def raw(self, i: int) -> bytes:
        return self.blob[int(self.offsets[i]) : int(self.offsets[i + 1])]

    def __getitem__(self, i: int) -> str:
        return self.raw(i).decode("utf-8", "surrogatepass")

    def all_raw(self) -> list[bytes]:
        """Every value as bytes (one pass over the blob: for writers and bulk maps)."""
        data = bytes(self.blob[:])
        off = self.offsets.tolist()
        return [data[off[i] : off[i + 1]] for i in range(len(off) - 1)]
