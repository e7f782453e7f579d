"""Text analysis shared by indexing and querying: one function turns text into terms.

The lexical index stores the output of :func:`analyze` (space-separated), so the
whoosh schema holds only whoosh's own tokenizer and every rule lives here, in plain
Python, where it is the same at index and query time:

* lower-casing, curly quotes and apostrophes folded, possessive ``'s`` dropped;
* British spellings folded to American (equaliser/equalizer, favour/favor,
  centre/center, defence/defense, travelled/traveled, ...);
* Lucene's English stop words, plus (for questions only) question words;
* Porter stemming, as Lucene's EnglishAnalyzer and Pyserini do;
* a hyphenated compound also as one word ("semi-final" holds "semifinal").

A user's question is never parsed as query syntax: :func:`query_terms` extracts
terms, so quotes, AND/OR/NOT, ``*``, ``?``, ``:`` and brackets are just text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from functools import lru_cache
from itertools import accumulate, compress, filterfalse
from operator import not_

from whoosh.lang.porter import stem as _porter

from .data import lines

# Lucene's EnglishAnalyzer default stop set (what Pyserini's BM25 uses).
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)

# Words that shape a question but never occur usefully in an answer passage.
QUESTION_WORDS = frozenset(
    "who whom whose what which when where why how did does do done was were is are am been "
    "has have had can could would should shall may might must tell me please about any some "
    "i you we our us your like".split()
)

# The words a question opens with (``data/question_openers.txt``). A query that opens with
# one, or ends with "?", is asked as a question; anything else (a claim, a headline,
# keywords) is a statement. A contraction counts as its word: "what's", "who'd".
QUESTION_OPENERS = frozenset(lines("question_openers.txt"))
_CONTRACTION = re.compile(r"['\u2019](?:s|re|d|ll|ve)$")


def is_question(text: str) -> bool:
    """Whether ``text`` is asked as a question: it ends with "?" or opens with a question word."""
    words = text.split()
    if text.rstrip().endswith("?"):
        return True
    return bool(words) and _CONTRACTION.sub("", words[0].lower().strip(",.:;")) in QUESTION_OPENERS


def is_search_box(text: str) -> bool:
    """Whether ``text`` is typed the way people type into a search box: no capital letter and
    no closing full stop ("rooney goals v everton", "final venue"). Claims and headlines are
    written in sentence or title case. On a football corpus such a query asks for a fact, so
    its head is ordered as a question's (:func:`search.rerank_learned.head_order`)."""
    t = text.strip()
    return bool(t) and not t.endswith(".") and t == t.lower() and any(c.isalpha() for c in t)


# Words of a sentence, or a question, about what is still to come: match reports end with
# the next fixture ("will face Spain", "scheduled for Sunday", "heads to Miami"), whose
# place and date are the wrong answers about the match reported, and the right ones
# about the next.
LOOKS_AHEAD = re.compile(
    r"\b(?:will|won't|shall|must|would|scheduled|set to|sets up|going to|next|upcoming|looking ahead"
    r"|heads? to|awaits?|to face|faces? next)\b",
    re.IGNORECASE,
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'"})
# A token: letters/digits, allowing inner apostrophes (don't) and inner hyphens between
# digits (2-1, 20-metre keeps "20" and "metre" apart through the second alternative).
_TOKEN = re.compile(r"\d+(?:-\d+)+|[^\W_]+(?:'[^\W_]+)*", re.UNICODE)
# A compound written with hyphens ("semi-final", "PD-1", "team-mates", "Bcl-2"): its
# parts are words, and so are the parts joined ("semifinal", "pd1", "teammates"), so
# either spelling finds the other, as Lucene's WordDelimiterGraphFilter does with
# catenateWords. Seen on both sides: SciFact's claims write "PD-1", "Bcl-2" and "T-cell"
# where abstracts write "PD1", "Bcl2" and "Tcell" (38 of the claims' 272 hyphenated
# words occur joined in the corpus); football reports write "semi-final" and
# "semifinal", "half-time" and "halftime", "shoot-out" and "shootout". NFKC turns the
# non-breaking hyphen into U+2010; an en dash is a range or a score, not a compound.
# A question's terms keep only the parts: its joined compounds go to retrieval as
# expansions (:func:`compounds`, half a typed word's weight), since a passage that writes
# the compound with hyphens already matches every part, and counting the joined form in
# full as well cost 0.005 nDCG@10 on SciFact's train split (0.7419 -> 0.7371; as an
# expansion 0.7403, within noise, while "semifinal" now finds "semi-final" and back).
_JOIN = re.compile(r"(?<=[^\W_])[-\u2010](?=[^\W_])", re.UNICODE)

_OUR_STEMS = (
    "colour favour honour labour behaviour neighbour rumour vigour harbour armour humour odour "
    "endeavour savour flavour saviour valour parlour clamour splendour tumour rigour fervour candour"
).split()
_LL_STEMS = (
    "travel cancel model label fuel signal counsel level marvel channel tunnel duel jewel quarrel "
    "rival total equal dial pedal shovel"
).split()
_EXACT = {
    "centre": "center",
    "centres": "centers",
    "centred": "centered",
    "metre": "meter",
    "metres": "meters",
    "theatre": "theater",
    "litre": "liter",
    "fibre": "fiber",
    "defence": "defense",
    "defences": "defenses",
    "offence": "offense",
    "offences": "offenses",
    "licence": "license",
    "programme": "program",
    "programmes": "programs",
    "tyre": "tire",
    "tyres": "tires",
    "grey": "gray",
    "manoeuvre": "maneuver",
    "catalogue": "catalog",
    "dialogue": "dialog",
    "analyse": "analyze",
    "analysed": "analyzed",
    "paralysed": "paralyzed",
    "jewellery": "jewelry",
    "pyjamas": "pajamas",
    "mould": "mold",
    "plough": "plow",
    "sceptical": "skeptical",
    "aluminium": "aluminum",
    "cheque": "check",
    "kerb": "curb",
    "practise": "practice",
    "practised": "practiced",
    "enrol": "enroll",
}
_ISE = re.compile(r"^(\w{3,})is(e|es|ed|er|ers|ing|ation|ations)$")


@lru_cache(maxsize=200_000)
def fold_spelling(word: str) -> str:
    """Map a lower-case British spelling to its American form; other words pass through."""
    if word in _EXACT:
        return _EXACT[word]
    m = _ISE.match(word)
    if m:
        return f"{m.group(1)}iz{m.group(2)}"
    for stem in _OUR_STEMS:
        if word.startswith(stem):
            return stem[:-3] + "or" + word[len(stem) :]
    if "ll" in word:
        for stem in _LL_STEMS:
            if word.startswith(stem + "l") and word[len(stem) + 1 :] in ("ed", "ing", "er", "ers"):
                return stem + word[len(stem) + 1 :]
    return word


@lru_cache(maxsize=200_000)
def term(word: str) -> str:
    """The index term for one lower-case word: spelling folded, then Porter-stemmed."""
    return _porter(fold_spelling(word))


# The token pattern as one group: ``split`` then returns ``[gap, token, gap, token, ...,
# gap]``, so every token and its offsets come from C (a split, running sums of the pieces'
# lengths) instead of a Python step per match (#17: a 20k build tokenizes 1.8M words).
_TOKEN_SPLIT = re.compile(f"({_TOKEN.pattern})", re.UNICODE)


def _fold_apostrophes(w: str) -> str:
    if w.endswith("'s"):
        w = w[:-2]
    return w.replace("'", "")


def _tokens(text: str, catenate: bool = True) -> tuple[list[str], list[int], list[int]]:
    """The words of ``text`` (lower-cased, possessive dropped, apostrophes removed) and
    their start and end offsets, as three lists."""
    norm = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    # NFKC can change lengths only for exotic characters; offsets are used for
    # highlighting, so fall back to the original text when lengths differ.
    if len(norm) != len(text):
        norm = text.translate(_APOSTROPHES)
    parts = _TOKEN_SPLIT.split(norm)
    if len(parts) == 1:
        return [], [], []
    ends = list(accumulate(map(len, parts)))
    # Lower-cased one token at a time, as a whole text's lower() can differ (a Greek
    # final sigma depends on what follows the word).
    words = list(map(str.lower, parts[1::2]))
    starts, stops = ends[0::2], ends[1::2]
    if "'" in norm:
        # Never empties a word: a token starts with a letter or digit, which stays.
        words = [_fold_apostrophes(w) if "'" in w else w for w in words]
    if catenate and ("-" in norm or "\u2010" in norm):
        return _catenated(norm, words, starts, stops)
    return words, starts, stops


def _catenated(
    norm: str, words: list[str], starts: list[int], stops: list[int]
) -> tuple[list[str], list[int], list[int]]:
    """The words with every hyphenated compound's parts also joined into one word, placed
    just before its first part and spanning the whole compound (starts stay ascending).

    Found from the hyphens between word characters, each looked up among the words' ends,
    not by a compound pattern over the text: that pattern tripled the tokenizer's time."""
    n = len(words)
    joined: list[int] = []  # i: words i and i + 1 are one hyphen apart
    for m in _JOIN.finditer(norm):
        h = m.start()
        i = bisect_left(stops, h)
        if i + 1 < n and stops[i] == h and starts[i + 1] == h + 1:
            joined.append(i)
    if not joined:
        return words, starts, stops
    out_w: list[str] = []
    out_s: list[int] = []
    out_e: list[int] = []
    done = 0
    k = 0
    while k < len(joined):
        lo = joined[k]
        hi = lo + 1  # the run's last word
        while k + 1 < len(joined) and joined[k + 1] == hi:
            k += 1
            hi += 1
        k += 1
        out_w += words[done:lo]
        out_s += starts[done:lo]
        out_e += stops[done:lo]
        out_w.append("".join(words[lo : hi + 1]))
        out_s.append(starts[lo])
        out_e.append(stops[hi])
        done = lo
    return out_w + words[done:], out_s + starts[done:], out_e + stops[done:]


def stable(text: str) -> bool:
    """Whether analysing ``text`` reads it NFKC-normalised at its own offsets (a span of it
    then analyses to the terms the whole gives over that span)."""
    return len(unicodedata.normalize("NFKC", text)) == len(text)


def analyze(text: str, stop: frozenset[str] = STOP_WORDS) -> list[str]:
    """Terms of ``text`` as the lexical index stores them."""
    words = _tokens(text)[0]
    return list(map(term, filterfalse(stop.__contains__, words)))


def analyze_spans(text: str) -> list[tuple[str, int, int]]:
    """``(term, start, end)`` for every indexed word of ``text`` (for highlighting)."""
    words, starts, stops = _tokens(text)
    keep = list(map(not_, map(STOP_WORDS.__contains__, words)))
    return list(zip(map(term, compress(words, keep)), compress(starts, keep), compress(stops, keep)))


def query_terms(question: str) -> list[str]:
    """Terms of a natural-language question: no query syntax, no question words.

    When a question is made only of question or stop words ("who is it?"), those
    words are kept rather than returning nothing.
    """
    words = _tokens(question, catenate=False)[0]
    kept = [w for w in words if w not in STOP_WORDS and w not in QUESTION_WORDS]
    if not kept:
        kept = [w for w in words if w not in STOP_WORDS] or words
    return [term(w) for w in kept]


def compounds(question: str) -> list[str]:
    """The question's hyphenated compounds joined, as index terms ("semi-final": "semifin")."""
    words = _tokens(question)[0]
    plain = set(_tokens(question, catenate=False)[0])
    return [term(w) for w in words if w not in plain]


def has_searchable_text(question: str) -> bool:
    """True when the question has at least one word (letters or digits)."""
    return bool(_tokens(question)[0])


def headline(title: str, text: str) -> str:
    """The article's own headline, or "" when its title was derived from its first sentence.

    Ingest derives a title from the opening sentence when a file has none (see
    ``search.ingest.derive_title``); indexing that again as a headline would only count
    the opening sentence twice.
    """
    t = " ".join((title or "").split())
    if not t:
        return ""
    head = " ".join(text[: len(t) + 400].split())
    stem = t[:-1].rstrip() if t.endswith("…") else t
    return "" if stem and stem in head else t
