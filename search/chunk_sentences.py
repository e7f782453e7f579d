"""Where sentences end: paragraph blocks, the pieces sentences are looked for in, and full stops.

A text is cut into blocks of non-blank lines; a hard-wrapped block is one piece (its
line breaks are spaces), otherwise each line is, unless it starts in lower case and so
continues the line before. Within a piece a sentence ends at ``.``, ``?``, ``!`` or an
ellipsis (with any closing quotes) before a capital, a digit or an opening quote, but
not after a title ("Mr."), an initial ("J."), a number's abbreviation ("No. 10") or a
dotted acronym ("U.S.") unless a very common sentence opener follows. Everything is a
``(start, end)`` span into the text. :mod:`search.chunk` builds its units from these.
"""

from __future__ import annotations

import re

# A sentence-final mark: full stops / ?! runs or an ellipsis, then any closing quotes or
# brackets, provided more text follows after whitespace (the text's end is handled apart).
# The whitespace is group 1, so where the next sentence would start is its end (\s is
# str.isspace: both are Py_UNICODE_ISSPACE).
# A run of stops is tried from its first character only (the lookbehinds): tried from every
# one, each backtracking through the rest, 16,000 dots took 10 s (quadratic). Same matches.
_END = re.compile(r"(?:(?<![.!?])[.!?]+|(?<!…)…+)[\"'”’»)\]]*(?=(\s+)\S)")
_ACRONYM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
# Searched in a word: from a run's first stop only, as _END (a 20,000-dot word took 6 s).
_TERMINAL_TAIL = re.compile(r"(?:(?<![.!?])[.!?]+|(?<!…)…+)[\"'”’»)\]]*$")
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
_OPENING = "\"'“‘«([¿¡"
_STRIP = "\"'“”‘’«»()[]{},;:.!?…"


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


def _split_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    s = start
    # Searched in the slice: its lookbehinds must not see a stop just before ``start``, where
    # a run cut by the slice begins.
    for m in _END.finditer(text[start:end]):
        nxt = start + m.end(1)
        if nxt >= end or not _is_boundary(text, s, start + m.start(), m.group(0), nxt, end):
            continue
        spans.append((s, start + m.end()))
        s = nxt
    spans.append((s, end))
    return spans


def _is_boundary(text: str, sent_start: int, at: int, mark: str, nxt: int, end: int) -> bool:
    """Whether the stop ``mark`` at ``at`` ends a sentence, the next starting at ``nxt``."""
    ch = text[nxt]
    # "... he said." / "scored, then ..." : a lower-case or clause character continues.
    if ch.islower() or ch in ",;:)]}”’»-–—":
        return False
    if not mark.startswith(".") or mark.startswith(".."):
        return True  # ?, !, an ellipsis before a capital: a sentence ends
    # A single full stop: was it an abbreviation?
    ws = text.rfind(" ", sent_start, at)
    tok = text[max(ws + 1, sent_start) : at].lstrip(_OPENING)
    tok = tok.rsplit("\n", 1)[-1]
    low = tok.lower()
    if low in _TITLES:
        return False
    if low in _BEFORE_NUMBER and ch.isdigit():
        return False
    if len(tok) == 1 and tok.isupper():
        return False  # an initial: "J. Smith"
    if _ACRONYM.fullmatch(tok):
        # "U.S." or "p.m.": a boundary only before a very common sentence opener.
        nm = _WORD.match(text, nxt, end)
        word = nm.group(0).strip(_STRIP) if nm else ""
        return word in _COMMON_OPENERS
    return True
