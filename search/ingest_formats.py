"""The readers of structured formats: JSONL records, HTML pages and RSS/Atom feeds.

Each yields articles and problems for one file's content; the limits are looked up on
:mod:`search.ingest_base` when a record is read.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from search import ingest_base as limits
from search.dates import html_published, with_time
from search.filters import value_kind
from search.ingest_base import IngestProblem, _decode, _too_big, field_name_problem, validate_id
from search.ingest_text import (
    _SURROGATE,
    _normalise,
    _one_line,
    clean_text,
    derive_title,
    detect_source,
    html_to_text,
    printable,
    site_name,
)
from search.types import Article

# The records' notes keep the name they always had, so a log filter on it still works.
log = logging.getLogger("search.ingest")


def _read_jsonl(f: Any, shown: str, abs_path: str) -> Iterator[Article | IngestProblem]:
    """One article per line, streamed: a file of any size costs one line at a time."""
    head = f.peek(4)[:4] if hasattr(f, "peek") else b""
    wide = next((enc for bom, enc in _WIDE_BOMS if head.startswith(bom)), None)
    if wide:
        f = _Utf8Lines(f, wide)
    found = False
    blank = True
    limit = limits.MAX_FILE_BYTES
    for n, raw in enumerate(_lines(f, limit), start=1):
        if raw is None:
            yield _too_big(shown, "the line", f"over {limit:,} bytes", limit, "SEARCH_MAX_FILE_BYTES", n)
            blank = False
            continue
        if n == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        if not raw.strip():
            continue
        blank = False
        line, warning = _decode(raw, shown)
        if warning is not None:
            yield IngestProblem(warning.path, warning.message, line=n, level=warning.level)
        if line is None:
            continue
        try:
            rec = _loads(line)
        except ValueError as e:
            yield IngestProblem(shown, f"{e}; fix or remove the line", line=n)
            continue
        item = _record(rec, shown, abs_path, n)
        found = found or isinstance(item, Article)
        yield item
    if not found and blank:
        yield IngestProblem(shown, "empty JSONL file; add one JSON object per line")


# UTF-32's before UTF-16's: FF FE 00 00 starts with FF FE.
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class _Utf8Lines:
    """A UTF-16 or UTF-32 file (Windows PowerShell's ``>`` writes UTF-16) as the UTF-8 lines
    :func:`_lines` reads: each NUL byte of its ASCII was "binary file" a line, every record
    after the first lost. A byte that does not decode becomes U+FFFD and fails its line alone."""

    def __init__(self, f: Any, encoding: str) -> None:
        self._text = io.TextIOWrapper(f, encoding=encoding, errors="replace", newline="")

    def readline(self, size: int) -> bytes:
        return self._text.readline(size).encode("utf-8", "surrogatepass")


def _lines(f: Any, limit: int) -> Iterator[bytes | None]:
    """Lines of a binary file (any of LF, CRLF, CR ends); None for a line over ``limit`` bytes."""
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while (more := f.readline(1 << 20)) and not more.endswith(b"\n"):
                pass  # skip the rest of the oversize line without holding it
            yield None
            continue
        line = line.rstrip(b"\n").rstrip(b"\r")
        yield from line.split(b"\r")  # a bare CR ends a line too (JSON escapes the ones in strings)


_NEST = re.compile(r'[\[\]{}]|"(?:[^"\\]|\\.)*"')


def _loads(line: str) -> Any:
    """``json.loads`` with the nesting depth checked first (deep nesting would overflow the stack)."""
    depth = deepest = 0
    for m in _NEST.finditer(line):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limits.MAX_JSON_DEPTH:
                raise ValueError(f"JSON nested deeper than {limits.MAX_JSON_DEPTH} levels")
        elif c in "]}":
            depth -= 1
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"malformed JSON ({e.msg} at column {e.colno})") from None
    except ValueError:  # int() refuses a literal of over 4,300 digits (sys.int_info)
        raise ValueError("a number of over 4,300 digits, which JSON readers refuse") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ValueError(f"JSON nested deeper than {limits.MAX_JSON_DEPTH} levels") from None


def _record(rec: Any, shown: str, abs_path: str, n: int) -> Article | IngestProblem:
    def bad(msg: str) -> IngestProblem:
        return IngestProblem(shown, msg, line=n)

    if not isinstance(rec, dict):
        return bad(f"expected a JSON object, got {type(rec).__name__}; write one object per line")
    raw_id = rec.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or raw_id == "":
        return bad('missing or invalid "id" (a non-empty string or an integer is needed)')
    doc_id = str(raw_id)
    problem = validate_id(doc_id)
    if problem:
        return bad(f"bad document id {doc_id!r}: {problem}")
    body = rec.get("text")
    if not isinstance(body, str):
        return bad(f'record {doc_id!r} has no "text" string; add the article text')
    for key, v in rec.items():
        if isinstance(v, str) and _SURROGATE.search(v):
            return bad(
                f'record {doc_id!r}: "{printable(key)}" holds a lone surrogate (invalid Unicode); fix it'
            )
    if len(body) > limits.MAX_ARTICLE_CHARS:
        return _too_big(
            shown,
            f"record {doc_id!r}",
            f"{len(body):,} characters",
            limits.MAX_ARTICLE_CHARS,
            "SEARCH_MAX_ARTICLE_CHARS",
            n,
        )
    title = rec.get("title")
    if title is not None and not isinstance(title, str):
        return bad(f'record {doc_id!r}: "title" must be a string (empty to derive one)')
    body = clean_text(_normalise(body))
    if not body:
        return bad(f"record {doc_id!r} has empty text; add the article text or drop the line")
    opt: dict[str, str | None] = {}
    for key in ("source", "url", "published"):
        v = rec.get(key)
        if v is not None and not isinstance(v, str):
            return bad(f'record {doc_id!r}: "{key}" must be a string')
        opt[key] = v or None
    metadata: dict[str, Any] = {}
    for key, v in rec.items():
        if key in _RECORD_FIELDS or v is None:
            continue
        if isinstance(key, str) and field_name_problem(key):
            log.info("%s:%d: field %r cannot be named by a filter: not kept", shown, n, key[:40])
            continue
        if value_kind(v) is None:
            # Nested objects and mixed lists cannot be shown or filtered on: dropped, said once.
            log.info(
                "%s:%d: field %r is not text, a number, a bool or a list of strings: not kept", shown, n, key
            )
            continue
        metadata[key] = v
    title = _one_line(_normalise(title or "")) or derive_title(body)
    return Article(
        id=doc_id,
        title=title,
        text=body,
        source=opt["source"] or detect_source(body) or site_name(opt["url"]),
        url=opt["url"],
        published=opt["published"],
        path=abs_path,
        metadata=metadata,
    )


# The fields an Article has of its own; every other field of a JSONL record is metadata.
_RECORD_FIELDS = frozenset({"id", "title", "text", "source", "url", "published"})


def _read_html(text: str, shown: str, abs_path: str, rel: str) -> Iterator[Article | IngestProblem]:
    try:
        import trafilatura
    except ImportError:  # pragma: no cover - a core dependency
        yield IngestProblem(shown, "trafilatura is not installed; pip install trafilatura to read HTML")
        return
    doc = trafilatura.bare_extraction(
        text, with_metadata=True, include_comments=False, include_tables=False, include_images=False
    )
    body = (getattr(doc, "text", None) or "") if doc is not None else ""
    title = _one_line(_normalise(getattr(doc, "title", None) or "")) if doc is not None else ""
    body = _normalise(body)
    # trafilatura repeats the <h1> as the first line of the text; the title holds it.
    first, _, rest = body.partition("\n")
    if title and first.strip() == title:
        body = rest
    # One paragraph per line from trafilatura; blank lines make the paragraphs visible.
    body = clean_text(re.sub(r"\n+", "\n\n", body))
    # trafilatura falls back to whatever text a page has ("Home" from a menu); a page
    # with no line of prose (six words or more) has no article to index.
    if not any(len(line.split()) >= 6 for line in body.split("\n")):
        yield IngestProblem(shown, "no article text found in the page (only navigation or boilerplate)")
        return
    problem = validate_id(rel)
    if problem:
        yield IngestProblem(shown, f"bad document id {rel!r}: {problem}; rename the file")
        return
    yield Article(
        id=rel,
        title=title or derive_title(body),
        text=body,
        source=_one_line(getattr(doc, "sitename", None) or "")
        or detect_source(body)
        or site_name(getattr(doc, "url", None)),
        url=getattr(doc, "url", None) or None,
        # trafilatura's date reads the page's metadata, to the day; the meta tags directly
        # when it finds none, or when they give the same day with its time
        published=with_time(getattr(doc, "date", None), html_published(text)),
        path=abs_path,
    )


def _read_feed(data: bytes, shown: str, abs_path: str, rel: str) -> Iterator[Article | IngestProblem]:
    try:
        import feedparser
    except ImportError:  # pragma: no cover - a core dependency
        yield IngestProblem(shown, "feedparser is not installed; pip install feedparser to read feeds")
        return
    # Bytes, not a path: feedparser would treat a string as a URL and fetch it.
    parsed = feedparser.parse(data)
    if not parsed.get("version") and not parsed.entries:
        reason = f" ({parsed.get('bozo_exception')})" if parsed.get("bozo") else ""
        yield IngestProblem(shown, f"not an RSS or Atom feed{reason}; feeds must be .xml, .rss or .atom")
        return
    if not parsed.entries:
        yield IngestProblem(shown, "the feed has no entries; nothing to index")
        return
    for n, entry in enumerate(parsed.entries, start=1):
        content = entry.get("content") or []
        html = (content[0].get("value") if content else None) or entry.get("summary") or ""
        body = clean_text(_normalise(html_to_text(html)))
        title = _one_line(_normalise(html_to_text(entry.get("title") or "")))
        key = entry.get("id") or entry.get("link") or ""
        where = f"entry {n}" + (f" ({key})" if key else "")
        if not body:
            yield IngestProblem(shown, f"{where} has no text (no content or summary); skipped")
            continue
        doc_id = _feed_id(key, rel, body)
        stamp = entry.get("published_parsed") or entry.get("updated_parsed")
        published = None
        if stamp:  # feedparser gives a UTC struct_time
            y, mo, d, h, mi, sec = (int(x) for x in stamp[:6])
            published = datetime(y, mo, d, h, mi, sec, tzinfo=timezone.utc).isoformat()
        else:  # a date feedparser cannot read: kept raw, parsed by search.dates if it can
            published = _one_line(entry.get("published") or entry.get("updated") or "") or None
        yield Article(
            id=doc_id,
            title=title or derive_title(body),
            text=body,
            source=_one_line(parsed.feed.get("title") or "") or detect_source(body),
            url=entry.get("link") or None,
            published=published,
            path=abs_path,
        )


def _feed_id(key: str, rel: str, body: str) -> str:
    """The entry's own id (or link) when it is a valid id; else a stable hash of it.

    Without either, the id hashes the text, so re-reading the same feed still gives the
    same id (a position would change as soon as the feed gains an entry).
    """
    if key and validate_id(key) is None:
        return key
    digest = hashlib.sha256((key or body).encode("utf-8")).hexdigest()[:16]
    return f"{rel}:{digest}"


# --- text normalisation ------------------------------------------------------------------
