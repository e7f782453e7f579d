"""Text cleaning for ingest: normalising, dropping other stories' lines, titles, sources, HTML fragments.

Pure functions of strings: nothing here reads a file or knows a limit but the title length.
"""

from __future__ import annotations

import re
import unicodedata
from html.parser import HTMLParser

from search.chunk import known_names, segment, split_title_run

TITLE_CHARS = 80  # a derived title is cut at a word boundary near this length
_HEADLINE_MAX_CHARS = 150
_HEADLINE_MAX_WORDS = 20


def site_name(url: str | None) -> str:
    """The site an article's URL names ("https://www.bbc.co.uk/sport/x" → "bbc.co.uk"), else ""."""
    if not url:
        return ""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def _normalise(text: str) -> str:
    """LF line ends and NFC; nothing else about the author's characters changes."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def _one_line(s: str) -> str:
    return " ".join(s.split())


# Lines that belong to another story or to the page, not to the article.
_JUNK_LINE = re.compile(
    r"""^\s*(?:
        (?:read\s+(?:also|more)|also\s+read|see\s+also)\b
        | related(?:\s+(?:stories|articles|news|content|coverage|links))?\s*(?::|$|[-–—])
        | advertisement\s*$
        | click\s+here\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# A longer line is an article glued into one line: its teasers are cut inline instead.
_JUNK_LINE_MAX_CHARS = 300
# The same teasers inline, at a sentence start, where a scraper glued lines together.
_INLINE_TEASER = re.compile(
    r"(?:(?<=[.!?”\"’)])\s+|^)(?:[Rr]ead (?:also|more)\s*:|READ (?:ALSO|MORE)\s*:|[Rr]elated\s*:|RELATED\s*:"
    r"|[Ss]ee also\s*:|Also read\b\s*:?)[ \t]*",
    re.MULTILINE,
)
# A teaser is one short sentence: the scan for its end is bounded (unbounded, each teaser of
# a line with no sentence end scanned to the line's end: quadratic, 20 s for 200,000 characters).
_INLINE_CLICK = re.compile(r"(?:(?<=[.!?”\"’])\s+|^)Click here to\b[^\n]{0,300}?[.!?](?=\s|$)", re.MULTILINE)
_INLINE_AD = re.compile(r"[ \t]*\bADVERTISEMENT\b[ \t]*")


def clean_text(text: str) -> str:
    """Drop other stories' teasers and page furniture; tidy the white space they leave.

    Whole lines go when they are a teaser ("Read also: ...", "Related: ...", "Also read
    ...", "ADVERTISEMENT", "Click here to ..."). Inline teasers (seed 002's "... breaking
    through. Read also: ICC Format Overhaul Could Add India-Pakistan Showdown Messi set up
    ...") are cut from the marker to where the real sentence resumes. Paragraph breaks
    stay; runs of blank lines become one.
    """
    lines = [ln for ln in text.split("\n") if len(ln) > _JUNK_LINE_MAX_CHARS or not _JUNK_LINE.match(ln)]
    text = "\n".join(lines)
    if _INLINE_TEASER.search(text):
        text = _cut_inline_teasers(text)
    text = _INLINE_CLICK.sub("", text)
    text = _INLINE_AD.sub(_ad_gap, text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _ad_gap(m: re.Match[str]) -> str:
    # Between words the marker leaves one space; at a line's edge, nothing.
    s = m.string
    inside = m.start() > 0 and s[m.start() - 1] != "\n" and m.end() < len(s) and s[m.end()] != "\n"
    return " " if inside else ""


def _cut_inline_teasers(text: str) -> str:
    known = known_names(text)
    out: list[str] = []
    pos = 0
    for m in _INLINE_TEASER.finditer(text):
        if m.start() < pos:
            continue
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        cut = _teaser_end(text, m.end(), line_end, known)
        out.append(text[pos : m.start()])
        if cut < line_end and out[-1] and not out[-1].endswith("\n"):
            out.append(" ")
        pos = cut
    out.append(text[pos:])
    return "".join(out)


def _teaser_end(text: str, start: int, end: int, known: frozenset[str]) -> int:
    """Where the article resumes after a teaser headline starting at ``start``."""
    # A teaser that ends in its own full stop ends there ("Read more: Messi wins award.").
    stop = re.search(r"[.!?][\"'”’]?(?=\s+\S)", text[start:end])
    title_cut = split_title_run(text, start, end, known, fallback=True)
    if title_cut is not None and (stop is None or title_cut <= start + stop.end()):
        return title_cut
    if stop is not None:
        nxt = start + stop.end()
        while nxt < end and text[nxt].isspace():
            nxt += 1
        return nxt
    return end  # the teaser runs to the end of the line


# --- titles, sources and ids ---------------------------------------------------------


_MD_HEADING = re.compile(r"^#{1,6}\s+")


def split_title(text: str, *, markdown: bool = False) -> tuple[str, str]:
    """``(title, body)``: the first line when it reads as a headline, else ``("", text)``.

    A headline is short (≤ 150 characters, ≤ 20 words), does not end in a full stop,
    colon or comma, and is followed by a body. A markdown ``#`` heading always counts.
    """
    stripped = text.lstrip()
    first, _, rest = stripped.partition("\n")
    line = first.strip()
    if not rest.strip():
        return "", text
    if markdown and _MD_HEADING.match(line):
        return _MD_HEADING.sub("", line).strip(), rest
    line = _MD_HEADING.sub("", line)
    if (
        line
        and len(line) <= _HEADLINE_MAX_CHARS
        and len(line.split()) <= _HEADLINE_MAX_WORDS
        and line[-1] not in ".:;,"
        and not line.endswith(("...", "…"))
    ):
        return line, rest
    return "", text


def derive_title(body: str, max_chars: int = TITLE_CHARS) -> str:
    """A title from the first sentence (after any dateline), cut near ``max_chars`` at a word, with "…"."""
    units = [u for u in segment(body) if not u.heading]
    first = body[units[0].start : units[0].end] if units else body.strip()
    first = _one_line(_DATELINE.sub("", first, count=1)) or _one_line(first)
    if len(first) <= max_chars:
        return first[:-1] if first.endswith(".") and not first.endswith("..") else first
    cut = first.rfind(" ", 0, max_chars)
    head = first[: cut if cut > max_chars // 2 else max_chars].rstrip(" ,;:—–-")
    return head + "…"


# "ATLANTA (AFP) —", "LONDON, March 3 (Reuters) -": a dateline naming the agency.
_DATELINE = re.compile(
    r"^\s*[A-Z][A-Z .'’-]{1,40}(?:,[^()\n]{1,30})?\s*\(([A-Za-z][A-Za-z&. -]{0,23})\)\s*(?:—|–|--|-)\s*"
)


def detect_source(body: str) -> str:
    """The news agency of a dateline at the start of the text ("ATLANTA (AFP) —" → "AFP"), else ""."""
    m = _DATELINE.match(body)
    return m.group(1).strip() if m else ""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with lone surrogates (from JSON escapes or non-UTF-8 file names) shown as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


class _TextParser(HTMLParser):
    """Plain text from an HTML fragment: block elements become paragraph breaks."""

    _BLOCKS = frozenset(
        "p div br li ul ol h1 h2 h3 h4 h5 h6 blockquote tr table section article header footer".split()
    )
    _SKIP = frozenset({"script", "style", "noscript", "template"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self.skip += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(fragment: str) -> str:
    """Text of a small HTML fragment (a feed entry's content); plain text passes through."""
    if "<" not in fragment and "&" not in fragment:
        return fragment
    p = _TextParser()
    p.feed(fragment)
    p.close()
    text = "".join(p.parts)
    paras = [" ".join(par.split()) for par in re.split(r"\n\s*\n", text)]
    return "\n\n".join(par for par in paras if par)
