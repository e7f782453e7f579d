"""BM25 statistics that stay exact after deletes, and whoosh's own BM25 (the reference).

Whoosh marks deleted documents but keeps them in its collection statistics (document
frequency, total field length) until a merge rewrites their segment. To keep BM25
scores equal to a fresh build after any sequence of adds and removes, the writer
records, per whoosh segment, what the deleted documents contributed; the scorer
subtracts it. A merge that rewrites a segment drops its deleted documents, and its
correction with it.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh import scoring

FIELD = "text"
TITLE = "title"
DOCS = "docs"  # whoosh indexname of the document-level index, beside the passages' MAIN
CORRECTIONS_FILE = "corrections.json"


@dataclass
class SegmentCorrection:
    """What deleted documents still contribute to one whoosh segment's statistics."""

    docs: int = 0
    length: int = 0
    df: Counter[str] = field(default_factory=Counter)
    title_length: int = 0
    title_df: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "docs": self.docs,
            "length": self.length,
            "df": dict(self.df),
            "title_length": self.title_length,
            "title_df": dict(self.title_df),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SegmentCorrection:
        def counts(x: dict[str, Any]) -> Counter[str]:
            return Counter({k: int(v) for k, v in x.items()})

        return cls(
            int(d["docs"]),
            int(d["length"]),
            counts(d["df"]),
            int(d.get("title_length", 0)),
            counts(d.get("title_df", {})),
        )


@dataclass
class Corrections:
    """Per-segment corrections, summed for the segments an index reader holds."""

    segments: dict[str, SegmentCorrection] = field(default_factory=dict)

    def total(self, live_segments: Iterable[str]) -> SegmentCorrection:
        out = SegmentCorrection()
        for name in live_segments:
            c = self.segments.get(name)
            if c:
                out.docs += c.docs
                out.length += c.length
                out.df.update(c.df)
                out.title_length += c.title_length
                out.title_df.update(c.title_df)
        return out

    def save(self, path: Path) -> None:
        data = {k: v.to_dict() for k, v in self.segments.items()}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Corrections:
        if not path.exists():
            return cls()
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls({k: SegmentCorrection.from_dict(v) for k, v in data.items()})


class ExactBM25(scoring.WeightingModel):
    """Lucene BM25 whose collection statistics exclude deleted documents."""

    def __init__(self, correction: SegmentCorrection, k1: float = 0.9, b: float = 0.4) -> None:
        self.correction = correction
        self.k1 = k1
        self.b = b
        self._idf: dict[str, float] = {}
        self._avgfl: float | None = None

    def supports_block_quality(self) -> bool:
        return True

    def stats(self, searcher: Any, text: str) -> tuple[float, float]:
        # A whoosh searcher, or (on the fast path, which never imports whoosh.searching)
        # the index reader itself: both answer the same collection statistics.
        parent = searcher.get_parent() if hasattr(searcher, "get_parent") else searcher
        if self._avgfl is None:
            n = max(parent.doc_count(), 1)
            self._avgfl = max((parent.field_length(FIELD) - self.correction.length) / n, 1e-9)
        idf = self._idf.get(text)
        if idf is None:
            n = parent.doc_count()
            df = max(parent.doc_frequency(FIELD, text) - self.correction.df.get(text, 0), 0)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            self._idf[text] = idf
        return idf, self._avgfl

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: float = 1) -> Any:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        idf, avgfl = self.stats(searcher, text)
        return _BM25Scorer(searcher, fieldname, text, idf * qf, avgfl, self.k1, self.b)


class _BM25Scorer(scoring.WeightLengthScorer):
    def __init__(
        self, searcher: Any, fieldname: str, text: str, idf: float, avgfl: float, k1: float, b: float
    ):
        self.idf = idf
        self.avgfl = avgfl
        self.k1 = k1
        self.b = b
        self.setup(searcher, fieldname, text)

    def _score(self, weight: float, length: float) -> float:
        k1, b = self.k1, self.b
        return self.idf * weight / (weight + k1 * (1 - b + b * length / self.avgfl))


def segment_names(ix: Any) -> list[str]:
    return [s.segment_id() for s in ix._segments()]


def corrections_file(indexname: str) -> str:
    return CORRECTIONS_FILE if indexname == "MAIN" else f"corrections-{indexname}.json"
