"""The Milvus backend: passages, BM25 and dense vectors in one Milvus collection.

Layout (``<prefix>`` is ``search`` unless ``$SEARCH_MILVUS_PREFIX`` says otherwise)::

    <prefix>_passages   one row per passage: id (primary key, "<doc_id>#<n>"), doc_id,
                        start, end, text, lex (the article's headline + the text as
                        the engine analyses them) → BM25 function → sparse,
                        dense (384 floats, IP on L2-normalised vectors = cosine), and
                        the article's title, source, url, published (for filters)
    <prefix>_docs       one document record per article (DocRecord as JSON), the
                        article itself (JSON, split into parts below Milvus's 64 KiB
                        VARCHAR limit) and the manifest (a JSON record, same way)
    <prefix>_doclex     one row per article: its headline and whole text (analysed,
                        cut at 64 KiB) → BM25 → sparse: the document-level signal
                        that :func:`search.fusion.with_documents` adds to passages

The lexical signals match the local backend's: the same terms (below), BM25 over the
headline (repeated :data:`search.fusion.TITLE_WEIGHT` times) + the passage, which is
BM25F with one length normalisation for both fields where the local backend has one per
field, plus the document-level score at the same weight.

The URI picks the deployment: a file path is Milvus Lite (``x.db``; a directory or a
path without ``.db`` means ``<path>/milvus.db``), ``http(s)://host:19530`` a server
(``$SEARCH_MILVUS_TOKEN`` for ``user:password`` or an API key).

Lexical search is Milvus's own BM25 over the engine's own terms: text is written
analysed by :func:`search.text.analyze` (Lucene's stop words, Porter stems, British
spellings folded) and Milvus only splits it at spaces (``{"tokenizer": "whitespace"}``);
questions arrive as the engine's analysed terms. Format 3 let Milvus's English analyzer
(Snowball stems, its own stop words) analyse both, so a word could match on one backend
and not the other: on 36 fresh seed questions Milvus's recall@5 fell 0.03 behind
local's, on the one question whose evidence sat at rank 5 against 6. With the same
terms the two rankings differ only by BM25F's per-field normalisation.

Writes are not atomic across rows: Milvus has no multi-row transactions. A write
upserts the new passages first, then trims the old ones, then the document records,
and bumps the manifest's generation last, so a concurrent reader sees each document
either in its old or its new version, or briefly both old and new passages of one
replaced document; never a document without passages. ``refresh`` re-reads the
generation and drops the caches when it moved.

The code is in layers, one module each: :mod:`.milvus_base` (constants, literals and
expressions, analysed text), :mod:`.milvus_store` (connecting, creating the collections,
the manifest), :mod:`.milvus_read` (rows and caches), :mod:`.milvus_search` (BM25, dense,
hybrid, facets) and :mod:`.milvus_write` (the write path); :class:`MilvusBackend` is the
sum of them, and the names other code imports from here are re-exported.
"""

from __future__ import annotations

# Re-exported: the names callers have imported from here since before the split.
from .milvus_base import ANALYZER as ANALYZER
from .milvus_base import ARTICLE_CACHE as ARTICLE_CACHE
from .milvus_base import DEFAULT_PREFIX as DEFAULT_PREFIX
from .milvus_base import FILTER_FIELDS as FILTER_FIELDS
from .milvus_base import FORMAT as FORMAT
from .milvus_base import IN_LIST as IN_LIST
from .milvus_base import MANIFEST_KEY as MANIFEST_KEY
from .milvus_base import MAX_ID_BYTES as MAX_ID_BYTES
from .milvus_base import MAX_VARCHAR as MAX_VARCHAR
from .milvus_base import PAGE as PAGE
from .milvus_base import PART_CHARS as PART_CHARS
from .milvus_base import PASSAGE_CACHE as PASSAGE_CACHE
from .milvus_base import PASSAGE_FIELDS as PASSAGE_FIELDS
from .milvus_base import RRF_K as RRF_K
from .milvus_base import WRITE_ROWS as WRITE_ROWS
from .milvus_base import doc_text as doc_text
from .milvus_base import filter_expr as filter_expr
from .milvus_base import lex_text as lex_text
from .milvus_base import lexical_text as lexical_text
from .milvus_base import lit as lit
from .milvus_base import lite_path as lite_path
from .milvus_base import now_iso as now_iso
from .milvus_search import MilvusSearch
from .milvus_store import log as log
from .milvus_write import MilvusWrites


class MilvusBackend(MilvusWrites, MilvusSearch):
    """Passages, BM25 and vectors in Milvus (Lite or a server), behind the backend seam."""

    def reader(self) -> MilvusBackend:
        """The view a query uses: Milvus has no snapshots, so this is the backend, refreshed."""
        self.refresh()
        return self
