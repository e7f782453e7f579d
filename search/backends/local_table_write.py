"""Writing the document table: :class:`TableBuilder` takes the old table's columns (or
none), rows removed and added by a write, and segments merged into one (their rows
relocated), then gathers the live rows into arrays (:meth:`TableBuilder.seal`: filter
columns renumbered, vocabularies compacted) and writes them sorted by id, each file
fsynced and renamed into place. The files are those :mod:`.local_table` describes and
opens.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dates import month
from ..filters import BUILTIN, value_kind
from ..vectors import save_npy
from .local_table_format import MONTH, NPASS, ORD, ROW, SEG, SEQ, TABLE, Strings

if TYPE_CHECKING:
    from .local_table import Table

INTERN_CHARS = 64  # text values up to this long are interned while a write collects them


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_empty(gen_dir: Path) -> None:
    TableBuilder(None).write(gen_dir, [])


@dataclass(slots=True)
class _Row:
    """One row a write adds (slots: a million-document build keeps one per document)."""

    id: str
    seg: str
    ord: int
    row: int
    n: int
    ts: float
    dup: str
    seq: int
    live: bool


class TableBuilder:
    """The write side: an old table's rows (or none), rows removed and added, written sorted by id."""

    def __init__(self, old: Table | None) -> None:
        self.old = old
        n_old = old.n if old is not None else 0
        self.old_live = np.ones(n_old, dtype=bool)
        self.next_seq = old.next_seq if old is not None else 0
        self.seg_names: list[str] = list(old.segments) if old is not None else []
        self._seg_code = {s: i for i, s in enumerate(self.seg_names)}
        self.new: list[_Row] = []  # rows added by this write
        self.new_pos: dict[str, int] = {}  # id -> index in self.new, live ones only
        self._values: dict[
            tuple[str, str], list[tuple[int, Any]]
        ] = {}  # (field, kind) -> (index in new, value)
        self.sealed = False

    # -- rows ------------------------------------------------------------------------
    def where(self, doc_id: str) -> tuple[str, int, int] | None:
        """(segment, article ordinal, row index) of a live document."""
        j = self.new_pos.get(doc_id)
        if j is not None:
            r = self.new[j]
            return r.seg, r.ord, -1 - j
        if self.old is not None:
            i = self.old.find(doc_id)
            if i >= 0 and self.old_live[i]:
                loc = self.old.loc[i]
                return self.old.segments[int(loc[SEG])], int(loc[ORD]), i
        return None

    def passages(self, doc_id: str) -> int:
        j = self.new_pos.get(doc_id)
        if j is not None:
            return int(self.new[j].n)
        assert self.old is not None
        return int(self.old.loc[self.old.find(doc_id), NPASS])

    def remove(self, doc_id: str) -> bool:
        j = self.new_pos.pop(doc_id, None)
        if j is not None:
            self.new[j].live = False
            return True
        if self.old is not None:
            i = self.old.find(doc_id)
            if i >= 0 and self.old_live[i]:
                self.old_live[i] = False
                return True
        return False

    def old_ids(self) -> list[str]:
        if self.old is None:
            return []
        return [b.decode("utf-8", "surrogatepass") for b in self.old.ids.all_raw()]

    def add(
        self,
        doc_id: str,
        segment: str,
        ordinal: int,
        row: int,
        passages: int,
        published_ts: float | None,
        duplicate_of: str | None,
        source: str,
        metadata: dict[str, Any],
    ) -> None:
        if segment not in self._seg_code:
            self._seg_code[segment] = len(self.seg_names)
            self.seg_names.append(segment)
        j = len(self.new)
        self.new_pos[doc_id] = j
        # Column values now (text interned: a million documents share a few categories).
        self._values.setdefault(("source", "text"), []).append((j, sys.intern(source) if source else None))
        mon = month(published_ts)
        self._values.setdefault((MONTH, "text"), []).append((j, sys.intern(mon) if mon else None))
        for k, v in (metadata or {}).items():
            kind = value_kind(v)
            if kind is not None and k not in BUILTIN:
                v = sys.intern(v) if isinstance(v, str) and len(v) <= INTERN_CHARS else v
                self._values.setdefault((k, kind), []).append((j, v))
        self.new.append(
            _Row(
                id=doc_id,
                seg=segment,
                ord=ordinal,
                row=row,
                n=passages,
                ts=math.nan if published_ts is None else float(published_ts),
                dup=duplicate_of or "",
                seq=self.next_seq,
                live=True,
            )
        )
        self.next_seq += 1

    # -- sealed: every live row as arrays --------------------------------------------
    def seal(self) -> None:
        """Gather the live rows (old kept, then new) into arrays; no more adds or removes."""
        old, keep = self.old, self.old_live
        new = [r for r in self.new if r.live]
        ids = [b for b, k in zip(old.ids.all_raw(), keep.tolist()) if k] if old is not None else []
        ids += [r.id.encode("utf-8", "surrogatepass") for r in new]
        dup = [b for b, k in zip(old.dup.all_raw(), keep.tolist()) if k] if old is not None else []
        dup += [r.dup.encode("utf-8", "surrogatepass") for r in new]
        loc_old = np.asarray(old.loc, dtype=np.int64)[keep] if old is not None else np.zeros((0, 5), np.int64)
        loc_new = np.array(
            [[self._seg_code[r.seg], r.ord, r.row, r.n, r.seq] for r in new], dtype=np.int64
        ).reshape(-1, 5)
        ts_old = np.asarray(old.ts, dtype=np.float64)[keep] if old is not None else np.zeros(0)
        self.ids, self.dups = ids, dup
        self.loc = np.concatenate([loc_old, loc_new])
        self.ts = np.concatenate([ts_old, np.array([r.ts for r in new], dtype=np.float64)])
        n_kept = len(loc_old)
        # (field, kind) -> values in the sealed row order
        cols: dict[tuple[str, str], Any] = {}
        if old is not None:
            for key in old.spec:
                raw = old.raw_column(*key)
                if key[1] == "text":
                    codes, vocab = raw
                    cols[key] = ("text", np.asarray(codes)[keep], list(vocab))
                elif key[1] == "strings":
                    docs, codes, vocab = raw
                    docs = np.asarray(docs)
                    ok = keep[docs]
                    renum = np.cumsum(keep) - 1
                    cols[key] = ("strings", renum[docs[ok]], np.asarray(codes)[ok], list(vocab))
                else:
                    cols[key] = (key[1], np.asarray(raw)[keep])
        # the added rows' values, renumbered over the live ones
        live_at = np.cumsum([r.live for r in self.new]) - 1 if self.new else np.zeros(0, np.int64)
        alive = [r.live for r in self.new]
        values = {
            key: [(int(live_at[j]), v) for j, v in vals if alive[j]] for key, vals in self._values.items()
        }
        n_new = len(new)
        for key, vals in values.items():
            kind = key[1]
            prev = cols.get(key) or _empty(kind, n_kept)
            rows = np.fromiter((n_kept + j for j, _ in vals), dtype=np.int64, count=len(vals))
            if kind == "text":
                _, codes, vocab = prev
                index = {v: i for i, v in enumerate(vocab)}
                add = np.full(n_new, -1, dtype=np.int32)
                for j, v in vals:
                    if isinstance(v, str) and v:
                        add[j] = index.setdefault(v, len(index))
                cols[key] = ("text", np.concatenate([codes, add]), list(index))
            elif kind == "strings":
                _, docs, codes, vocab = prev
                index = {v: i for i, v in enumerate(vocab)}
                d2: list[int] = []
                c2: list[int] = []
                for j, v in vals:
                    for s in v:
                        d2.append(n_kept + j)
                        c2.append(index.setdefault(s, len(index)))
                cols[key] = (
                    "strings",
                    np.concatenate([docs, np.asarray(d2, np.int64)]),
                    np.concatenate([codes, np.asarray(c2, np.int32)]),
                    list(index),
                )
            else:
                fill = np.full(n_new, math.nan if kind == "number" else -1, dtype=prev[1].dtype)
                data = np.concatenate([prev[1], fill])
                data[rows] = [float(v) if kind == "number" else int(v) for _, v in vals]
                cols[key] = (kind, data)
        for key, col in cols.items():  # fields absent from every new row: pad them
            size = len(col[1]) if col[0] != "strings" else None
            if size is not None and size < n_kept + n_new:
                pad = np.full(
                    n_kept + n_new - size, math.nan if col[0] == "number" else -1, dtype=col[1].dtype
                )
                cols[key] = (col[0], np.concatenate([col[1], pad]), *col[2:])
        self.cols = cols
        self.sealed = True

    def live_rows(self) -> dict[str, int]:
        """Passages of live documents per segment."""
        counts = np.bincount(self.loc[:, SEG], weights=self.loc[:, NPASS], minlength=len(self.seg_names))
        return {self.seg_names[i]: int(c) for i, c in enumerate(counts) if c > 0}

    def members(self, segments: Sequence[str]) -> list[np.ndarray]:
        """Per segment, the ordinals of its live articles, ascending."""
        out = []
        for name in segments:
            code = self._seg_code[name]
            out.append(np.sort(self.loc[self.loc[:, SEG] == code, ORD]))
        return out

    def relocate(self, segments: Sequence[str], new_name: str) -> None:
        """Point the rows of ``segments`` at the segment they were merged into, in merge order."""
        self._seg_code[new_name] = len(self.seg_names)
        self.seg_names.append(new_name)
        rank = np.full(len(self.seg_names), -1, dtype=np.int64)
        for i, name in enumerate(segments):
            rank[self._seg_code[name]] = i
        sel = np.flatnonzero(rank[self.loc[:, SEG]] >= 0)
        order = sel[np.lexsort((self.loc[sel, ORD], rank[self.loc[sel, SEG]]))]
        counts = self.loc[order, NPASS]
        self.loc[order, SEG] = self._seg_code[new_name]
        self.loc[order, ORD] = np.arange(len(order))
        self.loc[order, ROW] = np.cumsum(counts) - counts

    def write(self, gen_dir: Path, segment_order: Sequence[str]) -> int:
        """Write the sealed table into ``gen_dir``, sorted by id; returns the document count."""
        if not self.sealed:
            self.seal()
        order = sorted(range(len(self.ids)), key=self.ids.__getitem__)
        perm = np.asarray(order, dtype=np.int64)
        inv = np.empty_like(perm)
        inv[perm] = np.arange(len(perm))
        names = list(segment_order)
        code = {s: i for i, s in enumerate(names)}
        remap = np.asarray([code.get(s, -1) for s in self.seg_names], dtype=np.int64)
        loc = self.loc[perm].copy() if len(perm) else np.zeros((0, 5), np.int64)
        loc[:, SEG] = remap[loc[:, SEG]] if len(loc) else loc[:, SEG]
        if len(loc) and loc[:, SEG].min() < 0:
            raise ValueError("a live document points at a segment the generation does not hold")
        Strings.save(gen_dir / "table.ids", [self.ids[i] for i in order])
        Strings.save(gen_dir / "table.dup", [self.dups[i] for i in order])
        save_npy(gen_dir / "table.loc.npy", loc)
        save_npy(gen_dir / "table.ts.npy", self.ts[perm] if len(perm) else np.zeros(0))
        spec: list[list[Any]] = []
        first_seen: dict[str, tuple[int, str]] = {}
        for i, (key, col) in enumerate(sorted(self.cols.items())):
            base = gen_dir / f"table.c{i}"
            kind = col[0]
            if kind == "text":
                codes, vocab = _compact(col[1][perm], col[2])
                if not len(vocab):
                    continue
                present = codes >= 0
                save_npy(Path(f"{base}.npy"), codes)
                _write_json(Path(f"{base}.json"), vocab)
            elif kind == "strings":
                docs = inv[col[1]]
                srt = np.lexsort((col[2], docs))
                codes, vocab = _compact(col[2][srt], col[3])
                if not len(vocab):
                    continue
                present = np.zeros(len(perm), dtype=bool)
                present[docs] = True
                save_npy(Path(f"{base}.docs.npy"), docs[srt])
                save_npy(Path(f"{base}.npy"), codes)
                _write_json(Path(f"{base}.json"), vocab)
            else:
                data = col[1][perm]
                present = ~np.isnan(data) if kind == "number" else data >= 0
                if not present.any():
                    continue
                save_npy(Path(f"{base}.npy"), data)
            spec.append([key[0], kind, i])
            if key[0] not in ("source", MONTH):
                seq = int(loc[present, SEQ].min())
                if key[0] not in first_seen or seq < first_seen[key[0]][0]:
                    first_seen[key[0]] = (seq, kind)
        _write_json(
            gen_dir / TABLE,
            {
                "n": len(perm),
                "segments": names,
                "kinds": {f: k for f, (_, k) in sorted(first_seen.items())},
                "next_seq": self.next_seq,
                "columns": spec,
            },
        )
        return len(perm)


def _empty(kind: str, n: int) -> tuple[Any, ...]:
    if kind == "text":
        return ("text", np.full(n, -1, np.int32), [])
    if kind == "strings":
        return ("strings", np.zeros(0, np.int64), np.zeros(0, np.int32), [])
    return (
        kind,
        np.full(n, math.nan if kind == "number" else -1, np.float64 if kind == "number" else np.int8),
    )


def _compact(codes: np.ndarray, vocab: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes renumbered over the values still used (vocabularies never grow with removed rows)."""
    used = np.unique(codes[codes >= 0])
    remap = np.full(len(vocab) + 1, -1, dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    return remap[codes], [vocab[i] for i in used.tolist()]
