"""Near-duplicate detection: MinHash over word shingles.

Syndicated copies and lightly edited versions of one story share most of their
five-word shingles; different reports of the same match share almost none (they
tell the same facts in other words). MinHash estimates the Jaccard similarity of two
articles' shingle sets from 128 minima, so a new article is compared with every
indexed one in a few microseconds each.

The threshold is measured on real data (BBC Sport, 737 articles, 271k pairs; run
``scripts/dedup_threshold.py``): every pair scoring 0.5 or more is one story
republished under another headline (or an update of it); the highest pair of
different stories (a follow-up: "Trial date is set for Balco case" / "... pushed
back") scores 0.22. Copies edited by us (a sentence rewritten, one added, one
dropped) score 0.77 at the median and 0.45 at the 1st percentile. 0.4 sits in the gap.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Sequence
from itertools import chain

import numpy as np

NUM_PERM = 128
SHINGLE = 5
THRESHOLD = 0.4
_BANDS = 64
#: Bits of each minimum compared and stored (:func:`narrow`).
STORED_BITS = 16
STORED_MASK = (1 << STORED_BITS) - 1

# Universal hashing (a*x + b) mod p with the Mersenne prime p = 2^31 - 1: x, a, b < p,
# so a*x + b < 2^62 never overflows, and the modulus wraps often enough to mix.
_P = np.uint64((1 << 31) - 1)
_rng = np.random.default_rng(0x5EED)  # fixed: signatures must agree across processes
_A = _rng.integers(1, (1 << 31) - 1, NUM_PERM, dtype=np.uint64)
_B = _rng.integers(0, (1 << 31) - 1, NUM_PERM, dtype=np.uint64)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: Shingles per numpy step of :func:`signatures`: two [NUM_PERM, _STEP] uint64 buffers,
#: 8 MiB, whatever the batch.
_STEP = 4096


def _gram_hashes(text: str, n: int = SHINGLE) -> list[int]:
    """crc32 of each word n-gram of the text (lower-cased), in order, repeats kept."""
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return [zlib.crc32(" ".join(words).encode("utf-8"))] if words else []
    # zip of the shifted word lists: every n-gram joined and hashed in C (#17).
    grams = map(" ".join, zip(*(words[i:] for i in range(n))))
    return list(map(zlib.crc32, map(str.encode, grams)))


def shingles(text: str, n: int = SHINGLE) -> np.ndarray:
    """Stable 32-bit hashes of the text's word n-grams (lower-cased)."""
    return np.unique(np.array(_gram_hashes(text, n), dtype=np.uint64))


def signature(text: str) -> np.ndarray:
    """MinHash signature (``uint32[NUM_PERM]``) of the text's shingle set."""
    return signatures([text])[0]


def signatures(texts: Sequence[str]) -> np.ndarray:
    """MinHash signatures (``uint32[len(texts), NUM_PERM]``): :func:`signature` of each,
    all computed together in a few numpy steps (#17: one article at a time, they took 2 s
    of a 20k build's CPU). A text without words has the all-``0xFFFFFFFF`` signature."""
    hashes = [_gram_hashes(t) for t in texts]
    counts = np.fromiter(map(len, hashes), dtype=np.int64, count=len(hashes))
    x = np.fromiter(chain.from_iterable(hashes), dtype=np.uint64, count=int(counts.sum()))
    # A minimum over a shingle set equals the minimum over its shingles with repeats, so
    # the per-article np.unique of :func:`shingles` is not needed here.
    return _min_hashes(x % _P, counts)


def _min_hashes(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per article (``counts[i]`` consecutive values of ``x``, each < p), the minimum of
    ``(a*x + b) mod p`` for each permutation's ``(a, b)``.

    Exactly ``%`` without a 64-bit division per value: with p = 2^31 - 1, 2^31 = 1 (mod p),
    so y = hi * 2^31 + lo gives y = hi + lo (mod p). As a, b, x < p, y <= p*(p-1), so
    hi <= 2^31 - 3 and r = hi + lo < 2p: r mod p is r, or r - p when r >= p, which is
    min(r, r - p) in unsigned arithmetic (r - p wraps to above 2^63 when r < p).
    Shingles go ``_STEP`` at a time, so memory stays flat whatever the batch.
    """
    out = np.full((len(counts), NUM_PERM), np.iinfo(np.uint32).max, dtype=np.uint32)
    owner = np.repeat(np.arange(len(counts)), counts)  # the article of each shingle
    step = max(1, min(_STEP, len(x)))
    y = np.empty((NUM_PERM, step), dtype=np.uint64)
    t = np.empty_like(y)
    a, b = _A[:, None], _B[:, None]
    for lo in range(0, len(x), step):
        m = min(len(x) - lo, step)
        yy, tt = y[:, :m], t[:, :m]
        np.multiply(a, x[None, lo : lo + m], out=yy)
        yy += b
        np.bitwise_and(yy, _P, out=tt)
        yy >>= np.uint64(31)
        yy += tt
        np.subtract(yy, _P, out=tt)
        np.minimum(yy, tt, out=yy)
        # Each article's run of columns in this step, and its minima over them.
        own = owner[lo : lo + m]
        starts = np.flatnonzero(np.concatenate(([True], own[1:] != own[:-1])))
        mins = np.minimum.reduceat(yy, starts, axis=1).T.astype(np.uint32)
        arts = own[starts]  # distinct: an article is one run
        out[arts] = np.minimum(out[arts], mins)
    return out


def narrow(sigs: np.ndarray) -> np.ndarray:
    """Signatures as compared and as a local index stores them: each minimum's low
    ``STORED_BITS`` bits (uint16), at half the bytes (#17 item 4). Two different minima
    agree there by chance once in 65,536, so a similarity rises by (1 - J) / 65,536 on
    average (a pair gains one of its 128 minima about once in 500); on BBC Sport's 271k
    pairs the threshold decides the same (``scripts/dedup_threshold.py``). An older
    index's full minima are narrowed when compared."""
    return (np.asarray(sigs) & np.uint32(STORED_MASK)).astype(np.uint16)


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Estimated Jaccard similarity of two signatures."""
    return float(np.mean(a == b))


def encode(sig: np.ndarray) -> str:
    return base64.b64encode(np.asarray(sig, dtype="<u4").tobytes()).decode("ascii")


def decode(s: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype="<u4").astype(np.uint32)


class DuplicateFinder:
    """Finds, for a new article, the indexed story it copies (if any).

    Locality-sensitive hashing: the 128 minima are cut into 64 bands of 2; two stories
    become candidates when any band matches (a pair at the 0.4 threshold does with
    probability 0.99999, unrelated stories at Jaccard 0.01 with 0.006), and candidates
    are checked on all 128 minima. A lookup costs the same at 1,000 or 1,000,000
    stories, so a bulk index stays linear.
    """

    def __init__(self, threshold: float = THRESHOLD) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("the near-duplicate threshold must be in (0, 1]")
        self.threshold = threshold
        self._ids: list[str] = []
        self._groups: list[str] = []
        self._matrix = np.zeros((0, NUM_PERM), dtype=np.uint32)
        self._buckets: list[dict[int, list[int]]] = [{} for _ in range(_BANDS)]

    @staticmethod
    def _keys(sig: np.ndarray) -> list[int]:
        pairs = np.asarray(sig, dtype=np.uint64).reshape(_BANDS, NUM_PERM // _BANDS)
        return ((pairs[:, 0] << np.uint64(32)) | pairs[:, 1]).tolist()

    def add(self, doc_id: str, sig: np.ndarray, group: str | None = None) -> None:
        n = len(self._ids)
        if n == len(self._matrix):  # grow by doubling: amortised O(1) per add
            bigger = np.zeros((max(64, 2 * n), NUM_PERM), dtype=np.uint32)
            bigger[:n] = self._matrix
            self._matrix = bigger
        self._matrix[n] = sig
        self._ids.append(doc_id)
        self._groups.append(group or doc_id)
        for band, key in zip(self._buckets, self._keys(sig)):
            band.setdefault(key, []).append(n)

    def find(self, doc_id: str, sig: np.ndarray) -> tuple[str, float] | None:
        """``(group id, similarity)`` of the most similar other story above the threshold."""
        seen: set[int] = set()
        for band, key in zip(self._buckets, self._keys(sig)):
            seen.update(band.get(key, ()))
        if not seen:
            return None
        cand = np.fromiter(seen, dtype=np.int64, count=len(seen))
        sims = (self._matrix[cand] == sig[None, :]).mean(axis=1)
        for j in np.argsort(-sims, kind="stable"):
            i = int(cand[j])
            if sims[j] < self.threshold:
                return None
            if self._ids[i] != doc_id:
                return self._groups[i], float(sims[j])
        return None
