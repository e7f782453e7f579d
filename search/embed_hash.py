"""The fake backend: :class:`HashEmbedder`, deterministic hashed features for unit tests.

Words, word pairs and character trigrams are hashed (blake2b, so the same text gets the
same vector in any process) into signed buckets of a vector of any width; texts that
share words share buckets, which is enough for tests of ranking and fusion. It needs no
model and imports nothing beyond numpy.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from search.embed_base import DIM, Progress, _check_batch_size, _check_texts, _normalise

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """A deterministic stand-in for unit tests: hashed word, word-pair and character n-grams.

    Texts that share words share buckets, so similar texts get similar vectors; the same text
    always gets the same vector, in any process (blake2b, not Python's salted ``hash``).
    """

    model_id = "hash"
    backend = "hash"

    def __init__(self, dim: int = DIM) -> None:
        if dim < 8:
            raise ValueError(f"dim must be >= 8, got {dim}")
        self.dim = dim

    def _bucket(self, feature: str) -> tuple[int, float]:
        d = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        n = int.from_bytes(d, "little")
        return n % self.dim, (1.0 if (n >> 63) & 1 else -1.0)

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float64)
        words = _WORD.findall(text.lower())
        feats: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        feats += [(f"b:{a} {b}", 0.5) for a, b in zip(words, words[1:], strict=False)]
        for w in words:
            padded = f"<{w}>"
            feats += [(f"c:{padded[i : i + 3]}", 0.25) for i in range(max(1, len(padded) - 2))]
        if not feats:
            feats = [("empty", 1.0)]
        for feat, weight in feats:
            i, sign = self._bucket(feat)
            v[i] += sign * weight
        return _normalise(v)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        _check_texts(texts)
        _check_batch_size(batch_size)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for b in range(0, len(texts), batch_size):
            chunk = texts[b : b + batch_size]
            for j, t in enumerate(chunk):
                out[b + j] = self._vector(t)
            if progress is not None:
                progress(len(chunk))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise ValueError(f"the query is {type(text).__name__}, expected str")
        return self._vector(text)

    def info(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "backend": self.backend, "dim": self.dim}
