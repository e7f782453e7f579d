"""scripts/beir_cache.py: the NER cache keeps what search.enrich.tag gives (roles included)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from beir_cache import CachedTagger  # noqa: E402


def test_the_tagger_cache_keeps_roles_and_tags_each_text_once(tmp_path: Path) -> None:
    calls: list[str] = []

    def inner(texts: Sequence[str]) -> list[list[tuple[int, int, str, str]]]:
        calls.extend(texts)
        return [[(0, 6, "PERSON", "nsubj score")] if t.startswith("Gordon") else [] for t in texts]

    texts = ["Gordon scored.", "Rain fell.", "Gordon scored."]
    first = CachedTagger(inner, tmp_path)(texts)
    assert first == [[(0, 6, "PERSON", "nsubj score")], [], [(0, 6, "PERSON", "nsubj score")]]
    assert calls == ["Gordon scored.", "Rain fell."]
    again = CachedTagger(inner, tmp_path)(texts)  # read back from the work folder
    assert again == first
    assert calls == ["Gordon scored.", "Rain fell."]
