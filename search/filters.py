"""Metadata filters: parsed once at a face, checked against the index's fields, then
applied inside each retriever (a bitmap over documents, as Lucene's filter context).

A filter is a conjunction over fields. Within one field, ``=`` clauses are
alternatives (``--source AFP --source "BBC Sport"``: either) and range clauses
(``>=``, ``<=``, ``>``, ``<``) all hold. Fields and their kinds come from the index:

``source`` (text), ``published`` (date: the UTC timestamp parsed at ingest), and every
extra JSONL field, whose kind is read from its values: text, number, bool, or a list of
strings (``=`` then means "holds this string"). A document without the field never
matches a clause on it.

The faces say it three ways, all ending in the same :class:`Filters`:

- CLI: ``--source S``, ``--since DATE``, ``--until DATE``, ``--where FIELD=VALUE``
  (repeatable; ``FIELD>=VALUE`` and the other comparisons for numbers and dates);
- HTTP and MCP: the same names as query parameters or arguments, or a JSON object
  ``{"source": "AFP", "since": "2005-01-01", "category": ["football", "rugby"],
  "minute": {">=": 80}, "where": ["category=football"]}``;
- Python: ``filters=`` takes that object, a :class:`Filters`, or a list of ``where`` strings.

A date-only bound means the whole day (month, year): ``--until 2005-03-01`` holds
everything published that day.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .dates import end_of, is_date_only, parse_date
from .errors import FilterError, quoted

#: Fields every index has, besides the extra metadata fields it has seen.
BUILTIN = {"source": "text", "published": "date"}
KINDS = ("text", "number", "bool", "strings", "date")
OPS = (">=", "<=", "!=", "=", ">", "<")
RANGE = (">=", "<=", ">", "<")
_WHERE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(>=|<=|!=|=|>|<|:)\s*(.*?)\s*$", re.DOTALL)
_TRUE = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
EXAMPLE = "e.g. --where category=football or --since 2005-01-01"


def value_kind(value: Any) -> str | None:
    """The filter kind of one metadata value, or None when it cannot be filtered on."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        try:
            return "number" if math.isfinite(float(value)) else None
        except OverflowError:  # an int past a float's range (a 400-digit JSON number)
            return None
    if isinstance(value, str):
        return "text"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "strings"
    return None


def merge_kinds(kinds: dict[str, str], metadata: Mapping[str, Any]) -> dict[str, str]:
    """``kinds`` updated with the fields of one document's metadata (first kind seen wins)."""
    for k, v in metadata.items():
        kind = value_kind(v)
        if kind is not None and k not in BUILTIN:
            kinds.setdefault(k, kind)
    return kinds


@dataclass(frozen=True)
class Clause:
    """One condition: ``field op value`` (the value raw until :meth:`Filters.check` types it)."""

    field: str
    op: str
    value: Any

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "op": self.op, "value": self.value}


@dataclass(frozen=True)
class Filters:
    """A conjunction of clauses; empty means no filter."""

    clauses: tuple[Clause, ...] = ()
    checked: bool = False

    def __bool__(self) -> bool:
        return bool(self.clauses)

    @property
    def key(self) -> tuple[Any, ...]:
        """A hashable identity, for caching the bitmap of a filter that repeats."""
        return tuple((c.field, c.op, repr(c.value)) for c in self.clauses)

    def to_dict(self) -> dict[str, Any]:
        """The filter as the faces echo it: ``{field: [[op, value], ...]}``."""
        out: dict[str, list[list[Any]]] = {}
        for c in self.clauses:
            out.setdefault(c.field, []).append([c.op, c.value])
        return out

    def fields(self) -> set[str]:
        return {c.field for c in self.clauses}

    def without(self, fields: Iterable[str]) -> Filters:
        drop = set(fields)
        return Filters(tuple(c for c in self.clauses if c.field not in drop), self.checked)

    # -- parsing ----------------------------------------------------------------------
    @classmethod
    def of(cls, obj: Any) -> Filters:
        """A filter from what a face was given: None, a Filters, a mapping, or ``where`` strings."""
        if obj is None:
            return cls()
        if isinstance(obj, Filters):
            return obj
        if isinstance(obj, str):
            return cls.parse(where=[obj])
        if isinstance(obj, Mapping):
            return cls._from_mapping(obj)
        if isinstance(obj, Sequence) and not isinstance(obj, (bytes, bytearray)):
            return cls.parse(where=list(obj))
        raise FilterError(
            f"filters must be an object of field: value pairs or a list of FIELD=VALUE strings, "
            f"not {type(obj).__name__} ({EXAMPLE})"
        )

    @classmethod
    def parse(
        cls,
        source: Sequence[str] | str | None = None,
        since: str | None = None,
        until: str | None = None,
        where: Sequence[str] | None = None,
    ) -> Filters:
        """The CLI's and the query string's form: ``--source``, ``--since``, ``--until``, ``--where``."""
        clauses: list[Clause] = []
        for s in [source] if isinstance(source, str) else source or []:
            clauses.append(Clause("source", "=", s))
        if since:
            clauses.append(Clause("published", ">=", since))
        if until:
            clauses.append(Clause("published", "<=", until))
        for w in where or []:
            if not isinstance(w, str):
                raise FilterError(f"a where clause must be a FIELD=VALUE string, not {quoted(w)} ({EXAMPLE})")
            m = _WHERE.match(w)
            if not m or not m.group(3):
                raise FilterError(
                    f"{quoted(w)} is not a filter: write FIELD=VALUE, or FIELD>=VALUE (also <=, >, <) "
                    f"for numbers and dates ({EXAMPLE})"
                )
            op = "=" if m.group(2) == ":" else m.group(2)
            clauses.append(Clause(m.group(1), op, m.group(3)))
        return cls(tuple(clauses))

    @classmethod
    def _from_mapping(cls, obj: Mapping[str, Any]) -> Filters:
        clauses: list[Clause] = []
        for name, v in obj.items():
            if not isinstance(name, str):
                raise FilterError(f"a filter field must be a name, not {quoted(name)}")
            if v is None:
                continue
            if name in ("since", "until"):
                if not isinstance(v, str):
                    raise FilterError(f"{name} must be a date string such as 2005-01-01, not {quoted(v)}")
                clauses.append(Clause("published", ">=" if name == "since" else "<=", v))
            elif name == "where":
                if isinstance(v, str):
                    v = [v]
                if not isinstance(v, (list, tuple)):
                    raise FilterError(
                        f"where must be a FIELD=VALUE string or a list of them, not {type(v).__name__} "
                        f"({EXAMPLE})"
                    )
                clauses.extend(cls.parse(where=v).clauses)
            elif isinstance(v, Mapping):
                for op, x in v.items():
                    if op not in OPS:
                        raise FilterError(
                            f"{name}: unknown comparison {quoted(op)}: use one of {', '.join(OPS)}"
                        )
                    clauses.append(Clause(name, op, x))
            elif isinstance(v, list):
                if not v:
                    raise FilterError(f"{name}: an empty list of values matches nothing; drop the filter")
                clauses.extend(Clause(name, "=", x) for x in v)
            else:
                clauses.append(Clause(name, "=", v))
        return cls(tuple(clauses))

    # -- checking against an index's fields ------------------------------------------------
    def check(self, kinds: Mapping[str, str]) -> Filters:
        """The same filter with typed values (dates and numbers as floats), or
        :class:`FilterError` naming the field and the form it expects."""
        if self.checked or not self.clauses:
            return self
        all_kinds = {**BUILTIN, **kinds}
        out: list[Clause] = []
        for c in self.clauses:
            kind = all_kinds.get(c.field)
            if kind is None:
                names = sorted(all_kinds)
                known = ", ".join(names[:20]) + (f" and {len(names) - 20:,} more" if len(names) > 20 else "")
                hint = (
                    ""
                    if kinds
                    else " (an index built before metadata was kept has no other: `search reindex`)"
                )
                raise FilterError(
                    f"unknown filter field {quoted(c.field)}: this index can filter on {known}{hint}"
                )
            out.extend(_typed(c, kind))
        lo: dict[str, float] = {}
        hi: dict[str, float] = {}
        for c in out:
            if c.op in (">=", ">"):
                lo[c.field] = max(lo.get(c.field, -math.inf), c.value)
            elif c.op in ("<=", "<"):
                hi[c.field] = min(hi.get(c.field, math.inf), c.value)
        for f in lo:
            if f in hi and lo[f] > hi[f]:
                raw = {c.op: c.value for c in self.clauses if c.field == f}
                if f == "published":
                    raise FilterError(
                        f"since {raw.get('>=', raw.get('>'))} is after until {raw.get('<=', raw.get('<'))}: "
                        "nothing can match; swap them"
                    )
                raise FilterError(f"{f}: the lower bound {lo[f]:g} is above the upper bound {hi[f]:g}")
        return Filters(tuple(out), checked=True)

    # -- the reference --------------------------------------------------------------------
    def matches(self, source: str, published_ts: float | None, metadata: Mapping[str, Any]) -> bool:
        """Whether one document passes (checked filters): the brute-force reference."""
        ok_eq: dict[str, bool] = {}
        for c in self.clauses:
            v = source if c.field == "source" else published_ts if c.field == "published" else None
            if c.field not in BUILTIN:
                v = metadata.get(c.field)
            if c.op in ("=", "!="):
                hit = (c.value in v) if isinstance(v, list) else (v == c.value and v is not None)
                if c.op == "!=":
                    if v is None or hit:
                        return False
                    continue
                ok_eq[c.field] = ok_eq.get(c.field, False) or hit
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                return False
            if not _compare(float(v), c.op, c.value):
                return False
        return all(ok_eq.values())


def _compare(v: float, op: str, x: float) -> bool:
    return (v >= x) if op == ">=" else (v <= x) if op == "<=" else (v > x) if op == ">" else (v < x)


def _typed(c: Clause, kind: str) -> list[Clause]:
    v = c.value
    if kind in ("text", "strings"):
        if c.op in RANGE:
            raise FilterError(f"{c.field} holds text: compare with =, e.g. --where {c.field}=VALUE")
        if not isinstance(v, str):
            what = "a list of strings" if kind == "strings" else "text"
            raise FilterError(
                f"{c.field} holds {what}: give a string value, e.g. --where {c.field}=VALUE (got {quoted(v)})"
            )
        return [Clause(c.field, c.op, v)]
    if kind == "bool":
        if c.op in RANGE:
            raise FilterError(f"{c.field} is true or false: use {c.field}=true or {c.field}=false")
        b = v if isinstance(v, bool) else _TRUE.get(str(v).strip().lower())
        if b is None:
            raise FilterError(
                f"{c.field} is true or false, not {quoted(v)}: use {c.field}=true or {c.field}=false"
            )
        return [Clause(c.field, c.op, b)]
    if kind == "number":
        try:
            x = float(v) if not isinstance(v, bool) else math.nan
        except (TypeError, ValueError):
            x = math.nan
        if not math.isfinite(x):
            raise FilterError(f"{c.field} holds numbers: {quoted(v)} is not one (e.g. --where {c.field}>=80)")
        return [Clause(c.field, c.op, x)]
    # a date
    dt = parse_date(v) if isinstance(v, str) else None
    if dt is None:
        raise FilterError(
            f"{c.field}: {quoted(v)} is not a date: use ISO 8601 such as 2005-01-01 or 2005-01-01T18:30:00Z"
        )
    start = dt.timestamp()
    whole = is_date_only(v)
    end = end_of(v).timestamp() if whole else start
    if c.op == "=":
        return [Clause(c.field, ">=", start), Clause(c.field, "<=", end)]
    if c.op == "!=":
        raise FilterError(f"{c.field}: use since/until (or >=, <=) for dates, not !=")
    if c.op == "<=" or c.op == ">":
        return [Clause(c.field, c.op, end)]
    return [Clause(c.field, c.op, start)]
