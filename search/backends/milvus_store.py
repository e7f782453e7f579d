"""The Milvus store: connecting, creating the three collections, the manifest, and paged scans.

:class:`MilvusStore` opens a client on Milvus Lite or a server (pymilvus is imported
only here and only when a backend opens), creates the passages, docs and doclex
collections with their BM25 functions and indexes, checks the stored manifest against
the engine's settings, and keeps large JSON values (the manifest, articles) in the docs
collection as parts below Milvus's VARCHAR limit. The reading, searching and writing
layers build on it (:mod:`.milvus_read`, :mod:`.milvus_search`, :mod:`.milvus_write`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from .. import __version__
from ..errors import IndexFormatError, IndexMissingError, IngestError, MissingExtraError, SearchError
from ..types import Article, Passage
from . import DocRecord
from .milvus_base import (
    ANALYZER,
    DEFAULT_PREFIX,
    FORMAT,
    MANIFEST_KEY,
    MAX_ID_BYTES,
    MAX_VARCHAR,
    PAGE,
    _and,
    _parts,
    lit,
    lite_path,
    now_iso,
)

# The name the backend has always logged under (this code lived in search.backends.milvus).
log = logging.getLogger("search.backends.milvus")


class MilvusStore:
    """The collections behind :class:`~search.backends.milvus.MilvusBackend`: opened, created, checked."""

    def __init__(
        self,
        uri: str,
        *,
        create: bool = False,
        settings: dict[str, Any] | None = None,
        prefix: str | None = None,
        token: str | None = None,
        index_type: str | None = None,
    ) -> None:
        try:
            with warnings.catch_warnings():
                # milvus-lite 2.5 imports pkg_resources, which warns on every start
                warnings.simplefilter("ignore")
                import pymilvus  # noqa: F401
        except ImportError as e:
            raise MissingExtraError(
                'the Milvus backend needs pymilvus and milvus-lite: pip install "search[milvus]"'
            ) from e
        self.uri = str(uri)
        self.prefix = prefix or os.environ.get("SEARCH_MILVUS_PREFIX") or DEFAULT_PREFIX
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,200}", self.prefix):
            raise ValueError(f"collection prefix {self.prefix!r}: use letters, digits and _ only")
        self.passages_name = f"{self.prefix}_passages"
        self.docs_name = f"{self.prefix}_docs"
        self.doclex_name = f"{self.prefix}_doclex"
        self.lite = lite_path(self.uri)
        self.settings = dict(settings or {})
        self.dim = int(self.settings.get("embedding", {}).get("dim", 384))
        self.index_type = (
            index_type or os.environ.get("SEARCH_MILVUS_INDEX") or ("FLAT" if self.lite else "HNSW")
        ).upper()
        self._lock = threading.RLock()
        self._passages: dict[str, Passage] = {}
        self._sents: dict[str, list[tuple[int, int]]] = {}
        self._idf: dict[str, float] = {}
        self._records: dict[str, DocRecord | None] = {}
        self._articles: dict[str, Article | None] = {}
        self._manifest: dict[str, Any] | None = None
        self._client = self._connect(create, token)
        exists = self._client.has_collection(self.passages_name) and self._client.has_collection(
            self.docs_name
        )
        if exists and not self._client.has_collection(self.doclex_name):
            m = self._read_manifest() or {}
            raise IndexFormatError(
                f"{self.uri} was built with Milvus index format {m.get('format')}, this version reads "
                f"format {FORMAT}: rebuild it with `search reindex --backend milvus`"
            )
        if not exists:
            if not create:
                raise IndexMissingError(
                    f"no index in Milvus at {self.uri} (collection {self.passages_name}): "
                    "build one with `search index PATH... --backend milvus`"
                )
            self._create()
        self._manifest = self._read_manifest()
        if self._manifest is None:
            raise IndexFormatError(
                f"{self.uri}: collection {self.docs_name} has no manifest record: "
                "drop the collections or rebuild with `search index`"
            )
        self._check_manifest(self._manifest)

    # -- connecting and creating -------------------------------------------------------
    def _connect(self, create: bool, token: str | None) -> Any:
        from pymilvus import MilvusClient

        token = token if token is not None else os.environ.get("SEARCH_MILVUS_TOKEN", "")
        if self.lite is not None:
            if not self.lite.exists() and not create:
                raise IndexMissingError(
                    f"no Milvus Lite database at {self.lite}: build one with "
                    "`search index PATH... --backend milvus --uri {self.lite}`"
                )
            self.lite.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.lite)
        else:
            target = self.uri
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return MilvusClient(uri=target, token=token or "", timeout=30)
        except Exception as e:  # pymilvus raises several unrelated types here
            where = f"Milvus Lite at {self.lite}" if self.lite else f"the Milvus server at {self.uri}"
            raise SearchError(
                f"cannot open {where} ({type(e).__name__}: {e}): "
                + (
                    "check the path and that milvus-lite 2.5 is installed"
                    if self.lite
                    else "start it or fix --uri"
                )
            ) from e

    def _create(self) -> None:
        from pymilvus import DataType, Function, FunctionType

        c = self._client
        bm25 = self.settings.get("bm25", {})
        s = c.create_schema(auto_id=False, enable_dynamic_field=False)
        s.add_field("id", DataType.VARCHAR, is_primary=True, max_length=2 * MAX_ID_BYTES)
        s.add_field("doc_id", DataType.VARCHAR, max_length=MAX_ID_BYTES)
        s.add_field("start", DataType.INT64)
        s.add_field("end", DataType.INT64)
        s.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR)
        s.add_field(
            "lex",
            DataType.VARCHAR,
            max_length=MAX_VARCHAR,
            enable_analyzer=True,
            # TEXT_MATCH counts a term's passages (the idf the re-ranker needs); Lite lacks it
            enable_match=self.lite is None,
            analyzer_params=ANALYZER,
        )
        s.add_field("sents", DataType.VARCHAR, max_length=MAX_VARCHAR)  # JSON [[start, end], ...]
        s.add_field("title", DataType.VARCHAR, max_length=2048)
        s.add_field("source", DataType.VARCHAR, max_length=512)
        s.add_field("url", DataType.VARCHAR, max_length=2048)
        s.add_field("published", DataType.VARCHAR, max_length=64)
        s.add_field("meta", DataType.JSON)  # published_ts + extra metadata (milvus_filters)
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        s.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        s.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["lex"],
                output_field_names=["sparse"],
            )
        )
        ip = c.prepare_index_params()
        ip.add_index(
            field_name="sparse",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": float(bm25.get("k1", 0.9)), "bm25_b": float(bm25.get("b", 0.4))},
        )
        dense_params = {"M": 16, "efConstruction": 200} if self.index_type == "HNSW" else {}
        ip.add_index(field_name="dense", index_type=self.index_type, metric_type="IP", params=dense_params)
        if self.lite is None:  # a scalar index speeds up doc_id filters and deletes on a server
            ip.add_index(field_name="doc_id", index_type="INVERTED")
        c.create_collection(self.passages_name, schema=s, index_params=ip, consistency_level="Strong")

        d = c.create_schema(auto_id=False, enable_dynamic_field=False)
        d.add_field("id", DataType.VARCHAR, is_primary=True, max_length=2 * MAX_ID_BYTES)
        d.add_field("doc_id", DataType.VARCHAR, max_length=MAX_ID_BYTES)
        d.add_field("kind", DataType.VARCHAR, max_length=16)
        d.add_field("part", DataType.INT64)
        d.add_field("meta", DataType.VARCHAR, max_length=MAX_VARCHAR)
        d.add_field("body", DataType.VARCHAR, max_length=MAX_VARCHAR)
        # Milvus requires a vector field in every collection; this one is never searched.
        d.add_field("v", DataType.FLOAT_VECTOR, dim=2)
        dp = c.prepare_index_params()
        dp.add_index(field_name="v", index_type="FLAT", metric_type="L2")
        c.create_collection(self.docs_name, schema=d, index_params=dp, consistency_level="Strong")

        x = c.create_schema(auto_id=False, enable_dynamic_field=False)
        x.add_field("id", DataType.VARCHAR, is_primary=True, max_length=2 * MAX_ID_BYTES)
        x.add_field(
            "text", DataType.VARCHAR, max_length=MAX_VARCHAR, enable_analyzer=True,
            analyzer_params=ANALYZER,
        )  # fmt: skip
        x.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        x.add_field("v", DataType.FLOAT_VECTOR, dim=2)
        x.add_function(
            Function(
                name="doc_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        xp = c.prepare_index_params()
        xp.add_index(
            field_name="sparse",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": float(bm25.get("k1", 0.9)), "bm25_b": float(bm25.get("b", 0.4))},
        )
        xp.add_index(field_name="v", index_type="FLAT", metric_type="L2")
        c.create_collection(self.doclex_name, schema=x, index_params=xp, consistency_level="Strong")

        ts = now_iso()
        manifest = {
            "format": FORMAT,
            "backend": "milvus",
            "package_version": __version__,
            "generation": 1,
            "created": ts,
            "updated": ts,
            "sources": [],
            "counts": {"documents": 0, "passages": 0},
            "collections": {"passages": self.passages_name, "docs": self.docs_name},
            "dense_index": self.index_type,
            **self.settings,
        }
        self._put_blob("manifest", MANIFEST_KEY, json.dumps(manifest), meta="")

    def _check_manifest(self, m: dict[str, Any]) -> None:
        if m.get("format") != FORMAT:
            raise IndexFormatError(
                f"{self.uri} was built with Milvus index format {m.get('format')}, this version reads "
                f"format {FORMAT}: rebuild it with `search reindex --backend milvus`"
            )
        want = self.settings
        if want.get("embedding"):
            emb = m.get("embedding", {})
            if emb.get("model") != want["embedding"].get("model") or emb.get("dim") != want["embedding"].get(
                "dim"
            ):
                raise IndexFormatError(
                    f"{self.uri} was built with embedding model {emb.get('model')} ({emb.get('dim')} dims), "
                    f"this engine uses {want['embedding'].get('model')}: rebuild with `search reindex`"
                )
        if want.get("chunking") and m.get("chunking", {}).get("version") != want["chunking"].get("version"):
            raise IndexFormatError(
                f"{self.uri} was chunked by another version: rebuild with `search reindex`"
            )

    # -- blobs in the docs collection ----------------------------------------------------
    @staticmethod
    def _row_id(kind: str, key: str, part: int) -> str:
        return f"{kind}:{key}:{part:05d}"

    def _blob_rows(self, kind: str, key: str, body: str, meta: str) -> list[dict[str, Any]]:
        if len(key.encode("utf-8")) > MAX_ID_BYTES:
            raise IngestError(
                f"document id {key[:60]!r}... is longer than {MAX_ID_BYTES} bytes: Milvus cannot key it"
            )
        if len(meta.encode("utf-8")) > MAX_VARCHAR:
            raise IngestError(
                f"the record of {key!r} is larger than {MAX_VARCHAR} bytes: shorten its metadata"
            )
        return [
            {
                "id": self._row_id(kind, key, i),
                "doc_id": key,
                "kind": kind,
                "part": i,
                "meta": meta if i == 0 else "",
                "body": piece,
                "v": [0.0, 0.0],
            }
            for i, piece in enumerate(_parts(body))
        ]

    def _put_blob(self, kind: str, key: str, body: str, meta: str) -> None:
        rows = self._blob_rows(kind, key, body, meta)
        self._client.upsert(self.docs_name, rows)
        self._client.delete(
            self.docs_name, filter=f"kind == {lit(kind)} and doc_id == {lit(key)} and part >= {len(rows)}"
        )

    def _get_blob(self, kind: str, key: str) -> tuple[str, str] | None:
        rows = self._client.query(
            self.docs_name,
            filter=f"kind == {lit(kind)} and doc_id == {lit(key)}",
            output_fields=["part", "meta", "body"],
            limit=PAGE,
        )
        if not rows:
            return None
        rows.sort(key=lambda r: r["part"])
        return rows[0]["meta"], "".join(r["body"] for r in rows)

    def _read_manifest(self) -> dict[str, Any] | None:
        blob = self._get_blob("manifest", MANIFEST_KEY)
        return json.loads(blob[1]) if blob else None

    def _scan(self, collection: str, filter: str, fields: list[str]) -> Iterator[dict[str, Any]]:
        """Every row matching ``filter``, paged by primary key (query results come sorted by it)."""
        last = ""
        while True:
            rows = self._client.query(
                collection, filter=_and(filter, f"id > {lit(last)}"), output_fields=fields, limit=PAGE
            )
            if not rows:
                return
            yield from rows
            last = max(r["id"] for r in rows)
            if len(rows) < PAGE:
                return

    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            self._manifest = self._read_manifest() or {}
        return dict(self._manifest)

    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            try:
                client.close()
            except Exception:  # closing twice or after the server went away is harmless
                log.debug("closing the Milvus client failed", exc_info=True)
