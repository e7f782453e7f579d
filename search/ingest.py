"""Read files and folders into :class:`~search.types.Article` objects.

Supported: ``.txt`` and ``.md`` (one article per file), ``.jsonl`` (one per line),
``.html``/``.htm`` (main text via trafilatura), and RSS/Atom feeds ``.xml``/``.rss``/
``.atom`` (one article per entry, via feedparser).

A batch never stops at a bad file or line: :func:`read_path` yields an
:class:`IngestProblem` for it and goes on, and :func:`load` collects both::

    articles, problems = load(["seeds/", "extra/feed.rss"])
    for p in problems:
        print(p)          # "extra/feed.rss: the feed has no entries; ..."

Text is normalised only as far as citations allow: UTF-8 (BOM stripped) with a
Windows-1252 fallback, line ends to LF, Unicode NFC. Curly quotes and every other
character the author wrote stay, because quoted sentences must be exact spans of the
stored text. Lines that belong to other stories ("Read also: ...", "ADVERTISEMENT",
"Click here to ...") are dropped, also when a scraper glued them inline.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import logging
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

from search.chunk import known_names, segment, split_title_run
from search.dates import html_published
from search.filters import value_kind
from search.types import Article

__all__ = [
    "FEED_EXTENSIONS",
    "HTML_EXTENSIONS",
    "SUPPORTED_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "IngestProblem",
    "IngestReport",
    "check_article",
    "clean_text",
    "derive_title",
    "detect_source",
    "ingest",
    "load",
    "printable",
    "read_path",
    "validate_id",
]

log = logging.getLogger(__name__)

TEXT_EXTENSIONS = frozenset({".txt", ".md"})
HTML_EXTENSIONS = frozenset({".html", ".htm"})
FEED_EXTENSIONS = frozenset({".xml", ".rss", ".atom"})
SUPPORTED_EXTENSIONS = TEXT_EXTENSIONS | HTML_EXTENSIONS | FEED_EXTENSIONS | {".jsonl"}

MAX_ID_CHARS = 200


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
_HEADLINE_MAX_CHARS = 150
_HEADLINE_MAX_WORDS = 20


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


@dataclass
class IngestReport:
    """What a :func:`ingest` call read: articles, problems, and files skipped inside folders."""

    articles: list[Article] = field(default_factory=list)
    problems: list[IngestProblem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # hidden or unsupported files inside folders

    @property
    def errors(self) -> list[IngestProblem]:
        return [p for p in self.problems if p.level == "error"]

    @property
    def warnings(self) -> list[IngestProblem]:
        return [p for p in self.problems if p.level == "warning"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "articles": len(self.articles),
            "problems": [p.to_dict() for p in self.problems],
            "skipped": len(self.skipped),
        }


# --- public entry points ---------------------------------------------------------------


def load(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    root_of: Callable[[Path], Path | None] | None = None,
) -> tuple[list[Article], list[IngestProblem]]:
    """Read every path (file or folder) into articles; problems (and warnings) are returned, not raised.

    ``root_of`` gives the corpus root a path's ids are relative to (default: the folder
    given, or a single file's own folder).

    >>> articles, problems = load("seeds")  # doctest: +SKIP
    """
    report = ingest(paths, root_of)
    return report.articles, report.problems


def ingest(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    root_of: Callable[[Path], Path | None] | None = None,
) -> IngestReport:
    """Like :func:`load`, with the count of files skipped inside folders, and a warning per duplicate id."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    report = IngestReport()
    seen: dict[str, str] = {}
    for p in paths:
        root = root_of(Path(p)) if root_of is not None else None
        for item in read_path(p, root, on_skip=report.skipped.append):
            if isinstance(item, IngestProblem):
                report.problems.append(item)
                continue
            if item.id in seen:
                report.problems.append(
                    IngestProblem(
                        item.path or str(p),
                        f"document id {item.id!r} was also read from {seen[item.id]}; the later one is kept",
                        level="warning",
                    )
                )
                report.articles = [a for a in report.articles if a.id != item.id]
            seen[item.id] = item.path or str(p)
            report.articles.append(item)
    return report


def read_path(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    *,
    on_skip: Callable[[str], None] | None = None,
) -> Iterator[Article | IngestProblem]:
    """Yield articles and problems from a file or a folder (recursively, in sorted order).

    Document ids are paths relative to ``root`` with ``/`` separators: by default the
    folder given, or for a single file its name. JSONL records and feed entries carry
    their own ids. Inside folders, hidden files and unsupported extensions are skipped
    silently (reported through ``on_skip``); named explicitly, they are problems.

    Only regular files under the root are read (a symlink only when its target is
    inside it), each within the size limits; every article is checked by
    :func:`check_article` before it is yielded.
    """
    for item in _read_path(path, root, on_skip):
        if isinstance(item, Article) and (why := check_article(item)):
            yield IngestProblem(item.path or os.fspath(path), why, level="warning")
        else:
            yield item


def _read_path(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None,
    on_skip: Callable[[str], None] | None,
) -> Iterator[Article | IngestProblem]:
    p = Path(path)
    shown = os.fspath(path)
    if not p.exists():
        yield IngestProblem(shown, "no such file or folder; check the path")
        return
    if p.is_dir():
        base = Path(root) if root is not None else p
        found = False
        for f in _walk(p, on_skip):
            if isinstance(f, IngestProblem):
                yield f
                continue
            for item in _read_file(f, base, shown_path=str(f)):
                found = found or isinstance(item, Article)
                yield item
        if not found:
            yield IngestProblem(
                shown,
                "no articles were found in this folder; it needs "
                + ", ".join(sorted(SUPPORTED_EXTENSIONS))
                + " files",
            )
        return
    base = Path(root) if root is not None else p.parent
    if p.suffix.lower() not in SUPPORTED_EXTENSIONS:
        yield IngestProblem(
            shown,
            f"unsupported file type {p.suffix or '(none)'!r}; use one of {', '.join(sorted(SUPPORTED_EXTENSIONS))}",
        )
        return
    yield from _read_file(p, base, shown_path=shown)


def _walk(folder: Path, on_skip: Callable[[str], None] | None) -> Iterator[Path | IngestProblem]:
    """Supported files under ``folder``, sorted so ids and order are deterministic.

    Symlinked folders are not descended into (files inside the root are reached directly;
    those outside it are not ours to read): each is reported as a warning.
    """
    for dirpath, dirnames, filenames in os.walk(folder):
        # Hidden folders (.git, .cache) are never a corpus; prune them from the walk.
        for d in [d for d in dirnames if d.startswith(".")]:
            dirnames.remove(d)
            if on_skip:
                on_skip(os.path.join(dirpath, d))
        dirnames.sort()
        for d in dirnames:
            if os.path.islink(os.path.join(dirpath, d)):
                yield IngestProblem(
                    os.path.join(dirpath, d),
                    "symlinked folder not followed; index its target itself",
                    level="warning",
                )
        for name in sorted(filenames):
            f = Path(dirpath, name)
            if name.startswith(".") or f.suffix.lower() not in SUPPORTED_EXTENSIONS:
                if on_skip:
                    on_skip(str(f))
                continue
            yield f


def _open_regular(path: Path, base: Path, shown: str) -> tuple[int | None, IngestProblem | None]:
    """Open ``path`` for reading if it is a regular file under ``base`` (after symlinks).

    Anything else is a warning and never read: a symlink whose target leaves the root
    (``/etc/passwd``), a FIFO (opening it would block), a device (``/dev/zero`` never
    ends), a socket. The check is made again on the open descriptor, so a file swapped
    for a link between the check and the open is caught too.
    """

    def skip(why: str) -> tuple[None, IngestProblem]:
        return None, IngestProblem(shown, why, level="warning")

    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            target = path.resolve(strict=True)
            root = base.resolve()
            if target != root and root not in target.parents:
                return skip(f"symlink to a file outside the corpus folder {printable(str(base))}; not read")
            st = os.stat(target)
        if not stat.S_ISREG(st.st_mode):
            return skip("not a regular file (a FIFO, device or socket); only regular files are read")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop on older Pythons
        return None, IngestProblem(
            shown, f"cannot read the file ({getattr(e, 'strerror', None) or e}); check it"
        )
    fst = os.fstat(fd)
    if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        return skip("the file changed while it was opened (not the regular file checked); not read")
    return fd, None


def _read_bounded(fd: int, limit: int) -> bytes | None:
    """Up to ``limit`` bytes from ``fd``; None when there is more (the file is over the limit)."""
    chunks: list[bytes] = []
    got = 0
    while got <= limit:
        b = os.read(fd, min(1 << 20, limit + 1 - got))
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return None if got > limit else b"".join(chunks)


def _too_big(
    shown: str, what: str, size: str, limit: int, env: str, line: int | None = None
) -> IngestProblem:
    return IngestProblem(
        shown, f"{what} is {size}, over the limit of {limit:,}; split it, or raise {env}", line, "warning"
    )


# --- per-format readers ------------------------------------------------------------------


def _read_file(path: Path, base: Path, shown_path: str) -> Iterator[Article | IngestProblem]:
    fd, problem = _open_regular(path, base, shown_path)
    if fd is None:
        assert problem is not None
        yield problem
        return
    ext = path.suffix.lower()
    abs_path = str(path.resolve())
    try:
        rel = path.absolute().relative_to(base.absolute()).as_posix()
    except ValueError:
        rel = path.name
    try:
        if ext == ".jsonl":
            with os.fdopen(fd, "rb", closefd=False) as f:
                yield from _read_jsonl(f, shown_path, abs_path)
            return
        data = _read_bounded(fd, MAX_FILE_BYTES)
    except OSError as e:
        yield IngestProblem(shown_path, f"cannot read the file ({e.strerror or e}); check it")
        return
    finally:
        os.close(fd)
    if data is None:
        yield _too_big(
            shown_path, "the file", f"over {MAX_FILE_BYTES:,} bytes", MAX_FILE_BYTES, "SEARCH_MAX_FILE_BYTES"
        )
        return
    if ext in FEED_EXTENSIONS:
        # feedparser reads the XML encoding declaration itself, so it gets the bytes.
        yield from _read_feed(data, shown_path, abs_path, rel)
        return
    text, warning = _decode(data, shown_path)
    if warning is not None:
        yield warning  # an error when text is None, else the Windows-1252 warning
    if text is None:
        return
    if ext in HTML_EXTENSIONS:
        yield from _read_html(text, shown_path, abs_path, rel)
    else:
        yield from _read_text(text, shown_path, abs_path, rel, markdown=ext == ".md")


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


def _binaryish(text: str) -> bool:
    """Many control characters: a binary format that happened to decode as text."""
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t\f")
    return controls > max(8, len(text) // 100)


def _read_text(
    text: str, shown: str, abs_path: str, rel: str, *, markdown: bool
) -> Iterator[Article | IngestProblem]:
    if _binaryish(text):
        yield IngestProblem(shown, "binary file (control bytes); only text files can be indexed")
        return
    text = _normalise(text)
    if not text.strip():
        yield IngestProblem(shown, "empty file (nothing but white space); add text or remove it")
        return
    title, body = split_title(text, markdown=markdown)
    body = clean_text(body)
    if not body:
        yield IngestProblem(shown, "no article text after the title; add the body or remove the file")
        return
    problem = validate_id(rel)
    if problem:
        yield IngestProblem(shown, f"bad document id {rel!r}: {problem}; rename the file")
        return
    if not title:
        title = derive_title(body)
    yield Article(id=rel, title=title, text=body, source=detect_source(body), path=abs_path)


def _read_jsonl(f: Any, shown: str, abs_path: str) -> Iterator[Article | IngestProblem]:
    """One article per line, streamed: a file of any size costs one line at a time."""
    found = False
    blank = True
    limit = MAX_FILE_BYTES
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
            if deepest > MAX_JSON_DEPTH:
                raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        elif c in "]}":
            depth -= 1
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"malformed JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None


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
    if len(body) > MAX_ARTICLE_CHARS:
        return _too_big(
            shown,
            f"record {doc_id!r}",
            f"{len(body):,} characters",
            MAX_ARTICLE_CHARS,
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


def site_name(url: str | None) -> str:
    """The site an article's URL names ("https://www.bbc.co.uk/sport/x" → "bbc.co.uk"), else ""."""
    if not url:
        return ""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


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
        # trafilatura's date reads the page's metadata; the meta tags directly when it finds none
        published=getattr(doc, "date", None) or html_published(text) or None,
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


def _normalise(text: str) -> str:
    """LF line ends and NFC; nothing else about the author's characters changes."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def _one_line(s: str) -> str:
    return " ".join(s.split())


# Lines that belong to another story or to the page, not to the article.
_JUNK_LINE = re.compile(
    r"""^\s*(?:
        (?:read\s+(?:also|more)|also\s+read|see\s+also)\b
        | related(?:\s+(?:stories|articles|news|content|coverage|links))?\s*(?::|$|[-–—])
        | advertisement\s*$
        | click\s+here\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# A longer line is an article glued into one line: its teasers are cut inline instead.
_JUNK_LINE_MAX_CHARS = 300
# The same teasers inline, at a sentence start, where a scraper glued lines together.
_INLINE_TEASER = re.compile(
    r"(?:(?<=[.!?”\"’)])\s+|^)(?:[Rr]ead (?:also|more)\s*:|READ (?:ALSO|MORE)\s*:|[Rr]elated\s*:|RELATED\s*:"
    r"|[Ss]ee also\s*:|Also read\b\s*:?)[ \t]*",
    re.MULTILINE,
)
_INLINE_CLICK = re.compile(r"(?:(?<=[.!?”\"’])\s+|^)Click here to\b[^\n]*?[.!?](?=\s|$)", re.MULTILINE)
_INLINE_AD = re.compile(r"[ \t]*\bADVERTISEMENT\b[ \t]*")


def clean_text(text: str) -> str:
    """Drop other stories' teasers and page furniture; tidy the white space they leave.

    Whole lines go when they are a teaser ("Read also: ...", "Related: ...", "Also read
    ...", "ADVERTISEMENT", "Click here to ..."). Inline teasers (seed 002's "... breaking
    through. Read also: ICC Format Overhaul Could Add India-Pakistan Showdown Messi set up
    ...") are cut from the marker to where the real sentence resumes. Paragraph breaks
    stay; runs of blank lines become one.
    """
    lines = [ln for ln in text.split("\n") if len(ln) > _JUNK_LINE_MAX_CHARS or not _JUNK_LINE.match(ln)]
    text = "\n".join(lines)
    if _INLINE_TEASER.search(text):
        text = _cut_inline_teasers(text)
    text = _INLINE_CLICK.sub("", text)
    text = _INLINE_AD.sub(_ad_gap, text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _ad_gap(m: re.Match[str]) -> str:
    # Between words the marker leaves one space; at a line's edge, nothing.
    s = m.string
    inside = m.start() > 0 and s[m.start() - 1] != "\n" and m.end() < len(s) and s[m.end()] != "\n"
    return " " if inside else ""


def _cut_inline_teasers(text: str) -> str:
    known = known_names(text)
    out: list[str] = []
    pos = 0
    for m in _INLINE_TEASER.finditer(text):
        if m.start() < pos:
            continue
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        cut = _teaser_end(text, m.end(), line_end, known)
        out.append(text[pos : m.start()])
        if cut < line_end and out[-1] and not out[-1].endswith("\n"):
            out.append(" ")
        pos = cut
    out.append(text[pos:])
    return "".join(out)


def _teaser_end(text: str, start: int, end: int, known: frozenset[str]) -> int:
    """Where the article resumes after a teaser headline starting at ``start``."""
    # A teaser that ends in its own full stop ends there ("Read more: Messi wins award.").
    stop = re.search(r"[.!?][\"'”’]?(?=\s+\S)", text[start:end])
    title_cut = split_title_run(text, start, end, known, fallback=True)
    if title_cut is not None and (stop is None or title_cut <= start + stop.end()):
        return title_cut
    if stop is not None:
        nxt = start + stop.end()
        while nxt < end and text[nxt].isspace():
            nxt += 1
        return nxt
    return end  # the teaser runs to the end of the line


# --- titles, sources and ids ---------------------------------------------------------


_MD_HEADING = re.compile(r"^#{1,6}\s+")


def split_title(text: str, *, markdown: bool = False) -> tuple[str, str]:
    """``(title, body)``: the first line when it reads as a headline, else ``("", text)``.

    A headline is short (≤ 150 characters, ≤ 20 words), does not end in a full stop,
    colon or comma, and is followed by a body. A markdown ``#`` heading always counts.
    """
    stripped = text.lstrip()
    first, _, rest = stripped.partition("\n")
    line = first.strip()
    if not rest.strip():
        return "", text
    if markdown and _MD_HEADING.match(line):
        return _MD_HEADING.sub("", line).strip(), rest
    line = _MD_HEADING.sub("", line)
    if (
        line
        and len(line) <= _HEADLINE_MAX_CHARS
        and len(line.split()) <= _HEADLINE_MAX_WORDS
        and line[-1] not in ".:;,"
        and not line.endswith(("...", "…"))
    ):
        return line, rest
    return "", text


def derive_title(body: str, max_chars: int = TITLE_CHARS) -> str:
    """A title from the first sentence (after any dateline), cut near ``max_chars`` at a word, with "…"."""
    units = [u for u in segment(body) if not u.heading]
    first = body[units[0].start : units[0].end] if units else body.strip()
    first = _one_line(_DATELINE.sub("", first, count=1)) or _one_line(first)
    if len(first) <= max_chars:
        return first[:-1] if first.endswith(".") and not first.endswith("..") else first
    cut = first.rfind(" ", 0, max_chars)
    head = first[: cut if cut > max_chars // 2 else max_chars].rstrip(" ,;:—–-")
    return head + "…"


# "ATLANTA (AFP) —", "LONDON, March 3 (Reuters) -": a dateline naming the agency.
_DATELINE = re.compile(
    r"^\s*[A-Z][A-Z .'’-]{1,40}(?:,[^()\n]{1,30})?\s*\(([A-Za-z][A-Za-z&. -]{0,23})\)\s*(?:—|–|--|-)\s*"
)


def detect_source(body: str) -> str:
    """The news agency of a dateline at the start of the text ("ATLANTA (AFP) —" → "AFP"), else ""."""
    m = _DATELINE.match(body)
    return m.group(1).strip() if m else ""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with lone surrogates (from JSON escapes or non-UTF-8 file names) shown as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def check_article(a: Article) -> str | None:
    """Why ``a`` cannot be stored (unencodable text, over the size limit), or ``None``.

    Checked for every article before a write starts, so one bad article is skipped
    with a message instead of failing the whole batch half-way.
    """
    for name in ("id", "title", "text", "source", "url", "published"):
        v = getattr(a, name)
        if isinstance(v, str) and _SURROGATE.search(v):
            return f'"{name}" holds a lone surrogate (invalid Unicode): fix the encoding'
    problem = validate_id(a.id)
    if problem:
        return f"bad document id {printable(a.id)!r}: {problem}"
    for key, v in a.metadata.items():
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


class _TextParser(HTMLParser):
    """Plain text from an HTML fragment: block elements become paragraph breaks."""

    _BLOCKS = frozenset(
        "p div br li ul ol h1 h2 h3 h4 h5 h6 blockquote tr table section article header footer".split()
    )
    _SKIP = frozenset({"script", "style", "noscript", "template"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skip += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(fragment: str) -> str:
    """Text of a small HTML fragment (a feed entry's content); plain text passes through."""
    if "<" not in fragment and "&" not in fragment:
        return fragment
    p = _TextParser()
    p.feed(fragment)
    p.close()
    text = "".join(p.parts)
    paras = [" ".join(par.split()) for par in re.split(r"\n\s*\n", text)]
    return "\n\n".join(par for par in paras if par)
