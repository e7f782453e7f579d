"""Reading a Milvus index: passages, records, articles and signatures, cached per generation.

:class:`MilvusReads` fetches rows by id or by a paged scan and keeps what it read
(passages and their sentence spans, records, articles with their sentence vectors) in
bounded caches that :meth:`~MilvusReads.refresh` drops when another writer moved the
manifest's generation (stored passage vectors are read when asked, not cached). The searches (:mod:`.milvus_search`) fill the passage cache
from their hits, so a result's passages cost no second query.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..types import Article, Passage
from . import DocRecord
from .milvus_base import ARTICLE_CACHE, IN_LIST, PASSAGE_CACHE, PASSAGE_FIELDS, _chunks, lit
from .milvus_store import MilvusStore


def _article_from(d: dict[str, Any]) -> Article:
    raw = d.pop("sentence_vectors", None)
    art = Article.from_dict(d)
    if raw and art.sentences:
        art.sentence_vectors = np.frombuffer(base64.b64decode(raw), np.float16).reshape(
            len(art.sentences), -1
        )
    return art


class MilvusReads(MilvusStore):
    """Rows read back from the collections, and the caches that hold them for one generation."""

    def refresh(self) -> bool:
        """Re-read the manifest; drop the caches when another writer moved the generation."""
        m = self._read_manifest()
        if m is None or (
            self._manifest is not None and m.get("generation") == self._manifest.get("generation")
        ):
            return False
        with self._lock:
            self._manifest = m
            self._forget()
        return True

    def _forget(self) -> None:
        self._passages.clear()
        self._sents.clear()
        self._records.clear()
        self._idf.clear()
        self._articles.clear()

    def _remember(self, rows: Iterable[dict[str, Any]]) -> None:
        with self._lock:
            if len(self._passages) > PASSAGE_CACHE:
                self._passages.clear()
                self._sents.clear()
            for r in rows:
                e = r.get("entity", r)
                if "text" in e:
                    pid = r.get("id", e.get("id"))
                    self._passages[pid] = Passage(pid, e["doc_id"], int(e["start"]), int(e["end"]), e["text"])
                    self._sents[pid] = [(int(a), int(b)) for a, b in json.loads(e.get("sents") or "[]")]

    def sentences(self, pid: str) -> list[str]:
        """The texts of a passage's sentences (spans stored at index time, headings left out)."""
        p = self.passage(pid)
        if p is None:
            return []
        out = []
        for a, b in self._sents.get(pid, []):
            if p.start <= a <= b <= p.end:
                out.append(p.text[a - p.start : b - p.start])
        return out

    def fields(self) -> dict[str, str]:
        """The extra metadata fields written so far, and their filter kinds."""
        return dict(self.manifest().get("fields") or {})

    def passage(self, pid: str) -> Passage | None:
        p = self._passages.get(pid)
        if p is not None:
            return p
        rows = self._client.get(self.passages_name, ids=[pid], output_fields=["id", *PASSAGE_FIELDS])
        self._remember(rows)
        return self._passages.get(pid)

    def passage_vectors(self, pids: Sequence[str]) -> np.ndarray:
        """The stored vectors of live passages (float32 unit rows, in the order asked;
        unknown ids left out), as the local snapshot's: what pseudo-relevance feedback
        moves the question toward (:mod:`search.feedback`). Read from Milvus each time
        (one query per :data:`IN_LIST` ids; a query asks for two)."""
        want = [str(p) for p in pids]
        found: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(dict.fromkeys(want)), IN_LIST):
            for r in self._client.get(self.passages_name, ids=list(chunk), output_fields=["dense"]):
                found[r["id"]] = np.asarray(r["dense"], np.float32)
        rows = [found[p] for p in want if p in found]
        if not rows:
            return np.zeros((0, 0), np.float32)
        return np.stack(rows)

    def passages_of(self, doc_id: str) -> list[Passage]:
        rows = list(self._scan(self.passages_name, f"doc_id == {lit(doc_id)}", ["id", *PASSAGE_FIELDS]))
        self._remember(rows)
        out = [
            self._passages.get(r["id"])
            or Passage(r["id"], r["doc_id"], int(r["start"]), int(r["end"]), r["text"])
            for r in rows
        ]
        return sorted(out, key=lambda p: (p.start, p.end, p.id))

    @staticmethod
    def _record(meta: str) -> DocRecord:
        r = json.loads(meta)
        known = {f.name for f in dataclasses.fields(DocRecord)}
        r.pop("minhash", None)  # kept beside the record for signatures(), never shown
        extra = r.pop("extra", {}) or {}
        extra.update({key: r.pop(key) for key in list(r) if key not in known})
        return DocRecord(**r, extra=extra)

    def doc(self, doc_id: str) -> DocRecord | None:
        if doc_id in self._records:
            return self._records[doc_id]
        rows = self._client.get(self.docs_name, ids=[self._row_id("doc", doc_id, 0)], output_fields=["meta"])
        rec = self._record(rows[0]["meta"]) if rows else None
        with self._lock:
            self._records[doc_id] = rec
        return rec

    def _records_of(self, ids: Sequence[str]) -> dict[str, DocRecord]:
        out: dict[str, DocRecord] = {}
        for chunk in _chunks(list(ids), IN_LIST):
            rows = self._client.get(
                self.docs_name, ids=[self._row_id("doc", d, 0) for d in chunk], output_fields=["meta"]
            )
            for r in rows:
                rec = self._record(r["meta"])
                out[rec.id] = rec
        return out

    def docs(self) -> list[DocRecord]:
        recs = [
            self._record(r["meta"])
            for r in self._scan(self.docs_name, 'kind == "doc" and part == 0', ["meta"])
        ]
        with self._lock:
            self._records.update((r.id, r) for r in recs)
        return recs

    def signatures(self) -> list[tuple[str, str | None, np.ndarray]]:
        """``(doc id, duplicate_of, MinHash signature)`` of every live document."""
        from ..dedup import decode

        out = []
        for r in self._scan(self.docs_name, 'kind == "doc" and part == 0', ["meta"]):
            m = json.loads(r["meta"])
            sig = decode(m["minhash"]) if m.get("minhash") else np.zeros(0, np.uint32)
            out.append((m["id"], m.get("duplicate_of"), sig))
        return out

    def article(self, doc_id: str) -> Article | None:
        if doc_id not in self._articles:
            self.articles([doc_id])
        return self._articles.get(doc_id)

    def articles(self, doc_ids: Sequence[str]) -> dict[str, Article]:
        """Many articles at once (one query per :data:`IN_LIST` ids), cached per generation."""
        want = [d for d in dict.fromkeys(doc_ids) if d not in self._articles]
        for chunk in _chunks(want, IN_LIST):
            parts: dict[str, list[tuple[int, str]]] = {}
            ids = ", ".join(lit(d) for d in chunk)
            for r in self._scan(
                self.docs_name, f'kind == "doc" and doc_id in [{ids}]', ["doc_id", "part", "body"]
            ):
                parts.setdefault(r["doc_id"], []).append((int(r["part"]), r["body"]))
            with self._lock:
                if len(self._articles) + len(chunk) > ARTICLE_CACHE:
                    self._articles.clear()
                for d in chunk:
                    body = "".join(b for _, b in sorted(parts.get(d, [])))
                    self._articles[d] = _article_from(json.loads(body)) if body else None
        return {d: a for d in doc_ids if (a := self._articles.get(d)) is not None}

    def stats(self) -> dict[str, Any]:
        m = self.manifest()
        size = None
        if self.lite is not None and self.lite.exists():
            files = [self.lite] if self.lite.is_file() else [f for f in self.lite.rglob("*") if f.is_file()]
            size = sum(f.stat().st_size for f in files)
        counts = m.get("counts", {})
        return {
            "backend": "milvus",
            "uri": str(self.lite.resolve()) if self.lite else self.uri,
            "deployment": "lite" if self.lite else "server",
            "collections": m.get("collections"),
            "dense_index": m.get("dense_index"),
            "generation": m.get("generation"),
            "documents": counts.get("documents", 0),
            "passages": counts.get("passages", 0),
            "size_bytes": size,
            "embedding": m.get("embedding"),
            "chunking": m.get("chunking"),
            "entities": m.get("entities"),
            "bm25": m.get("bm25"),
            "created": m.get("created"),
            "updated": m.get("updated"),
            "format": m.get("format"),
            "package_version": m.get("package_version"),
        }
