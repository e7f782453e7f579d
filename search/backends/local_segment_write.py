"""Writing segments: one from articles in memory (:func:`write_segment`), one from the
live articles of others by a streaming copy of their bytes and array rows
(:func:`merge_segments`, one member open at a time, never a whole segment in memory), and
removing a segment's files. Each file is written beside its final name, fsynced and
renamed into place, and never modified after; the files are those :mod:`.local_store`
describes and reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dedup import narrow
from ..facets import entity_group, facet_name
from ..types import Article
from ..vector_codes import as_stored, encode_unit, row_digests, shared_rows, to_codes, worth_sharing
from ..vectors import AnnSpec, save_npy, save_vectors, stored_dtype, write_ann
from .local_segment_format import (
    ENRICH,
    RECORD,
    RECORD_FIELDS,
    ROW,
    SEGMENT_SUFFIXES,
    SENT,
    TEXT,
    TEXT_LEVEL,
    enrichment,
    pack,
    pack_record,
    passage_sentences,
)

if TYPE_CHECKING:
    from .local_store import Segment

#: Bytes copied at a time when segments are merged: merges stream, whatever the segment size.
COPY_BYTES = 32 << 20


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def _json(obj: Any) -> bytes:
    return _utf8(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


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
            code = vocab.setdefault((group, facet_name(art.text[s:e])), len(vocab))
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
        enr = enrichment(a.entities, a.sentences, passage_sentences([x for p in ss for x in p]), a.roles)
        # Every part is compressed: the text (0.57 of its bytes), the record (0.53, with a
        # dictionary of its keys) and the enrichment (0.45). A search at 100k passages reads
        # ~20 texts and ~8 records it has not cached, ~10 us and ~4 us of inflating each.
        parts = (pack(_utf8(a.text), TEXT_LEVEL), pack_record(_json(rec)), pack(_json(enr)))
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
    sentvec, sentmap = _shared(_sentence_vectors(articles, dim))
    if sentmap is not None:
        save_npy(Path(f"{base}.sentmap.npy"), sentmap)
    for suffix, arr in (
        (".store.npy", offsets),
        (".spans.npy", np.asarray(spans, dtype=np.int32).reshape(-1, 2)),
        (".sents.npy", np.asarray(sents, dtype=np.int32).reshape(-1, 2)),
        (".sentoff.npy", np.asarray(sentoff, dtype=np.int64)),
        (".minhash.npy", narrow(np.asarray(minhash, dtype=np.uint32).reshape(len(articles), -1))),
        (".entoff.npy", entoff),
        (".ents.npy", np.asarray([c for r in ent_rows for c in r], dtype=np.int32)),
        (".sentvec.npy", sentvec),
    ):
        save_npy(Path(f"{base}{suffix}"), arr)
    _write_bytes(Path(f"{base}.ents.json"), [_json([list(v) for v in vocab])])
    save_vectors(gen_dir / f"{name}.npy", vectors)
    return _entry(name, len(spans), write_ann(gen_dir / f"{name}.npy", vectors, AnnSpec.from_dict(ann)))


def _entry(name: str, rows: int, spec: AnnSpec | None) -> dict[str, Any]:
    """A segment's manifest entry."""
    return {"name": name, "rows": rows, **({"ann": spec.to_dict()} if spec else {})}


def _sentence_vectors(articles: list[Article], dim: int) -> np.ndarray:
    """The articles' sentence vectors stacked as int8 codes (:mod:`search.vector_codes`;
    zeros where an article has none)."""
    parts = [
        encode_unit(np.asarray(a.sentence_vectors, dtype=np.float32).reshape(len(a.sentences), -1))
        if a.sentence_vectors is not None and len(a.sentence_vectors) == len(a.sentences)
        else np.zeros((len(a.sentences), dim), np.int8)
        for a in articles
    ]
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.int8)


def _shared(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Sentence-vector rows to store and their map: each distinct row once (a story filed
    twice, a line every report repeats) and the map, when that is smaller; else the rows
    as they are and no map."""
    first, rowmap = shared_rows(row_digests(codes))
    dim = codes.shape[1] if codes.ndim == 2 else 0
    if not worth_sharing(len(codes), len(first), dim):
        return codes, None
    return codes[first], rowmap


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
    digests: list[np.ndarray] = []
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
        step = max(1, COPY_BYTES // max(4 * sv_dim, 1))
        for a, b in r:  # the digests of the sentence rows, to store each distinct row once
            s0, s1 = int(s.offsets[a, SENT]), int(s.offsets[b, SENT])
            for c in range(s0, s1, step):
                digests.append(row_digests(to_codes(np.asarray(s.sentence_rows(c, min(s1, c + step))))))
        del s
    dim, sv_dim, mh_dim = max(dim, 0), max(sv_dim, 0), max(mh_dim, 0)
    first, rowmap = shared_rows(np.concatenate(digests) if digests else np.zeros((0, 2), np.uint64))
    del digests
    keep: np.ndarray | None = None  # the sentence rows stored, when rows are shared
    if sv_dim and worth_sharing(n_sentvec, len(first), sv_dim):
        keep = np.zeros(n_sentvec, dtype=bool)
        keep[first] = True
    base = gen_dir / name
    outs = {
        "vec": _Npy(gen_dir / f"{name}.npy", stored_dtype(rows), (rows, dim)),
        "off": _Npy(Path(f"{base}.store.npy"), np.int64, (docs + 1, 5)),
        "spans": _Npy(Path(f"{base}.spans.npy"), np.int32, (rows, 2)),
        "sents": _Npy(Path(f"{base}.sents.npy"), np.int32, (n_sents, 2)),
        "sentoff": _Npy(Path(f"{base}.sentoff.npy"), np.int64, (rows + 1,)),
        "minhash": _Npy(Path(f"{base}.minhash.npy"), np.uint16, (docs, mh_dim)),
        "sentvec": _Npy(
            Path(f"{base}.sentvec.npy"), np.int8, (len(first) if keep is not None else n_sentvec, sv_dim)
        ),
        "entoff": _Npy(Path(f"{base}.entoff.npy"), np.int64, (rows + 1,)),
        "ents": _Npy(Path(f"{base}.ents.npy"), np.int32, (n_ents,)),
    }
    store_tmp = Path(f"{base}.store.bin.tmp")
    try:
        with open(store_tmp, "wb") as store:
            at = np.zeros(5, dtype=np.int64)  # bytes, -, -, rows, sentences written so far
            n_s = n_e = n_sv = 0
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
                    vstep = max(1, COPY_BYTES // max(4 * dim, 1))
                    for c in range(r0, r1, vstep):  # copied, or converted to this segment's dtype
                        outs["vec"].write(as_stored(seg.vectors[c : min(r1, c + vstep)], outs["vec"].dtype))
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
                        narrow(seg.minhash[a:b]) if mh_dim else np.zeros((b - a, 0), np.uint16)
                    )
                    s0, s1 = int(off[0, SENT]), int(off[-1, SENT])
                    step = max(1, COPY_BYTES // max(4 * sv_dim, 1))
                    for c in range(s0, s1, step):  # codes copied; an older member's floats encoded
                        codes = to_codes(np.asarray(seg.sentence_rows(c, min(s1, c + step))))
                        if keep is not None:  # a row stored before is not stored again
                            codes, n_sv = codes[keep[n_sv : n_sv + len(codes)]], n_sv + len(codes)
                        outs["sentvec"].write(codes)
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
        if keep is not None:
            save_npy(Path(f"{base}.sentmap.npy"), rowmap)
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
