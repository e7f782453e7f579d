"""Model work done once per distinct text of a write (syndicated copies, boilerplate).

:func:`distinct` finds the copies among a batch's texts, so the tagger runs once per
distinct article text; :class:`VectorMemo` gives ``embedder.encode(texts)`` row for row
with each distinct text encoded once per batch, and keeps the vectors of the last
:data:`MEMO_TEXTS` texts so that repeats across the batches of a write are not encoded
again. A memo belongs to one write (one embedder): :func:`search.indexing.run` makes a
new one each time, so nothing is shared between writes or engines.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .indexing import Clock

#: Texts whose vectors a write keeps for its next batches: at 384 float32 each, ~31 MB.
MEMO_TEXTS = 20_000


def distinct(items: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """``(firsts, where)``: the position in ``items`` of each distinct item's first copy,
    and for each item the index in ``firsts`` of its own."""
    seen: dict[Hashable, int] = {}
    firsts: list[int] = []
    where: list[int] = []
    for i, x in enumerate(items):
        j = seen.setdefault(x, len(firsts))
        if j == len(firsts):
            firsts.append(i)
        where.append(j)
    return firsts, where


def text_key(text: str) -> bytes:
    """A text's key in the memo: 16 bytes of blake2b, so the memo holds no text (two of
    four billion texts share a key with a chance of about 2^-65)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class VectorMemo:
    """The vectors of one write's texts by :func:`text_key`, least recently used dropped past ``size``."""

    def __init__(self, size: int = MEMO_TEXTS) -> None:
        self.size = size
        self._kept: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def encode(
        self, embedder: Any, texts: Sequence[str], clock: Clock, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """``embedder.encode(texts)``, the same rows bit for bit, the model run (and timed as
        ``encode``) only on the texts that are neither earlier in ``texts`` nor kept."""
        if not texts:
            return embedder.encode([])  # type: ignore[no-any-return]
        keys = [text_key(t) for t in texts]
        firsts, where = distinct(keys)
        fresh = [i for i in firsts if keys[i] not in self._kept]
        new: dict[bytes, np.ndarray] = {}
        if fresh:
            with clock.busy("encode"):
                vectors = embedder.encode([texts[i] for i in fresh], progress=progress)
            new = {keys[i]: v for i, v in zip(fresh, vectors, strict=True)}
        if progress is not None and len(texts) > len(fresh):
            progress(len(texts) - len(fresh))  # the copies are done too
        rows = []
        for i in firsts:
            k = keys[i]
            if k in new:
                v = self._kept[k] = new[k].copy()  # a copy: a view would hold its whole batch
            else:
                v = self._kept[k]
                self._kept.move_to_end(k)
            rows.append(v)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return np.stack(rows)[where]
