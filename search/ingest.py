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

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search.ingest_base import (
    FEED_EXTENSIONS,
    HTML_EXTENSIONS,
    SUPPORTED_EXTENSIONS,
    TEXT_EXTENSIONS,
    IngestProblem,
    check_article,
    cut_fields,
    validate_id,
)

# Re-exported: the names callers have imported from here since before the split.
from search.ingest_base import MAX_ARTICLE_CHARS as MAX_ARTICLE_CHARS
from search.ingest_base import MAX_FILE_BYTES as MAX_FILE_BYTES
from search.ingest_base import MAX_ID_CHARS as MAX_ID_CHARS
from search.ingest_base import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from search.ingest_base import MAX_PUBLISHED_CHARS as MAX_PUBLISHED_CHARS
from search.ingest_base import MAX_SOURCE_CHARS as MAX_SOURCE_CHARS
from search.ingest_base import MAX_TITLE_CHARS as MAX_TITLE_CHARS
from search.ingest_base import MAX_URL_CHARS as MAX_URL_CHARS
from search.ingest_files import _read_file
from search.ingest_formats import _record as _record
from search.ingest_text import TITLE_CHARS as TITLE_CHARS
from search.ingest_text import clean_text, derive_title, detect_source, printable
from search.ingest_text import html_to_text as html_to_text
from search.ingest_text import site_name as site_name
from search.ingest_text import split_title as split_title
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
    "cut_fields",
    "derive_title",
    "detect_source",
    "ingest",
    "load",
    "printable",
    "read_path",
    "validate_id",
]


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
            continue
        if isinstance(item, Article):
            item, cuts = cut_fields(item)
            for cut in cuts:
                yield IngestProblem(item.path or os.fspath(path), cut, level="warning")
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
