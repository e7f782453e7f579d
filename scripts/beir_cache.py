"""Model outputs cached by text, so a BEIR rerun (or a rebuild after a format change) is quick.

The engine takes its embedder and its NER tagger as arguments; these wrappers give it the
same models' outputs, remembered by the SHA-1 of each text in a work folder:

* ``embed-<model>.keys.npy`` (``S20`` digests) and ``embed-<model>.vecs.npy`` (float32,
  as the model returned them): passages (headline + text) and sentences alike;
* ``ner-roles.jsonl``: one ``{"k": digest, "e": [[start, end, label, role], ...]}`` line per
  text (``search.enrich.tag``'s spans; an older ``ner.jsonl`` without roles is not read).

Nothing else changes: an index built through the caches is the index the models would
build (the vectors are the model's own float32 rows, the spans the tagger's).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

TAG_BATCH = 256  # texts per call of the tagger (spaCy batches inside it)


def digest(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder:
    """An embedder that encodes each distinct text once per work folder.

    ``bar(total, desc)`` makes a progress bar for an encode the engine gives no progress
    callback (the sentences, encoded after the passages).
    """

    def __init__(self, inner: Any, folder: Path, bar: Callable[[int, str], Any] | None = None) -> None:
        self.inner = inner
        self._bar = bar
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.backend = inner.backend
        name = self.model_id.replace("/", "_")
        self._keys_path = folder / f"embed-{name}.keys.npy"
        self._vecs_path = folder / f"embed-{name}.vecs.npy"
        self._rows: dict[bytes, int] = {}
        self._vecs = np.zeros((0, self.dim), np.float32)
        if self._keys_path.exists() and self._vecs_path.exists():
            keys = np.load(self._keys_path, allow_pickle=False)
            vecs = np.load(self._vecs_path, allow_pickle=False)
            if len(keys) == len(vecs) and vecs.ndim == 2 and vecs.shape[1] == self.dim:
                self._rows = {bytes(k): i for i, k in enumerate(keys)}
                self._vecs = vecs
        self.hits = 0
        self.misses = 0

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        keys = [digest(t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._rows))
        want = {k: i for i, k in enumerate(keys)}
        if todo:
            own = self._bar(len(todo), "index: encode sentences") if progress is None and self._bar else None
            tick = progress if own is None else own.update
            new = self.inner.encode([texts[want[k]] for k in todo], batch_size=batch_size, progress=tick)
            if own is not None:
                own.close()
            base = len(self._vecs)
            self._vecs = np.concatenate([self._vecs, np.asarray(new, np.float32)])
            self._rows.update((k, base + i) for i, k in enumerate(todo))
            self._save()
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        if progress and len(keys) > len(todo):
            progress(len(keys) - len(todo))
        return self._vecs[[self._rows[k] for k in keys]] if keys else np.zeros((0, self.dim), np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self.inner.encode_query(text)  # type: ignore[no-any-return]

    def info(self) -> dict[str, Any]:
        return dict(self.inner.info())

    def _save(self) -> None:
        keys = np.array(list(self._rows), dtype="S20")
        for path, arr in ((self._keys_path, keys), (self._vecs_path, self._vecs)):
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, arr, allow_pickle=False)
            os.replace(tmp, path)


def _span(e: Sequence[Any]) -> tuple[int, int, str, str]:
    """A tagged span as search.enrich.tag gives it: start, end, label and role."""
    a, b, label, role = e
    return int(a), int(b), str(label), str(role)


class CachedTagger:
    """The NER stage's tagger, each distinct text tagged once per work folder.

    Texts are tagged :data:`TAG_BATCH` at a time, so ``progress(n)`` can say how far it is.
    """

    def __init__(
        self,
        inner: Callable[[Sequence[str]], list[list[tuple[int, int, str, str]]]],
        folder: Path,
        progress: Callable[[int], Any] | None = None,
    ):
        self.inner = inner
        self.progress = progress
        self.path = folder / "ner-roles.jsonl"
        self._spans: dict[bytes, list[tuple[int, int, str, str]]] = {}
        if self.path.exists():
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:  # a run killed mid-line: that text is tagged again
                        continue
                    self._spans[bytes.fromhex(r["k"])] = [_span(e) for e in r["e"]]

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[int, int, str, str]]]:
        keys = [digest(t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._spans))
        if todo:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            for at in range(0, len(todo), TAG_BATCH):
                part = todo[at : at + TAG_BATCH]
                tagged = self.inner([texts[first[k]] for k in part])
                with open(self.path, "a", encoding="utf-8") as f:
                    for k, ents in zip(part, tagged):
                        self._spans[k] = [_span(e) for e in ents]
                        f.write(json.dumps({"k": k.hex(), "e": self._spans[k]}) + "\n")
                if self.progress:
                    self.progress(len(part))
        return [list(self._spans[k]) for k in keys]
