"""The package's errors: one root, a few subtypes, each a one-line docstring.

Messages say what failed, where, and what to do next; the CLI prints them as one
line on stderr and exits non-zero.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class SearchError(Exception):
    """Root of every error this package raises on purpose."""


class IndexMissingError(SearchError):
    """There is no index at the given path."""


class IndexFormatError(SearchError):
    """The index was built with another format, model or settings, or is damaged."""


class DocumentNotFoundError(SearchError, KeyError):
    """No document with that id is in the index."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IngestError(SearchError):
    """A file or record could not be read as an article."""


class WriterBusyError(SearchError):
    """Another process holds the index's writer lock."""


class IndexWriteError(SearchError):
    """A write could not be finished (disk full or read-only, a helper process died); the index is as it was."""


def write_failed(e: BaseException) -> str:
    """One line for what stopped a write, that the index is unchanged, and what to do."""
    import errno

    if not isinstance(e, OSError):
        return f"writing the index failed ({type(e).__name__}: {e}); the index is unchanged"
    why = e.strerror or str(e) or type(e).__name__
    if e.filename:
        why += f": {e.filename}"
    if e.errno == errno.EFBIG:
        fix = "raise the file size limit (ulimit -f)"
    elif e.errno in (errno.ENOSPC, errno.EDQUOT) or (e.errno is None and " written" in why):
        # numpy's tofile (np.save) says only "N requested and M written" when the disk fills.
        fix = "free disk space"
    elif e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        fix = "make the index folder writable"
    else:
        fix = "check the disk the index is on"
    return f"could not write the index ({why}); the index is unchanged: {fix}, then try again"


class QueryError(SearchError, ValueError):
    """The question cannot be searched (empty, too long, nothing searchable)."""


class FilterError(QueryError):
    """A filter names an unknown field, or gives a value of the wrong form."""


def quoted(value: object, limit: int = 60) -> str:
    """``value`` as a one-line error quotes it: its repr, or the head of a long string and
    its length (a 100,000-character ``since`` came back whole)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    r = repr(value)
    return r if len(r) <= limit + 20 else r[:limit] + "…"


# Errors of a kind that is a mistake in this package when raised by its own code: shown as
# one (a traceback to report), never as "rebuild the index", which would not fix it. Raised
# inside a library reading a file (whoosh's ``ord()`` of an empty table of contents), they
# are damage like any other.
_BUGS = (TypeError, AttributeError, NameError, AssertionError, NotImplementedError, RecursionError)
_OURS = os.path.dirname(os.path.abspath(__file__))


def _our_mistake(e: BaseException) -> bool:
    """``e`` is of a bug's kind and was raised in this package's own code."""
    if not isinstance(e, _BUGS):
        return False
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_OURS + os.sep)


@contextmanager
def reading_index(path: object) -> Iterator[None]:
    """Reads of the index at ``path``: a failure that is not one of ours (a truncated array,
    a corrupt compressed block, a segment file gone) is :class:`IndexFormatError` saying the
    index is damaged and how to rebuild it, so every face answers it as the index's state,
    not as the user's mistake or a crash. ``path`` None passes everything through (another
    backend's errors are its own). Arguments are checked before a read, outside this."""
    try:
        yield
    except (SearchError, MemoryError):
        raise
    except Exception as e:
        if path is None or _our_mistake(e):
            raise
        # The library's first sentence only: numpy's next one advises loading pickles.
        why = (str(e).splitlines() or [""])[0].split(". ")[0][:200]
        raise IndexFormatError(
            f"the index is damaged: a file in {path} cannot be read ({type(e).__name__}: {why}): "
            "build it again from the articles (`search index PATH...`) in a new folder or after removing this one"
        ) from e


class MissingExtraError(SearchError, ImportError):
    """An optional dependency is not installed."""


def scrub_paths(message: str, *paths: object) -> str:
    """``message`` with each of ``paths``, absolute or resolved, replaced by 'the index'.

    The HTTP and MCP faces pass what they send through this as a last wall: where an
    index lives on the server's disk is not the client's business (#14).
    """
    import os

    names: set[str] = set()
    for p in paths:
        if isinstance(p, (str, os.PathLike)):
            names.add(os.path.abspath(p))
            names.add(os.path.realpath(p))
    for name in sorted((n for n in names if len(n) > 1), key=len, reverse=True):
        message = message.replace(name, "the index")
    return message
