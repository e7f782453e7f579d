"""One short line for a schema error (pydantic's), as the HTTP face's 422 and MCP's
add_document give it: each bad field named as the client wrote it, and what it takes.

pydantic names a field of a union type by each type it tried
(``filters.dict[str,union[str,float,...]].minute.str``) and a pattern by its regular
expression; neither tells a client what to send. Imported by :mod:`search.server_errors`
and :mod:`search.mcp_server`, so it needs neither fastapi nor the SDK.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# A step pydantic adds to a location for the type it tried, not a key the client wrote.
_TYPE_STEP = re.compile(r"(str|int|float|bool|none|[a-z][a-z-]*\[.*\])")
_WHERE = ("body", "query", "path", "header")

#: What a field of a union type takes, said once however many of its types failed.
FORMS = {
    "filters": 'give {"FIELD": VALUE, ...} with each VALUE text, a number, true/false, a list of '
    'strings or {">=": VALUE} (also <=, >, <), or a list of "FIELD=VALUE" strings',
}
#: What a pattern stands for, instead of the pattern.
PATTERNS = {"id": "must not start with '/' nor hold a backslash or a control character"}


def _place(loc: Iterable[Any]) -> tuple[list[str], list[str]]:
    """Where an error is: ``query`` or ``path`` (a body's fields go unprefixed), and the
    field's steps as the client wrote them."""
    rest = list(loc)
    lead = [str(rest.pop(0))] if rest and rest[0] in _WHERE else []
    steps = [str(p) for p in rest if not (isinstance(p, str) and _TYPE_STEP.fullmatch(p))]
    return [x for x in lead if x != "body"], steps


def schema_message(errors: Iterable[Any]) -> str:
    """'query.k: Input should be less than or equal to 100; id: must not start with ...'."""
    said: dict[str, str] = {}
    unions: dict[str, list[str]] = {}  # a union field -> where in it each failure was
    for err in errors:
        lead, steps = _place(err.get("loc", ()))
        field = steps[0] if steps else ""
        if field in FORMS:
            unions.setdefault(field, []).append(".".join([*lead, *steps]))
            continue
        where = ".".join([*lead, *steps]) or "body"
        if err.get("type") == "json_invalid":  # its location is a character, not a field
            why = (err.get("ctx") or {}).get("error") or "malformed"
            said["body"] = (
                f"not valid JSON at character {steps[-1] if steps else '?'} ({why}): send one JSON object"
            )
        elif err.get("type") == "string_pattern_mismatch" and field in PATTERNS:
            said[where] = PATTERNS[field]
        else:
            said.setdefault(where, str(err.get("msg") or "invalid"))
    for field, places in unions.items():
        # The deepest place any of its types failed is the one the client got wrong.
        said[max(places, key=lambda w: (w.count("."), len(w)))] = FORMS[field]
    return "; ".join(f"{k}: {v}" for k, v in said.items()) or "the request is invalid"
