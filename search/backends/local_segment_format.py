"""The numbers a segment's files are laid out by, shared by the side that reads them
(:mod:`.local_store`, which describes the files) and the side that writes and merges them
(:mod:`.local_segment_write`): the columns of ``.store.npy``, the fields an article's
record keeps, and the suffixes of the files one segment is made of. Kept apart so that
neither side imports the other to agree on them.
"""

from __future__ import annotations

from ..vectors import ANN_SUFFIX

# Columns of ``.store.npy``.
TEXT, RECORD, ENRICH, ROW, SENT = range(5)
#: The fields of an article kept in its record (the rest are its text and enrichment).
RECORD_FIELDS = (
    "id",
    "title",
    "source",
    "url",
    "published",
    "published_ts",
    "path",
    "content_hash",
    "metadata",
)

SEGMENT_SUFFIXES = (
    ".npy",
    ".store.bin",
    ".store.npy",
    ".spans.npy",
    ".sents.npy",
    ".sentoff.npy",
    ".minhash.npy",
    ".sentvec.npy",
    ".ents.npy",
    ".entoff.npy",
    ".ents.json",
    ANN_SUFFIX,
)
