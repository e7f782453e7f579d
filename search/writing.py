"""The engine's write path: read, chunk, tag, encode and write articles; remove; rebuild.

``search.engine.Engine`` inherits these methods; they are here so the read path
(retrieve, fuse, answer) and the write path each read on their own. A write streams
articles through :mod:`search.indexing` into the backend's writer, batch by batch, and
readers see the old index until the whole write is switched in.
"""

from __future__ import annotations

import operator
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .backends import Backend, DocRecord, WriteBatch
from .documents import check_id, shown
from .errors import IndexMissingError, IngestError
from .types import Article

if TYPE_CHECKING:
    from .engine import Engine


_TAKES = "add takes paths (str or os.PathLike) and Article objects, one or an iterable of them"


def _check_item(i: int, a: object) -> None:
    if not isinstance(a, (str, os.PathLike, Article)):
        raise ValueError(f"{_TAKES}; item {i} is {_what(a)}")


def _what(x: object) -> str:
    """``x`` as add's error names it; a dict is said to be no article, and how to make one."""
    if isinstance(x, Mapping):
        return "a dict, which is neither: make it Article(id=..., title=..., text=...)"
    return shown(x)


@dataclass
class WriteReport:
    """What a write did, per document."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    duplicates: dict[str, str] = field(default_factory=dict)  # doc id → id of the copy it duplicates
    problems: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # ids taken by a different file (no --replace)
    passages: int = 0
    took_s: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)  # seconds: encode, ner, rest

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "missing": self.missing,
            "duplicates": self.duplicates,
            "problems": self.problems,
            "refused": self.refused,
            "passages": self.passages,
            "took_s": round(self.took_s, 3),
            "stages_s": {k: round(v, 3) for k, v in self.stages.items()},
        }


class Writes:
    """Writing an index: :class:`~search.engine.Engine`'s write methods."""

    _backend: Backend
    _reading: Callable[[], AbstractContextManager[None]]  # the read path's guard (Retrieves)
    path: Path

    def index(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> WriteReport:
        """Rebuild the index from ``paths``: afterwards it holds exactly these articles."""
        return self.add(paths, reset=True, progress=progress)

    def add(
        self,
        items: Iterable[str | os.PathLike[str] | Article] | str | os.PathLike[str] | Article,
        *,
        reset: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        root: str | os.PathLike[str] | None = None,
        replace: bool = False,
    ) -> WriteReport:
        """Add or replace articles (paths to files or folders, or :class:`Article` objects).

        A document whose id exists is replaced; one whose content is unchanged is
        skipped. Problems with single files or lines are reported, the rest goes in.

        Ids of files are paths relative to a corpus root: ``root`` if given, else the root
        the same file was indexed under before, else the recorded source folder that holds
        it (a folder given too), else the folder given (a single file: its own folder). A
        *different* file whose id is taken is refused (named in the report) unless ``replace``.

        Articles stream: files are read, chunked, tagged and encoded in batches, and each
        batch is written as it is ready (:mod:`search.indexing`), so memory does not grow
        with the corpus. ``items`` may be any iterable, a generator included: it is read
        once, as the write goes, and an article is dropped once its batch is written (a
        list the caller keeps holds its articles, with the entities, sentences and sentence
        vectors the write fills in). Articles go in before paths, in the order given. A bad
        article is reported and skipped wherever it comes. Readers see the old index until
        the whole write is switched in; an error (or an exception from ``items``) leaves it.
        """
        return self._add(items, reset=reset, progress=progress, root=root, replace=replace)

    def _add(
        self,
        items: Iterable[str | os.PathLike[str] | Article] | str | os.PathLike[str] | Article,
        *,
        reset: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        root: str | os.PathLike[str] | None = None,
        replace: bool = False,
        record: Sequence[str] = (),
    ) -> WriteReport:
        """:meth:`add`; ``record``: sources to keep in the manifest beside the paths read."""
        from . import indexing
        from .ingest import IngestProblem, check_article, cut_fields, printable, read_path

        t0 = time.perf_counter()
        report = WriteReport()
        if isinstance(items, (str, os.PathLike, Article)):
            items = [items]
        elif isinstance(items, (bytes, bytearray, Mapping)) or not isinstance(items, Iterable):
            # A dict iterated gave its keys, read as paths ("a: no such file or folder").
            raise ValueError(f"{_TAKES}, not {_what(items)}")
        # A list is counted first (for the batch size and the ETA); any other iterable is
        # read once, as the write goes, and says how long it is only if it can
        # (``__length_hint__``); its paths are collected as they come and read after its
        # articles, as a list's are.
        counted = isinstance(items, Sequence)
        if isinstance(items, Sequence):
            for i, a in enumerate(items):
                _check_item(i, a)  # before anything is read or written
            paths = [Path(p) for p in items if not isinstance(p, Article)]
            expected: int | None = len(items) - len(paths) + indexing.estimate_articles(paths)
        else:
            paths = []
            expected = operator.length_hint(items, 0) or None
        old_ids = self._doc_ids() if reset else []
        # id -> the file it was read from ("" for an Article given): a duplicate id is warned about
        read_from: dict[str, str] = {}

        def also(a: Article, where: str) -> None:
            """Warn when ``a``'s id came earlier in this write (the later one is kept)."""
            if a.id in read_from:
                prev = read_from[a.id]
                if prev:
                    earlier = f"read from {prev}"
                else:
                    earlier = "given as an Article in this add" if where else "given earlier in this add"
                msg = f"document id {a.id!r} was also {earlier}; the later one is kept"
                report.problems.append(str(IngestProblem(where or a.id, msg, level="warning")))
            read_from[a.id] = where

        written: set[str] = set()  # ids this call writes (the last version of each wins)
        unchanged: set[str] = set()

        def admit(a: Article) -> Iterator[Article]:
            if a.id in written:
                yield a  # a later version of an id already in this write: it wins
                return
            old = self._record_of(a.id)
            if old is not None and not reset and old.content_hash == a.content_hash and a.id not in unchanged:
                unchanged.add(a.id)
                report.unchanged.append(a.id)
                return
            if a.id in unchanged:  # first unchanged, now another version
                unchanged.discard(a.id)
                report.unchanged.remove(a.id)
            (report.replaced if old is not None else report.added).append(a.id)
            written.add(a.id)
            yield a

        def stream() -> Iterator[Article]:
            for i, a in enumerate(items):
                _check_item(i, a)  # an iterator's: raised mid-write, which then leaves the index
                if isinstance(a, Article):
                    # Checked on its own: one bad article costs only itself.
                    if why := check_article(a):
                        report.problems.append(f"{printable(a.id)}: {why}")
                    else:
                        # Held to the limits a file's record is (a new article: the caller's is left).
                        a, cuts = cut_fields(a)
                        for cut in cuts:
                            report.problems.append(str(IngestProblem(a.id, cut, level="warning")))
                        also(a, "")
                        yield from admit(a)
                elif not counted:
                    paths.append(Path(a))
            finder = self._root_finder(root) if paths else None
            for p in paths:
                assert finder is not None
                for item in read_path(p, finder(p)):
                    if isinstance(item, IngestProblem):
                        report.problems.append(str(item))
                        continue
                    also(item, item.path or str(p))
                    if not reset and self._collides(item, replace, report):
                        continue
                    yield from admit(item)

        clock = indexing.Clock()
        opener = getattr(self._backend, "writing", None)
        sink_cm = (
            opener(reset=reset)
            if callable(opener)
            else nullcontext(indexing.CollectingSink(self._backend, reset))
        )
        with sink_cm as sink:
            dups = indexing.Duplicates(self._backend, reset)
            indexing.run(cast("Engine", self), stream(), sink, report, progress, expected, dups, clock)
            indexing.require_articles(reset, len(written), paths, report.problems)
            sources = [*record, *(str(p.resolve()) for p in paths if p.exists())]
            sink.finish(sources, write=bool(written) or reset)
        if reset:
            report.removed = [d for d in old_ids if d not in written]
        report.took_s = time.perf_counter() - t0
        report.stages.update(clock.totals())
        report.stages.setdefault("encode", 0.0)
        report.stages.setdefault("ner", 0.0)
        report.stages["rest"] = max(0.0, report.took_s - clock.covered())
        return report

    def _doc_ids(self) -> list[str]:
        ids = getattr(self._backend, "doc_ids", None)
        with self._reading():
            return list(ids()) if callable(ids) else [d.id for d in self._backend.docs()]

    def _record_of(self, doc_id: str) -> DocRecord | None:
        """A stored record read before a write: a damaged file is IndexFormatError (the read
        path's guard), not a library's error passed off as the caller's mistake. The write
        itself keeps its own errors (IndexWriteError)."""
        with self._reading():
            return self._backend.doc(doc_id)

    def _root_finder(self, root: str | os.PathLike[str] | None) -> Callable[[Path], Path | None]:
        """The corpus root of each path given to :meth:`add`, so an id never depends on how
        the file was added (``search index DIR`` and ``search add DIR/sub/file`` agree)."""
        if root is not None:
            try:
                fixed = Path(root).resolve()
            except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop on older Pythons
                from .ingest import printable

                raise IngestError(
                    f"the root {printable(str(root))} cannot be resolved ({getattr(e, 'strerror', None) or e}): "
                    "give a folder as --root"
                ) from None
            return lambda p: fixed
        folders = sorted(
            (Path(s) for s in self._backend.manifest().get("sources") or [] if Path(s).is_dir()),
            key=lambda f: -len(f.parts),
        )

        def find(p: Path) -> Path | None:
            if p.is_dir():
                # A folder inside one indexed before takes that folder's root, as its files
                # would one by one (``search add raw/cricket`` after ``search index raw``
                # gives ``cricket/105.txt``); any other folder is its own root.
                return next((f for f in folders if f in p.resolve().parents), None)
            try:
                rp = str(p.resolve())
            except (OSError, RuntimeError):  # a symlink loop: reading it says so, for this file alone
                return None
            # Indexed before (a document whose path is this file): keep its id. Its id is a
            # tail of the path, so look those up instead of reading every document.
            parts = rp.split("/")
            for i in range(1, len(parts)):
                doc_id = "/".join(parts[i:])
                rec = self._record_of(doc_id)
                if rec is not None and rec.path == rp:
                    return Path(rp[: -len(doc_id) - 1])
            return next((f for f in folders if f in Path(rp).parents), None)

        return find

    def _collides(self, a: Article, replace: bool, report: WriteReport) -> bool:
        """A different file's article takes this id: refused (reported) unless ``replace``."""
        if replace:
            return False
        old = self._record_of(a.id)
        if old is not None and old.path and a.path and old.path != a.path:
            report.problems.append(
                f"{a.path}: id {a.id!r} is already {old.path}; not added: give --root so the "
                "ids differ, or --replace to replace it"
            )
            report.refused.append(a.id)
            return True
        return False

    def remove(self, doc_ids: Iterable[str] | str) -> WriteReport:
        """Remove documents by id (one id, or several); ids not in the index are reported as missing."""
        t0 = time.perf_counter()
        report = WriteReport()
        # One id is one id, not its characters (each of which may be another document's id);
        # bytes are not ids either (iterated, they were numbers: "not 97").
        if isinstance(doc_ids, (bytes, bytearray)) or not isinstance(doc_ids, (str, Iterable)):
            raise ValueError(
                f"remove takes a document id (a string) or an iterable of them, not {shown(doc_ids)}"
            )
        ids = [doc_ids] if isinstance(doc_ids, str) else list(doc_ids)
        for d in ids:
            check_id(d)
        ids = list(dict.fromkeys(ids))
        for d in ids:
            (report.removed if self._record_of(d) is not None else report.missing).append(d)
        if report.removed:
            self._backend.write(WriteBatch(remove=report.removed))
        report.took_s = time.perf_counter() - t0
        report.stages["rest"] = report.took_s - sum(report.stages.values())
        return report

    def reindex(self, progress: Callable[[str, int, int], None] | None = None) -> WriteReport:
        """Rebuild every article the index holds, from the text it stored: the same ids and
        nothing else, re-chunked, re-tagged and re-encoded by this version.

        Reading the recorded sources again instead brought back articles removed since
        (their files are still in the recorded folder), dropped articles added as objects
        (the HTTP and MCP faces' adds have no file), and gave a file added with ``--root``
        a different id. An index that holds nothing is rebuilt from its recorded sources;
        one this version cannot read at all, by :meth:`Engine.rebuild`.
        """
        ids = self._doc_ids()
        sources = list(self._backend.manifest().get("sources") or [])
        if not ids:
            if not sources:
                raise IndexMissingError(
                    f"{self.path} records no sources to rebuild from: use `search index PATH...`"
                )
            missing = [s for s in sources if not Path(s).exists()]
            if missing:
                raise IndexMissingError(
                    f"recorded source {missing[0]} no longer exists: use `search index PATH...`"
                )
            return self.index(sources, progress=progress)
        stored = _Stored((a for d in ids if (a := self._stored_article(d)) is not None), len(ids))
        return self._add(stored, reset=True, progress=progress, record=sources)

    def _stored_article(self, doc_id: str) -> Article | None:
        """An article a rebuild reads back: a damaged file is IndexFormatError (the read
        guard), which :meth:`Engine.rebuild` answers from the recorded sources."""
        with self._reading():
            return self._backend.article(doc_id)


class _Stored:
    """The stored articles a rebuild reads, one at a time, with their count for the ETA."""

    def __init__(self, articles: Iterator[Article], n: int) -> None:
        self._it, self._n = articles, n

    def __iter__(self) -> Iterator[Article]:
        return self._it

    def __length_hint__(self) -> int:
        return self._n
