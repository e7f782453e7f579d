"""Short answers with quoted, cited support, and the places where the sources disagree.

No reading-comprehension model is available offline, so answers are extracted by rules
and decided by redundancy (AskMSR-style): several outlets cover one match, so a fact
stated in many articles, in sentences that match the question, wins the vote.

1. The question is typed (:func:`analyse_question`): person, team, club, place, minute,
   date, year, clock time, score, number, a quote ("what did X say") or a sentence
   ("how", "why", anything without a short form).
2. The retrieved passages are split into sentences (headings skipped); each sentence gets
   a relevance: the IDF-weighted share of the question's terms it holds (football
   synonyms count part, the previous sentence counts part, for "he"/"the midfielder").
3. Candidates of the asked type are pulled from the sentences (name spans with particles,
   "85th-minute", "second minute of added time", "Sunday, July 19", "2-1", "four", ...),
   those repeating the question are dropped, and each mention is scored:
   ``rank weight x relevance^2 x proximity to the question's words x type fit x
   event fit`` (a minute next to "equaliser" does not answer a question about the winner).
   Only some sentences may vote (otherwise a name frequent across the coverage, such as
   the match's star, wins questions nothing answers):
   a. a role the question names ("who was the referee", "Argentina's goalkeeper") must
      be shown next to the candidate: a role noun or synonym apposed to it ("England
      goalkeeper Jordan Pickford", "Kane, the England captain") or what the role does
      ("the ball past Emiliano Martinez" is a goalkeeper); an owner in the question
      must be stated for that person somewhere ("Argentina coach Lionel Scaloni") and
      never be another team;
   b. qualifiers in the question ("in the round of 16", "in 1986", "against Egypt")
      must be stated by the sentence (a stage: the one named nearest the candidate;
      "last 16" is "round of 16"), or by the sentence before it, and the winner must
      have a sentence stating them itself;
   c. "who did Spain beat": the sentence must say the verb or a synonym with no team
      other than Spain or the candidate beside it;
   d. for names, the winner's best sentence must hold 40% of all the question asks,
      counting words no passage holds ("who was booked": nothing says booked);
   e. a change of job the question asks about ("who did Wolves appoint", "who will be the
      new Wolves manager", "who did Chelsea sack", "who did Bolton sign") must be said by
      the candidate's sentence (a synonym will do), about the team asked (here, the
      sentence before or the article's lead); "X ... unveiled/appointed/sacked as the
      (new) <team> <role>" and "<team> appoint X as <role>" show the role; "caretaker",
      "interim", "former", "ex-" beside the role mean X is not the new holder, unless the
      question asks for one.
4. Mentions become clusters (a surname joins the full name it refers to; "stoppage time"
   joins "92nd minute"; "Sunday" joins "Sunday, July 19"; a stadium joins its city) and
   clusters vote: per article the best mention counts, summed over articles.
5. Conflicts: for single-valued facts (minute, date, score, number, year, place), an
   article whose own best answer is an incompatible value, and which does not state the
   winning value, is a dissenter; each dissenting value is shown with its citations.

Every answer text is a slice of the first cited sentence, and every sentence is an exact
span of its article (``article.text[start:end] == sentence.text``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .chunk import known_names, segment
from .text import LOOKS_AHEAD, STOP_WORDS, analyze_spans, query_terms, term
from .types import AnswerBlock, Conflict, Hit, Sentence

__all__ = ["Question", "analyse_question", "build_answer"]

# --- vocabulary ------------------------------------------------------------------------
# General football-report vocabulary (not tuned to any one question): words that say the
# same thing in match reports. A synonym match counts SYN_WEIGHT of an exact one.
SYN_WEIGHT = 0.6
# Votes are weighted by retrieval rank, mildly: a sentence's own evidence counts for more.
RANK_EXP = 0.3
# A name in the question is what the answer must be about: it weighs more than other words.
NAME_WEIGHT = 2.5
# An article backs the answer when it names it in a sentence at least this relevant (relative
# to the best sentence holding a candidate).
SUPPORT_R = 0.25
_SYNONYM_GROUPS = [
    "winner winning win won decider match-winner",
    "equaliser equalizer equalise equalize equalising equalizing equalised equalized level levelled leveled leveller",
    "goal score scored scoring strike header headed head net finish nodded volley",
    "manager coach boss",
    "captain skipper",
    "goalkeeper keeper goalie",
    "beat beaten past beyond defeat defeated dismantled thrashed overcame overcome comeback eliminate eliminated "
    "knock knocked edged routed",
    "lose lost loss defeat defeated beaten",
    "hit hitting struck strike thundered",
    "substitute introduced replaced",
    "shot strike effort drive",
    "assist assists set-up",
    "celebrate celebration celebrated celebrating",
    "call called describe described label labelled dub dubbed",
    "stadium venue ground arena",
    "club team side",
    "join joined signing signed sign move",
    "weather sweltering heat hot humid rain cold temperature",
    "famous legendary iconic memorable historic",
    "meeting meet meets encounter clash face faces facing showdown",
    "trophy title triumph",
    "game match fixture",
    "opener opening",
    "star player",
]
# Words every report is about: "the match" is the match covered, so these say little.
# "Face" is "play": who a team faced is said by "beat", "lost to", "against" as often.
_GENERIC = frozenset(
    term(w) for w in "match game play played playing fixture contest face faced facing".split()
)
# Words that name a goal event; a mention is tied to the nearest one in its sentence.
_EVENTS = {
    "win": "winner winning decider match-winner",
    "equal": "equaliser equalizer equalise equalize equalising equalizing equalised equalized levelled leveled leveller level",
    "open": "opener opening deadlock",
    "sub": "substitute introduced replaced",
    "card": "red yellow booked sent dismissed",
    "pen": "penalty spot-kick",
}
_SPEECH = frozenset(
    term(w)
    for w in (
        "say says said saying tell tells told add adds added admit admits admitted insist insisted explain "
        "explained declare declared claim claimed state stated reveal revealed describe described call called "
        "praise praised warn warned joke joked concede conceded acknowledge acknowledged reflect reflecting "
        "highlight highlighted reply replied respond responded react reacted"
    ).split()
)
_SAY_VERBS = "say|says|said|tell|told|think|thought|reveal|admit|claim|mean|add|added|call|called|describe|described|react|respond|feel|felt"
_ROLE_GROUPS = {
    "manager": "manager coach boss head-coach",
    "captain": "captain skipper",
    "goalkeeper": "goalkeeper keeper goalie",
    "striker": "striker forward",
    "defender": "defender centre-back full-back",
    "midfielder": "midfielder",
    "winger": "winger",
    "referee": "referee ref officiated officiating officiate",
    "substitute": "substitute",
    "scorer": "scorer goalscorer",
    "player": "player star",
}
_ROLE_OF = {w: g for g, ws in _ROLE_GROUPS.items() for w in ws.split()}
_ROLE_OF.update({w + "s": g for w, g in list(_ROLE_OF.items())})
_ROLE_NOUNS = frozenset(_ROLE_OF) | frozenset(
    "signing midfielder winger international veteran hero youngster teenager frontman chairman".split()
)
_PERSON_Q = frozenset(_ROLE_OF) | frozenset(
    "person people man men woman women name names celebrity celebrities guest guests spectator spectators "
    "pundit pundits official officials manager managers coaches players stars".split()
)
_TEAM_Q = frozenset(
    "team teams side sides country countries nation nations opponent opponents opposition".split()
)
_CLUB_Q = frozenset("club clubs".split())
_PLACE_Q = frozenset("stadium venue ground arena city town place country location".split())

_COUNTRIES = frozenset(
    x.lower()
    for x in (
        "Argentina|Brazil|Uruguay|Chile|Colombia|Ecuador|Peru|Paraguay|Bolivia|Venezuela|Mexico|USA|United States|"
        "Canada|Costa Rica|Panama|Jamaica|Honduras|Haiti|Curacao|England|Scotland|Wales|Northern Ireland|Ireland|"
        "France|Spain|Germany|Italy|Portugal|Netherlands|Holland|Belgium|Croatia|Serbia|Switzerland|Austria|Denmark|"
        "Sweden|Norway|Poland|Czech Republic|Czechia|Slovakia|Slovenia|Hungary|Romania|Ukraine|Russia|Turkey|"
        "Türkiye|Greece|Bosnia|Albania|Georgia|Iceland|Finland|Scotland|Morocco|Egypt|Senegal|Nigeria|Ghana|"
        "Cameroon|Algeria|Tunisia|Ivory Coast|Cote d'Ivoire|South Africa|Cape Verde|Mali|Japan|South Korea|Korea|"
        "Australia|Iran|Saudi Arabia|Qatar|Jordan|Uzbekistan|Iraq|New Zealand|China|India|Pakistan"
    ).split("|")
)
_DEMONYMS = frozenset(
    "argentine argentinian english french spanish german dutch swiss welsh scottish irish american brazilian "
    "portuguese italian croatian moroccan mexican japanese korean african european asian".split()
)
_CLUB_WORDS = frozenset(
    "fc cf afc united city athletic athletico atletico rovers wanderers hotspur real inter".split()
)
_PLACE_WORDS = frozenset("stadium arena park ground stadion estadio bowl field dome centre center".split())
_NOT_ANSWERS = frozenset(
    x.lower()
    for x in (
        "World Cup|FIFA|UEFA|AFP|AP|BBC|ESPN|Reuters|CNN|Sky|Premier League|Champions League|Europa League|"
        "La Liga|Serie A|Bundesliga|Euro|Euros|Copa America|Olympics|God|Three Lions|Read|Main Developments|"
        "Background|Key|Why It Matters|What's Next"
    ).split("|")
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = "january february march april may june july august september october november december".split()
_MONTH_RE = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_WD_RE = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_NUM_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_NUM_WORDS.update(
    {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
)
_ORD_WORDS = {
    w: i
    for i, w in enumerate("zeroth first second third fourth fifth sixth seventh eighth ninth tenth".split())
}
_PARTICLES = frozenset("de da di do dos das del della van von der den le la al el bin ter mac".split())
_OPEN_QUOTES = '“"‘«'

# --- text helpers ----------------------------------------------------------------------
_WORD = re.compile(r"[^\W_](?:[\w'’.-]*[^\W_])?", re.UNICODE)
_POSS = re.compile(r"['’]s?$")


@lru_cache(maxsize=100_000)
def _fold(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c)).lower().replace("’", "'")


@lru_cache(maxsize=100_000)
def _core(tok: str) -> str:
    tok = tok.rstrip(".")
    return _POSS.sub("", tok) if len(tok) > 2 else tok


_STEM_SYN: dict[str, frozenset[int]] = {}
for _i, _g in enumerate(_SYNONYM_GROUPS):
    for _w in _g.split():
        _STEM_SYN[term(_w)] = _STEM_SYN.get(term(_w), frozenset()) | {_i}
_EVENT_OF: dict[str, str] = {term(w): ev for ev, ws in _EVENTS.items() for w in ws.split()}


# --- the question ----------------------------------------------------------------------
@dataclass
class Question:
    """What :func:`analyse_question` reads from a question."""

    text: str
    kind: str  # person team club place time minute date year clock score number quote sentence
    terms: dict[str, float] = field(default_factory=dict)  # stem -> weight multiplier
    anchors: list[str] = field(default_factory=list)  # stems of names/numbers the answer must be about
    exclude: set[str] = field(default_factory=set)  # folded words a candidate must not repeat
    role: str | None = None
    team: str | None = None  # team named as the role's owner ("England manager")
    speaker: set[str] = field(default_factory=set)  # folded words of the speaker (quote questions)
    plural: bool = False
    unit: str | None = None  # count / distance / age / duration (number questions)
    focus: str | None = None  # stem of the counted noun ("how many goals")
    events: set[str] = field(default_factory=set)
    priors: dict[str, float] = field(default_factory=dict)  # time sub-kinds for "when"
    tense: str = ""  # "past" when the question asks about something done, "future" to come
    venue: bool | None = None  # place questions: a stadium (True), a city (False), either (None)
    subject: str | None = None  # the team doing what a team question asks ("who did Spain beat")
    quals: list[tuple[str, frozenset[str]]] = field(
        default_factory=list
    )  # ("stage"|"year"|"opponent", values)
    phrasal: dict[str, str] = field(default_factory=dict)  # verb stem -> its particle ("sent off")
    action: str | None = None  # a change of job the question asks about: appoint sack sign resign
    holder: bool = False  # asks for the new/appointed holder of the role (not a caretaker)


def _qwords(q: str) -> list[str]:
    return [m.group(0) for m in _WORD.finditer(q)]


def _question_terms(q: str) -> list[str]:
    """Content terms of the question, tokenised as sentences are ("play-off" stays one word)."""
    out: list[str] = []
    for w in _qwords(q):
        f = _fold(_core(w))
        if f in STOP_WORDS or f in _QW or f in _QUESTION_ONLY:
            continue
        out.extend(sorted(_word_stems(w)))
    return out or query_terms(q)


# Prepositions and the like that Lucene's stop list keeps: they locate, they do not inform.
_FUNCTION_WORDS = frozenset(
    term(w) for w in "against after before during between from over under up down out off his her its".split()
)
_QUESTION_ONLY = frozenset("whom whose been am should shall may might must please about any some".split())


def analyse_question(question: str) -> Question:
    """Type a question and collect what the answer extraction needs from it."""
    q = " ".join(question.split())
    words = _qwords(q)
    low = [_fold(_core(w)) for w in words]
    lq = " ".join(low)
    kind = "sentence"
    unit = None
    focus = None
    role = None
    quote_m = re.search(
        rf"\b(?:what|how) (?:did|does|do|has|had|have|was|is|would|will) (.+?) ({_SAY_VERBS})\b", lq
    )
    first = low[0] if low else ""
    if quote_m or re.search(r"\b(reaction|verdict|message|quote|quotes)\b", lq) and first in ("what", "how"):
        kind = "quote"
    elif re.search(r"\bhow (many|much)\b", lq):
        kind, unit = "number", "count"
        if re.search(r"\bhow much\b(?! (?:time|longer|more|of|added|injury|stoppage|extra)\b)", lq):
            unit = "money"  # "how much did Chelsea pay", "how much was he fined"
        m = re.search(
            r"\bhow (?:many|much) ((?:[\w'-]+ ){0,3}?)([\w'-]+)(?= (?:do|does|did|has|have|had|is|are|was|were|will|would|can)\b)",
            lq,
        )
        if m:
            focus = term(m.group(2))
        m = None if m else re.search(r"\bhow (?:many|much) (\w+)(?: (\w+))?", lq)
        if m:
            focus = (
                term(m.group(2))
                if m.group(2) and m.group(2) not in STOP_WORDS and m.group(1) in ("more",)
                else term(m.group(1))
            )
    elif re.search(r"\bhow (far|long|big|tall|old)\b|\bwhat age\b", lq):
        kind = "number"
        how = re.search(r"\bhow (far|long|big|tall|old)\b", lq)
        unit = {"far": "distance", "long": "distance", "old": "age"}.get(
            how.group(1) if how else "old", "count"
        )
    elif first in ("how", "why"):
        kind = "sentence"
    elif re.search(r"\b(what|which|at what|in what) minute\b", lq):
        kind = "minute"
    elif re.search(
        r"\b(what|which) (?:was |is |were )?(?:the )?(?:\w+ )?(score|scoreline|result)\b", lq
    ) or re.search(r"\bby what (score|margin)\b", lq):
        kind = "score"
    elif re.search(r"\b(what|which) (date|day)\b|\bon what (date|day)\b", lq):
        kind = "date"
    elif re.search(r"\b(what|which|in what) year\b", lq):
        kind = "year"
    elif re.search(r"\bwhat time\b", lq):
        kind = "time"
    elif first == "when" or re.search(r"\bwhen\b", lq[:20]):
        kind = "time"
    elif first == "where" or re.search(
        r"\b(which|what|in which|at which) (stadium|venue|ground|arena|city|town)\b", lq
    ):
        kind = "place"
    elif re.search(r"\b(which|what) (club|clubs)\b", lq):
        kind = "club"
    elif re.search(r"\b(which|what) (team|teams|side|country|countries|nation|opponents?)\b", lq):
        kind = "team"
    elif first in ("who", "whom", "whose") or re.search(r"\b(who|whom|whose)\b", lq):
        kind = "person"
        if re.search(
            r"\bwho\b.*\b(face|faces|facing|meet|meets|beat|beats|defeated|eliminated|knocked|lose|lost|against|play|plays|won|win)\b",
            lq,
        ) and not re.search(
            # what a player does, not a team: "who headed the winner against England"
            r"\b(scor\w*|goals?|assist\w*|captain|manager|coach|winner|equali[sz]\w*|head(?:ed|er)|"
            r"opener|in front|ahead|netted|fired|struck|tackle\w*|booked|sent off|saved?)\b",
            lq,
        ):
            kind = "team"
    elif re.search(r"\b(which|what) (\w+ )?(\w+)\b", lq):
        m = re.search(r"\b(?:which|what) (\w+)(?: (\w+))?", lq)
        nouns = [x for x in (m.groups() if m else ()) if x]
        if any(x in _PERSON_Q for x in nouns):
            kind = "person"
    # A role noun in a person question ("who is the England manager").
    if kind in ("person", "team"):
        for w in low:
            if w in _ROLE_OF:
                role = _ROLE_OF[w]
                break
        if role and kind == "team" and role not in ("player",):
            kind = "person"
    plural = bool(
        re.search(r"\b(which|what) (\w+ )?(players|stars|scorers|goalscorers|teams|men|names)\b", lq)
    ) or bool(re.search(r"\bwho (were|are)\b", lq))

    # Terms and their weights.
    qterms = _question_terms(q)
    if re.search(r"\b(come|came|coming|brought|bring) on\b", lq):
        qterms.append(term("substitute"))  # "when did X come on"
    terms: dict[str, float] = {}
    caps = {
        term(_fold(_core(w)))
        for i, w in enumerate(words)
        if w[:1].isupper() and (i > 0 or _fold(w) not in _QW)
    }
    for t in qterms:
        wgt = 1.0
        if t in _GENERIC:
            wgt = 0.0
        if t in _FUNCTION_WORDS:
            wgt = 0.3
        if t in caps:
            wgt = NAME_WEIGHT
        if kind == "quote" and t in _SPEECH and not (_STEM_SYN.get(t, frozenset()) & _STEM_SYN[term("call")]):
            wgt = 0.0
        if t == term("like") and re.search(r"\blike\W*$", lq):
            wgt = 0.0  # "what was the weather like"
        if kind in ("time", "minute", "date", "year", "clock") and t in (
            term("minute"),
            term("date"),
            term("day"),
            term("year"),
            term("time"),
        ):
            wgt = 0.0
        terms[t] = max(terms.get(t, 0.0), wgt)
    anchors = sorted(
        {
            term(_fold(_core(w)))
            for i, w in enumerate(words)
            if (w[:1].isupper() and i > 0 and _fold(w) not in _QW) or w[:1].isdigit()
        }
    )
    # Words a candidate must not repeat; the asked-for type ("which stadium") is not one.
    type_words = _PLACE_WORDS | _PLACE_Q | _TEAM_Q | _CLUB_Q | _CLUB_WORDS | frozenset(_ROLE_OF)
    exclude = {
        f
        for f in (_fold(_core(w)) for w in words)
        if f not in STOP_WORDS and f not in _QW and f not in type_words
    }
    team = None
    if role:
        for i, w in enumerate(low):
            owner = _team_of(w)
            if owner and any(x in _ROLE_OF for x in low[i + 1 : i + 3]):
                team = owner  # "England manager", "Argentina's goalkeeper", "Argentine keeper"
            elif w in _ROLE_OF and i + 2 < len(low) and low[i + 1] in ("of", "for") and _team_of(low[i + 2]):
                team = _team_of(low[i + 2])  # "the goalkeeper of Argentina"
    speaker: set[str] = set()
    if kind == "quote":
        seg = quote_m.group(1) if quote_m else lq
        speaker = {_fold(_core(w)) for w in _qwords(seg) if w not in STOP_WORDS and w not in _QW}
        orig = {_fold(_core(w)) for w in words if w[:1].isupper()}
        speaker = {w for w in speaker if w in orig} or speaker
        # Who speaks is scored by attribution (_speaker_fit); relevance is about the topic.
        for w in speaker:
            if term(w) in terms and len(terms) > 1:
                terms[term(w)] = 0.0
    events = {_EVENT_OF[t] for t in qterms if t in _EVENT_OF}
    priors: dict[str, float] = {}
    if kind == "time":
        priors = {"minute": 0.6, "date": 1.0, "year": 0.6, "clock": 0.8}
        if events or any(
            t in (term(w) for w in "goal scored score strike header assist concede lead sent".split())
            for t in qterms
        ):
            priors = {"minute": 1.0, "date": 0.3, "year": 0.2, "clock": 0.3}
        elif re.search(r"\b(last|since|first time|ever)\b", lq) or any(
            t in (term(w) for w in "trophy title tournament triumph won".split()) for t in qterms
        ):
            priors = {"minute": 0.1, "date": 0.4, "year": 1.0, "clock": 0.1}
        elif re.search(r"\b(is|will|does|do)\b", lq):
            priors = {"minute": 0.2, "date": 1.0, "year": 0.3, "clock": 0.8}
    # A stage named in a qualifier is checked as a stage ("last 16" is "round of 16"), not
    # as words.
    for a, b in _stage_spans(q):
        for w in _qwords(q[a:b]):
            for t in _word_stems(w):
                if t in terms:
                    terms[t] = 0.0
    # A verb and its particle ("sent off", "set up") say one thing: the verb matches only
    # with the particle after it, and the particle alone says nothing.
    phrasal = {}
    for m in re.finditer(r"\b([a-z][\w-]+) (off|out|on|up|down|away|back)\b", lq):
        if m.group(1) not in STOP_WORDS and m.group(1) not in _QW and term(m.group(1)) in terms:
            phrasal[term(m.group(1))] = m.group(2)
            if term(m.group(2)) in terms:
                terms[term(m.group(2))] = 0.0
    action = None
    holder = False
    if kind in ("person", "club"):
        am = _ACTION_Q.search(lq)
        if am and not (am.lastgroup == "appoint" and am.group(0) == "new" and not role):
            action = am.lastgroup
        # The new or appointed holder of a role: a caretaker, interim or former one is not it
        # (unless the question asks for one).
        holder = bool(role) and action == "appoint" and not any(w in _NOT_HOLDER for w in low)
    subject = None
    if kind == "team":
        m = re.search(r"\b(?:did|will|does|do|has|have|had|would|could|can)\s+(\w+(?: \w+)?)", lq)
        if m:
            subject = next((t for t in (m.group(1), m.group(1).split()[0]) if t in _COUNTRIES), None)
    return Question(
        text=q,
        kind=kind,
        subject=subject,
        quals=_qualifiers(q),
        phrasal=phrasal,
        action=action,
        holder=holder,
        terms=terms,
        anchors=anchors,
        exclude=exclude,
        role=role,
        team=team,
        speaker=speaker,
        plural=plural,
        unit=unit,
        focus=focus,
        events=events,
        priors=priors,
        venue=True
        if re.search(r"\b(stadium|venue|ground|arena)\b", lq)
        else False
        if re.search(r"\b(city|town|country)\b", lq)
        else None,
        tense="past"
        if re.search(r"\b(was|were|did|had)\b", lq) and not re.search(r"\b(will|is|are)\b", lq)
        else "future"
        if LOOKS_AHEAD.search(lq)
        else "",
    )


# --- qualifiers and owners -------------------------------------------------------------
# A demonym names its country's team ("the Argentine goalkeeper").
_DEMONYM_TEAM = {
    "argentine": "argentina",
    "argentinian": "argentina",
    "english": "england",
    "french": "france",
    "spanish": "spain",
    "german": "germany",
    "dutch": "netherlands",
    "swiss": "switzerland",
    "welsh": "wales",
    "scottish": "scotland",
    "irish": "ireland",
    "american": "usa",
    "brazilian": "brazil",
    "portuguese": "portugal",
    "italian": "italy",
    "croatian": "croatia",
    "moroccan": "morocco",
    "mexican": "mexico",
    "japanese": "japan",
    "egyptian": "egypt",
    "uruguayan": "uruguay",
}


def _team_of(w: str) -> str | None:
    """The country a folded word names as a team ("england", "argentina's", "argentine")."""
    w = _fold(_core(w))
    if w in _COUNTRIES:
        return w
    return _DEMONYM_TEAM.get(w)


# Stages of a tournament, said in several ways; "final" is not "semi-final" nor "the final
# whistle". A stage named in the question must be named by the sentence the answer comes from.
_NOT_FINAL = (
    r"whistle|minutes?|stages?|third|ball|seconds?|moments?|two|three|five|ten|half|half-hour|score|act|touch|"
    r"kick|day|word|result|push|period|quarter|phase|chapter|flourish|product|pass|throw|hurdle|say|\d+"
)
_STAGE_RES = [
    ("r32", re.compile(r"\bround[- ]of[- ](?:32|thirty-two)\b|\blast[- ](?:32|thirty-two)\b", re.I)),
    ("r16", re.compile(r"\bround[- ]of[- ](?:16|sixteen)\b|\blast[- ](?:16|sixteen)\b", re.I)),
    ("qf", re.compile(r"\bquarter[- ]?finals?\b|\blast[- ]eight\b", re.I)),
    ("sf", re.compile(r"\bsemi[- ]?finals?\b|\blast[- ]four\b", re.I)),
    ("3rd", re.compile(r"\bthird[- ]place\b|\bbronze[- ]medal (?:match|game)\b", re.I)),
    ("group", re.compile(r"\bgroup[- ](?:stage|phase|games?|matche?s?)\b|\bgroup [A-L]\b", re.I)),
    (
        "final",
        re.compile(rf"(?<![\w-])(?<!semi )(?<!quarter )finals?\b(?![- ](?:{_NOT_FINAL})\b)", re.I),
    ),
]


def _stage_spans(q: str) -> list[tuple[int, int]]:
    """Where the question's qualifier phrases name a stage."""
    out: list[tuple[int, int]] = []
    for m in _QUAL_PREP.finditer(q):
        for _k, rx in _STAGE_RES:
            out.extend((m.start(2) + x.start(), m.start(2) + x.end()) for x in rx.finditer(m.group(2)))
    return out


@lru_cache(maxsize=20_000)
def _stages(text: str) -> frozenset[str]:
    return frozenset(k for k, rx in _STAGE_RES if rx.search(text))


_QUAL_PREP = re.compile(
    r"\b(in|at|during|against|versus|vs\.?|v|over|before|after|since|from)\s+(.+?)(?=\s+\b(?:in|at|during|against|versus|vs|over|before|after|since|from|and|when|while|to)\b|[?.!,]|$)",
    re.I,
)


def _qualifiers(q: str) -> list[tuple[str, frozenset[str]]]:
    """Prepositional phrases that pick one event out of several: a stage ("in the round of
    16"), a year ("in 1986") or an opponent ("against Egypt")."""
    out: list[tuple[str, frozenset[str]]] = []
    for m in _QUAL_PREP.finditer(q):
        prep, phrase = m.group(1).lower(), m.group(2)
        if prep == "over" and re.search(r"\b(?:take|takes|took|taken|taking)\s+$", q[: m.start()], re.I):
            continue  # "take over as the new Valencia coach": a particle, not "beat ... over"
        st = _stages(phrase)
        if st:
            out.append(("stage", st))
            continue
        years = re.findall(r"\b(1[89]\d\d|20\d\d)\b", phrase)
        if years:
            out.append(("year", frozenset(years)))
            continue
        if prep in ("against", "versus", "vs", "vs.", "v", "over"):
            names = [w for w in _qwords(phrase) if w[:1].isupper()]
            if names:
                out.append(("opponent", frozenset(term(_fold(_core(w))) for w in names)))
    return out


@lru_cache(maxsize=20_000)
def _stage_spans_in(text: str) -> tuple[tuple[int, int, str], ...]:
    out: list[tuple[int, int, str]] = []
    for k, rx in _STAGE_RES:
        out.extend((x.start(), x.end(), k) for x in rx.finditer(text))
    return tuple(out)


def _qual_match(kind: str, vals: frozenset[str], s: Any, at: tuple[int, int] | None = None) -> bool:
    """Whether sentence ``s`` states the qualifier; for a stage and a mention at ``at``, the
    stage named nearest the mention ("defeat England in the semi-final, setting up a final")."""
    if kind == "stage":
        spans = _stage_spans_in(s.text)
        if at is None or len({k for _, _, k in spans}) < 2:
            return any(k in vals for _, _, k in spans)
        a, b = at
        near = min(spans, key=lambda x: max(x[0] - b, a - x[1], 0))
        return near[2] in vals
    if kind == "year":
        return any(v in s.text for v in vals)
    # An opponent the article's lead names is the match the whole report is about: its
    # sentence on the winner need not repeat "England" (an opponent named only further
    # down, "against Egypt in the round of 16", must be in the sentence or the one before).
    return all(v in s.pos_of for v in vals) or vals <= s.lead_terms


# A sentence whose verb another team does ("Argentina defeat England": who did Spain beat?).
AGENT_MISS = 0.0
# The answer's sentences must hold at least this share of all the question asks, counting
# words no passage holds (nothing says who was "booked": no name is the answer).
MIN_AREL = 0.4
_NAME_KINDS = frozenset(
    {"person", "team", "club"}
)  # other kinds are held to their type (a minute, a distance)
_COUNTRIES_SET = {c: c for c in _COUNTRIES}
# A sentence lacking a qualifier the question states says something about another event.
QUAL_MISS = 0.0
QUAL_PREV = 0.6


def _qual_fit(q: Question, s: Any, at: tuple[int, int] | None = None) -> float:
    fit = 1.0
    for kind, vals in q.quals:
        if _qual_match(kind, vals, s, at):
            continue
        if kind == "stage" and _stage_spans_in(s.text):
            fit *= QUAL_MISS  # it names another stage
        elif s.prev is not None and kind != "year" and _qual_match(kind, vals, s.prev):
            fit *= QUAL_PREV  # "Argentina's comeback ... The same stadium saw (it) against Egypt"
        else:
            fit *= QUAL_MISS
    return fit


_QW = frozenset(
    "who whom whose what which when where why how did does do was were is are the a an in on at of "
    "for to and has have had will would can could tell me".split()
)


# --- sentences -------------------------------------------------------------------------
@dataclass
class _Sent:
    text: str
    doc_id: str
    start: int  # in the article
    end: int
    rank: int
    pos: int  # order within the article's pool
    words: list[tuple[int, int]] = field(default_factory=list)  # word spans within text
    stems: list[frozenset[str]] = field(default_factory=list)  # index terms per word
    pos_of: dict[str, list[int]] = field(default_factory=dict)  # term -> word indexes
    group_pos: dict[int, list[int]] = field(default_factory=dict)  # synonym group -> word indexes
    rel: float = 0.0
    arel: float = 0.0  # share of all the question's weight, counting words no passage holds
    match_idx: list[int] = field(default_factory=list)  # word indexes matching the question
    lead: bool = False
    prev: _Sent | None = None
    lead_terms: set[str] = field(default_factory=set)  # terms of the article's pooled lead sentences


_SEG_CACHE: OrderedDict[tuple[str, int, int], list[tuple[int, int, bool]]] = OrderedDict()
_SEG_CACHE_MAX = 2048


def _units(key: tuple[str, int, int], text: str) -> list[tuple[int, int, bool]]:
    got = _SEG_CACHE.get(key)
    if got is None:
        got = [(u.start, u.end, u.heading) for u in segment(text)]
        _SEG_CACHE[key] = got
        if len(_SEG_CACHE) > _SEG_CACHE_MAX:
            _SEG_CACHE.popitem(last=False)
    else:
        _SEG_CACHE.move_to_end(key)
    return got


def _article_text(engine: Any, doc_id: str) -> str | None:
    get = getattr(engine, "get_document", None)
    if get is None:
        return None
    try:
        return str(get(doc_id).text)
    except Exception:  # a fake engine or a document removed since the search: use the passage
        return None


def _sentences(hits: list[Hit], engine: Any) -> list[_Sent]:
    """The sentences of the hits' passages, each once, with article offsets and the best rank."""
    by_key: dict[tuple[str, int], _Sent] = {}
    texts: dict[str, str | None] = {}
    for h in sorted(hits, key=lambda h: h.rank):
        p = h.passage
        if p.doc_id not in texts:
            texts[p.doc_id] = _article_text(engine, p.doc_id)
        art = texts[p.doc_id]
        if art is not None and art[p.start : p.end] == p.text:
            spans = [
                (s, e, hd)
                for s, e, hd in _units((p.doc_id, len(art), hash(art)), art)
                if s >= p.start and e <= p.end
            ]
            base, src = 0, art
        else:
            spans = [
                (s + p.start, e + p.start, hd)
                for s, e, hd in _units(("#" + p.id, len(p.text), hash(p.text)), p.text)
            ]
            base, src = p.start, p.text
        for a, b, heading in spans:
            if heading or (p.doc_id, a) in by_key:
                continue
            by_key[(p.doc_id, a)] = _Sent(
                text=src[a - base : b - base],
                doc_id=p.doc_id,
                start=a,
                end=b,
                rank=h.rank or 1,
                pos=0,
                lead=a < 400,
            )
    sents = sorted(by_key.values(), key=lambda x: (x.doc_id, x.start))
    prev: _Sent | None = None
    for i, sent in enumerate(sents):
        sent.pos = i
        if prev is not None and prev.doc_id == sent.doc_id:
            sent.prev = prev
        prev = sent
        sent.words, sent.stems, sent.pos_of, sent.group_pos = _tokens(sent.text)
    lead_terms: dict[str, set[str]] = {}
    for sent in sents:
        sent.lead_terms = lead_terms.setdefault(sent.doc_id, set())
        if sent.lead:
            sent.lead_terms.update(sent.pos_of)
    return sents


_TOK_CACHE: OrderedDict[str, Any] = OrderedDict()
_TOK_CACHE_MAX = 20_000


def _tokens(
    text: str,
) -> tuple[list[tuple[int, int]], list[frozenset[str]], dict[str, list[int]], dict[int, list[int]]]:
    """Word spans, terms per word, and where each term / synonym group occurs (cached)."""
    got = _TOK_CACHE.get(text)
    if got is not None:
        _TOK_CACHE.move_to_end(text)
        return got  # type: ignore[no-any-return]
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    stems = [_word_stems(text[a:b]) for a, b in words]
    pos_of: dict[str, list[int]] = defaultdict(list)
    group_pos: dict[int, list[int]] = defaultdict(list)
    for i, st in enumerate(stems):
        for t in st:
            pos_of[t].append(i)
            for g in _STEM_SYN.get(t, ()):
                group_pos[g].append(i)
    got = (words, stems, dict(pos_of), dict(group_pos))
    _TOK_CACHE[text] = got
    if len(_TOK_CACHE) > _TOK_CACHE_MAX:
        _TOK_CACHE.popitem(last=False)
    return got


@lru_cache(maxsize=100_000)
def _word_stems(w: str) -> frozenset[str]:
    """Index terms of one word; a lower-case hyphenated word ("semi-final", "play-off") is one
    term of its own, so it does not match "final" or "play"."""
    core = _core(w)
    if "-" in core and core[:1].islower() and not core[:1].isdigit():
        return frozenset((term(_fold(core)),))
    return frozenset(t for t, _, _ in analyze_spans(core))


def _syn_match(stems: frozenset[str], t: str) -> bool:
    g = _STEM_SYN.get(t, frozenset())
    return bool(g) and any(_STEM_SYN.get(x, frozenset()) & g for x in stems)


def _score_relevance(q: Question, sents: list[_Sent]) -> None:
    """Relevance of each sentence: the IDF-weighted share of the question's terms it holds."""
    n = len(sents) or 1
    df: dict[str, int] = defaultdict(int)
    for s in sents:
        for t in s.pos_of:
            df[t] += 1
    weights = {}
    for t, mult in q.terms.items():
        if mult > 0:
            weights[t] = mult * max(0.3, math.log((n + 1) / (df.get(t, 0) + 0.5)))
    groups = {t: _STEM_SYN.get(t, frozenset()) for t in weights}
    # A word found in no sentence (nor its synonyms) cannot tell sentences apart.
    seen_groups = {g for s in sents for g in s.group_pos}
    all_weights = weights
    weights = {t: w for t, w in weights.items() if df.get(t) or groups[t] & seen_groups} or weights
    # Question words that say one thing ("winning goal scored") count once: a concept is
    # a set of terms sharing a synonym group, worth its heaviest term.
    concept: dict[str, int] = {}
    for t in all_weights:
        concept[t] = next((concept[u] for u in concept if groups[t] & groups[u]), len(set(concept.values())))
    top_w: dict[int, float] = defaultdict(float)
    for t, w in weights.items():
        top_w[concept[t]] = max(top_w[concept[t]], w)
    total = sum(top_w.values())
    all_w: dict[int, float] = defaultdict(float)
    for t, w in all_weights.items():
        all_w[concept[t]] = max(all_w[concept[t]], w)
    # Qualifiers ("in the round of 16") are part of what is asked: they count towards the
    # absolute relevance as one concept each, weighted by how rare they are.
    qual_w: list[tuple[str, frozenset[str], float]] = []
    for kind, vals in q.quals:
        dfq = sum(1 for s in sents if _qual_match(kind, vals, s))
        qual_w.append((kind, vals, max(0.3, math.log((n + 1) / (dfq + 0.5)))))
    total_all = sum(all_w.values()) + sum(w for _, _, w in qual_w)
    for s in sents:
        got: dict[int, float] = defaultdict(float)
        idx: list[int] = []
        for t, w in weights.items():
            c = concept[t]
            hit = _term_hits(q, s, t)
            if hit:
                got[c] = max(got[c], w)
                idx.extend(hit)
                continue
            syn = [i for g in groups[t] for i in s.group_pos.get(g, ())]
            if syn:
                got[c] = max(got[c], w * SYN_WEIGHT)
                idx.extend(syn)
            if s.prev is not None and _term_hits(q, s.prev, t):
                got[c] = max(
                    got[c], w * (SYN_WEIGHT if syn else 0.0) + 0.4 * w * (1.0 - (SYN_WEIGHT if syn else 0.0))
                )
        s.match_idx = idx
        s.rel = min(1.0, sum(got.values()) / total) if total > 0 else 0.0
        qgot = sum(w for kind, vals, w in qual_w if _qual_match(kind, vals, s))
        s.arel = min(1.0, (sum(got.values()) + qgot) / total_all) if total_all > 0 else 0.0


def _term_hits(q: Question, s: _Sent, t: str) -> list[int]:
    hit = s.pos_of.get(t, [])
    if hit and t in q.phrasal:  # "sent off": "sent England home" does not say it
        p = q.phrasal[t]
        hit = [i for i in hit if any(s.text[x:y].lower() == p for x, y in s.words[i + 1 : i + 4])]
    return hit


# --- candidates ------------------------------------------------------------------------
@dataclass
class _Mention:
    kind: str  # person team club place minute date year clock score number
    surface: str  # exact slice of the sentence
    a: int  # start within the sentence
    b: int
    key: Any
    sent: _Sent
    vague: bool = False
    etype: str = ""  # for names: person team club place other
    unit: str = ""  # for numbers: the unit or counted noun that follows
    bonus: float = 1.0
    score: float = 0.0
    r: float = 0.0


def _word_index(s: _Sent, pos: int) -> int:
    for i, (_a, b) in enumerate(s.words):
        if b > pos:
            return i
    return len(s.words) - 1


_ORD = r"(\d{1,3})(?:st|nd|rd|th)"
_ORDW = r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d{1,2}(?:st|nd|rd|th))"
_MINUTE_PATTERNS = [
    (
        re.compile(
            rf"\b{_ORDW} minute of (?:(?:\w+) minutes? of )?(?:(first|second)[- ]half )?(?:added|stoppage|injury)[- ]time\b",
            re.I,
        ),
        "ordtime",
    ),
    (re.compile(r"(?<![\d-])(\d{2,3}) ?\+ ?(\d{1,2})\b(?:\s*(?:minutes?|mins?))?"), "plus"),
    (re.compile(rf"\b{_ORD}[- ]minute\b", re.I), "ord"),
    (re.compile(r"\bminute (\d{1,3})\b", re.I), "num"),
    (re.compile(r"\b(?:(first|second)[- ]half )?(?:added|stoppage|injury)[- ]time\b", re.I), "vague"),
]
_DAY_RE = re.compile(
    rf"\b(?P<wd>{_WD_RE})(?:['’]s)?(?:,? (?P<m1>{_MONTH_RE}) (?P<d1>\d{{1,2}})(?:st|nd|rd|th)?)?(?P<tz> \([^()]{{1,20}} time\))?",
)
_DATE_RE = re.compile(rf"\b(?P<m>{_MONTH_RE}) (?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (?P<y>\d{{4}}))?")
_DATE2_RE = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<m>{_MONTH_RE})(?: (?P<y>\d{{4}}))?\b"
)
_YEAR_RE = re.compile(r"(?<![\d+-])(1[89]\d\d|20\d\d)(?![\d-])")
_CLOCK_RE = re.compile(r"\b(\d{1,2})(?::(\d{2}))? ?(am|pm|a\.m\.|p\.m\.)|\b(\d{1,2}):(\d{2})\b", re.I)
_SCORE_RE = re.compile(r"(?<![\d.+-])(\d{1,2}) ?[-–] ?(\d{1,2})(?![\d-])")
_NUMBER_RE = re.compile(
    r"(?<![\w.+-])(\d+(?:[.,]\d+)?%?|"
    + "|".join(sorted(_NUM_WORDS, key=len, reverse=True))
    + r")(?:-[a-z]+(?:-[a-z]+)*)?(?![\w-])",
    re.I,
)
# "£15.8m", "$2 million", "€500,000": an amount of money, read whole (not "15").
_MONEY_RE = re.compile(r"(?<![\w.])([£$€])(\d+(?:[.,]\d+)*)(?:\s?(m|bn|k|million|billion)\b)?", re.I)
_MONEY_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}
_DIST_UNITS = frozenset("metre metres meter meters m yard yards yd foot feet km kilometre kilometres".split())


def _month_no(m: str) -> int:
    m = m.lower().rstrip(".")[:3]
    return [x[:3] for x in _MONTHS].index(m) + 1


def _time_mentions(s: _Sent) -> list[_Mention]:
    out: list[_Mention] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    t = s.text
    for rx, how in _MINUTE_PATTERNS:
        for m in rx.finditer(t):
            if not free(m.start(), m.end()):
                continue
            vague = False
            if how == "ordtime":
                w = m.group(1).lower()
                k = _ORD_WORDS.get(w) or int(re.sub(r"\D", "", w) or 0)
                base = 45 if (m.group(2) or "").lower() == "first" else 90
                key: Any = base + k
            elif how == "plus":
                key = int(m.group(1)) + int(m.group(2))
            elif how in ("ord", "num"):
                key = int(m.group(1))
            else:
                key = 45 if (m.group(1) or "").lower() == "first" else 90
                vague = True
            taken.append((m.start(), m.end()))
            out.append(_Mention("minute", m.group(0), m.start(), m.end(), key, s, vague=vague))
    for m in _DAY_RE.finditer(t):
        if not free(m.start(), m.end()):
            continue
        wd = m.group("wd").lower()
        md = (_month_no(m.group("m1")), int(m.group("d1"))) if m.group("m1") else None
        end = m.end()
        surface = t[m.start() : end]
        surface = re.sub(r"['’]s$", "", surface)
        taken.append((m.start(), end))
        out.append(
            _Mention("date", surface, m.start(), m.start() + len(surface), (wd, md), s, vague=md is None)
        )
    for rx in (_DATE_RE, _DATE2_RE):
        for m in rx.finditer(t):
            if not free(m.start(), m.end()):
                continue
            try:
                md = (_month_no(m.group("m")), int(m.group("d")))
            except ValueError:
                continue
            if not 1 <= md[1] <= 31:
                continue
            taken.append((m.start(), m.end()))
            out.append(_Mention("date", m.group(0), m.start(), m.end(), (None, md), s, vague=True))
    for m in _CLOCK_RE.finditer(t):
        if not free(m.start(), m.end()):
            continue
        if m.group(3):
            h = int(m.group(1)) % 12 + (12 if m.group(3).lower().startswith("p") else 0)
            mm = int(m.group(2) or 0)
        else:
            h, mm = int(m.group(4)), int(m.group(5))
            if h > 23 or mm > 59:
                continue
        taken.append((m.start(), m.end()))
        out.append(_Mention("clock", m.group(0), m.start(), m.end(), (h, mm), s))
    for m in _YEAR_RE.finditer(t):
        if free(m.start(), m.end()):
            taken.append((m.start(), m.end()))
            out.append(_Mention("year", m.group(0), m.start(), m.end(), int(m.group(1)), s))
    return out


def _score_mentions(s: _Sent) -> list[_Mention]:
    out = []
    for m in _SCORE_RE.finditer(s.text):
        a, b = int(m.group(1)), int(m.group(2))
        out.append(_Mention("score", m.group(0), m.start(), m.end(), (max(a, b), min(a, b)), s))
    return out


def _number_mentions(s: _Sent) -> list[_Mention]:
    out = []
    money: list[tuple[int, int]] = []
    for m in _MONEY_RE.finditer(s.text):
        try:
            amount = float(m.group(2).replace(",", ""))
        except ValueError:
            continue
        val = (m.group(1), amount * _MONEY_SCALE[(m.group(3) or "").lower()])
        out.append(_Mention("number", m.group(0), m.start(), m.end(), val, s, unit="money"))
        money.append((m.start(), m.end()))
    for m in _NUMBER_RE.finditer(s.text):
        if any(a <= m.start() < b for a, b in money):
            continue
        raw = m.group(1).lower()
        if _YEAR_RE.fullmatch(raw):
            continue
        val: Any
        if raw in _NUM_WORDS:
            val = _NUM_WORDS[raw]
            if raw == "one" and re.match(r"\s+of\b", s.text[m.end() :]):
                continue
        else:
            try:
                val = float(raw.rstrip("%").replace(",", ""))
            except ValueError:
                continue
        unit = m.group(0)[len(m.group(1)) :].lstrip("-").split("-")[0].lower()
        if not unit:
            nxt = (
                _WORD.match(s.text, m.end() + 1) if m.end() < len(s.text) and s.text[m.end()] == " " else None
            )
            unit = nxt.group(0).lower() if nxt else ""
        out.append(_Mention("number", m.group(0), m.start(), m.end(), val, s, unit=unit))
    return out


def _name_mentions(s: _Sent, known: set[str], lower_vocab: set[str]) -> list[_Mention]:
    """Capitalised name spans ("Lautaro Martinez", "Alexis Mac Allister", "Mercedes-Benz Stadium")."""
    t = s.text
    toks = [(a, b, t[a:b]) for a, b in s.words]
    out: list[_Mention] = []
    i = 0
    n = len(toks)
    while i < n:
        a, b, w = toks[i]
        if not w[:1].isupper():
            i += 1
            continue
        run = [i]
        j = i + 1
        while j < n:
            gap = t[toks[j - 1][1] : toks[j][0]]
            prev_w = toks[j - 1][2]
            if gap != " " or re.search(r"['’]s?$", prev_w):
                break
            wj = toks[j][2]
            if wj[:1].isupper():
                run.append(j)
            elif (
                wj.lower() in _PARTICLES
                and j + 1 < n
                and toks[j + 1][2][:1].isupper()
                and t[toks[j][1] : toks[j + 1][0]] == " "
            ):
                run.append(j)
            else:
                break
            j += 1
        # Drop leading words that are ordinary words capitalised by their position.
        k = 0
        while k < len(run):
            wi = run[k]
            core = _core(toks[wi][2])
            at_start = wi == 0 or t[: toks[wi][0]].rstrip().endswith(
                tuple(_OPEN_QUOTES) + (":", "—", "–", "-")
            )
            lowform = core.lower()
            common = lowform in STOP_WORDS or lowform in _QW or lowform in _ROLE_NOUNS or lowform in _STARTS
            if (
                common
                or (at_start and core not in known and lowform in lower_vocab)
                or (at_start and core not in known and len(run) == 1)
            ):
                k += 1
                continue
            break
        run = run[k:]
        while run and toks[run[-1]][2].lower() in _PARTICLES:
            run.pop()
        if run:
            sa = toks[run[0]][0]
            last = toks[run[-1]]
            core_last = _core(last[2])
            sb = last[0] + len(core_last)
            surface = t[sa:sb]
            folded = _fold(surface)
            if (
                folded not in _NOT_ANSWERS
                and not any(d in folded.split() for d in _WEEKDAYS)
                and not all(x in _MONTHS or x in _NOT_ANSWERS for x in folded.split())
            ):
                out.append(_Mention("name", surface, sa, sb, folded, s))
        i = j if j > i else i + 1
    return out


_STARTS = frozenset(
    "the a an for in on at after before with this that these those his her their its our my your he she it they we "
    "i you but and or as when while although though if by from despite during since until once then however "
    "meanwhile now so yet there here one two three both each every some many few most all no not having still "
    "even only just against under over between instead later earlier indeed former legendary three-time key "
    "what why how who where main read".split()
)


_SIDE_AFTER = re.compile(r"\s\d{1,2}-\d{1,2}\b")
_SIDE_BEFORE = re.compile(r"\b(?:beat|beating|defeated|defeating|thrashed|thrashing|edged)\s+$", re.I)


def _name_type(m: _Mention, known_places: set[str]) -> str:
    f = m.key
    words = f.split()
    if f in _COUNTRIES:
        return "country"
    if len(words) == 1 and (f in _DEMONYMS or f.endswith(("ian", "ese", "ish"))):
        return "other"  # "Argentine singing", "English fans"
    if words[-1] in _PLACE_WORDS or f in known_places:
        return "place"
    if words[-1] in _CLUB_WORDS or words[0] in _CLUB_WORDS:
        return "club"
    after = m.sent.text[m.b :].lstrip()
    nxt = _WORD.match(after)
    if nxt and nxt.group(0).lower() in _ROLE_NOUNS and len(words) == 1:
        return "club"
    if re.search(r"\bthe\s+$", m.sent.text[: m.a]):
        return "other"  # "the Swede", "the Scottish Cup", "the Gunners": not a person's name
    # "beating Dunfermline 3-1", "Celtic 2-0 Clyde": what a scoreline or a win names is a side
    if _SIDE_AFTER.match(m.sent.text, m.b) or _SIDE_BEFORE.search(m.sent.text[: m.a]):
        return "club"
    if f.isupper() or m.surface.isupper():
        return "place" if re.match(r"\s*\(", m.sent.text[m.b :]) else "other"
    return "person"


def _place_relations(ments: list[_Mention]) -> dict[str, set[str]]:
    """Places named together ("X Stadium in Y", "Y's X Stadium", "X, Y") belong to one place."""
    rel: dict[str, set[str]] = defaultdict(set)
    by_sent: dict[int, list[_Mention]] = defaultdict(list)
    for m in ments:
        by_sent[id(m.sent)].append(m)
    for ms in by_sent.values():
        ms.sort(key=lambda x: x.a)
        for x, y in zip(ms, ms[1:], strict=False):
            gap = x.sent.text[x.b : y.a]
            if re.fullmatch(r"(?: in|,)\s*", gap) or re.fullmatch(r"['’]s\s*", gap):
                rel[x.key].add(y.key)
                rel[y.key].add(x.key)
    return rel


# --- scoring ---------------------------------------------------------------------------
def _rank_weight(rank: int) -> float:
    return float(max(1, rank)) ** -RANK_EXP


def _proximity(m: _Mention) -> float:
    s = m.sent
    if not s.match_idx:
        return 0.5
    i0 = _word_index(s, m.a)
    i1 = _word_index(s, max(m.a, m.b - 1))
    d = min(0 if i0 <= i <= i1 else min(abs(i - i0), abs(i - i1)) for i in s.match_idx)
    return 1.0 / (1.0 + max(0, d - 1) / 3.0)


def _event_fit(q: Question, m: _Mention) -> float:
    if not q.events:
        return 1.0
    s = m.sent
    i0 = _word_index(s, m.a)
    best: tuple[int, str] | None = None
    for i, stems in enumerate(s.stems):
        evs = [_EVENT_OF[x] for x in stems if x in _EVENT_OF]
        if not evs:
            continue
        ev = evs[0]
        d = abs(i - i0)
        if d <= 6 and (best is None or d < best[0]):
            best = (d, ev)
    if best is None:
        return 1.0
    return 1.5 if best[1] in q.events else 0.15


# Roles a question may ask for by name ("who was the referee"): the answer must be shown in
# that role, by a role noun next to it ("England goalkeeper Jordan Pickford", "Kane, the
# England captain") or by what the role does ("the ball past Emiliano Martinez" is the
# goalkeeper). "player"/"star" name no particular role.
_UNREQUIRED_ROLES = frozenset({"player"})
# Roles whose owner is the one team a sentence names ("Argentina ..., with Fernandez
# equalising"); a goalkeeper beaten in a sentence naming one team is the other team's.
_SENTENCE_OWNER = frozenset({"scorer", "substitute"})
_SHOT = re.compile(
    r"\b(?:ball|shot|strike|header|effort|finish|drive|volley|penalty|spot-kick|free-kick|lob|chip|it)\b",
    re.I,
)
_IMPLIED_BEFORE = {
    "goalkeeper": re.compile(
        r"\b(?:past|beyond|around|beat|beating|beats|lobbed|lobbing|chipped|chipping|rounded|rounding)\s+$|"
        r"\b(?:save|saves)\s+(?:from|by)\s+$",
        re.I,
    ),
    "defender": re.compile(
        r"\b(?:in\s+front\s+of|ahead\s+of|between|away\s+from|the\s+better\s+of|above|outjumped|outmuscled|"
        r"shrugged\s+off|skipped\s+past|ghosted\s+past|burst\s+past|marker)\s+$",
        re.I,
    ),
}
_IMPLIED_AFTER = {
    "goalkeeper": re.compile(
        r"^(?:\s+(?:saved|saves|parried|palmed|tipped|clawed|denied|was\s+beaten|was\s+rounded)\b|"
        r"\s+made\s+(?:\w+\s+){0,2}saves?\b|['’]s?\s+(?:\w+\s+)?saves?\b)",
        re.I,
    ),
    "defender": re.compile(
        r"^(?:['’]s?\s+(?:\w+\s+)?(?:clearance|tackle|block|interception|challenge)\b|"
        r"\s+(?:cleared|blocked|tackled|intercepted|fouled|marked)\b)",
        re.I,
    ),
    "substitute": re.compile(
        r"^\s+(?:came|comes|come|coming)\s+(?:on|off\s+the\s+bench)\b|^\s+was\s+introduced\b", re.I
    ),
    "manager": re.compile(
        r"^['’]s?\s+(?:side|team|men|squad|tactics|charges|selection|substitutions?)\b", re.I
    ),
}
_APPOSED = frozenset(
    "is was as the a an his their its former veteran new stand-in regular first-choice".split()
)


# Changes of job a question can ask about ("who did Wolves appoint", "who will be the new
# Wolves manager", "who did Chelsea sack"): the candidate's sentence must say one of the
# words of that kind. Appointing, succeeding and being "new" are one kind.
_ACTIONS = {
    "appoint": r"appoint\w*|unveil\w*|nam(?:e|es|ed|ing)|install\w*|hir(?:e|es|ed|ing)|confirm\w*|new|"
    r"successor|succeed\w*|replac\w*|tak(?:e|es|en|ing) over|took over|takeover",
    "sack": r"sack\w*|dismiss\w*|fir(?:e|ed|ing)|ax(?:e|ed|ing)|relieved|oust\w*|lost his job|parted company",
    "sign": r"sign(?:s|ed|ing|ings)?|recruit\w*|captur\w*|bought|buy|buys|join\w*|snap\w* up|complet\w*|"
    r"transfer\w*|switch\w*|move|moved",
    "resign": r"resign\w*|quit\w*|step(?:s|ped)? down|walk(?:s|ed)? out|left|leaves?|leaving|depart\w*",
}
_ACTION_RE = {k: re.compile(rf"\b(?:{v})\b", re.I) for k, v in _ACTIONS.items()}
# The question word for each (its other words are what sentences say).
_ACTION_Q = re.compile(
    r"\b(?P<appoint>appoint\w*|unveil\w*|hire[sd]?|install\w*|succeed\w*|replac\w*|new|take over|took over)\b|"
    r"\b(?P<sack>sack\w*|fired|dismissed|axed)\b|"
    r"\b(?P<sign>sign|signs|signed|buy|bought|recruit\w*)\b|"
    r"\b(?P<resign>resign\w*|quit|quits|step(?:ped)? down)\b"
)
# Words that make someone not the (new) holder of a role: "caretaker boss Stuart Gray" is not
# the man Wolves appointed; "the former Wolves manager" is not the new one.
_NOT_HOLDER = frozenset(
    "caretaker interim acting former ex temporary provisional stand-in outgoing departing sacked "
    "assistant deputy".split()
)
# "Glenn Hoddle will be unveiled as the new Wolves manager", "Ranieri has been sacked as
# Valencia coach", "unveil Harry Redknapp as their new manager": the role after "as".
_AS_ROLE = re.compile(
    r"(?:['’]s?)?\s*(?P<verb>(?:[a-z][\w'’-]*\s+){0,4}?)as\s+(?P<apos>(?:(?:the|their|its|his|a|an|new|permanent|"
    r"full-time|"
    + "|".join(sorted(_NOT_HOLDER))
    + r"|[A-Z][\w'’.-]*|[\w-]+-year-old)\s+){0,4})(?P<role>[\w-]+)\b"
)


def _role_word(w: str) -> tuple[str | None, list[str]]:
    """The role a folded word names, and its qualifiers ("caretaker-boss", "ex-manager")."""
    if w in _ROLE_OF:
        return _ROLE_OF[w], []
    parts = w.split("-")
    if len(parts) > 1 and parts[-1] in _ROLE_OF:
        return _ROLE_OF[parts[-1]], parts[:-1]
    return None, []


def _not_holder(words: list[str], exclude: frozenset[str]) -> bool:
    for w in words:
        f = _fold(_core(w))
        if f in exclude or any(p in exclude for p in f.split("-")[:-1]):
            return True
    return False


def _role_evidence(
    role: str, m: _Mention, action: str | None = None, exclude: frozenset[str] = frozenset()
) -> tuple[int, str | None]:
    """How a sentence shows the mention in ``role``: 2 a role noun apposed to it, 1 what the
    role does, 0 not at all; and the team it names as the role's owner ("England captain").

    ``exclude``: qualifiers that say the mention is not the holder asked for ("caretaker
    boss X" when the question asks who was appointed). ``action``: the change of job the
    question asks about; "X ... as <role>" counts only when its verb says that change."""
    s = m.sent
    t = s.text
    i0 = _word_index(s, m.a)
    i1 = _word_index(s, max(m.a, m.b - 1))

    def low(i: int) -> str:
        return _fold(_core(t[s.words[i][0] : s.words[i][1]]))

    j = i0 - 1
    if j >= 0 and t[s.words[j][1] : m.a] in (" ", ", "):
        r, quals = _role_word(low(j))
        if r == role:
            if _not_holder(quals + [low(x) for x in range(max(0, j - 2), j)], exclude):
                return 0, None
            owner = _team_of(low(j - 1)) if j > 0 else None
            return 2, owner
    for k in range(i1 + 1, min(len(s.words), i1 + 6)):
        r, quals = _role_word(low(k))
        if r != role:
            continue
        between = t[m.b : s.words[k][0]]
        if not re.fullmatch(r"(?:['’]s)?\s*,?\s*(?:[\w'’-]+\s+){0,3}", between):
            break
        ws = [w for w in _qwords(between) if w not in ("s",)]
        if all(_fold(w) in _APPOSED or w[:1].isupper() or _team_of(w) for w in ws):
            if _not_holder(quals + ws, exclude):
                return 0, None
            owner = next((_team_of(w) for w in ws if _team_of(w)), None)
            return 2, owner
        break
    am = _AS_ROLE.match(t, m.b)
    if am and _role_word(_fold(am.group("role")))[0] == role:
        r, quals = _role_word(_fold(am.group("role")))
        apos = _qwords(am.group("apos"))
        before = " ".join(_qwords(t[max(0, m.a - 40) : m.a])[-3:])
        said = f"{before} {am.group('verb')} {am.group('apos')}"
        if not _not_holder(quals + apos, exclude) and (action is None or _ACTION_RE[action].search(said)):
            owner = next((_team_of(w) for w in apos if _team_of(w)), None)
            return 2, owner
    if role in ("scorer",):
        for i in range(max(0, i0 - 6), min(len(s.stems), i1 + 7)):
            if any(x in _EVENT_OF and _EVENT_OF[x] in ("win", "equal", "open") for x in s.stems[i]) or (
                _STEM_SYN.get(next(iter(s.stems[i]), ""), frozenset()) & _STEM_SYN[term("goal")]
            ):
                return 1, None
    before = _IMPLIED_BEFORE.get(role)
    if before is not None and before.search(t[: m.a]):
        shot = bool(_SHOT.search(t[max(0, m.a - 60) : m.a]))
        if role != "goalkeeper" or shot or "save" in t[max(0, m.a - 12) : m.a].lower():
            return 1, None
    after = _IMPLIED_AFTER.get(role)
    if after is not None and after.search(t[m.b :]):
        return 1, None
    return 0, None


def _role_fits(q: Question, ments: list[_Mention], resolve: dict[int, str]) -> dict[int, float]:
    """Per mention: how well it fills the role the question names (0: it does not).

    The role noun (or what the role does) must be shown next to the candidate; with an owner
    ("England's goalkeeper") the candidate must be shown somewhere as that team's, and never
    as another's."""
    if not q.role:
        return {}
    exclude = _NOT_HOLDER if q.holder else frozenset()
    ev = {id(m): _role_evidence(q.role, m, q.action, exclude) for m in ments if m.kind == "name"}
    owners: dict[str, set[str]] = defaultdict(set)
    for m in ments:
        if m.kind == "name" and ev[id(m)][1]:
            owners[resolve.get(id(m), m.key)].add(ev[id(m)][1])  # type: ignore[arg-type]
    if q.role in _SENTENCE_OWNER:  # "Argentina ..., with Enzo Fernandez equalising": Argentina's
        for m in ments:
            if m.kind == "name" and ev[id(m)][0] > 0:
                teams = {
                    w for w in (_fold(_core(m.sent.text[a:b])) for a, b in m.sent.words) if w in _COUNTRIES
                }
                if len(teams) == 1:
                    owners[resolve.get(id(m), m.key)].update(teams)
    required = q.role not in _UNREQUIRED_ROLES
    out: dict[int, float] = {}
    for m in ments:
        if m.kind != "name":
            continue
        level, _ = ev[id(m)]
        fit = {2: 2.5, 1: 1.0, 0: 0.0 if required else 1.0}[level]
        if q.team and fit > 0:
            known = owners.get(resolve.get(id(m), m.key), set())
            if q.team in known:
                fit *= 1.6
            elif known or required:
                fit = 0.0  # another team's, or nobody says whose
        out[id(m)] = fit
    return out


_TYPE_FIT = {
    "person": {"person": 1.0, "country": 0.1, "club": 0.2, "place": 0.05, "other": 0.02},
    "team": {"person": 0.15, "country": 1.0, "club": 1.0, "place": 0.1, "other": 0.02},
    "club": {"person": 0.1, "country": 0.15, "club": 1.0, "place": 0.1, "other": 0.02},
    "place": {"person": 0.05, "country": 0.6, "club": 0.1, "place": 1.0, "other": 0.02},
}


_PLACE_PREP = re.compile(r"\b(?:in|at|inside|outside)\s+(?:the\s+)?(?:[\w-]+\s+)?$", re.I)


def _place_hint(m: _Mention) -> float:
    """1 after "in"/"at" ("at the air-conditioned X"), else 0.5."""
    return 1.0 if _PLACE_PREP.search(m.sent.text[: m.a]) else 0.5


def _agent_fit(q: Question, m: _Mention) -> float:
    """ "Who did Spain beat": the sentence must say the verb (or a synonym), with Spain or the
    candidate on either side of it and no other team: in "Argentina ... defeat England ...,
    setting up a final with Spain" the defeat is Argentina's, and England's."""
    if not q.subject or m.kind != "name":
        return 1.0
    s = m.sent
    preds = [i for i in s.match_idx if not any(a in s.stems[i] for a in q.anchors)]
    if not preds:
        return AGENT_MISS if any(w > 0 and t not in q.anchors for t, w in q.terms.items()) else 1.0
    i0 = _word_index(s, m.a)
    i = min(preds, key=lambda p: abs(p - i0))  # the verb nearest the candidate
    mine = set(m.key.split())
    ok = {q.subject} | mine
    for rng in (range(i - 1, max(-1, i - 16), -1), range(i + 1, min(len(s.words), i + 13))):
        for j in rng:
            w = _fold(_core(s.text[s.words[j][0] : s.words[j][1]]))
            if w in _COUNTRIES:
                if w not in ok:
                    return AGENT_MISS
                break
    return 1.0


def _action_fit(q: Question, m: _Mention) -> float:
    """ "Who did Wolves appoint", "who did Chelsea sack": the candidate's sentence must say
    that change of job (or a synonym); "Rangers manager Alex McLeish" is nobody's appointment."""
    if not q.action or m.kind != "name":
        return 1.0
    s = m.sent
    if not _ACTION_RE[q.action].search(s.text):
        return 0.0
    # ... and be about whom the question names ("who did Liverpool sack": not "Dundee United
    # manager Ian McCall has won a reprieve from the sack"): here, in the sentence before or
    # in the article's lead ("Ranieri has been sacked as Valencia coach. ... Antonio Lopez
    # will take over as the new coach").
    if not q.anchors:
        return 1.0
    ctx = [s, s.prev] if s.prev is not None else [s]
    x = s.prev
    while x is not None:
        if x.lead:
            ctx.append(x)
        x = x.prev
    return 1.0 if any(a in c.pos_of for c in ctx for a in q.anchors) else 0.0


def _anchor_fit(q: Question, s: _Sent) -> float:
    """A sentence about none of the names the question is about (nor after one) says little."""
    if not q.anchors:
        return 1.0
    if any(a in s.pos_of for a in q.anchors):
        return 1.0
    if s.prev is not None and any(a in s.prev.pos_of for a in q.anchors):
        return 0.8
    return 0.3


# A question about what is to come ("which stadium will host the final"): a mention in a
# sentence that does not look ahead is about the match reported, not the next one.
FUTURE_MISS = 0.5


def _tense_fit(q: Question, m: _Mention) -> float:
    """The clause holding the mention ("..., who beat France on Tuesday, will ...")."""
    if q.tense == "future":
        # "where will the final be played": the preview, not the venue of the match reported
        return 1.0 if LOOKS_AHEAD.search(m.sent.text) else FUTURE_MISS
    if q.tense != "past":
        return 1.0
    a, b = _clause(m)
    return 0.35 if LOOKS_AHEAD.search(m.sent.text[a:b]) else 1.0


_CLAUSE_CUT = re.compile(r"[,;:—–]|\s-\s")


def _clause(m: _Mention) -> tuple[int, int]:
    """The comma/dash-delimited stretch of the sentence around a mention."""
    t = m.sent.text
    starts = [x.end() for x in _CLAUSE_CUT.finditer(t, 0, m.a)]
    nxt = _CLAUSE_CUT.search(t, m.b)
    return (starts[-1] if starts else 0), (nxt.start() if nxt else len(t))


def _about_question(q: Question, m: _Mention) -> bool:
    """The mention's own clause holds a question word, and no other goal event is nearer."""
    a, b = _clause(m)
    s = m.sent
    in_clause = any(a <= s.words[i][0] < b for i in s.match_idx)
    return in_clause and _proximity(m) >= 0.55 and _event_fit(q, m) >= 1.0


def _excluded(q: Question, m: _Mention) -> bool:
    if m.kind == "name":
        return any(w in q.exclude for w in re.split(r"[\s-]+", m.key))
    if m.kind == "number":
        return _fold(m.surface.split("-")[0]) in q.exclude
    if m.kind in ("year", "score", "clock"):
        return _fold(m.surface) in q.exclude
    if m.kind == "date":
        return any(w in q.exclude for w in _fold(m.surface).replace(",", " ").split())
    return False


# --- clusters --------------------------------------------------------------------------
@dataclass
class _Cluster:
    kind: str
    key: Any
    mentions: list[_Mention] = field(default_factory=list)
    score: float = 0.0
    per_article: dict[str, float] = field(default_factory=dict)

    def articles(self, min_r: float = 0.0) -> set[str]:
        return {m.sent.doc_id for m in self.mentions if m.r >= min_r}


def _compatible(kind: str, precise: Any, vague: Any) -> bool:
    if kind == "minute":
        return (precise > 90) if vague == 90 else (45 < precise <= 50)
    if kind == "date":
        wd, md = vague
        pwd, pmd = precise
        if wd is not None and pwd is not None and wd != pwd:
            return False
        if md is not None and pmd is not None and md != pmd:
            return False
        return True
    return precise == vague


def _precision(m: _Mention) -> int:
    if m.kind == "date":
        wd, md = m.key
        return (wd is not None) + 2 * (md is not None)
    return 0 if m.vague else 1


def _find(parent: dict[str, str], x: str) -> str:
    """Union-find root (places named together are one place)."""
    while parent.setdefault(x, x) != x:
        x = parent[x]
    return x


def _cluster(
    ments: list[_Mention], place_rel: dict[str, set[str]], resolve: dict[int, str]
) -> list[_Cluster]:
    clusters: dict[tuple[str, Any], _Cluster] = {}
    groups: dict[str, list[_Mention]] = defaultdict(list)
    for m in ments:
        groups[m.kind if m.kind != "name" else m.etype].append(m)
    for kind, ms in groups.items():
        if kind in ("minute", "date"):
            precise = sorted({m.key for m in ms if not m.vague}, key=str)
            if kind == "date":
                full = [m for m in ms if m.key[0] is not None and m.key[1] is not None]
                precise = sorted({m.key for m in full}, key=str)
            for m in ms:
                if m.key in precise:
                    clusters.setdefault((kind, m.key), _Cluster(kind, m.key)).mentions.append(m)
            for m in ms:
                if m.key in precise:
                    continue
                fits = [p for p in precise if _compatible(kind, p, m.key)]
                if len(fits) >= 1:
                    best = max(fits, key=lambda p: sum(x.score for x in clusters[(kind, p)].mentions))
                    clusters[(kind, best)].mentions.append(m)
                else:
                    clusters.setdefault((kind, m.key), _Cluster(kind, m.key)).mentions.append(m)
        elif kind == "place":
            parent: dict[str, str] = {}
            for a, bs in place_rel.items():
                for b in bs:
                    parent[_find(parent, a)] = _find(parent, b)
            for m in ms:
                root = _find(parent, m.key)
                clusters.setdefault((kind, root), _Cluster(kind, root)).mentions.append(m)
        elif kind in ("person", "country", "club", "other"):
            for m in ms:
                k = resolve.get(id(m), m.key)
                clusters.setdefault(("name", k), _Cluster(kind, k)).mentions.append(m)
        else:
            for m in ms:
                clusters.setdefault((kind, m.key), _Cluster(kind, m.key)).mentions.append(m)
    out = list(clusters.values())
    for c in out:
        per: dict[str, list[float]] = defaultdict(list)
        for m in c.mentions:
            per[m.sent.doc_id].append(m.score)
        c.per_article = {d: max(v) + 0.25 * (sum(v) - max(v)) for d, v in per.items()}
        c.score = sum(c.per_article.values())
    return sorted(out, key=lambda c: -c.score)


def _resolve_names(ments: list[_Mention]) -> dict[int, str]:
    """Map a lone surname ("Martinez") to the full name it refers to in its article."""
    full = [m for m in ments if m.kind == "name" and len(m.key.split()) > 1]
    out: dict[int, str] = {}
    by_last: dict[str, list[_Mention]] = defaultdict(list)
    for m in full:
        by_last[m.key.split()[-1]].append(m)
    for m in ments:
        if m.kind != "name" or len(m.key.split()) > 1 or m.key not in by_last:
            continue
        cands = by_last[m.key]
        same = [c for c in cands if c.sent.doc_id == m.sent.doc_id]
        before = [c for c in same if (c.sent.pos, c.a) < (m.sent.pos, m.a)]
        if before:
            out[id(m)] = max(before, key=lambda c: (c.sent.pos, c.a)).key
        elif len({c.key for c in same}) == 1:
            out[id(m)] = same[0].key
        elif len({c.key for c in cands}) == 1:
            out[id(m)] = cands[0].key
    return out


# --- the answer ------------------------------------------------------------------------
def _cite(s: _Sent) -> Sentence:
    return Sentence(text=s.text, doc_id=s.doc_id, start=s.start, end=s.end, passage_rank=s.rank)


def _supporting(best: _Mention, mentions: list[_Mention], limit: int = 5) -> list[Sentence]:
    """The display mention's sentence first, then the best sentence of each other article."""
    out = [_cite(best.sent)]
    seen = {best.sent.doc_id}
    for m in sorted(mentions, key=lambda x: -x.score):
        if m.sent.doc_id in seen or len(out) >= limit:
            continue
        seen.add(m.sent.doc_id)
        out.append(_cite(m.sent))
    return out


_SINGLE_VALUED = frozenset({"minute", "date", "year", "clock", "score", "number", "place"})


def build_answer(question: str, hits: list[Hit], engine: Any) -> AnswerBlock:
    """A short answer (or the best sentence), its cited support and the sources' conflicts."""
    articles = len({h.passage.doc_id for h in hits})
    if not hits or not question or not question.strip():
        return AnswerBlock(articles=articles)
    q = analyse_question(question)
    sents = _sentences(hits, engine)
    if not sents:
        return AnswerBlock(articles=articles)
    # A name or number the question is about, found in no passage: nothing here answers it.
    present: set[str] = set()
    for s in sents:
        present.update(s.pos_of)
    if any(a not in present for a in q.anchors):
        return AnswerBlock(articles=articles)
    _score_relevance(q, sents)
    if q.kind in ("quote", "sentence"):
        return _sentence_answer(q, sents, articles)
    block = _short_answer(q, sents, articles)
    if block is None:
        return _sentence_answer(q, sents, articles)
    return block


def _mentions_for(q: Question, sents: list[_Sent]) -> list[_Mention]:
    kinds = {
        "time": ("minute", "date", "year", "clock"),
        "minute": ("minute",),
        "date": ("date",),
        "year": ("year",),
        "clock": ("clock",),
    }
    out: list[_Mention] = []
    if q.kind in kinds:
        want = kinds[q.kind]
        for s in sents:
            out.extend(m for m in _time_mentions(s) if m.kind in want)
    elif q.kind == "score":
        for s in sents:
            out.extend(_score_mentions(s))
    elif q.kind == "number":
        for s in sents:
            found = [
                m for m in _number_mentions(s) if not _SCORE_RE.search(s.text[max(0, m.a - 1) : m.b + 3])
            ]
            out.extend(found)
    else:
        known: set[str] = set()
        lower_vocab: set[str] = set()
        for s in sents:
            k, v = _vocab(s.text)
            known |= k
            lower_vocab |= v
        for s in sents:
            out.extend(_name_mentions(s, known, lower_vocab))
    return out


@lru_cache(maxsize=20_000)
def _vocab(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Names a sentence uses mid-sentence, and its lower-case words (cached per sentence)."""
    return known_names(text), frozenset(re.findall(r"\b[a-z][\w-]*", text))


def _short_answer(q: Question, sents: list[_Sent], articles: int) -> AnswerBlock | None:
    ments = [m for m in _mentions_for(q, sents) if not _excluded(q, m)]
    if not ments:
        return None
    names = [m for m in ments if m.kind == "name"]
    known_places: set[str] = set()
    for m in names:
        if m.key.split()[-1] in _PLACE_WORDS:
            known_places.add(m.key)
    place_rel = _place_relations(names) if q.kind == "place" else {}
    for m in names:
        known_places.update(place_rel.get(m.key, ()) if m.key.split()[-1] in _PLACE_WORDS else ())
    # A name seen after "in"/"at" and never acting like a person ("Kane said") is a place.
    placed = {m.key for m in names if _place_hint(m) >= 1.0 and m.key not in _COUNTRIES}
    first = {m.key: m for m in reversed(names)}
    placed = {k for k in placed if not _looks_person(first[k], names)}
    for m in names:
        m.etype = _name_type(m, known_places)
        if m.etype in ("person", "other") and m.key in placed:
            m.etype = "place"
    resolve = _resolve_names(ments)
    role_fit = _role_fits(q, ments, resolve)
    # Only sentences that show the asked role and state the question's qualifiers vote: a
    # name frequent elsewhere in the coverage is no answer to what these sentences do not say.
    ments = [
        m
        for m in ments
        if role_fit.get(id(m), 1.0) > 0
        and _qual_fit(q, m.sent, (m.a, m.b)) > 0
        and _agent_fit(q, m) > 0
        and _action_fit(q, m) > 0
    ]
    if not ments:
        return None
    cand_sents = {id(m.sent): m.sent for m in ments}
    maxrel = max(s.rel for s in cand_sents.values())
    for m in ments:
        r = m.sent.rel / maxrel if maxrel > 0 else 1.0
        m.r = r
        typefit = 1.0
        if m.kind == "name":
            table = _TYPE_FIT.get(q.kind, _TYPE_FIT["person"])
            typefit = table.get(m.etype, 0.05)
            if q.kind == "person" and q.role and m.etype in ("club", "country"):
                typefit *= 0.1  # "which Celtic player": a side is no answer, "who won" may be
            if q.kind == "place":
                typefit *= _place_hint(m) ** (3 if m.etype == "country" else 1)
                venue = m.key.split()[-1] in _PLACE_WORDS
                if q.venue is not None:
                    typefit *= 1.5 if venue == q.venue else 0.6
        elif q.kind == "time":
            typefit = q.priors.get(m.kind, 0.5)
        elif m.kind == "number":
            typefit = _number_fit(q, m)
        lead = 1.3 if m.sent.lead else 1.0
        m.score = (
            _rank_weight(m.sent.rank)
            * (0.1 + 0.9 * r) ** 2
            * _proximity(m)
            * typefit
            * _event_fit(q, m)
            * role_fit.get(id(m), 1.0)
            * _qual_fit(q, m.sent, (m.a, m.b))
            * _agent_fit(q, m)
            * _tense_fit(q, m)
            * _anchor_fit(q, m.sent)
            * lead
        )
    ments = [m for m in ments if m.score > 0]
    if not ments:
        return None
    clusters = _cluster(ments, place_rel, resolve)
    if not clusters or clusters[0].score <= 0:
        return None
    win = clusters[0]
    # The answer must come from a sentence that states the question's qualifiers ("in the
    # round of 16") and says enough of what it asks.
    if q.kind in _NAME_KINDS and max(m.sent.arel for m in win.mentions) < MIN_AREL:
        return None
    if q.quals and not any(_qual_fit(q, m.sent, (m.a, m.b)) >= 1.0 for m in win.mentions):
        return None  # only the sentences around it state the qualifier
    best = _display_mention(win)
    if best.kind == "name" and q.kind in _TYPE_FIT and _TYPE_FIT[q.kind].get(best.etype, 0.05) < 0.1:
        return None  # the best is no name of the asked kind ("the Swede" for "which player")
    text = best.surface
    if q.plural and best.kind == "name":
        text = _join_plural(best, ments) or text
    if text not in best.sent.text:  # never say what the cited span does not
        return None
    support = len(win.articles(min_r=SUPPORT_R)) or 1
    conflicts = _conflicts(q, win, clusters) if win.kind in _SINGLE_VALUED else []
    good = [m for m in win.mentions if m.r >= SUPPORT_R] or win.mentions
    return AnswerBlock(
        text=text,
        sentences=_supporting(best, good),
        support=support,
        conflicts=conflicts,
        articles=articles,
    )


def _looks_person(m: _Mention, names: list[_Mention]) -> bool:
    """A name seen elsewhere as someone doing something ("Gordon fired", "Kane said")."""
    for o in names:
        if o.key != m.key:
            continue
        after = o.sent.text[o.b :].lstrip()
        nxt = _WORD.match(after)
        if nxt and term(nxt.group(0).lower()) in _SPEECH:
            return True
    return len(m.key.split()) == 2 and m.key.split()[0] not in (
        "new",
        "san",
        "los",
        "las",
        "st",
        "saint",
        "buenos",
        "rio",
    )


def _number_fit(q: Question, m: _Mention) -> float:
    unit = m.unit
    u = unit.lower().rstrip("s") if unit else ""
    if q.unit == "distance":
        return 1.0 if unit in _DIST_UNITS or u in _DIST_UNITS else 0.1
    if q.unit == "age":
        return 1.0 if "year" in m.surface.lower() or u == "year" else 0.2
    if q.unit == "money":
        return 1.5 if unit == "money" else 0.3
    if unit == "money":  # "how many goals": not "£80,000"
        return 0.3
    fit = 0.6
    if q.focus:
        s = m.sent
        i0 = _word_index(s, m.b - 1)
        for i in range(i0 + 1, min(len(s.stems), i0 + 4)):
            if q.focus in s.stems[i] or _syn_match(s.stems[i], q.focus):
                fit = 1.5
                break
        else:  # "his assist tally to 12"
            i_start = _word_index(s, m.a)
            for i in range(max(0, i_start - 4), i_start):
                if q.focus in s.stems[i] or _syn_match(s.stems[i], q.focus):
                    fit = 1.2
                    break
    if unit in ("minute", "minutes", "year-old", "years", "%"):
        fit *= 0.5
    return fit


def _display_mention(c: _Cluster) -> _Mention:
    """The mention to show: the most precise, best supported form (a full name over a surname)."""

    def form(m: _Mention) -> Any:
        return (m.kind, m.key) if m.kind in ("minute", "date") else _fold(m.surface)

    support: dict[Any, set[str]] = defaultdict(set)
    for m in c.mentions:
        support[form(m)].add(m.sent.doc_id)
        support[_fold(m.surface)].add(m.sent.doc_id)
    top = max(m.score for m in c.mentions)
    if c.kind == "place":  # a stadium or its city: whichever the question asked for
        return max(c.mentions, key=lambda m: m.score)

    def quality(m: _Mention) -> tuple[Any, ...]:
        precise = _precision(m)
        length = len(m.surface.split()) if m.kind == "name" else 0
        return (m.score >= 0.35 * top, precise, length, len(support[_fold(m.surface)]), m.score)

    return max(c.mentions, key=quality)


def _join_plural(best: _Mention, ments: list[_Mention]) -> str | None:
    same = sorted((m for m in ments if m.sent is best.sent and m.kind == "name"), key=lambda m: m.a)
    t = best.sent.text
    i = same.index(best) if best in same else -1
    if i < 0:
        return None
    a, b = best.a, best.b
    j = i
    while j + 1 < len(same) and re.fullmatch(r",? (?:and )?|, ", t[same[j].b : same[j + 1].a]):
        j += 1
        b = same[j].b
    k = i
    while k - 1 >= 0 and re.fullmatch(r",? (?:and )?|, ", t[same[k - 1].b : same[k].a]):
        k -= 1
        a = same[k].a
    return t[a:b] if (j > i or k < i) else None


def _conflicts(q: Question, win: _Cluster, clusters: list[_Cluster]) -> list[Conflict]:
    """Versions of the fact that some article states instead of the winning one."""
    rivals = [c for c in clusters[1:] if c.kind == win.kind]
    if not rivals:
        return []
    top_mention = max(m.score for m in win.mentions)
    out: list[Conflict] = []
    for c in rivals:
        dissent: list[_Mention] = []
        for doc, sc in c.per_article.items():
            mine = max((x for x in c.mentions if x.sent.doc_id == doc), key=lambda x: x.score)
            if win.per_article.get(doc, 0.0) >= 0.8 * sc:
                continue  # this article also states the winning version
            others = [o.per_article.get(doc, 0.0) for o in rivals if o is not c]
            if others and max(others) > sc:
                continue  # not this article's own answer
            if mine.r < 0.6 or mine.sent.rel < 0.5 or mine.score < 0.1 * top_mention:
                continue
            if not _about_question(q, mine):
                continue
            if mine.kind == "number" and _number_fit(q, mine) < 1.0:
                continue
            dissent.append(mine)
        if dissent:
            best = max(dissent, key=lambda m: m.score)
            out.append(
                Conflict(
                    text=best.surface,
                    support=len({m.sent.doc_id for m in dissent}),
                    sentences=_supporting(best, dissent),
                )
            )
    return out


# --- sentence answers ------------------------------------------------------------------
_QUOTE_SPAN = re.compile(r"“[^”]*”|\"[^\"]*\"")


def _outside_quotes(t: str) -> tuple[str, bool]:
    """The text outside quotation marks, and whether the sentence quotes anyone."""
    quoted = bool(re.search(r"[“”\"]", t))
    out = _QUOTE_SPAN.sub(" ", t)
    if "”" in out and "“" not in out:  # the tail of a quote that began earlier
        out = out[out.rindex("”") + 1 :]
    if "“" in out:
        out = out[: out.index("“")]
    if out.count('"') == 1:
        # A lone straight quote opens a quotation ('Santini said: "My time ...') when it
        # follows a space or the start; it closes one begun earlier ('... leave." he said')
        # when it follows the quoted words. The speaker is on the other side.
        i = out.index('"')
        closing = i > 0 and not out[i - 1].isspace() and (i + 1 == len(out) or out[i + 1].isspace())
        out = out[i + 1 :] if closing else out[:i]
    return out, quoted


def _names_in(t: str) -> set[str]:
    """Capitalised words that could name a speaker ("the German coach said" names nobody)."""
    return {
        f
        for f in (_fold(_core(w)) for w in _qwords(t) if w[:1].isupper())
        if f not in _DEMONYMS and f not in _ROLE_NOUNS and f not in _STARTS_CAP
    }


def _speaker_fit(q: Question, s: _Sent) -> float:
    outside, quoted = _outside_quotes(s.text)
    if not q.speaker:
        return 1.3 if quoted else 1.0
    outside_words = {_fold(_core(w)) for w in _qwords(outside)}
    speaks = any(term(w) in _SPEECH for w in outside_words)
    if outside_words & q.speaker:
        # A quotation with no speech verb ("resigned for "personal reasons"") is a phrase
        # the writer quotes, not something the speaker is reported to have said.
        return (2.2 if speaks else 1.4) if quoted else (1.4 if speaks else 1.0)
    named = _names_in(outside) - _STARTS_CAP
    if quoted and named and speaks:
        return 0.3  # somebody else said it
    # "he said", or a quote continuing: the speaker is named in the sentences before.
    ctx = s.prev
    for _ in range(3):
        if ctx is None:
            break
        if _names_in(_outside_quotes(ctx.text)[0]) & q.speaker:
            return 1.7 if quoted else 1.0
        if (
            _names_in(_outside_quotes(ctx.text)[0]) - _STARTS_CAP - q.speaker
            and ctx.text[:1] not in _OPEN_QUOTES
        ):
            break
        ctx = ctx.prev
    return 1.0 if quoted else 0.7


_STARTS_CAP = frozenset(w for w in _STARTS) | frozenset(("the", "he", "she", "it", "they", "we"))


def _share_quote_relevance(sents: list[_Sent]) -> None:
    """Sentences of one quotation ("“A. B. C,” X said.") share the best relevance among them,
    so the one that names the speaker can carry the quote's topic."""
    i = 0
    while i < len(sents):
        s = sents[i]
        t = s.text
        if t[:1] in '“"' and t.count("”") + t.count('"') < (2 if t[:1] == '"' else 1):
            j = i + 1
            while j < len(sents) and j - i < 8 and sents[j].doc_id == s.doc_id:
                if "”" in sents[j].text or '"' in sents[j].text:
                    break
                j += 1
            block = sents[i : min(j + 1, len(sents))]
            block = [b for b in block if b.doc_id == s.doc_id]
            best = max(b.rel for b in block)
            for b in block:
                b.rel = max(b.rel, 0.9 * best)
            i += len(block)
        else:
            i += 1


def _sentence_answer(q: Question, sents: list[_Sent], articles: int) -> AnswerBlock:
    scored: list[tuple[float, _Sent]] = []
    if q.kind == "quote":
        _share_quote_relevance(sents)
    for s in sents:
        if len(s.words) < 4:
            continue
        sc = _rank_weight(s.rank) * s.rel
        if q.kind == "quote":
            # What someone said is a quotation attributed to them; the topic words help.
            quoted = bool(re.search(r"[“”\"]", s.text))
            sc = _rank_weight(s.rank) * (0.25 + s.rel) * _speaker_fit(q, s) * (1.0 if quoted else 0.5)
        scored.append((sc, s))
    if not scored:
        return AnswerBlock(articles=articles)
    scored.sort(key=lambda x: -x[0])
    top, best = scored[0]
    if top <= 0 or (best.rel < 0.2 and not (q.kind == "quote" and q.speaker)):
        return AnswerBlock(articles=articles)
    # Support: articles with a sentence saying much the same (shared content words).
    mine = set(best.pos_of)
    sentences = [_cite(best)]
    docs = {best.doc_id}
    for sc, s in scored[1:]:
        if s.doc_id in docs or sc < 0.5 * top:
            continue
        theirs = set(s.pos_of)
        if mine and len(mine & theirs) / max(1, min(len(mine), len(theirs))) >= 0.5:
            docs.add(s.doc_id)
            sentences.append(_cite(s))
    return AnswerBlock(text=None, sentences=sentences, support=len(docs), articles=articles)
