"""The filterable fields of a set of documents as numpy columns: a checked
:class:`~search.filters.Filters` becomes a bitmap over them in microseconds (the local
store builds one per index generation). Split from :mod:`search.filters`, which parses
and checks the filters every face gives.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .filters import BUILTIN, merge_kinds

if TYPE_CHECKING:
    from .filters import Filters


class Columns:
    """The filterable fields of a set of documents as numpy columns, for bitmaps in microseconds.

    Built once per index generation (documents in a fixed order); :meth:`mask` turns a
    checked filter into a boolean array over those documents.
    """

    def __init__(
        self,
        sources: Sequence[str],
        published: Sequence[float | None],
        metadata: Sequence[Mapping[str, Any]],
    ) -> None:
        self.n = len(sources)
        self._sources = list(sources)
        self._published = np.array([math.nan if p is None else p for p in published], dtype=np.float64)
        self._meta = metadata
        self.kinds: dict[str, str] = {}
        for m in metadata:
            merge_kinds(self.kinds, m)
        self._cols: dict[str, Any] = {}

    def column(self, name: str) -> Any:
        """(kind, data): text → (codes, vocab); number → floats; bool → int8; strings → (docs, codes, vocab)."""
        col = self._cols.get(name)
        if col is not None:
            return col
        kind = BUILTIN.get(name) or self.kinds.get(name)
        if name == "published":
            col = ("date", self._published)
        elif name == "source":
            col = ("text", _encode(self._sources))
        elif kind == "text":
            col = (
                "text",
                _encode([m.get(name) if isinstance(m.get(name), str) else None for m in self._meta]),
            )
        elif kind == "number":
            vals = [m.get(name) for m in self._meta]
            col = (kind, np.array([_num(v) for v in vals], dtype=np.float64))
        elif kind == "bool":
            vals = [m.get(name) for m in self._meta]
            col = (kind, np.array([int(v) if isinstance(v, bool) else -1 for v in vals], dtype=np.int8))
        elif kind == "strings":
            docs: list[int] = []
            items: list[str] = []
            for i, m in enumerate(self._meta):
                v = m.get(name)
                if isinstance(v, list):
                    for s in v:
                        if isinstance(s, str):
                            docs.append(i)
                            items.append(s)
            codes, vocab = _encode(items)
            col = (kind, (np.asarray(docs, dtype=np.int64), codes, vocab))
        else:
            col = ("none", None)
        self._cols[name] = col
        return col

    def mask(self, filters: Filters) -> np.ndarray:
        """Which documents pass a checked filter: ``bool [n]``."""
        out = np.ones(self.n, dtype=bool)
        eq: dict[str, np.ndarray] = {}
        for c in filters.clauses:
            kind, data = self.column(c.field)
            if kind == "none":
                return np.zeros(self.n, dtype=bool)
            if kind == "text":
                codes, vocab = data
                hit = codes == vocab.get(c.value, -2)
            elif kind == "strings":
                docs, codes, vocab = data
                hit = np.zeros(self.n, dtype=bool)
                hit[docs[codes == vocab.get(c.value, -2)]] = True
            elif kind == "bool":
                hit = data == int(c.value)
            else:  # number, date: NaN (missing) fails every comparison
                with np.errstate(invalid="ignore"):
                    hit = {
                        ">=": data >= c.value,
                        "<=": data <= c.value,
                        ">": data > c.value,
                        "<": data < c.value,
                    }.get(c.op, data == c.value)
            if c.op == "=":
                eq[c.field] = eq[c.field] | hit if c.field in eq else hit
            elif c.op == "!=":
                present = ~np.isnan(data) if kind in ("number", "date") else self._present(kind, data)
                out &= present & ~hit
            else:
                out &= hit
        for hit in eq.values():
            out &= hit
        return out

    def _present(self, kind: str, data: Any) -> np.ndarray:
        if kind == "text":
            return np.asarray(data[0] >= 0)
        if kind == "bool":
            return np.asarray(data >= 0)
        present = np.zeros(self.n, dtype=bool)
        present[data[0]] = True
        return present


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _encode(values: Sequence[str | None]) -> tuple[np.ndarray, dict[str, int]]:
    """Codes for text values (-1 for missing) and the vocabulary value → code."""
    vocab: dict[str, int] = {}
    codes = np.fromiter(
        (-1 if not isinstance(v, str) or v == "" else vocab.setdefault(v, len(vocab)) for v in values),
        dtype=np.int32,
        count=len(values),
    )
    return codes, vocab
