"""Retrieval (and answer) evaluation on question files in the dev.jsonl format.

Each line: ``id``, ``question``, ``answers`` (acceptable short answers) and
``evidence`` (substrings of the articles). A passage is relevant when, after curly
quotes become straight, white space is collapsed and case is lowered, it contains
any evidence string. A question with neither answers nor evidence is one no article
answers: it is right when no short answer is given, and left out of the retrieval
figures. ``short_precision`` is the share of short answers given that are right,
``short_coverage`` the share of questions that get one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import IngestError, QueryError

_QUOTES = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2032": "'", "\u2033": '"'}
)
_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _WS.sub(" ", text.translate(_QUOTES)).strip().lower()


@dataclass
class Question:
    id: str
    question: str
    answers: list[str]
    evidence: list[str]


def _strings(d: dict[str, Any], key: str) -> list[str]:
    """``answers`` or ``evidence``: a list of strings (absent is none). A lone string is not
    taken letter by letter, nor a number or null as the text "5" or "None"."""
    v = d.get(key, [])
    if isinstance(v, str):
        shown = json.dumps(v) if len(v) <= 40 else '"..."'
        raise _FieldError(f'"{key}" is a string, not a list of strings: write "{key}": [{shown}]')
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _FieldError(f'"{key}" must be a list of strings, like "{key}": ["Martinez"]')
    return v


_NEEDS = "id, question, answers, evidence"


def _record(line: str) -> dict[str, Any]:
    """One line's JSON object, or :class:`_FieldError` saying what the line is instead."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise _FieldError(f"not a question record: malformed JSON ({e.msg} at column {e.colno})") from None
    except ValueError:  # int() refuses a literal of over 4,300 digits
        raise _FieldError("not a question record: a number of over 4,300 digits") from None
    if not isinstance(d, dict):
        kinds = {list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}
        kind = kinds.get(type(d), "null")
        raise _FieldError(
            f"not a question record: expected a JSON object, got {kind}; each line needs {_NEEDS}"
        )
    return d


class _FieldError(Exception):
    """A question record's field of the wrong shape (its message names the field)."""


def read_questions(path: str | Path) -> list[Question]:
    """Read a question file; a malformed line is an error naming the file and line."""
    p = Path(path)
    if p.is_dir():
        raise IngestError(f"{p}: is a folder, not a question file: give the path of a .jsonl question file")
    if p.exists() and not p.is_file():
        raise IngestError(f"{p}: not a regular file (a device, FIFO or socket): give a .jsonl question file")
    if not p.is_file():
        raise IngestError(f"{p}: no such file: give the path of a .jsonl question file")
    from .engine import Engine

    out: list[Question] = []
    try:
        f = open(p, encoding="utf-8")
    except OSError as e:  # not ours to read (permissions)
        raise IngestError(f"{p}: cannot read the file ({e.strerror or e}): check it") from None
    with f:
        try:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    d = _record(line)
                    q = Question(
                        id=str(d["id"]),
                        question=d["question"],
                        answers=_strings(d, "answers"),
                        evidence=_strings(d, "evidence"),
                    )
                except _FieldError as e:
                    raise IngestError(f"{p}:{n}: {e}") from None
                except KeyError as e:
                    raise IngestError(
                        f'{p}:{n}: not a question record: no "{e.args[0]}"; each line needs {_NEEDS}'
                    ) from None
                except (ValueError, TypeError, AttributeError, RecursionError) as e:
                    why = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
                    raise IngestError(
                        f"{p}:{n}: not a question record ({why}): each line needs {_NEEDS}"
                    ) from None
                try:
                    Engine.check_question(q.question)
                except QueryError as e:
                    raise IngestError(f"{p}:{n}: question {q.id}: {e}") from None
                out.append(q)
        except UnicodeDecodeError:  # read in blocks: which line is not known
            raise IngestError(
                f"{p}: not UTF-8 text: give a .jsonl question file (one JSON object a line)"
            ) from None
        except OSError as e:  # the read itself failed (EIO)
            raise IngestError(f"{p}: cannot read the file ({e.strerror or e}): check it") from None
    if not out:
        raise IngestError(f"{p}: no questions found")
    return out


def _answered(got: str | None, answers: list[str]) -> bool:
    """Right when an accepted answer is in it (quotes, case and spacing aside)."""
    return got is not None and any(normalise(x) in normalise(got) for x in answers)


def relevant(text: str, evidence: list[str]) -> bool:
    t = normalise(text)
    return any(normalise(e) in t for e in evidence if e.strip())


@dataclass
class EvalResult:
    mode: str
    n: int
    hit1: float
    recall5: float
    mrr10: float
    answer1: float | None = None
    short_precision: float | None = None  # of the short answers given, the share that are right
    short_coverage: float | None = None  # the share of questions that get a short answer
    misses: list[str] = field(default_factory=list)
    answer_misses: list[str] = field(default_factory=list)
    per_question: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "mode": self.mode,
            "n": self.n,
            "hit@1": round(self.hit1, 4),
            "recall@5": round(self.recall5, 4),
            "mrr@10": round(self.mrr10, 4),
            "misses": self.misses,
        }
        if self.answer1 is not None:
            d["answer@1"] = round(self.answer1, 4)
            d["short_precision"] = None if self.short_precision is None else round(self.short_precision, 4)
            d["short_coverage"] = round(self.short_coverage or 0.0, 4)
        return d


def evaluate(
    engine: Any, questions: list[Question], mode: str = "hybrid", k: int = 10, answers: bool = True
) -> EvalResult:
    """Run every question through ``engine`` and score the ranking (and the answer)."""
    hit1 = rec5 = mrr = ans = 0.0
    shorts = short_right = 0
    retrieval_n = len(questions)
    misses: list[str] = []
    answer_misses: list[str] = []
    rows: list[dict[str, Any]] = []
    depth = max(k, 10)
    for q in questions:
        result = engine.ask(q.question, k=depth, mode=mode, answer=answers)
        if not q.evidence:  # a question no article answers: scored for its answer only
            retrieval_n -= 1
            rel: list[bool] = []
        else:
            rel = [relevant(h.passage.text, q.evidence) for h in result.hits[:depth]]
        first = next((i for i, r in enumerate(rel) if r), None)
        if first == 0:
            hit1 += 1
        if first is not None and first < 5:
            rec5 += 1
        elif q.evidence:
            misses.append(q.id)
        if first is not None and first < 10:
            mrr += 1.0 / (first + 1)
        got = None
        if answers and result.answer is not None:
            a = result.answer
            got = a.text if a.text else (a.sentences[0].text if a.sentences else None)
            ok = _answered(got, q.answers) if q.answers else not a.text  # none to give: give none
            ans += ok
            if a.text:
                shorts += 1
                short_right += ok
            if not ok:
                answer_misses.append(q.id)
        rows.append(
            {
                "id": q.id,
                "first_relevant": first,
                "answer": got,
                "short": bool(got and result.answer and result.answer.text),
            }
        )
    n = len(questions)
    rn = max(retrieval_n, 1)
    return EvalResult(
        mode=mode,
        n=n,
        hit1=hit1 / rn,
        recall5=rec5 / rn,
        mrr10=mrr / rn,
        answer1=(ans / n) if answers else None,
        short_precision=(short_right / shorts) if answers and shorts else None,
        short_coverage=(shorts / n) if answers else None,
        misses=misses,
        answer_misses=answer_misses,
        per_question=rows,
    )
