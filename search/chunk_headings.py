"""Headings: lines that read as one, and Title-Case lead-ins a scraper glued onto a sentence.

A line heading is short, starts like a sentence and has no final punctuation. An
inline heading ("Main Developments Argentina defeated England ...") is found only on
pages flattened into one line: a run of Title-Case words is split where the real
sentence starts, at a common sentence opener or after the last word the text never
uses as a name (:func:`known_names`: capitalised words seen inside sentences), and
kept as a heading only when none of its words reads as a name. Ingest uses
:func:`split_title_run` too, to find where an article resumes after a glued-on teaser.
"""

from __future__ import annotations

import re
from collections import Counter

from search.chunk_sentences import _STRIP, _TERMINAL_TAIL, _WORD, _ends_sentence, _starts_sentence

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
_POSSESSIVE = re.compile(r"['’]s$")

_MAX_HEADING_WORDS = 12
_MAX_HEADING_CHARS = 100
_MAX_INLINE_HEADING_WORDS = 8


def _is_line_heading(line: str) -> bool:
    """A line that reads as a heading: short, starts like a sentence, no final punctuation."""
    if len(line) > _MAX_HEADING_CHARS or len(line.split()) > _MAX_HEADING_WORDS:
        return False
    if not _starts_sentence(line[0]) and line[0] != "#":
        return False
    # ":" and "," announce more of the same sentence, "-" a bullet: not headings.
    return not (_ends_sentence(line) or line[-1] in ",;:-–—" or line.startswith(("- ", "* ", "• ")))


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
