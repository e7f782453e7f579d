"""The numbers a segment's files are laid out by, shared by the side that reads them
(:mod:`.local_store`, which describes the files) and the side that writes and merges them
(:mod:`.local_segment_write`): the columns of ``.store.npy``, how a part of ``.store.bin``
is compressed, the fields an article's record keeps, and the suffixes of the files one
segment is made of. Kept apart so that neither side imports the other to agree on them.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

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
    ".sentmap.npy",
    ".ents.npy",
    ".entoff.npy",
    ".ents.json",
    ANN_SUFFIX,
)

#: The first byte of a compressed part of ``.store.bin``: never the first byte of UTF-8
#: text or of a JSON record, so an uncompressed part (an older index, or one too short to
#: gain) is told apart by its own first byte, and merges copy parts as bytes either way.
PACKED = 0xFF
#: The first byte of a part compressed with :data:`RECORD_DICT` as zlib's preset
#: dictionary (0xFE is no first byte of UTF-8 or JSON either).
PACKED_RECORD = 0xFE
#: zlib's level for the enrichment: 1 compresses it about as well as 6 (0.47 of its bytes
#: against 0.45) in less write time; inflating costs the same.
PACK_LEVEL = 1
#: zlib's level for the text: 6 (0.57 of an article's bytes at 100k passages, 1: 0.58).
TEXT_LEVEL = 6
#: An article record's keys and usual values, zlib's preset dictionary for records: a
#: record is ~300 bytes, too short for zlib to learn its own keys (0.73 of its bytes
#: without, 0.53 with, at 100k passages). It is our schema, not a corpus's words. Never
#: change it: records already written are inflated with it (a new one takes a new marker).
RECORD_DICT = (
    b'"metadata":null,"added":"2026-01-01T00:00:00+00:00","duplicate_of":null}'
    b'{"id":"","title":"","source":"","url":null,"published":"","published_ts":.0,'
    b'"path":null,"content_hash":"","metadata":{"category":"'
)


def pack(raw: bytes, level: int = PACK_LEVEL) -> bytes:
    """One part of an article as stored: zlib-compressed behind ``PACKED`` when that is
    shorter, else as it is. Writes compress the text and the enrichment (entities and
    sentence spans); a reader unpacks any part."""
    packed = zlib.compress(raw, level) if len(raw) > 32 else raw
    return bytes((PACKED,)) + packed if len(packed) + 1 < len(raw) else raw


def pack_record(raw: bytes) -> bytes:
    """An article's record as stored: compressed with :data:`RECORD_DICT` behind
    ``PACKED_RECORD`` when that is shorter, else as it is."""
    c = zlib.compressobj(TEXT_LEVEL, zdict=RECORD_DICT)
    packed = c.compress(raw) + c.flush()
    return bytes((PACKED_RECORD,)) + packed if len(packed) + 1 < len(raw) else raw


def unpack(stored: bytes) -> bytes:
    """A part as :func:`pack` or :func:`pack_record` stored it, back to its bytes."""
    head = stored[:1]
    if head == b"\xff":
        return zlib.decompress(stored[1:])
    if head == b"\xfe":
        d = zlib.decompressobj(zdict=RECORD_DICT)
        return d.decompress(stored[1:]) + d.flush()
    return stored


def enrichment(
    entities: Sequence[Sequence[Any]],
    sentences: Sequence[Sequence[int]],
    derived: Sequence[tuple[int, int]],
    roles: Sequence[str] = (),
) -> dict[str, Any]:
    """An article's enrichment as written: entities as flat integers, each one's start
    from the one before, its length and its label's place in ``l`` (0.50 of the JSON
    lists' bytes once compressed, at 100k passages); each entity's role as its place in
    ``rl``, when it has roles; sentence spans only when they are not ``derived``, the
    union of its passages' sentences (``.sents.npy``), as they always are when the
    chunker cut the passages from those sentences."""
    labels: dict[str, int] = {}
    flat: list[int] = []
    at = 0
    for start, end, label in entities:
        flat += (int(start) - at, int(end) - int(start), labels.setdefault(str(label), len(labels)))
        at = int(start)
    out: dict[str, Any] = {"l": list(labels), "e": flat}
    if roles:
        kinds: dict[str, int] = {}
        out["r"] = [kinds.setdefault(str(r), len(kinds)) for r in roles]
        out["rl"] = list(kinds)
    spans = [(int(a), int(b)) for a, b in sentences]
    if spans != list(derived):
        out["s"] = [list(x) for x in spans]
    return out


def read_enrichment(
    enr: dict[str, Any], derive: Callable[[], list[tuple[int, int]]]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[str]]:
    """``(entities, sentences, roles)`` of an enrichment as :func:`enrichment` wrote it, or
    as an older index did (``{"entities": [[start, end, label]], "sentences": [[start,
    end]]}``, no roles); ``derive()`` gives the sentences when they were not written."""
    if "e" not in enr:  # an older index: the lists as they are
        return list(map(tuple, enr.get("entities") or ())), list(map(tuple, enr.get("sentences") or ())), []
    flat, labels = enr["e"], enr["l"]
    ents = [(s, s + n, labels[k]) for s, n, k in zip(accumulate(flat[0::3]), flat[1::3], flat[2::3])]
    sents = enr.get("s")
    kinds = enr.get("rl") or []
    roles = [kinds[k] for k in enr.get("r") or ()]
    return ents, (list(map(tuple, sents)) if sents is not None else list(derive())), roles


def passage_sentences(spans: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """The distinct sentence spans of an article's passages, in order: what
    :func:`read_enrichment` derives an article's sentences from."""
    return sorted({(int(a), int(b)) for a, b in spans})
