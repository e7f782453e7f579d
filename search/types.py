"""Plain data classes for what travels between the stages and out of the faces.

Each has ``to_dict()``; that dict is what ``--json``, HTTP and MCP return.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


def content_hash(title: str, text: str) -> str:
    """Stable hash of an article's content (title and normalised text)."""
    h = hashlib.sha256()
    # surrogatepass: an article with a lone surrogate still hashes, so the engine can
    # refuse it with a message (ingest.check_article) instead of failing here.
    h.update(title.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


@dataclass
class Article:
    """One news article, its text normalised (NFC, LF line ends, foreign lines dropped)."""

    id: str
    title: str
    text: str
    source: str = ""
    url: str | None = None
    published: str | None = None
    path: str | None = None  # where it was read from, for `search reindex`
    content_hash: str = ""
    # Every extra field of the source record (text, number, bool, list of strings), kept
    # for display and filters (search.filters); e.g. BBC Sport's "category".
    metadata: dict[str, Any] = field(default_factory=dict)
    # ``published`` parsed to a UTC timestamp (search.dates), None when it does not parse.
    published_ts: float | None = None
    # Filled at index time (search.enrich), stored with the article, read by the answer stage:
    # named entities as (start, end, label) and sentence spans (start, end), headings left out.
    entities: list[tuple[int, int, str]] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)
    # One per entity, in the same order: what it does in its sentence (search.enrich.role,
    # "nsubj score"); empty for an index tagged before roles were stored, or by a tagger
    # that gives none.
    roles: list[str] = field(default_factory=list)
    # [len(sentences), dim], L2-normalised: each sentence's embedding, for the answer stage to
    # compare with the question's (kept by the backends beside the text, not in to_dict):
    # float32 from the local store's int8 codes (search.vector_codes), float16 from Milvus or
    # an older local index.
    sentence_vectors: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("an article needs a non-empty string id")
        if not isinstance(self.text, str):
            raise ValueError(f"article {self.id!r}: text must be a string")
        # Checked here, not deep in a write: title=None failed hashing, source=5 in the
        # store's string interning, and url=5 was stored as a number.
        if self.source is None:
            self.source = ""
        for name in ("title", "source"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"article {self.id!r}: {name} must be a string (empty if there is none)")
        for name in ("url", "published"):
            if not isinstance(getattr(self, name), (str, type(None))):
                raise ValueError(f"article {self.id!r}: {name} must be a string or None")
        if not self.content_hash:
            self.content_hash = content_hash(self.title, self.text)
        if not isinstance(self.metadata, dict):
            raise ValueError(f"article {self.id!r}: metadata must be a mapping of field names to values")
        if self.published_ts is None and self.published:
            from .dates import timestamp

            self.published_ts = timestamp(self.published)

    @property
    def published_utc(self) -> str | None:
        """The parsed publication time, ISO 8601 in UTC (``2005-03-01T18:30:00Z``)."""
        from .dates import iso_utc

        return iso_utc(self.published_ts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "text": self.text,
            "source": self.source,
            "url": self.url,
            "published": self.published,
            "published_utc": self.published_utc,
            "metadata": dict(self.metadata),
            "path": self.path,
            "content_hash": self.content_hash,
            "entities": [list(e) for e in self.entities],
            "sentences": [list(s) for s in self.sentences],
            "roles": list(self.roles),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Article:
        return cls(
            id=d["id"],
            title=d.get("title") or "",
            text=d["text"],
            source=d.get("source") or "",
            url=d.get("url"),
            published=d.get("published"),
            path=d.get("path"),
            content_hash=d.get("content_hash") or "",
            metadata=dict(d.get("metadata") or {}),
            published_ts=d.get("published_ts"),
            entities=[(int(a), int(b), str(lab)) for a, b, lab in d.get("entities") or []],
            sentences=[(int(a), int(b)) for a, b in d.get("sentences") or []],
            roles=[str(r) for r in d.get("roles") or []],
        )


@dataclass(frozen=True)
class Passage:
    """A span of an article: ``article.text[start:end] == text`` always holds."""

    id: str  # f"{doc_id}#{n}"
    doc_id: str
    start: int
    end: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "doc_id": self.doc_id, "start": self.start, "end": self.end, "text": self.text}


@dataclass
class Hit:
    """A retrieved passage with its fused score and the rank each retriever gave it."""

    passage: Passage
    score: float
    rank: int = 0
    title: str = ""
    source: str = ""
    url: str | None = None
    published: str | None = None
    published_utc: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    bm25_rank: int | None = None
    dense_rank: int | None = None
    bm25_score: float | None = None
    dense_score: float | None = None
    terms: list[str] = field(default_factory=list)  # the query's analysed terms, for highlighting
    duplicates: list[str] = field(default_factory=list)  # ids of collapsed near-duplicate documents

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rank": self.rank,
            "passage_id": self.passage.id,
            "doc_id": self.passage.doc_id,
            "title": self.title,
            "source": self.source,
            "start": self.passage.start,
            "end": self.passage.end,
            "text": self.passage.text,
            "score": float(self.score),
            "bm25_rank": self.bm25_rank,
            "dense_rank": self.dense_rank,
        }
        if self.url:
            d["url"] = self.url
        if self.published:
            d["published"] = self.published
        if self.published_utc:
            d["published_utc"] = self.published_utc
        if self.metadata:
            d["metadata"] = dict(self.metadata)
        if self.duplicates:
            d["duplicates"] = list(self.duplicates)
        return d


@dataclass(frozen=True)
class Sentence:
    """A quoted sentence with the exact span it came from."""

    text: str
    doc_id: str
    start: int
    end: int
    passage_rank: int  # the citation number: rank of the passage that holds it

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "passage_rank": self.passage_rank,
        }


@dataclass
class Conflict:
    """A version of the asked fact that other articles contradict."""

    text: str
    support: int
    sentences: list[Sentence] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "support": self.support,
            "sentences": [s.to_dict() for s in self.sentences],
        }


@dataclass
class AnswerBlock:
    """The short answer (or None), the sentences that say it, and how many articles back it."""

    text: str | None = None
    sentences: list[Sentence] = field(default_factory=list)
    support: int = 0  # distinct articles (copies counted once) whose sentence states the answer
    conflicts: list[Conflict] = field(default_factory=list)
    articles: int = 0  # the one denominator: articles among the candidates that address the question
    confidence: float = 0.0  # 0-1; a short answer is given only above the calibrated threshold
    outlets: list[str] = field(default_factory=list)  # who states it (source, else title)
    notice: str | None = None  # e.g. the index predates stored entities: how to fix it
    needed: float = 0.0  # the confidence a short answer needs (the fitted threshold, or the user's)
    # With no short answer but conflicts: the version they contradict (a value two outlets
    # state), with its support and citations, so that every side of a disagreement is shown.
    reference: Conflict | None = None
    # Why a value that cleared the threshold is not the short answer ("the question asks for
    # two and no sentence names two together"), so no face says its confidence fell short.
    withheld: str | None = None

    @property
    def summary(self) -> str:
        """The support in words, the same on every face: "4 of 4 articles agree (AFP, BBC Sport)",
        "2 articles state it, of 11 on the question (…)", "One source (…)"."""
        if not self.text:
            if not self.sentences:
                return "No short answer: no passage states it."
            if self.withheld:
                return f"No short answer: {self.withheld}; the best supporting sentence is quoted."
            if self.confidence > 0 and self.needed > 0:
                return (
                    f"No short answer: confidence {self.confidence:.2f} is below the "
                    f"{self.needed:.2f} a short answer needs; the best supporting sentence is quoted."
                )
            return "No short answer: the articles do not state one clearly; the best supporting sentence is quoted."
        who = (
            f" ({', '.join(self.outlets[:4])}{', …' if len(self.outlets) > 4 else ''})"
            if self.outlets
            else ""
        )
        if self.support <= 1:
            return f"One source{who}" + (
                f", of {self.articles} articles on the question" if self.articles > 1 else ""
            )
        if self.support >= self.articles:
            return f"{self.support} of {self.support} articles agree{who}"
        # Not "2 of 11 agree": the other nine mostly state nothing on it, not something else
        # (a conflict is listed as such), and a reader took them for dissent.
        return f"{self.support} articles state it, of {self.articles} on the question{who}"

    @property
    def versions(self) -> list[Conflict]:
        """Every version of a disagreement that is not the short answer: the reference, if
        any, then the conflicts."""
        return ([self.reference] if self.reference is not None else []) + self.conflicts

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "summary": self.summary,
            "sentences": [s.to_dict() for s in self.sentences],
            "support": self.support,
            "articles": self.articles,
            "outlets": self.outlets,
            "confidence": self.confidence,
            "needed": self.needed,
            "conflicts": [c.to_dict() for c in self.conflicts],
            "reference": self.reference.to_dict() if self.reference is not None else None,
            "notice": self.notice,
            "withheld": self.withheld,
        }


@dataclass
class Answer:
    """What `ask` returns: the question, the ranked hits and (when computed) the answer block."""

    question: str
    mode: str
    took_ms: float
    hits: list[Hit]
    answer: AnswerBlock | None = None
    facets: Any = None  # search.facets.Facets, when asked for
    filters: dict[str, Any] | None = None  # the filters applied, as checked: {field: [[op, value]]}
    sort: str = "relevance"
    offset: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "question": self.question,
            "mode": self.mode,
            "took_ms": round(float(self.took_ms), 3),
            "passages": [h.to_dict() for h in self.hits],
        }
        if self.answer is not None:
            d["answer"] = self.answer.to_dict()
        if self.filters:
            d["filters"] = self.filters
        if self.sort != "relevance":
            d["sort"] = self.sort
        if self.offset:
            d["offset"] = self.offset
        if self.facets is not None:
            d["facets"] = self.facets.to_dict()
        return d

    def _cited(self) -> dict[int, list[Sentence]]:
        """Each passage number the answer lead cites, with the sentences it is cited for.

        In the order that matters when the budget is short: the answer's, then the conflicts'.
        """
        a = self.answer
        out: dict[int, list[Sentence]] = {}
        if a is None or not a.sentences:
            return out
        quoted = a.sentences if a.text else a.sentences[:1]
        for group in [quoted] + [c.sentences for c in a.versions]:
            for s in sorted(group, key=lambda s: s.passage_rank):
                if s not in out.setdefault(s.passage_rank, []):
                    out[s.passage_rank].append(s)
        return out

    def _answer_context(self, present: set[int] | None = None) -> str:
        """The answer, its support and any conflicts, each cited [n], for the head of a prompt.

        With ``present``, only those numbers are cited: a prompt never cites a passage it leaves out.
        """
        a = self.answer
        if a is None or not a.sentences:
            return ""

        def cites(ss: list[Sentence]) -> str:
            ranks = sorted({s.passage_rank for s in ss if present is None or s.passage_rank in present})
            return "".join(f" [{n}]" if i == 0 else f"[{n}]" for i, n in enumerate(ranks))

        if a.text:
            lines = [f"Answer: {a.text}{cites(a.sentences)} — {a.summary}"]
        else:
            lines = [
                f"No short answer; the best supporting sentence: “{a.sentences[0].text}”{cites(a.sentences[:1])}"
            ]
        for c in a.versions:
            n = "1 article" if c.support == 1 else f"{c.support} articles"
            what = "One version" if c is a.reference else "Conflicting version"
            lines.append(f"{what}: {c.text}{cites(c.sentences)} — {n}")
        return "\n".join(lines) + "\n"

    def to_context(self, max_chars: int = 4000) -> str:
        """Prompt-ready text: numbered passages, each with title, source and span, within a budget.

        The answer lead comes first. The passages it (and any conflict) cites are chosen
        first, then the rest in rank order while they fit; all are shown in rank order, each
        with its own rank as its number, so every
        [n] in the lead is a passage below. When a cited passage does not fit whole, it keeps
        the sentence it is cited for; when not even that fits, the lead does not cite it.
        """
        if max_chars <= 0:
            raise ValueError("max_chars must be positive")
        by_rank = {h.rank: h for h in self.hits}
        cited = {n: ss for n, ss in self._cited().items() if n in by_rank}
        lead = self._answer_context()  # the longest the lead can be: budget against it
        used = len(lead) + 1 if lead else 0

        # Cited passages first: each its cited sentences, then whole where the budget allows.
        blocks: dict[int, str] = {}
        for n, ss in cited.items():
            block = _quoted_block(by_rank[n], ss, max_chars - used)
            if block is not None:
                blocks[n] = block
                used += len(block) + 1
        for n in blocks:
            whole = _passage_block(by_rank[n])
            if used - len(blocks[n]) + len(whole) <= max_chars:
                used += len(whole) - len(blocks[n])
                blocks[n] = whole

        # Then the rest, in rank order, while they fit.
        for h in self.hits:
            if h.rank in blocks or h.rank in cited:
                continue
            block = _passage_block(h)
            if used + len(block) > max_chars:
                head = _passage_head(h)
                room = max_chars - used - len(head) - 2
                if room > 80 and not blocks:  # something rather than nothing
                    blocks[h.rank] = head + h.passage.text[:room].rstrip() + "…\n"
                break
            blocks[h.rank] = block
            used += len(block) + 1

        lead = self._answer_context(set(blocks))
        # Chosen by need, shown by rank: the numbers read in order, as a reader expects.
        return "\n".join(([lead] if lead else []) + [blocks[n] for n in sorted(blocks)])


def _passage_head(h: Hit) -> str:
    p = h.passage
    src = f", {h.source}" if h.source else ""
    return f"[{h.rank}] {h.title or p.doc_id}{src} ({p.doc_id}:{p.start}-{p.end})\n"


def _passage_block(h: Hit) -> str:
    return _passage_head(h) + h.passage.text.strip() + "\n"


def _quoted_block(h: Hit, sentences: list[Sentence], room: int) -> str | None:
    """``h``'s header and just the sentences it is cited for, "…" where text is left out;
    the quote cut at a word to fit ``room``, or None when too little of it would."""
    text = h.passage.text.strip()
    lead_gap = len(h.passage.text) - len(h.passage.text.lstrip())
    quotes: list[str] = []
    for s in sorted(sentences, key=lambda s: s.start):
        at = s.start - h.passage.start - lead_gap
        inside = 0 <= at and text[at : at + len(s.text)] == s.text
        before = "" if inside and at == 0 else "…"
        quotes.append(before + s.text.strip())
        end_inside = inside and at + len(s.text) >= len(text.rstrip())
        if not end_inside:
            quotes.append("…")
    body = " ".join(quotes).replace("… …", "…")
    head = _passage_head(h)
    if len(head) + len(body) + 1 <= room:
        return head + body + "\n"
    keep = room - len(head) - 2  # the "…" and the line end
    if keep < 40:
        return None
    cut = body.rfind(" ", 0, keep)
    return head + body[: cut if cut > keep // 2 else keep].rstrip() + "…\n"
