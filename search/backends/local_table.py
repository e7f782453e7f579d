"""The document table of one local generation: compact columns, memory-mapped, no objects.

One row per live document, sorted by id (UTF-8 bytes), so a lookup is a binary search
and opening the table reads a small header, whatever the corpus size. Files (in the
generation directory; plain numpy, bytes and JSON, no pickle):

``table.json``      row count, segment names, the filter columns and the fields' kinds
``table.ids.*``     the ids: ``.bin`` UTF-8 bytes end to end, ``.npy`` int64 [n + 1] offsets
``table.loc.npy``   int64 [n, 5]: segment (index into the names), article ordinal in the
                    segment, first passage row, passage count, and the order the document
                    was added in (``seq``: "first seen" for a field's kind)
``table.ts.npy``    float64 [n] publication timestamps, NaN where undated
``table.dup.*``     the id of the story each document copies (empty: none)
``table.c<i>.*``    filter and facet columns, one per (field, kind): ``text`` int32 codes with
                    a ``.json`` vocabulary, ``number`` float64, ``bool`` int8, ``strings``
                    (``.docs.npy`` rows, codes) with a vocabulary; ``source`` and the
                    publication month are columns too

Everything else a document record shows is in its segment (:mod:`.local_store`), read
when asked for. The write side, :class:`TableBuilder` (the old table's columns, rows
removed and added, then written sorted), is :mod:`.local_table_write`; the names and the
strings column both sides use are :mod:`.local_table_format`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..filter_columns import Columns
from .local_store import _LRU, mapped
from .local_table_format import MONTH, TABLE, Strings

# Re-exported: every public name this module had before the write side moved out.
from .local_table_format import NPASS as NPASS
from .local_table_format import ORD as ORD
from .local_table_format import ROW as ROW
from .local_table_format import SEG as SEG
from .local_table_format import SEQ as SEQ
from .local_table_write import INTERN_CHARS as INTERN_CHARS
from .local_table_write import TableBuilder as TableBuilder
from .local_table_write import write_empty as write_empty

FIND_CACHE = 8192  # id -> row lookups kept (each a binary search over the id column)


class Table:
    """The document table of one generation, opened (O(1): headers and memory maps)."""

    def __init__(self, gen_dir: Path) -> None:
        self.dir = gen_dir
        head = json.loads((gen_dir / TABLE).read_text(encoding="utf-8"))
        self.n: int = head["n"]
        self.segments: list[str] = head["segments"]
        self.kinds: dict[str, str] = head["kinds"]
        self.next_seq: int = head["next_seq"]
        self.spec: dict[tuple[str, str], int] = {(c[0], c[1]): c[2] for c in head["columns"]}
        self.ids = Strings.load(gen_dir / "table.ids")
        self.dup = Strings.load(gen_dir / "table.dup")
        self.loc = mapped(gen_dir / "table.loc.npy").reshape(-1, 5)
        self.ts = mapped(gen_dir / "table.ts.npy")
        self._find = _LRU(FIND_CACHE)
        self._cols: dict[tuple[str, str], Any] = {}
        # Every column file is mapped now (vocabularies read as bytes, parsed when used):
        # nothing is opened by path later, when the directory may be gone.
        self._files: dict[tuple[str, str], tuple[np.ndarray, np.ndarray | None, bytes]] = {}
        for key, i in self.spec.items():
            base = gen_dir / f"table.c{i}"
            strings = key[1] == "strings"
            self._files[key] = (
                mapped(f"{base}.npy"),
                mapped(f"{base}.docs.npy") if strings else None,
                Path(f"{base}.json").read_bytes() if key[1] in ("text", "strings") else b"",
            )

    def find(self, doc_id: str) -> int:
        """The row of a live document, or -1."""
        hit = self._find.get(doc_id)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        key = doc_id.encode("utf-8", "surrogatepass")
        lo, hi = 0, self.n
        raw = self.ids.raw
        while lo < hi:
            mid = (lo + hi) // 2
            if raw(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        i = lo if lo < self.n and raw(lo) == key else -1
        self._find.put(doc_id, i)
        return i

    def id(self, i: int) -> str:
        return self.ids[i]

    def duplicate_of(self, i: int) -> str | None:
        return self.dup[i] or None

    def raw_column(self, field: str, kind: str) -> Any:
        """One stored (field, kind) column: codes and vocabulary, floats, int8, or (rows, codes, vocabulary)."""
        key = (field, kind)
        got = self._cols.get(key)
        if got is not None or key not in self._files:
            return got
        arr, docs, raw = self._files[key]
        if kind == "text":
            got = (arr, json.loads(raw))
        elif kind == "strings":
            got = (docs, arr, json.loads(raw))
        else:
            got = arr
        self._cols[key] = got
        return got

    def column(self, name: str) -> tuple[str, Any]:
        """A field as :class:`search.filter_columns.Columns` gives it: (kind, data), vocabularies as dicts."""
        if name == "published":
            return "date", np.asarray(self.ts)
        kind = "text" if name in ("source", MONTH) else self.kinds.get(name)
        if kind is None:
            return "none", None
        raw = self.raw_column(name, kind)
        if raw is None:
            return "none", None
        if kind == "text":
            codes, vocab = raw
            return kind, (np.asarray(codes), {v: i for i, v in enumerate(vocab)})
        if kind == "strings":
            docs, codes, vocab = raw
            return kind, (np.asarray(docs), np.asarray(codes), {v: i for i, v in enumerate(vocab)})
        return kind, np.asarray(raw)


class StoredColumns(Columns):
    """:class:`search.filter_columns.Columns` over a stored table: nothing decoded until a filter asks."""

    def __init__(self, table: Table) -> None:  # no super().__init__: no per-document lists
        self.n = table.n
        self.kinds = dict(table.kinds)
        self._table = table
        self._cols: dict[str, Any] = {}

    def column(self, name: str) -> Any:
        col = self._cols.get(name)
        if col is None:
            col = self._cols[name] = self._table.column(name)
        return col
