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
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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

# A sentence-final mark: full stops / ?! runs or an ellipsis, then any closing quotes or
# brackets, provided more text follows after whitespace (the text's end is handled apart).
_END = re.compile(r"(?:[.!?]+|…+)[\"'”’»)\]]*(?=\s+\S)")
_TERMINAL_TAIL = re.compile(r"(?:[.!?]+|…+)[\"'”’»)\]]*$")
_WORD = re.compile(r"\S+")

# Titles and similar: a following full stop never ends a sentence.
_TITLES = frozenset(
    "mr mrs ms dr st jr sr prof gen col lt sgt capt cpl rev hon mt ft messrs mme mlle sen rep "
    "gov pres supt insp det vs v cf".split()
)
# Abbreviations that end no sentence only when a number follows ("No. 10", "Jan. 5").
_BEFORE_NUMBER = frozenset(
    "no nos vol fig pp p approx jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
# After a dotted acronym ("U.S.", "p.m."), a new sentence is assumed only before one of
# these very common sentence openers; otherwise "the U.S. Open" would be split.
_COMMON_OPENERS = frozenset(
    "The A An He She It They We I But And His Her Their Its This That There In On At After "
    "Before When While However Meanwhile".split()
)
# Words a sentence commonly opens with; a Title-Case run ending just before one of them
# is a heading ("Background The Argentina-England rivalry ..."), and a heading never
# starts with one ("Then Lionel Messi ..." is a sentence).
_STARTERS = frozenset(
    "The A An For In On At After Before With Without This That These Those His Her Their Its Our "
    "My Your He She It They We I You But And Or As When While Although Though If By From Despite "
    "During Since Until Once Then However Meanwhile Now So Yet There Here One Two Both Each Every "
    "Some Many Few Most All No Not Having Still Even Only Just Against Under Over Between "
    "Although Instead Later Earlier Indeed".split()
)
# Question words are typical heading openers ("Why It Matters", "What's Next").
_HEADING_OPENERS = frozenset("Why What How Who Where".split())
# Lower-case words allowed inside a Title-Case heading ("England's Lead and Argentina's Response").
_CONNECTORS = frozenset("and of the in to for a an on at vs v with from".split())
_OPENING = "\"'“‘«([¿¡"
_STRIP = "\"'“”‘’«»()[]{},;:.!?…"
_POSSESSIVE = re.compile(r"['’]s$")

_MAX_HEADING_WORDS = 12
_MAX_HEADING_CHARS = 100
_MAX_INLINE_HEADING_WORDS = 8
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


# --- lines, blocks and pieces ---------------------------------------------------------


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _blocks(text: str) -> list[list[tuple[int, int]]]:
    """Paragraph blocks: runs of non-blank lines, each line a trimmed span."""
    blocks: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        stop = n if nl < 0 else nl
        s, e = _trim(text, pos, stop)
        if s < e:
            current.append((s, e))
        elif current:
            blocks.append(current)
            current = []
        if nl < 0:
            break
        pos = nl + 1
    if current:
        blocks.append(current)
    return blocks


def _ends_sentence(line: str) -> bool:
    return bool(_TERMINAL_TAIL.search(line))


def _is_wrapped(text: str, lines: list[tuple[int, int]]) -> bool:
    """A hard-wrapped paragraph: most lines (but the last) are long and end mid-sentence."""
    if len(lines) < 3:
        return False
    body = lines[:-1]
    wrapped = sum(1 for s, e in body if e - s >= 40 and not _ends_sentence(text[s:e]))
    return wrapped >= 0.6 * len(body)


def _pieces(text: str) -> list[tuple[int, int, bool]]:
    """Stretches of text in which sentences are then looked for: ``(start, end, single_line)``.

    In a hard-wrapped paragraph the line breaks are just spaces, so the paragraph is one
    piece. Otherwise each line is its own piece (one paragraph or heading per line, as
    in seed 001), except that a line starting in lower case continues the previous one.
    """
    pieces: list[tuple[int, int, bool]] = []
    for lines in _blocks(text):
        if _is_wrapped(text, lines):
            pieces.append((lines[0][0], lines[-1][1], len(lines) == 1))
            continue
        cur_s, cur_e = lines[0]
        single = True
        for s, e in lines[1:]:
            if text[s].islower():
                cur_e, single = e, False
            else:
                pieces.append((cur_s, cur_e, single))
                cur_s, cur_e, single = s, e, True
        pieces.append((cur_s, cur_e, single))
    return pieces


def _starts_sentence(ch: str) -> bool:
    return ch.isupper() or ch.isdigit() or ch in _OPENING


def _is_line_heading(line: str) -> bool:
    """A line that reads as a heading: short, starts like a sentence, no final punctuation."""
    if len(line) > _MAX_HEADING_CHARS or len(line.split()) > _MAX_HEADING_WORDS:
        return False
    if not _starts_sentence(line[0]) and line[0] != "#":
        return False
    # ":" and "," announce more of the same sentence, "-" a bullet: not headings.
    return not (_ends_sentence(line) or line[-1] in ",;:-–—" or line.startswith(("- ", "* ", "• ")))


# --- sentences ------------------------------------------------------------------------


def _split_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    s = start
    for m in _END.finditer(text, start, end):
        nxt = m.end()
        while nxt < end and text[nxt].isspace():
            nxt += 1
        if nxt >= end or not _is_boundary(text, s, m, nxt, end):
            continue
        spans.append((s, m.end()))
        s = nxt
    spans.append((s, end))
    return spans


def _is_boundary(text: str, sent_start: int, m: re.Match[str], nxt: int, end: int) -> bool:
    ch = text[nxt]
    # "... he said." / "scored, then ..." : a lower-case or clause character continues.
    if ch.islower() or ch in ",;:)]}”’»-–—":
        return False
    mark = m.group(0)
    if not mark.startswith(".") or mark.startswith(".."):
        return True  # ?, !, an ellipsis before a capital: a sentence ends
    # A single full stop: was it an abbreviation?
    ws = text.rfind(" ", sent_start, m.start())
    tok = text[max(ws + 1, sent_start) : m.start()].lstrip(_OPENING)
    tok = tok.rsplit("\n", 1)[-1]
    low = tok.lower()
    if low in _TITLES:
        return False
    if low in _BEFORE_NUMBER and ch.isdigit():
        return False
    if len(tok) == 1 and tok.isupper():
        return False  # an initial: "J. Smith"
    if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", tok):
        # "U.S." or "p.m.": a boundary only before a very common sentence opener.
        nm = _WORD.match(text, nxt, end)
        word = nm.group(0).strip(_STRIP) if nm else ""
        return word in _COMMON_OPENERS
    return True


# --- inline headings and Title-Case runs ----------------------------------------------


def _core(token: str) -> str:
    return _POSSESSIVE.sub("", token.strip(_STRIP))


def _is_cap(core: str) -> bool:
    return bool(core) and core[0].isupper()


def known_names(text: str) -> frozenset[str]:
    """Capitalised words the text uses *inside* sentences: names ("Messi", "Argentina").

    A word counts when it follows a lower-case word or a comma, or continues such a name
    ("with Lautaro Martinez"). Words seen only after a sentence end ("Main Developments")
    are not names; that is what tells a glued-on heading from a sentence's subject.
    """
    known: set[str] = set()
    prev_tok = ""
    prev_known = False
    for m in _WORD.finditer(text):
        tok = m.group(0)
        core = _core(tok)
        is_known = False
        if _is_cap(core) and prev_tok and not _ends_clause(prev_tok):
            prev_core = _core(prev_tok)
            if prev_core and (prev_core[0].islower() or prev_tok.endswith(",") or prev_known):
                is_known = True
        if is_known:
            known.add(core)
            known.update(p for p in core.split("-") if p)
        prev_tok, prev_known = tok, is_known
    return frozenset(known)


def _ends_clause(tok: str) -> bool:
    return bool(_TERMINAL_TAIL.search(tok)) or tok.endswith(":")


def _is_known(core: str, known: frozenset[str]) -> bool:
    if core in known:
        return True
    parts = [p for p in core.split("-") if p]
    return len(parts) > 1 and all(p in known for p in parts)


def _title_run(text: str, start: int, end: int) -> tuple[list[tuple[int, int, str]], bool]:
    """Leading Title-Case words of ``text[start:end]`` and whether lower-case text follows.

    Returns ``([(word_start, word_end, core), ...], continues)``. The run stops after a word
    carrying a comma/colon/final mark, and admits lower-case connectors between capitals.
    """
    words = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text, start, end)]
    run: list[tuple[int, int, str]] = []
    i = 0
    while i < len(words) and len(run) < 16:
        s, e, tok = words[i]
        core = _core(tok)
        if _is_cap(core):
            run.append((s, e, core))
            if tok[-1] in ",;:.!?…":
                i += 1
                break
        elif core in _CONNECTORS and i + 1 < len(words) and _is_cap(_core(words[i + 1][2])) and run:
            run.append((s, e, core))
        else:
            break
        i += 1
    continues = i < len(words)
    return run, continues


def split_title_run(
    text: str, start: int, end: int, known: frozenset[str], *, fallback: bool = False
) -> int | None:
    """Where the real sentence starts after a Title-Case lead-in at ``text[start:end]``.

    "Main Developments Argentina defeated ..." → the offset of "Argentina". The sentence
    starts either at the last common sentence opener in the run ("Background The ...")
    or just after the last word the text never uses as a name ("... Showdown Messi set
    up ..."). Returns ``None`` when no split is convincing; with ``fallback`` (used to cut
    a known teaser), the last capitalised word of the run is taken as the sentence start.
    """
    run, continues = _title_run(text, start, end)
    if not continues or len(run) < 2:
        return run[-1][0] if fallback and continues and len(run) == 2 else None
    cores = [c for _, _, c in run]
    n = len(cores)
    k_starter = max((i for i in range(1, n) if cores[i] in _STARTERS), default=0)
    unknown = [
        i
        for i in range(n)
        if cores[i] not in _STARTERS and cores[i] not in _CONNECTORS and not _is_known(cores[i], known)
    ]
    k_entity = unknown[-1] + 1 if unknown and unknown[-1] + 1 < n else 0
    k = max(k_starter, k_entity)
    if k == 0:
        return run[-1][0] if fallback else None
    while k < n and cores[k] in _CONNECTORS:  # never start the sentence on "and"/"of"
        k += 1
    if k >= n:
        return run[-1][0] if fallback else None
    return run[k][0]


def _cap_counts(text: str) -> Counter[str]:
    return Counter(c for c in (_core(m.group(0)) for m in _WORD.finditer(text)) if _is_cap(c))


def _inline_heading_end(
    text: str, start: int, end: int, known: frozenset[str], caps: Counter[str]
) -> tuple[int, int] | None:
    """``(heading_end, sentence_start)`` when the sentence opens with a glued-on heading."""
    first = text[start]
    if not first.isupper():
        return None
    cut = split_title_run(text, start, end, known)
    if cut is None:
        return None
    run, _ = _title_run(text, start, cut)
    heads = [c for _, _, c in run]
    tail_core = _core(_WORD.match(text, cut, end).group(0))  # type: ignore[union-attr]
    if not heads or len(heads) > _MAX_INLINE_HEADING_WORDS:
        return None
    # Headings open with a content or question word, never with "Then", "The", "But" ...
    if heads[0] in _STARTERS and heads[0] not in _HEADING_OPENERS:
        return None
    if heads[-1] in _STARTERS or heads[-1] in _CONNECTORS:
        return None
    if any(_is_known(h, known) for h in heads if h not in _STARTERS and h not in _CONNECTORS):
        return None  # a name: "Captain Harry Kane said" is a sentence
    if any(caps[h] > 1 for h in heads if h not in _STARTERS and h not in _CONNECTORS):
        return None  # a section heading is said once; a capitalised word seen again is a name
    if len(heads) == 1 and heads[0] in _HEADING_OPENERS:
        return None  # "What I have to judge ..." is a sentence
    if tail_core not in _STARTERS:
        # Split on "the next word is a name" only when the name is attested and the
        # heading has two words or more ("Main Developments Argentina ..."); a single
        # word ("Substitute Lautaro Martinez rose") is far more often the subject's title.
        if not _is_known(tail_core, known) or len(heads) < 2:
            return None
    if text[run[-1][1] - 1] in ",;:.!?":
        return None
    return run[-1][1], cut


# --- chunking -------------------------------------------------------------------------


def chunk(
    article_id: str,
    text: str,
    target_chars: int = DEFAULT_TARGET_CHARS,
    overlap: int = DEFAULT_OVERLAP,
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
    """
    if target_chars < 1:
        raise ValueError(f"target_chars must be positive, got {target_chars}")
    if overlap < 0:
        raise ValueError(f"overlap must be zero or more, got {overlap}")
    units = _split_long(text, segment(text), target_chars)
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
