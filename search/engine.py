"""The facade: one ``Engine`` owns the flow from articles to cited answers.

    ingest → chunk → (lexical + vector index, behind a backend) → retrieve → fuse → answer

The CLI, the HTTP server and the MCP server are thin faces over this class; each turns
its input into an ``Engine`` call and the result's ``to_dict()`` into its output.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .asking import ANSWER_DEPTH, Asks
from .backends import Backend
from .documents import Documents
from .errors import IndexFormatError, IndexMissingError, QueryError
from .fusion import DEFAULT_FUSION, RRF_K, Fusion
from .ordering import DEFAULT_HALF_LIFE_DAYS
from .retrieve import MAX_K, Query
from .text import has_searchable_text
from .types import Hit
from .writing import WriteReport, Writes

log = logging.getLogger(__name__)

# Kept importable from here, where they were before the read path split into modules.
__all__ = ["ANSWER_DEPTH", "MAX_K", "Engine", "dense_text", "default_index_path"]

DEFAULT_INDEX = "index"
MAX_QUESTION_CHARS = 2000
CHUNK_TARGET = 700
CHUNK_OVERLAP = 1
CHUNK_VERSION = 2  # bump whenever search.chunk changes what passages it makes


def default_index_path() -> Path:
    return Path(os.environ.get("SEARCH_INDEX", DEFAULT_INDEX))


class Engine(Writes, Asks, Documents):
    """Index articles and answer questions with cited passages.

    Use :meth:`open` (or the constructor) and close it, or use it as a context manager.
    One engine is safe to share between threads for queries; writes take the index's
    writer lock, so one process writes at a time.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = False,
        embedder: str | Any | None = None,
        backend: str | None = None,
        uri: str | None = None,
        fusion: str = DEFAULT_FUSION,
        rrf_k: int = RRF_K,
        alpha: float | None = None,
        collapse_duplicates: bool = True,
        rerank: bool = True,
        preload: bool = False,
        tagger: Callable[[Sequence[str]], Sequence[Sequence[tuple[Any, ...]]]] | None = None,
        min_confidence: float | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_index_path()
        # The confidence a short answer needs; None: the fitted threshold (precision 0.9).
        self.min_confidence = min_confidence if min_confidence is not None else _env_confidence()
        # The NER stage: texts -> (start, end, label[, role]) spans; search.enrich.tag (spaCy)
        # unless given.
        self._tagger = tagger
        # SEARCH_EMBEDDER lets tests and servers choose the backend ("hash" is the fake).
        self._embedder_spec = embedder if embedder is not None else os.environ.get("SEARCH_EMBEDDER", "auto")
        self._embedder: Any = None
        self._embed_lock = threading.Lock()
        self._pool = None  # the worker that encodes beside BM25 (Retrieves._encode_beside)
        self._pool_lock = threading.Lock()
        self.fusion = Fusion.from_str(fusion)
        if rrf_k < 0:
            raise ValueError("rrf_k must be non-negative")
        self.rrf_k = rrf_k
        if alpha is not None and not 0.0 <= alpha <= 1.0:
            raise ValueError("alpha must be between 0 and 1")
        # The lexical weight of convex fusion; None: chosen per corpus (fusion.corpus_alpha).
        self.alpha = alpha
        self.collapse_duplicates = collapse_duplicates
        self.rerank = rerank
        # Whether the football vocabulary expands queries: None decides per index
        # generation from a corpus statistic (vocab.is_football); True or False forces
        # it (for measurements). On SciFact train (hybrid nDCG@10) the expansions cost
        # 0.0002 and the sentence reranker gains 0.0063, so only the vocabulary switches;
        # the reranker stays on everywhere.
        self.football: bool | None = None
        self._football_at: tuple[Any, bool] | None = None
        loader = None
        if preload and isinstance(self._embedder_spec, str):
            # Load the model on the other core while the index opens (cold start). Not a
            # daemon: a process that exits while onnxruntime is still loading on this thread
            # aborts ("terminate called without an active exception", exit 134), as the CLI
            # did on a bad filter; the interpreter now waits for the load to end.
            loader = threading.Thread(target=self._preload, name="load-embedder")
            loader.start()
        self._loader = loader
        self.backend_name = (backend or os.environ.get("SEARCH_BACKEND") or "local").lower()
        self.uri = uri or os.environ.get("SEARCH_URI")
        try:
            self._backend: Backend = self._open_backend(create)
        except BaseException:
            if loader is not None:
                # Exiting while onnxruntime is still loading on the other thread aborts
                # the process: let it finish before the error propagates.
                loader.join()
            raise

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> Engine:
        """Open an existing index (``create=True`` makes an empty one when there is none)."""
        return cls(path, **kwargs)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._loader is not None:
            self._loader.join()
            self._loader = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._backend.close()

    def _model_id(self) -> tuple[str, int]:
        """The model the index's vectors come from (the fake embedder is its own model)."""
        from .embed import DIM, MODEL_ID

        spec = self._embedder_spec
        if isinstance(spec, str):
            return ("hash", DIM) if spec == "hash" else (MODEL_ID, DIM)
        return getattr(spec, "model_id", MODEL_ID), int(getattr(spec, "dim", DIM))

    def _settings(self) -> dict[str, Any]:
        model, dim = self._model_id()
        return {
            "embedding": {"model": model, "dim": dim},
            "chunking": {"target_chars": CHUNK_TARGET, "overlap": CHUNK_OVERLAP, "version": CHUNK_VERSION},
            "bm25": {"k1": 0.9, "b": 0.4},
        }

    def _open_backend(self, create: bool) -> Backend:
        if self.backend_name == "milvus":
            from .backends.milvus import MilvusBackend

            return MilvusBackend(self.uri or str(self.path), create=create, settings=self._settings())
        if self.backend_name != "local":
            raise ValueError(f"unknown backend {self.backend_name!r}: choose local or milvus")
        from .backends.local import LocalBackend, create_index, is_index, writer_lock

        if not is_index(self.path):
            if self.path.exists() and (not self.path.is_dir() or _has_foreign_files(self.path)):
                # Never "remove it": it may be the user's articles (`--index seeds`).
                what = "a folder of other files" if self.path.is_dir() else "a file"
                raise IndexFormatError(
                    f"{self.path} is not an index (no CURRENT file): it is {what}; give --index the "
                    "index's folder, or a new one for `search index` to make"
                )
            if not create:
                raise IndexMissingError(
                    f"no index at {self.path}: create it with `search index --index {self.path} [PATH...]`"
                )
            with writer_lock(self.path):
                create_index(self.path, self._settings())
        with self._reading():  # a damaged file: IndexFormatError, as a foreign format is
            backend = LocalBackend(self.path)
            manifest = backend.manifest()
        self._check_manifest(manifest)
        return backend

    def _check_manifest(self, m: dict[str, Any]) -> None:
        want = self._settings()
        emb = m.get("embedding", {})
        if emb.get("model") != want["embedding"]["model"] or emb.get("dim") != want["embedding"]["dim"]:
            raise IndexFormatError(
                f"{self.path} was built with embedding model {emb.get('model')} ({emb.get('dim')} dims), "
                f"this engine uses {want['embedding']['model']}: rebuild with `search reindex`"
            )
        if m.get("chunking", {}).get("version") != CHUNK_VERSION:
            raise IndexFormatError(
                f"{self.path} was chunked by another version: rebuild with `search reindex`"
            )

    def _preload(self) -> None:
        try:
            _ = self.embedder
        except Exception:  # the query that needs the model will raise it, on the main thread
            log.debug("preloading the embedder failed", exc_info=True)

    # -- models ----------------------------------------------------------------------
    @property
    def embedder(self) -> Any:
        """The embedding model, loaded once per engine on first use."""
        if self._embedder is None:
            with self._embed_lock:
                if self._embedder is None:
                    if isinstance(self._embedder_spec, str):
                        from .embed import get_embedder

                        self._embedder = get_embedder(self._embedder_spec)
                    else:
                        self._embedder = self._embedder_spec
        return self._embedder

    @classmethod
    def rebuild(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        **kwargs: Any,
    ) -> tuple[Engine, WriteReport]:
        """Rebuild an index with this version: the articles it holds, from their stored text
        (:meth:`reindex`); or, when this version cannot open it (another format, model or
        chunking), from the sources it recorded, the old generations replaced by a fresh
        index; or, when a file of it is damaged, from those sources too. Returns the open
        engine and the report."""
        p = Path(path) if path is not None else default_index_path()
        try:
            engine = cls(p, **kwargs)
        except IndexFormatError:
            return cls._from_sources(p, progress, kwargs, "cannot be read by this version")
        try:
            return engine, engine.reindex(progress=progress)
        except IndexFormatError:  # a damaged file: the stored text cannot be read back
            if engine.backend_name != "local":
                raise
            engine.close()
            return cls._from_sources(p, progress, kwargs, "is damaged")

    @classmethod
    def _from_sources(
        cls, p: Path, progress: Callable[[str, int, int], None] | None, kwargs: dict[str, Any], why: str
    ) -> tuple[Engine, WriteReport]:
        """A fresh index at ``p`` from the sources its manifest recorded (articles added as
        objects, with no file, cannot come back)."""
        from .backends.local import clear_index, recorded_sources

        sources = recorded_sources(p)
        if not sources:
            raise IndexFormatError(
                f"{p} {why} and records no sources: rebuild it with `search index PATH...`"
            ) from None
        clear_index(p)
        engine = cls(p, create=True, **kwargs)
        report = engine.index(sources, progress=progress)
        report.problems.insert(
            0,
            f"the index {why}: rebuilt from the {len(sources)} source(s) it recorded; articles added without a file are not in it",
        )
        return engine, report

    # -- reading ---------------------------------------------------------------------
    def refresh(self) -> bool:
        """Pick up changes made by other writers (queries do this themselves)."""
        with self._reading():
            return self._backend.refresh()

    @staticmethod
    def check_question(question: str) -> str:
        """The question, stripped, or :class:`QueryError` saying what is wrong with it.

        Every face calls this once at its boundary (``search`` and ``ask`` call it too),
        so a question that cannot be searched never reaches a retriever or a model.
        """
        if not isinstance(question, str):
            raise QueryError("the question must be text")
        try:
            question.encode("utf-8")
        except UnicodeEncodeError as e:
            # A lone surrogate: what Python makes of bytes that are not UTF-8 (argv, a JSON
            # "\ud800" escape). Tokenizers and JSON writers refuse it, so refuse it here.
            raise QueryError(
                f"the question holds a character that is not text (a lone surrogate at position {e.start}, "
                "often from bytes that are not UTF-8): send the question as UTF-8 text"
            ) from None
        q = question.strip()
        if not q:
            raise QueryError('the question is empty: ask something, e.g. search ask "who scored the winner"')
        if len(q) > MAX_QUESTION_CHARS:
            raise QueryError(
                f"the question is {len(q):,} characters long; the limit is {MAX_QUESTION_CHARS:,}: shorten it"
            )
        if not has_searchable_text(q):
            raise QueryError(
                "the question has no words to search for (only punctuation or symbols): use words"
            )
        return q

    def search(
        self,
        question: str,
        k: int = 10,
        mode: str = "hybrid",
        collapse: bool | None = None,
        *,
        filters: Any = None,
        sort: str = "relevance",
        offset: int = 0,
        half_life: float = DEFAULT_HALF_LIFE_DAYS,
    ) -> list[Hit]:
        """Ranked passages for a question (``mode``: hybrid, bm25 or dense).

        With ``collapse`` (default: the engine's setting, on), copies of one story
        count once: only the first copy's passages are returned, naming the others.
        ``filters`` (see :mod:`search.filters`) are applied inside both retrievers, so
        the result is the best ``k`` passages that pass them. ``sort`` is relevance,
        newest or recency (``half_life`` in days, see :mod:`search.ordering`); ``offset``
        skips that many hits (the next page).
        """
        opts = Query(filters, sort, offset, half_life)
        return self._search(question, k, mode, collapse, opts)[0]


def _env_confidence() -> float | None:
    raw = os.environ.get("SEARCH_MIN_CONFIDENCE", "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise QueryError(f"SEARCH_MIN_CONFIDENCE must be a number from 0 to 1, not {raw!r}")
    return value


def dense_text(title: str, text: str) -> str:
    """What the embedder encodes for a passage: its article's headline, then the passage
    (as BEIR's dense runs encode "title + text"), so a passage deep in an article still
    carries what the article is about. A passage that already opens with the headline
    is encoded as it is."""
    title = (title or "").strip()
    if not title or text.lstrip().startswith(title):
        return text
    return f"{title}\n{text}"


def _has_foreign_files(path: Path) -> bool:
    """A directory holding anything but our own lock, README or generations is not ours to fill."""
    return any(
        p.name not in (".lock", "README.md", "CURRENT.tmp") and not p.name.startswith("gen-")
        for p in path.iterdir()
    )
