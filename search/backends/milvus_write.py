"""Writing to a Milvus index: one batch of added, replaced and removed articles, manifest last.

:class:`MilvusWrites` turns a :class:`~search.backends.WriteBatch` into passage rows
(text, analysed lexical terms, filter fields, sentence spans, vectors), document rows
(the record and the article as JSON parts) and document-level BM25 rows, then applies
them in the order that keeps readers consistent without transactions: new passages,
stale passages, records, removed documents, and the manifest's generation last.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import numpy as np

from ..errors import IndexFormatError, IngestError
from ..filters import merge_kinds
from ..text import headline
from ..types import Article
from . import DocRecord, WriteBatch, record_entities
from .milvus_base import (
    IN_LIST,
    MANIFEST_KEY,
    MAX_VARCHAR,
    WRITE_ROWS,
    _chunks,
    _clip,
    doc_text,
    lex_text,
    lit,
    now_iso,
)
from .milvus_filters import meta_of
from .milvus_read import MilvusReads


def _article_dict(art: Article) -> dict[str, Any]:
    """The article as stored: its dict, plus its sentence vectors (float16, base64)."""
    d = art.to_dict()
    if art.sentence_vectors is not None:
        d["sentence_vectors"] = base64.b64encode(
            np.asarray(art.sentence_vectors, np.float16).tobytes()
        ).decode()
    return d


def _dedupe(batch: WriteBatch) -> WriteBatch:
    """Within one batch the last version of a document wins (as in the local backend)."""
    last = {a.id: i for i, a in enumerate(batch.articles)}
    keep = [i for i, a in enumerate(batch.articles) if last[a.id] == i]
    return dataclasses.replace(  # every other field (embedding, entities, ...) as it was
        batch,
        articles=[batch.articles[i] for i in keep],
        passages=[batch.passages[i] for i in keep],
        vectors=[batch.vectors[i] for i in keep],
        duplicate_of=[batch.duplicate_of[i] if i < len(batch.duplicate_of) else None for i in keep],
        minhash=[batch.minhash[i] if i < len(batch.minhash) else "" for i in keep],
        sentences=[batch.sentences[i] if i < len(batch.sentences) else [] for i in keep],
        remove=list(batch.remove),
        sources=list(batch.sources),
    )


class MilvusWrites(MilvusReads):
    """The write path: a batch applied in an order that readers without transactions can follow."""

    def write(self, batch: WriteBatch) -> None:
        """Apply one batch: add or replace documents (by id), remove ids, or rebuild (reset)."""
        with self._lock:
            self._write(_dedupe(batch))

    def _write(self, batch: WriteBatch) -> None:
        c = self._client
        manifest = self._read_manifest() or self.manifest()
        new_ids = [a.id for a in batch.articles]
        new_set = set(new_ids)
        if batch.reset:
            old = {r.id: r for r in self.docs()}
        else:
            old = self._records_of(list(dict.fromkeys([*new_ids, *batch.remove])))
        remove = set(batch.remove)
        gone = [d for d in old if d not in new_set and (batch.reset or d in remove)]
        replaced = [d for d in new_ids if d in old]

        ts = now_iso()
        kinds: dict[str, str] = {} if batch.reset else dict(manifest.get("fields") or {})
        prow: list[dict[str, Any]] = []
        drows: list[dict[str, Any]] = []
        xrows: list[dict[str, Any]] = []
        for i, art in enumerate(batch.articles):
            ps = batch.passages[i]
            head = headline(art.title, art.text)
            xrows.append(
                {"id": art.id, "text": _clip(doc_text(head, art.text), MAX_VARCHAR), "v": [0.0, 0.0]}
            )
            vecs = np.asarray(batch.vectors[i], dtype=np.float32).reshape(len(ps), -1) if ps else None
            if vecs is not None and vecs.shape[1] != self.dim:
                raise IndexFormatError(
                    f"document {art.id!r}: vectors have {vecs.shape[1]} dimensions, the index {self.dim}"
                )
            sents = (
                batch.sentences[i] if i < len(batch.sentences) and batch.sentences[i] else [[] for _ in ps]
            )
            for j, p in enumerate(ps):
                if len(p.text.encode("utf-8")) > MAX_VARCHAR:
                    raise IngestError(
                        f"passage {p.id!r} is {len(p.text.encode('utf-8')):,} bytes; Milvus holds at most "
                        f"{MAX_VARCHAR:,} in one text field: split the document"
                    )
                assert vecs is not None
                prow.append(
                    {
                        "id": p.id,
                        "doc_id": art.id,
                        "start": p.start,
                        "end": p.end,
                        "text": p.text,
                        "lex": _clip(lex_text(head, p.text), MAX_VARCHAR),
                        "title": _clip(art.title, 2048),
                        "source": _clip(art.source, 512),
                        "url": _clip(art.url, 2048),
                        "published": _clip(art.published, 64),
                        "meta": meta_of(art.published_ts, art.metadata),
                        "sents": json.dumps([[int(a), int(b)] for a, b in sents[j]]),
                        "dense": vecs[j],
                    }
                )
            rec = DocRecord(
                id=art.id,
                title=art.title,
                source=art.source,
                url=art.url,
                published=art.published,
                path=art.path,
                content_hash=art.content_hash,
                added=ts,
                passages=len(ps),
                duplicate_of=batch.duplicate_of[i] if i < len(batch.duplicate_of) else None,
                published_ts=art.published_ts,
                metadata=dict(art.metadata),
            )
            merge_kinds(kinds, art.metadata)
            meta = dataclasses.asdict(rec)
            meta["minhash"] = batch.minhash[i] if i < len(batch.minhash) else ""
            body = json.dumps(_article_dict(art), ensure_ascii=False)
            drows.extend(self._blob_rows("doc", art.id, body, json.dumps(meta, ensure_ascii=False)))

        # 1. new passages in (same ids replace the old rows in place)
        for chunk in _chunks(prow, WRITE_ROWS):
            c.upsert(self.passages_name, list(chunk))
        # 2. passages of replaced documents that the new version no longer has
        new_pids = {r["id"] for r in prow}
        for chunk in _chunks(replaced, IN_LIST):
            expr = f"doc_id in [{', '.join(lit(d) for d in chunk)}]"
            stale = [r["id"] for r in self._scan(self.passages_name, expr, ["id"]) if r["id"] not in new_pids]
            for ids in _chunks(stale, IN_LIST):
                c.delete(self.passages_name, ids=list(ids))
        # 3. document records and articles, and parts the shorter new version does not have
        for chunk in _chunks(drows, WRITE_ROWS):
            c.upsert(self.docs_name, list(chunk))
        for chunk in _chunks(xrows, WRITE_ROWS):
            c.upsert(self.doclex_name, list(chunk))
        nparts: dict[str, int] = {}
        for r in drows:
            nparts[r["doc_id"]] = nparts.get(r["doc_id"], 0) + 1
        for d in replaced:
            c.delete(self.docs_name, filter=f'kind == "doc" and doc_id == {lit(d)} and part >= {nparts[d]}')
        # 4. removed documents
        for chunk in _chunks(gone, IN_LIST):
            ids = f"[{', '.join(lit(d) for d in chunk)}]"
            c.delete(self.passages_name, filter=f"doc_id in {ids}")
            c.delete(self.docs_name, filter=f'kind == "doc" and doc_id in {ids}')
            c.delete(self.doclex_name, ids=list(chunk))
        # 5. the manifest, last: its generation tells readers to drop their caches
        counts = manifest.get("counts", {"documents": 0, "passages": 0})
        touched = [old[d] for d in [*gone, *replaced]]
        counts = {
            "documents": counts.get("documents", 0) - len(touched) + len(batch.articles),
            "passages": counts.get("passages", 0) - sum(r.passages for r in touched) + len(prow),
        }
        if batch.reset:
            counts = {"documents": len(batch.articles), "passages": len(prow)}
        manifest["counts"] = counts
        manifest["fields"] = kinds
        record_entities(manifest, batch.entities, batch.reset)
        manifest["generation"] = int(manifest.get("generation", 1)) + 1
        manifest["updated"] = ts
        if batch.sources:
            srcs = [] if batch.reset else list(manifest.get("sources", []))
            for s in batch.sources:
                if s not in srcs:
                    srcs.append(s)
            manifest["sources"] = srcs
        self._put_blob("manifest", MANIFEST_KEY, json.dumps(manifest), meta="")
        self._manifest = manifest
        self._forget()
