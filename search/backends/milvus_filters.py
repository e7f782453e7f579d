"""Filters, facets and date order on Milvus: native scalar filter expressions.

Each passage row carries its article's ``source`` (a VARCHAR) and a JSON field ``meta``
holding ``published_ts`` and every extra metadata field, so a checked
:class:`~search.filters.Filters` becomes one boolean expression that Milvus applies
inside its BM25 and vector searches (before top-k, as the local backend's bitmaps):

    source in ["AFP"] and meta["published_ts"] >= 1104537600 and json_contains(meta["tags"], "x")

A document without a field fails every comparison on it (Milvus's JSON semantics match
the local backend's). Facets and date order need every matching passage: the BM25
search with the filter, as deep as Milvus goes (:data:`MATCH_LIMIT`), then counted here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..dates import month
from ..facets import FACET_FIELDS, Facets, entity_group, facet_name
from ..filters import BUILTIN, Filters
from .local_rows import _countries, _top
from .milvus_base import lexical_text

if TYPE_CHECKING:
    from .milvus_search import MilvusSearch

MATCH_LIMIT = 16_384  # Milvus's cap on offset + limit: facets count at most this many matches


def _lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v))
    return json.dumps(str(v), ensure_ascii=False)


def _path(name: str) -> str:
    if name == "source":
        return "source"
    key = "published_ts" if name == "published" else name
    return f"meta[{json.dumps(key, ensure_ascii=False)}]"


def expression(filters: Filters | None, kinds: dict[str, str]) -> str:
    """A Milvus boolean expression for checked filters ("" for none)."""
    if not filters:
        return ""
    all_kinds = {**BUILTIN, **kinds}
    parts: list[str] = []
    alternatives: dict[str, list[str]] = {}
    for c in filters.clauses:
        kind = all_kinds.get(c.field, "text")
        path = _path(c.field)
        if kind == "strings":
            cond = f"json_contains({path}, {_lit(c.value)})"
        else:
            cond = f"{path} {'==' if c.op == '=' else c.op} {_lit(c.value)}"
        if c.op == "=":
            alternatives.setdefault(c.field, []).append(cond)
        elif c.op == "!=" and kind == "strings":
            parts.append(f"(exists {path} and not {cond})")
        elif c.op == "!=":
            parts.append(
                f"(exists {path} and {cond})" if c.field != "source" else f'({cond} and source != "")'
            )
        else:
            parts.append(cond)
    for conds in alternatives.values():
        parts.append(conds[0] if len(conds) == 1 else "(" + " or ".join(conds) + ")")
    return " and ".join(parts)


def meta_of(published_ts: float | None, metadata: dict[str, Any]) -> dict[str, Any]:
    """The JSON ``meta`` value of a passage row."""
    out = dict(metadata)
    if published_ts is not None:
        out["published_ts"] = float(published_ts)
    return out


def matches(
    be: MilvusSearch, terms: Sequence[str], question: str | None, expr: str
) -> list[tuple[str, float]]:
    """Every passage the words match under ``expr`` (up to :data:`MATCH_LIMIT`), best first."""
    text = lexical_text(question, terms).strip()
    if not text:
        return []
    return be._search([text], "sparse", MATCH_LIMIT, "BM25", expr)


def all_passages(be: MilvusSearch, expr: str) -> list[str]:
    return [r["id"] for r in be._scan(be.passages_name, expr, ["id"])]


def facets(be: MilvusSearch, pids: list[str], top: int = 10) -> Facets:
    """Counts over the given passages, from the document records and stored entities."""
    out = Facets(passages=len(pids))
    per_doc: Counter[str] = Counter(pid.rpartition("#")[0] for pid in pids)
    recs = be._records_of(list(per_doc))
    counts: dict[str, Counter[str]] = {name: Counter() for name in FACET_FIELDS}
    for d, n in per_doc.items():
        rec = recs.get(d)
        if rec is None:
            continue
        if rec.source:
            counts["source"][rec.source] += n
        cat = (rec.metadata or {}).get("category")
        if isinstance(cat, str) and cat:
            counts["category"][cat] += n
        m = month(rec.published_ts)
        if m:
            counts["month"][m] += n
    for name in FACET_FIELDS:
        out.fields[name] = sorted(counts[name].items(), key=lambda t: (-t[1], t[0]))
    people: Counter[str] = Counter()
    teams: Counter[str] = Counter()
    countries = _countries()
    by_doc: dict[str, list[str]] = {}
    for pid in pids:
        by_doc.setdefault(pid.rpartition("#")[0], []).append(pid)
    for d, ps in by_doc.items():
        art = be.article(d)
        if art is None or not art.entities:
            continue
        for pid in ps:
            p = be.passage(pid)
            if p is None:
                continue
            for s, e, label in art.entities:
                if p.start <= s and e <= p.end:
                    group = entity_group(label, art.text[s:e], countries)
                    if group is not None:
                        (people if group == "people" else teams)[facet_name(art.text[s:e])] += 1
    out.fields["people"] = _top(people, top)
    out.fields["teams"] = _top(teams, top)
    return out


def newest(
    be: MilvusSearch, terms: Sequence[str], question: str | None, expr: str, limit: int
) -> list[tuple[str, float | None, float]]:
    """Matching passages newest first (undated last), BM25 breaking ties, every tie at the cut."""
    hits = matches(be, terms, question, expr)
    recs = be._records_of(list({pid.rpartition("#")[0] for pid, _ in hits}))

    def ts(pid: str) -> float | None:
        rec = recs.get(pid.rpartition("#")[0])
        return rec.published_ts if rec is not None else None

    rows = [(pid, ts(pid), score) for pid, score in hits]
    rows.sort(key=lambda t: (-(t[1] if t[1] is not None else float("-inf")), -t[2], t[0]))
    if limit < len(rows):
        cut = rows[limit - 1][1]
        end = limit
        while end < len(rows) and rows[end][1] == cut:
            end += 1
        rows = rows[:end]
    return rows
