"""Generations of a local index on disk: the pointer, the writer lock, creation and cleanup.

See :mod:`search.backends.local` for the layout. Everything here is about directories
and files, not their contents: switching ``CURRENT`` with one atomic rename, holding the
writer lock, copying a generation with hard links, and removing what a killed writer left.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from .. import lexical as lx
from ..errors import IndexFormatError, IndexMissingError, WriterBusyError
from .local_table import write_empty

log = logging.getLogger(__name__)

#: The local index format: 5 reads articles lazily from per-segment stores and keeps the
#: document table as memory-mapped columns (#17). Older formats are rebuilt with `search reindex`.
# 2: numpy segment files (spans, sentences, signatures); 3: docs.json table;
# 4: a title field on passages, the document-level index, title + passage as the dense text;
# 5: segment article stores read on demand, the table as columns, facet entities per row
FORMAT = 5

CURRENT = "CURRENT"
LOCK = ".lock"
KEEP_OLD_GENERATIONS = 2  # readers that just read CURRENT may still be opening these


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def is_index(path: Path) -> bool:
    return (Path(path) / CURRENT).is_file()


def read_current(path: Path) -> str:
    try:
        name = (Path(path) / CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise IndexMissingError(f"no index at {path}: build one with `search index [PATH...]`") from None
    if not name.startswith("gen-"):
        raise IndexFormatError(f"{path}/{CURRENT} is damaged: rebuild with `search reindex`")
    return name


@contextmanager
def writer_lock(root: Path, wait: float = 30.0) -> Iterator[None]:
    """Hold the index's writer lock; wait up to ``wait`` seconds, then fail clearly."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise WriterBusyError(
                        f"another process is writing to {root} (waited {wait:.0f} s): "
                        "try again when it finishes"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _gen_number(name: str) -> int:
    return int(name.split("-", 1)[1])


def create_index(root: Path, manifest_settings: dict[str, Any]) -> None:
    """Create an empty index (generation 1) unless one exists. Caller holds the lock."""
    if is_index(root):
        return
    root.mkdir(parents=True, exist_ok=True)
    _cleanup(root, None)  # a writer killed before CURRENT was first written
    gen = "gen-000001"
    tmp = root / (gen + ".tmp")
    tmp.mkdir()
    lx.create(tmp / "lexical")
    ts = now_iso()
    manifest = {
        "format": FORMAT,
        "package_version": __version__,
        "generation": 1,
        "created": ts,
        "updated": ts,
        "segments": [],
        "next_segment": 1,
        "sources": [],
        "counts": {"documents": 0, "passages": 0},
        **manifest_settings,
    }
    _write_text(tmp / "manifest.json", json.dumps(manifest, indent=2))
    write_empty(tmp)
    os.rename(tmp, root / gen)
    _write_text(root / CURRENT, gen + "\n")
    _fsync_dir(root)


def recorded_sources(root: Path) -> list[str]:
    """The sources a (possibly unreadable) index recorded, read straight from its manifest."""
    try:
        gen = read_current(root)
        m = json.loads((root / gen / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, IndexFormatError, IndexMissingError):
        return []
    return [s for s in m.get("sources", []) if isinstance(s, str)]


def clear_index(root: Path) -> None:
    """Remove every generation of an index (under the writer lock), keeping the folder."""
    with writer_lock(root):
        (root / CURRENT).unlink(missing_ok=True)
        for p in root.iterdir():
            if p.name.startswith("gen-") and p.is_dir():
                shutil.rmtree(p, ignore_errors=True)


def _link_copy(src: Path, dst: Path) -> None:
    """Copy a generation directory with hard links (falls back to copying)."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link)


def _cleanup(root: Path, current: str | None) -> None:
    """Remove what a killed writer left and what no reader can still hold. Caller holds the lock.

    - ``gen-*.tmp``: a write that never finished;
    - generations newer than ``CURRENT`` (or any, when there is no ``CURRENT``): a writer
      killed after renaming its generation into place and before switching ``CURRENT``.
      ``CURRENT`` never named them, so no reader has them open;
    - generations older than the last ``KEEP_OLD_GENERATIONS``: readers that read
      ``CURRENT`` just before a switch may still be opening those.
    """
    cur = _gen_number(current) if current is not None else None
    for p in root.iterdir():
        if not p.name.startswith("gen-") or p.is_symlink() or not p.is_dir():
            continue
        if p.name.endswith(".tmp"):
            shutil.rmtree(p, ignore_errors=True)
            continue
        try:
            n = _gen_number(p.name)
        except ValueError:
            continue
        if cur is None and not (p / "lexical").is_dir():
            continue  # not one of ours: an index folder holds nothing else named gen-*
        if cur is None or n > cur:
            log.warning("removing %s: a writer was stopped before it switched to it", p.name)
            shutil.rmtree(p, ignore_errors=True)
        elif n < cur - KEEP_OLD_GENERATIONS:
            shutil.rmtree(p, ignore_errors=True)
