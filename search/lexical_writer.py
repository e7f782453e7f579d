"""Writing the lexical index: whoosh segments, their deletion corrections, their postings arrays."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from whoosh import fields, index
from whoosh.analysis import SpaceSeparatedTokenizer
from whoosh.codec.base import Segment
from whoosh.filedb.filestore import FileStorage
from whoosh.util import IDCHARS

from .lexical_postings import ensure_arrays
from .lexical_stats import DOCS, Corrections, SegmentCorrection, corrections_file, segment_names

# whoosh names each new segment from Python's global ``random``: a program that seeds it
# (a simulation, a test) identically before two writes makes whoosh reuse a segment name
# and fail. Segment names come from the operating system's randomness instead.
_SEGMENT_IDS = random.SystemRandom()


def _segment_id(cls: Any, size: int = 16) -> str:
    return "".join(_SEGMENT_IDS.choice(IDCHARS) for _ in range(size))


Segment._random_id = classmethod(_segment_id)  # type: ignore[method-assign,assignment]


def make_schema() -> fields.Schema:
    return fields.Schema(
        pid=fields.ID(stored=True, unique=True),
        doc_id=fields.ID(stored=False),
        text=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
        title=fields.TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, stored=False),
    )


def create(path: Path) -> None:
    """Create an empty lexical index in ``path``: the passages' and the documents' (``docs``)."""
    path.mkdir(parents=True, exist_ok=True)
    for name in ("MAIN", DOCS):
        index.create_in(str(path), make_schema(), indexname=name)
        Corrections().save(path / corrections_file(name))


class LexicalWriter:
    """Adds and deletes passages in a whoosh directory that no reader is using.

    The caller gives each writer a private copy of the directory (hard links: whoosh
    never rewrites a file in place), so readers of the old copy are untouched.
    """

    def __init__(self, path: Path, indexname: str = "MAIN", arrays: bool = True) -> None:
        self.path = Path(path)
        self.indexname = indexname
        self.arrays = arrays
        self._ix = index.FileIndex(FileStorage(str(self.path)), indexname=indexname)
        self._writer = self._ix.writer()
        self._corr = Corrections.load(self.path / corrections_file(indexname))
        self._added = 0

    def delete_doc(self, doc_id: str, analysed_texts: dict[str, str | tuple[str, str]]) -> int:
        """Delete every passage of ``doc_id``; ``analysed_texts`` maps passage id → indexed
        text, or → (indexed text, indexed title)."""
        w = self._writer
        searcher = w.searcher()
        n = 0
        for docnum in list(searcher.document_numbers(doc_id=doc_id)):
            if w.is_deleted(docnum):
                continue
            pid = searcher.stored_fields(docnum)["pid"]
            seg, _ = w._segment_and_docnum(docnum)
            got = analysed_texts.get(pid, "")
            text, title = (got, "") if isinstance(got, str) else got
            terms, tterms = text.split(), title.split()
            c = self._corr.segments.setdefault(seg.segment_id(), SegmentCorrection())
            c.docs += 1
            c.length += len(terms)
            c.df.update(set(terms))
            c.title_length += len(tterms)
            c.title_df.update(set(tterms))
            w.delete_document(docnum)
            n += 1
        return n

    def add(self, pid: str, doc_id: str, analysed_text: str, analysed_title: str = "") -> None:
        self._writer.add_document(pid=pid, doc_id=doc_id, text=analysed_text, title=analysed_title)
        self._added += 1

    def commit(self, optimize: bool = False, merge: bool = True) -> None:
        self._writer.commit(optimize=optimize, merge=merge)
        # Corrections of segments that a merge rewrote are no longer needed.
        live = set(segment_names(index.FileIndex(FileStorage(str(self.path)), indexname=self.indexname)))
        self._corr.segments = {k: v for k, v in self._corr.segments.items() if k in live}
        self._corr.save(self.path / corrections_file(self.indexname))
        if self.arrays:
            # The new (or merged) segments' postings as arrays: queries never decode whoosh blocks.
            ensure_arrays(self.path, index.FileIndex(FileStorage(str(self.path)), indexname=self.indexname))

    def cancel(self) -> None:
        try:
            self._writer.cancel()
        except Exception:  # pragma: no cover
            pass
