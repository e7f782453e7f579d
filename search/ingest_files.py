"""Reading one file safely: only a regular file under the root, opened without blocking, within the limits.

:func:`_read_file` opens the file (:func:`_open_regular`: lstat, ``O_NONBLOCK``, the
descriptor checked again), reads it bounded, decodes it and hands it to the reader of
its format (:mod:`search.ingest_formats` for JSONL, HTML and feeds; plain text here).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from search import ingest_base as limits
from search.ingest_base import FEED_EXTENSIONS, HTML_EXTENSIONS, IngestProblem, _decode, _too_big, validate_id
from search.ingest_formats import _read_feed, _read_html, _read_jsonl
from search.ingest_text import _normalise, clean_text, derive_title, detect_source, printable, split_title
from search.types import Article


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


def _relative_id(path: Path, base: Path) -> str:
    """The id of ``path`` under ``base``: its path relative to it, else its file name.

    Compared as spelled first (a file reached through a symlinked folder keeps that name),
    then with the folders resolved, so ``../raw/cricket/106.txt`` under the root ``../raw``
    (or a root given resolved, or through a link) is ``cricket/106.txt``. The file itself is
    not resolved: a link inside the root is named by the link. Which files may be read is
    :func:`_open_regular`'s business, not this.
    """
    spelled = (path.absolute(), base.absolute())
    resolved = (path.absolute().parent.resolve() / path.name, base.resolve())
    for p, b in (spelled, resolved):
        if ".." in p.parts or ".." in b.parts:
            continue  # relative_to is textual: a/../b is not under a
        try:
            return p.relative_to(b).as_posix()
        except ValueError:
            continue
    return path.name


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


def _read_file(path: Path, base: Path, shown_path: str) -> Iterator[Article | IngestProblem]:
    fd, problem = _open_regular(path, base, shown_path)
    if fd is None:
        assert problem is not None
        yield problem
        return
    ext = path.suffix.lower()
    abs_path = str(path.resolve())
    rel = _relative_id(path, base)
    try:
        if ext == ".jsonl":
            with os.fdopen(fd, "rb", closefd=False) as f:
                yield from _read_jsonl(f, shown_path, abs_path)
            return
        data = _read_bounded(fd, limits.MAX_FILE_BYTES)
    except OSError as e:
        yield IngestProblem(shown_path, f"cannot read the file ({e.strerror or e}); check it")
        return
    finally:
        os.close(fd)
    if data is None:
        yield _too_big(
            shown_path,
            "the file",
            f"over {limits.MAX_FILE_BYTES:,} bytes",
            limits.MAX_FILE_BYTES,
            "SEARCH_MAX_FILE_BYTES",
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
