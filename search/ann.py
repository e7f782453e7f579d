"""The ANN index of a large vector segment: how it is built, stored, read and searched.

A segment of at least ``vectors.ANN_MIN_ROWS`` rows gets one FAISS file, ``seg-N.faiss``,
beside its float vectors ``seg-N.npy``. The file holds 8-bit codes (``SQ8``: 384 bytes a
MiniLM vector, a quarter of the floats) and the structure that finds candidates (an HNSW
graph, or IVF lists with their ids), never a second float copy. The candidates it finds
are re-scored exactly from the memory-mapped float vectors (:func:`rescore`), so a
segment's scores are exact inner products whatever its index, and segments searched in
different ways still merge by score.

How an index is built and searched is an :class:`AnnSpec`. The index records the spec it
was created with in its manifest (``"ann"``), and builds every later segment (an add, an
LSM merge) with that recorded spec, not with whatever default a newer version has; each
segment's manifest entry records the spec it was built with, resolved for its size
(``nlist``), and a reader searches it with those parameters.

Kinds (FAISS ``index_factory`` strings, inner-product metric):

``hnsw``      ``HNSW{m},{codes}``: a graph over the codes; ``ef_search`` candidates kept.
``ivf``       ``IVF{nlist},{codes}``: k-means lists; ``nprobe`` lists scanned.
``ivf-hnsw``  ``IVF{nlist}_HNSW{m},{codes}``: the same with an HNSW graph over the list
              centroids, so choosing the lists costs less than comparing with all of them.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from .vector_codes import as_float32

KINDS = ("hnsw", "ivf", "ivf-hnsw")
#: FAISS code strings a spec may name: 8-bit or 4-bit scalar quantiser, floats, or PQ.
CODES = ("SQ8", "SQ4", "SQfp16", "Flat")
#: Rows of the training sample: k-means needs about 64 per list; the scalar quantiser's
#: per-dimension ranges settle long before this.
TRAIN_PER_LIST = 64
TRAIN_MAX = 131_072
MIN_PER_LIST = 39  # FAISS warns below this many training points a list
#: Rows converted to float32 and added at a time when the vectors are stored as int8 codes
#: or float16.
ADD_ROWS = 65_536
#: A filtered HNSW search walks the whole graph but keeps only allowed nodes, so its
#: candidate list must grow as the filter narrows: ``ef / fraction``, up to this cap.
#: Below ``vectors.EXACT_ALLOWED_ROWS`` allowed rows the exact path answers anyway.
MAX_FILTERED_EF = 2_048


@dataclass(frozen=True)
class AnnSpec:
    """How one ANN index is built and searched (recorded in the manifest as a dict)."""

    kind: str = "hnsw"
    codes: str = "SQ8"
    m: int = 32  # HNSW links per node (the graph, or the coarse quantiser's)
    ef_construction: int = 40  # HNSW candidate list while building
    ef_search: int = 64  # HNSW candidate list while searching (ivf-hnsw: over the centroids)
    nlist: int = 0  # IVF lists; 0: round(nlist_scale * sqrt(rows)), resolved per segment
    nlist_scale: float = 4.0
    nprobe: int = 0  # IVF lists scanned; 0: nlist / 16
    rescore: int = 0  # candidates re-scored exactly from the floats, at least k

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown ANN kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.codes not in CODES:
            raise ValueError(f"unknown ANN codes {self.codes!r}; choose one of {', '.join(CODES)}")
        for f in ("m", "ef_construction", "ef_search"):
            if getattr(self, f) < 1:
                raise ValueError(f"ANN {f} must be positive, got {getattr(self, f)}")
        for f in ("nlist", "nprobe", "rescore"):
            if getattr(self, f) < 0:
                raise ValueError(f"ANN {f} must be zero or more, got {getattr(self, f)}")

    @property
    def ivf(self) -> bool:
        return self.kind != "hnsw"

    def resolved(self, rows: int) -> AnnSpec:
        """The spec with the list count and probes fixed for a segment of ``rows`` rows."""
        if not self.ivf:
            return self
        nlist = self.nlist or int(min(max(16, round(self.nlist_scale * math.sqrt(rows))), 65_536))
        nlist = max(1, min(nlist, rows // MIN_PER_LIST))  # k-means needs points to place
        nprobe = min(self.nprobe or max(1, nlist // 16), nlist)
        return replace(self, nlist=nlist, nprobe=nprobe)

    def factory(self) -> str:
        """The FAISS ``index_factory`` string (call on a resolved spec)."""
        if self.kind == "hnsw":
            return f"HNSW{self.m},{self.codes}"
        coarse = f"IVF{self.nlist}" + (f"_HNSW{self.m}" if self.kind == "ivf-hnsw" else "")
        return f"{coarse},{self.codes}"

    def label(self) -> str:
        """Short human form, for tables: ``HNSW32,SQ8 efC40 ef64``."""
        if self.kind == "hnsw":
            out = f"{self.factory()} efC{self.ef_construction} ef{self.ef_search}"
        else:
            out = f"{self.factory()} nprobe{self.nprobe}"
            if self.kind == "ivf-hnsw":
                out += f" ef{self.ef_search}"
        return out + (f" rescore{self.rescore}" if self.rescore else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> AnnSpec | None:
        """A spec from a manifest; keys this version does not know are ignored."""
        if not d:
            return None
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def _faiss() -> Any:
    from .vectors import _faiss as load

    return load()


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def build(vectors: np.ndarray, spec: AnnSpec, threads: int = 1) -> tuple[Any, AnnSpec]:
    """An index over ``vectors`` (row i has id i) and the spec resolved for its size.

    Built on every core (``cores()``); searches then go back to ``threads``.
    """
    faiss = _faiss()
    x = vectors  # float32, or int8/float16 rows (a merged segment's file) decoded a chunk at a time
    n, dim = x.shape
    s = spec.resolved(n)
    index = faiss.index_factory(dim, s.factory(), faiss.METRIC_INNER_PRODUCT)
    want = min(TRAIN_MAX, max(s.nlist * TRAIN_PER_LIST, 8_192))
    sample = x if n <= want else x[np.sort(np.random.default_rng(0).choice(n, want, replace=False))]
    sample = np.ascontiguousarray(as_float32(sample))
    if s.kind == "hnsw":
        index.hnsw.efConstruction = s.ef_construction
    else:
        ivf = faiss.extract_index_ivf(index)
        if s.kind == "ivf-hnsw":
            # k-means with exact assignment; the graph is built once, over the final centroids
            ivf.clustering_index = faiss.IndexFlatIP(dim)
            faiss.downcast_index(ivf.quantizer).hnsw.efConstruction = s.ef_construction
    faiss.omp_set_num_threads(cores())
    try:
        index.train(sample)
        if x.dtype == np.float32:
            index.add(np.ascontiguousarray(x))
        else:  # never a whole float32 copy of a million rows in memory
            for i in range(0, n, ADD_ROWS):
                index.add(np.ascontiguousarray(as_float32(x[i : i + ADD_ROWS])))
    finally:
        faiss.omp_set_num_threads(threads)
    set_defaults(index, s)
    return index, s


def set_defaults(index: Any, spec: AnnSpec) -> None:
    """Store the spec's search parameters in the index itself (FAISS saves them)."""
    faiss = _faiss()
    if spec.kind == "hnsw":
        faiss.downcast_index(index).hnsw.efSearch = spec.ef_search
        return
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = spec.nprobe
    if spec.kind == "ivf-hnsw":
        faiss.downcast_index(ivf.quantizer).hnsw.efSearch = max(spec.ef_search, spec.nprobe)


def write(index: Any, out: Path) -> Path:
    """Save an index atomically and durably (temp file, fsync, rename)."""
    faiss = _faiss()
    tmp = out.with_name(out.name + ".tmp")
    faiss.write_index(index, str(tmp))
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, out)
    return out


def read(path: Path) -> Any:
    """Read an index file, memory-mapped where FAISS can: IVF lists and flat code arrays
    are mapped (``IO_FLAG_MMAP`` | ``IO_FLAG_MMAP_IFC``), the HNSW graph is read."""
    faiss = _faiss()
    flags = faiss.IO_FLAG_READ_ONLY | faiss.IO_FLAG_MMAP_IFC
    try:
        return faiss.read_index(str(path), flags | faiss.IO_FLAG_MMAP)
    except RuntimeError:  # a type FAISS cannot map this way
        return faiss.read_index(str(path), flags)


def kind_of(index: Any) -> str:
    """The kind of a FAISS index (``flat`` for an exact one)."""
    faiss = _faiss()
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        ivf = None
    if ivf is not None:
        q = faiss.downcast_index(ivf.quantizer)
        return "ivf-hnsw" if hasattr(q, "hnsw") else "ivf"
    if hasattr(faiss.downcast_index(index), "hnsw"):
        return "hnsw"
    return "flat"


def spec_of(index: Any) -> AnnSpec | None:
    """What an index file says about itself (for a segment whose manifest records none)."""
    faiss = _faiss()
    kind = kind_of(index)
    if kind == "flat":
        return None
    if kind == "hnsw":
        codes = _codes(faiss.downcast_index(faiss.downcast_index(index).storage))
        h = faiss.downcast_index(index).hnsw
        return AnnSpec(
            kind="hnsw", codes=codes, ef_search=int(h.efSearch), ef_construction=int(h.efConstruction)
        )
    ivf = faiss.extract_index_ivf(index)
    codes = _codes(faiss.downcast_index(ivf))
    ef = 64
    if kind == "ivf-hnsw":
        ef = int(faiss.downcast_index(ivf.quantizer).hnsw.efSearch)
    return AnnSpec(kind=kind, codes=codes, nlist=int(ivf.nlist), nprobe=int(ivf.nprobe), ef_search=ef)


def _codes(index: Any) -> str:
    """The code string of a flat or scalar-quantised FAISS index (storage or IVF)."""
    faiss = _faiss()
    sq = getattr(index, "sq", None)
    if sq is None:
        return "Flat"
    return {faiss.ScalarQuantizer.QT_8bit: "SQ8", faiss.ScalarQuantizer.QT_4bit: "SQ4"}.get(
        sq.qtype, "SQfp16"
    )


def search_params(spec: AnnSpec, k: int, sel: Any = None, fraction: float = 1.0) -> tuple[Any, list[Any]]:
    """FAISS search parameters for ``k`` results, with an optional ID selector.

    ``fraction`` is the share of rows the selector lets through: a filtered HNSW search
    keeps ``ef / fraction`` candidates (see ``MAX_FILTERED_EF``). Returns the parameters
    and the objects they point at, which the caller must keep alive while searching.
    """
    faiss = _faiss()
    keep: list[Any] = [sel] if sel is not None else []
    if spec.kind == "hnsw":
        ef = max(spec.ef_search, k)
        if fraction < 1.0:
            ef = max(ef, min(MAX_FILTERED_EF, int(math.ceil(ef / max(fraction, 1e-6)))))
        p = faiss.SearchParametersHNSW(efSearch=ef)
        if sel is not None:
            p.sel = sel
        return p, keep
    p = faiss.SearchParametersIVF(nprobe=spec.nprobe)
    if sel is not None:
        p.sel = sel
    if spec.kind == "ivf-hnsw":
        qp = faiss.SearchParametersHNSW(efSearch=max(spec.ef_search, spec.nprobe))
        p.quantizer_params = qp
        keep.append(qp)
    return p, keep


def rescore(vectors: Any, q: np.ndarray, found: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``k`` of one query's candidate rows (``-1`` = none), scored on the stored
    rows (decoded to float32).

    Ties go to the lower row, as with exact search. Rows are read in ascending order, so
    a memory-mapped file is read forwards.
    """
    rows = np.unique(found[found >= 0])
    scores = np.einsum("ij,j->i", as_float32(vectors[rows]), q)
    order = np.lexsort((rows, -scores))[:k]
    out_s = np.full(k, -np.inf, np.float32)
    out_r = np.full(k, -1, np.int64)
    out_s[: len(order)] = scores[order]
    out_r[: len(order)] = rows[order]
    return out_s, out_r
