"""The numbers a segment's files are laid out by, shared by the side that reads them
(:mod:`.local_store`, which describes the files) and the side that writes and merges them
(:mod:`.local_segment_write`): the columns of ``.store.npy``, how a part of ``.store.bin``
is compressed, the fields an article's record keeps, and the suffixes of the files one
segment is made of. Kept apart so that neither side imports the other to agree on them.
"""

from __future__ import annotations

import zlib

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

#: The first byte of a compressed part of ``.store.bin``: never the first byte of UTF-8
#: text or of a JSON record, so an uncompressed part (an older index, or one too short to
#: gain) is told apart by its own first byte, and merges copy parts as bytes either way.
PACKED = 0xFF
#: zlib's level: 1 compresses an article's enrichment about as well as 6 (0.47 of its
#: bytes against 0.45) in less write time; inflating costs the same.
PACK_LEVEL = 1


def pack(raw: bytes) -> bytes:
    """One part of an article as stored: zlib-compressed behind ``PACKED`` when that is
    shorter, else as it is. Writes compress the enrichment (entities and sentence spans);
    a reader unpacks any part."""
    packed = zlib.compress(raw, PACK_LEVEL) if len(raw) > 32 else raw
    return bytes((PACKED,)) + packed if len(packed) + 1 < len(raw) else raw


def unpack(stored: bytes) -> bytes:
    """A part as :func:`pack` stored it, back to its bytes."""
    return zlib.decompress(stored[1:]) if stored[:1] == b"\xff" else stored
