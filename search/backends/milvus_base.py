"""What every Milvus stage shares: the index format, Milvus's limits, and values as Milvus takes them.

The constants (the format number, the analyzer, VARCHAR and id limits, page and batch
sizes, the cache bounds, the fields a passage query returns) and the small pure helpers
the store, the reader, the searches and the writer all use: the Milvus Lite path a URI
names, string literals and boolean expressions (:func:`filter_expr`), the analysed
terms the lexical fields hold and the questions send (:func:`lex_text`, :func:`doc_text`,
:func:`lexical_text`), and values cut to Milvus's limits. Nothing here talks to Milvus.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..fusion import TITLE_WEIGHT
from ..text import analyze, query_terms

# 2: the headline in the BM25 text (field lex), the document-level collection;
# 3: a JSON field ``meta`` (published_ts and the extra metadata) on passages, for filters;
# 4: lex and doclex hold the engine's analysed terms (whitespace analyzer), the headline
#    repeated TITLE_WEIGHT times
FORMAT = 4
# Milvus splits the engine's analysed terms at spaces, and does nothing else to them.
ANALYZER = {"tokenizer": "whitespace"}
DEFAULT_PREFIX = "search"
MAX_VARCHAR = 65_535  # bytes, Milvus's limit for one VARCHAR value
MAX_ID_BYTES = 1_024
PART_CHARS = 16_000  # 4 bytes a character at worst: a part always fits MAX_VARCHAR
WRITE_ROWS = 500  # rows per upsert call: far below gRPC's 64 MiB message limit
IN_LIST = 500  # values per `field in [...]` expression
PAGE = 4_000  # rows per query page (Milvus caps offset + limit at 16,384)
PASSAGE_CACHE = 50_000
# Articles kept per generation: the reranker reads the stored sentence vectors of the
# head's articles on every hybrid query, and the answer stage their text; one query per
# article each time cost more than the search itself on Milvus Lite.
ARTICLE_CACHE = 2_000
#: How finely a weighted BM25 query is sent (:func:`weighted_text`): Milvus weighs a query
#: term by how often the text repeats it (linearly: tested), so a term of weight ``w`` goes
#: ``round(w * EXTRA_SCALE)`` times and the scores come back divided by EXTRA_SCALE. 100
#: rounds a weight to 0.01 of a typed term's: on the SciFact subset (1,653 documents, 300
#: claims) Milvus nDCG@10 0.8223 and overlap@10 with local 0.984, as at 1,000 (0.8210,
#: 0.984), with a tenth of the text (a 2,000-character question sent ~5 MB at 1,000).
EXTRA_SCALE = 100
RRF_K = 60  # Cormack et al.'s constant, the same default as the engine's own RRF
FILTER_FIELDS = ("doc_id", "source", "title", "url", "published")
PASSAGE_FIELDS = ["doc_id", "start", "end", "text", "sents"]
MANIFEST_KEY = "manifest"


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def lite_path(uri: str) -> Path | None:
    """The Milvus Lite file a URI names, or None when it names a server."""
    if re.match(r"^(https?|tcp|unix)://", uri, re.IGNORECASE) or uri.startswith("unix:"):
        return None
    p = Path(uri).expanduser()
    if p.suffix == ".db":
        return p
    return p / "milvus.db"


def lit(value: str) -> str:
    """A string literal for a Milvus boolean expression (JSON escaping is what its parser reads)."""
    return json.dumps(str(value), ensure_ascii=False)


def _single_quoted(value: str) -> str:
    # TEXT_MATCH takes its text in single quotes only
    return value.replace("\\", "\\\\").replace("'", "\\'")


def filter_expr(filter: str | Mapping[str, Any] | None) -> str:
    """A Milvus expression from a filter: an expression string, or ``{field: value | [values]}``.

    >>> filter_expr({"source": "bbc", "doc_id": ["a", "b"]})
    'source == "bbc" and doc_id in ["a", "b"]'
    """
    if filter is None:
        return ""
    if isinstance(filter, str):
        return filter.strip()
    if not isinstance(filter, Mapping):
        raise ValueError(f"filter must be a Milvus expression or a mapping, got {type(filter).__name__}")
    parts = []
    for key, value in filter.items():
        if key not in FILTER_FIELDS:
            raise ValueError(f"cannot filter on {key!r}: choose from {', '.join(FILTER_FIELDS)}")
        if isinstance(value, str):
            parts.append(f"{key} == {lit(value)}")
        elif isinstance(value, Iterable):
            values = [str(v) for v in value]
            if not values:
                raise ValueError(f"filter on {key!r} has an empty list of values")
            parts.append(f"{key} in [{', '.join(lit(v) for v in values)}]")
        else:
            raise ValueError(f"filter on {key!r}: give a string or a list of strings")
    return " and ".join(parts)


def _and(*exprs: str) -> str:
    kept = [e for e in exprs if e]
    if len(kept) <= 1:
        return kept[0] if kept else ""
    return " and ".join(f"({e})" for e in kept)


def lexical_text(question: str | None, terms: Sequence[str]) -> str:
    """What Milvus's BM25 gets: the engine's analysed terms (a repeated term counts twice),
    else the question's, analysed as the engine analyses it (:func:`search.text.query_terms`)."""
    if terms:
        return " ".join(terms)
    return " ".join(query_terms(question)) if question and question.strip() else ""


def weighted_text(
    question: str | None, terms: Sequence[str], extra: Mapping[str, float] | None
) -> tuple[str, float]:
    """What Milvus's BM25 gets for :func:`lexical_text` plus ``extra`` terms added to the
    query's weights (as the local backend's ``LexicalIndex._query`` adds them: a typed term
    counts its repeats, an extra term its weight on top), and what to divide its scores by.

    Without ``extra`` it is :func:`lexical_text` and 1. With them every weight is sent as
    repeats (``round(weight * EXTRA_SCALE)`` copies; a weight that rounds to nothing or
    less is left out) and the scores are ``EXTRA_SCALE`` times the weighted query's:
    terms ``["goal", "goal"]`` with ``{"net": 0.3}`` send "goal" 200 times, "net" 30.
    """
    if not extra:
        return lexical_text(question, terms), 1.0
    base = list(terms) if terms else (query_terms(question) if question and question.strip() else [])
    weights: dict[str, float] = {t: float(c) for t, c in Counter(base).items()}
    for t, w in extra.items():
        weights[t] = weights.get(t, 0.0) + float(w)
    parts = [" ".join([t] * n) for t, w in weights.items() if t.strip() and (n := round(w * EXTRA_SCALE)) > 0]
    return " ".join(parts), float(EXTRA_SCALE)


def doc_text(head: str, text: str) -> str:
    """An article as the document-level collection holds it: the local ``docs`` index's terms."""
    return " ".join(analyze(f"{head}\n{text}"))


def lex_text(head: str, text: str) -> str:
    """A passage (or a whole article) as the lex field holds it: analysed terms, the
    headline's first, repeated to weigh as BM25F's title weight does locally."""
    reps = max(1, round(TITLE_WEIGHT))
    return " ".join(analyze(head) * reps + analyze(text))


def _clip(value: str | None, limit: int) -> str:
    """``value`` cut to at most ``limit`` UTF-8 bytes (metadata copies used only for filters)."""
    b = (value or "").encode("utf-8")
    return b[:limit].decode("utf-8", errors="ignore") if len(b) > limit else (value or "")


def _parts(text: str) -> list[str]:
    return [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]


def _chunks(seq: Sequence[Any], n: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]
