"""Sentence segmentation and sentence-aware chunking into passages.

Everything here works on character spans into the article's text, never on copies, so
a passage or a quoted sentence is always an exact slice: ``text[p.start:p.end] == p.text``.

The segmenter is rule based (no model is available offline, and rules are fast and
predictable). It handles what news copy throws at it:

* abbreviations and initials ("Mr. Smith", "St. Louis", "J. Smith", "U.S."), decimals,
  quotes that close after the full stop ('... blood."', '...,” he said.'), ellipses;
* headings on their own line ("The Comeback"), and headings glued into a one-line page
  by a scraper ("... six decades. Main Developments Argentina defeated England ..."),
  which become their own unit so they neither pollute a sentence nor end a passage;
* hard-wrapped paragraphs (lines joined) versus one-paragraph-per-line text (lines split).

:func:`segment` returns the units with a heading flag; :func:`sentence_spans` and
:func:`heading_spans` are views of it; :func:`chunk` packs units into passages.
The rules live beside it: where sentences end in :mod:`search.chunk_sentences`, what
reads as a heading in :mod:`search.chunk_headings` (whose :func:`known_names` and
:func:`split_title_run` are re-exported here).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from search.chunk_headings import _cap_counts, _inline_heading_end, _is_line_heading
from search.chunk_headings import known_names as known_names
from search.chunk_headings import split_title_run as split_title_run
from search.chunk_sentences import _pieces, _split_sentences, _starts_sentence, _trim
from search.types import Passage

__all__ = [
    "DEFAULT_OVERLAP",
    "DEFAULT_TARGET_CHARS",
    "Unit",
    "chunk",
    "heading_spans",
    "known_names",
    "segment",
    "sentence_spans",
    "split_title_run",
]

# all-MiniLM-L6-v2 truncates at 256 word pieces (~1,000 characters of English news).
# 700 characters is ~150-180 word pieces, so a passage *with* its one-sentence overlap
# is embedded whole (nothing silently cut off), while still holding 3-5 sentences: enough
# context for BM25 and for the answer module to find a supporting sentence.
DEFAULT_TARGET_CHARS = 700
DEFAULT_OVERLAP = 1

_FLATTENED_CHARS = 1200
_MAX_HEADINGS_IN_A_ROW = 2  # "Section" then "Subsection" still heads the text below


@dataclass(frozen=True)
class Unit:
    """A sentence or a heading: ``text[start:end]``, trimmed, never empty."""

    start: int
    end: int
    heading: bool = False


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence (and heading) boundaries as ``(start, end)`` character spans into ``text``.

    Spans are trimmed of surrounding white space, in order, non-overlapping, and together
    cover every non-space character of ``text`` exactly once. Empty or blank text gives ``[]``.

    >>> t = "Mr. Smith scored 2.5 goals. “Great,” he said. Then it rained."
    >>> [t[s:e] for s, e in sentence_spans(t)]
    ['Mr. Smith scored 2.5 goals.', '“Great,” he said.', 'Then it rained.']
    """
    return [(u.start, u.end) for u in segment(text)]


def heading_spans(text: str) -> list[tuple[int, int]]:
    """The subset of :func:`sentence_spans` that are headings (not to be quoted as answers)."""
    return [(u.start, u.end) for u in segment(text) if u.heading]


def segment(text: str) -> list[Unit]:
    """Split ``text`` into sentences and headings (see :func:`sentence_spans` for the contract)."""
    if not text or text.isspace():
        return []
    units: list[Unit] = []
    pieces = _pieces(text)
    # Headings are glued into sentences only when a scraper flattened a whole page into
    # one line (seed 002). Looking for them in ordinary paragraphs costs false splits
    # ("Britain's Kelly Holmes won ..."): measured on BBC Sport, 60+ such splits, no true one.
    body_len = len(text.strip())
    # Names and capitalised-word counts matter only for flattened pages; computing them
    # for every article cost more than the rest of segmentation together.
    known: frozenset[str] | None = None
    caps: Counter[str] | None = None
    for i, (start, end, single_line) in enumerate(pieces):
        sentences = _split_sentences(text, start, end)
        has_next = i + 1 < len(pieces)
        if (
            single_line
            and has_next
            and len(sentences) == 1
            and _is_line_heading(text[start:end])
            and _starts_sentence(text[pieces[i + 1][0]])
        ):
            units.append(Unit(start, end, True))
            continue
        flattened = end - start >= _FLATTENED_CHARS and end - start >= 0.6 * body_len
        for s, e in sentences:
            cut = None
            if flattened:
                if known is None or caps is None:
                    known, caps = known_names(text), _cap_counts(text)
                cut = _inline_heading_end(text, s, e, known, caps)
            if cut is None:
                units.append(Unit(s, e))
            else:
                head_end, body_start = cut
                units.append(Unit(s, head_end, True))
                units.append(Unit(body_start, e))
    return _unflag_lists(units)


def _unflag_lists(units: list[Unit]) -> list[Unit]:
    """Three or more "headings" in a row are a list (fixtures, seedings), not headings.

    A heading heads text; a run of short unpunctuated lines is content, and flagging it
    would also let one passage grow without bound (a heading never ends a passage).
    """
    out = list(units)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].heading:
            j += 1
        if j - i > _MAX_HEADINGS_IN_A_ROW:
            out[i:j] = [Unit(u.start, u.end) for u in out[i:j]]
        i = max(j, i + 1)
    return out


# --- chunking -------------------------------------------------------------------------


def chunk(
    article_id: str,
    text: str,
    target_chars: int = DEFAULT_TARGET_CHARS,
    overlap: int = DEFAULT_OVERLAP,
    units: list[Unit] | None = None,
) -> list[Passage]:
    """Pack an article's sentences into passages of about ``target_chars`` characters.

    * A sentence is never cut, except one longer than twice the target, which is split
      at clause marks (``;``, ``:``, dashes, commas) or, failing that, at spaces; a
      sentence between one and two targets long becomes a passage on its own.
    * Consecutive passages share ``overlap`` sentences, so a fact stated across a
      boundary is whole in one of them, except where the new passage opens a section
      with a heading (the previous section's last sentence would only be noise there).
    * A heading is never the last unit of a passage: it travels with the text it heads.

    Passage ids are ``f"{article_id}#{n}"``; ``text[p.start:p.end] == p.text`` always holds.
    ``units`` is ``segment(text)`` when the caller has it already (the write path keeps
    the sentences too: segmenting twice cost it as much as chunking, #17).
    """
    if target_chars < 1:
        raise ValueError(f"target_chars must be positive, got {target_chars}")
    if overlap < 0:
        raise ValueError(f"overlap must be zero or more, got {overlap}")
    units = _split_long(text, segment(text) if units is None else units, target_chars)
    groups = _pack(units, target_chars, overlap)
    return [
        Passage(
            id=f"{article_id}#{n}",
            doc_id=article_id,
            start=g[0].start,
            end=g[-1].end,
            text=text[g[0].start : g[-1].end],
        )
        for n, g in enumerate(groups)
    ]


def _pack(units: Sequence[Unit], target: int, overlap: int) -> list[list[Unit]]:
    groups: list[list[Unit]] = []
    cur: list[Unit] = []
    fresh = 0  # units in `cur` that are not overlap carried from the previous passage

    def size(us: Sequence[Unit]) -> int:
        return us[-1].end - us[0].start

    for u in units:
        if cur and fresh:
            too_big = u.end - cur[0].start > target
            # Prefer to open a new section in a new passage once this one has some body.
            section_break = u.heading and size(cur) >= target // 2
            if (too_big or section_break) and not cur[-1].heading:
                groups.append(cur)
                carry = [] if u.heading else [x for x in cur[-overlap:] if not x.heading] if overlap else []
                # The overlap must leave room for the new unit, or it is dropped.
                if carry and u.end - carry[0].start > target:
                    carry = []
                cur, fresh = list(carry), 0
        cur.append(u)
        fresh += 1
    if cur and fresh:
        groups.append(cur)
    return groups


_CLAUSE = re.compile(r"[;:,—–]\s+|\s+[—–-]{1,2}\s+")


def _split_long(text: str, units: list[Unit], target: int) -> list[Unit]:
    """Split sentences longer than twice the target at clause marks, else at spaces."""
    out: list[Unit] = []
    for u in units:
        if u.end - u.start <= 2 * target:
            out.append(u)
            continue
        s = u.start
        while u.end - s > target:
            limit = s + target
            cut = -1
            for m in _CLAUSE.finditer(text, s, limit):
                if m.start() > s + target // 3:
                    cut = m.end()
            if cut < 0:
                sp = text.rfind(" ", s + 1, limit)
                cut = sp + 1 if sp > s else limit
            a, b = _trim(text, s, cut)
            if a < b:
                out.append(Unit(a, b, u.heading))
            s, _ = _trim(text, cut, u.end)
        if s < u.end:
            out.append(Unit(s, u.end, u.heading))
    return out
