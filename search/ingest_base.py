"""What every ingest stage shares: the size limits, :class:`IngestProblem`, and the per-article checks.

The limits are read at import from the environment (``SEARCH_MAX_FILE_BYTES``,
``SEARCH_MAX_ARTICLE_CHARS``); the readers look them up on this module when they run,
so a test can lower them with ``monkeypatch.setattr(search.ingest_base, ...)``.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, replace
from typing import Any, Literal

from search.errors import quoted
from search.filters import value_kind
from search.ingest_text import _CONTROL, _SURROGATE, printable
from search.types import Article

TEXT_EXTENSIONS = frozenset({".txt", ".md"})
HTML_EXTENSIONS = frozenset({".html", ".htm"})
FEED_EXTENSIONS = frozenset({".xml", ".rss", ".atom"})
SUPPORTED_EXTENSIONS = TEXT_EXTENSIONS | HTML_EXTENSIONS | FEED_EXTENSIONS | {".jsonl"}

MAX_ID_CHARS = 200
# What POST /documents takes of an article's fields; ingest holds an article read from a file
# or given in code to the same (cut_fields): a longer title or source is cut, a longer url or
# published date is dropped.
MAX_TITLE_CHARS = 2_000
MAX_SOURCE_CHARS = 500
MAX_URL_CHARS = 4_000
MAX_PUBLISHED_CHARS = 100
MAX_FIELD_CHARS = 100  # a metadata field's name, as a filter names it


def _limit(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


# A match report is rarely over 50 KB: these bound what one file, line or article may cost.
# A JSONL file is streamed line by line, so only its lines are bounded; a text, HTML or feed
# file is read up to MAX_FILE_BYTES and skipped (with a warning) beyond it.
MAX_FILE_BYTES = _limit("SEARCH_MAX_FILE_BYTES", 8 * 1024 * 1024)
MAX_ARTICLE_CHARS = _limit("SEARCH_MAX_ARTICLE_CHARS", 200_000)
MAX_JSON_DEPTH = 32  # a record is flat metadata; deeper nesting is refused before parsing
TITLE_CHARS = 80  # a derived title is cut at a word boundary near this length


@dataclass(frozen=True)
class IngestProblem:
    """A file, line or entry that could not be read (``error``) or was read with a caveat (``warning``)."""

    path: str
    message: str  # one line: what was wrong and what to do
    line: int | None = None
    level: Literal["error", "warning"] = "error"

    def __post_init__(self) -> None:
        # A file name that is not UTF-8 reaches us with surrogate escapes: keep it printable.
        object.__setattr__(self, "path", printable(self.path))
        object.__setattr__(self, "message", printable(self.message))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        prefix = "warning: " if self.level == "warning" else ""
        return f"{prefix}{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "level": self.level, "message": self.message}


def _too_big(
    shown: str, what: str, size: str, limit: int, env: str, line: int | None = None
) -> IngestProblem:
    return IngestProblem(
        shown, f"{what} is {size}, over the limit of {limit:,}; split it, or raise {env}", line, "warning"
    )


def check_article(a: Article) -> str | None:
    """Why ``a`` cannot be stored (unencodable text, over the size limit), or ``None``.

    Checked for every article as the write takes it, before it joins a batch, so one bad
    article is skipped with a message instead of failing the whole batch half-way.
    """
    for name in ("id", "title", "text", "source", "url", "published"):
        v = getattr(a, name)
        if isinstance(v, str) and _SURROGATE.search(v):
            return f'"{name}" holds a lone surrogate (invalid Unicode): fix the encoding'
    problem = validate_id(a.id)
    if problem:
        return f"bad document id {printable(a.id)!r}: {problem}"
    if not a.text.strip():  # no passage to cut: the write would fail half-way
        return "the article has no text (empty or white space only); add the article text"
    for key, v in a.metadata.items():
        if isinstance(key, str) and (bad := field_name_problem(key)):
            return f"metadata field name {_short(key)}: {bad}; rename the field"
        if not isinstance(key, str) or value_kind(v) is None:
            return (
                f"metadata field {printable(str(key))!r} must be text, a number, true/false "
                "or a list of strings"
            )
        if any(
            isinstance(x, str) and _SURROGATE.search(x) for x in [key, *(v if isinstance(v, list) else [v])]
        ):
            return f'metadata "{printable(key)}" holds a lone surrogate (invalid Unicode): fix the encoding'
    if len(a.text) > MAX_ARTICLE_CHARS:
        return (
            f"the article is {len(a.text):,} characters, over the limit of {MAX_ARTICLE_CHARS:,}: "
            "split it, or raise SEARCH_MAX_ARTICLE_CHARS"
        )
    return None


def cut_fields(a: Article) -> tuple[Article, list[str]]:
    """``a`` with its fields held to what POST /documents takes (a new article, its content
    hash recomputed), and a warning per field, or ``a`` unchanged and no warning.

    Cut, not skipped: the text is the article. A title or a source is a label, cut to its
    limit; part of a url or a date is a wrong one, so a longer url or published is dropped.
    A published date this does not read is kept as written, with a warning.
    """
    caps = (
        ("title", MAX_TITLE_CHARS, True),
        ("source", MAX_SOURCE_CHARS, True),
        ("url", MAX_URL_CHARS, False),
        ("published", MAX_PUBLISHED_CHARS, False),
    )
    changes: dict[str, Any] = {}
    why: list[str] = []
    for name, limit, cut in caps:
        v = getattr(a, name)
        if not isinstance(v, str) or len(v) <= limit:
            continue
        changes[name] = v[: limit - 1].rstrip() + "…" if cut else None
        done = f"cut to {limit:,}" if cut else "dropped"
        why.append(
            f"document {printable(a.id)!r}: the {name} is {len(v):,} characters, over the limit of "
            f"{limit:,}: {done}; shorten it in the source"
        )
    if (
        isinstance(a.published, str)
        and a.published.strip()
        and a.published_ts is None
        and "published" not in changes
    ):
        # Kept as written, but no date filter or sort can place it: say so, or it is passed by in silence.
        why.append(
            f"document {printable(a.id)!r}: published {quoted(printable(a.published))} is not a date this reads: "
            "since/until and sort=newest pass it by; write ISO 8601 such as 2005-03-01 or 2005-03-01T18:30:00Z"
        )
    if not changes:
        return a, why
    if "published" in changes:
        changes["published_ts"] = None
    return replace(a, **changes, content_hash=""), why


def field_name_problem(key: str) -> str | None:
    """Why ``key`` cannot name a metadata field, or ``None``: no filter could name it, and
    every "unknown filter field" error would list it (a newline splitting the line)."""
    if not key.strip():
        return "it is empty"
    if len(key) > MAX_FIELD_CHARS:
        return f"it is {len(key):,} characters long (at most {MAX_FIELD_CHARS})"
    if _CONTROL.search(key):
        return "it contains control characters"
    return None


def _short(text: str) -> str:
    """``text`` quoted for a one-line message: escapes shown, at most 40 characters of it."""
    return repr(printable(text)) if len(text) <= 40 else repr(printable(text[:40])) + "…"


def validate_id(doc_id: str) -> str | None:
    """Why ``doc_id`` is not a safe document id, or ``None`` if it is.

    Ids end up in file names, URLs and citations: no control characters, no ``..``
    segment, no leading ``/``, no backslash, at most 200 characters.
    """
    if not doc_id or not doc_id.strip():
        return "it is empty"
    if len(doc_id) > MAX_ID_CHARS:
        return f"it is {len(doc_id)} characters long (at most {MAX_ID_CHARS})"
    if _CONTROL.search(doc_id):
        return "it contains control characters"
    if _SURROGATE.search(doc_id):
        return "it is not valid Unicode (a lone surrogate, or a file name that is not UTF-8)"
    if doc_id.startswith("/"):
        return "it starts with '/'"
    if "\\" in doc_id:
        return "it contains a backslash"
    if ".." in doc_id.split("/"):
        return "it contains a '..' segment"
    return None


# --- HTML fragments (feed entries) --------------------------------------------------------


def _decode(data: bytes, shown: str) -> tuple[str | None, IngestProblem | None]:
    """UTF-8 (BOM stripped), else Windows-1252 with a warning; binary data is an error."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), None
        except UnicodeDecodeError:
            pass
    if b"\x00" in data:
        return None, IngestProblem(
            shown, "binary file (NUL bytes); only text, JSONL, HTML and feeds can be indexed"
        )
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        utf8_error = e
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None, IngestProblem(
            shown,
            f"not UTF-8 (byte 0x{data[utf8_error.start]:02x} at offset {utf8_error.start}) nor Windows-1252; "
            "convert it to UTF-8",
        )
    return text, IngestProblem(
        shown,
        f"not valid UTF-8 (byte 0x{data[utf8_error.start]:02x} at offset {utf8_error.start}); "
        "read as Windows-1252: convert the file to UTF-8 to silence this",
        level="warning",
    )
