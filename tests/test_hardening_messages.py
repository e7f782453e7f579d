"""Schema errors on the HTTP and MCP faces are one short line naming the field and what it
takes (hardening): not pydantic's internal union paths, its regular expressions, nor
"1 validation error for ArticleBody"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

TOKEN = "tok-msg"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEXT = "Chelsea beat Portsmouth 3-0 at Stamford Bridge. Frank Lampard scored twice."


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Any]:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.types import Article

    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder()) as e:
        e.add(Article(id="a", title="Chelsea win", text=TEXT))
        yield e


@pytest.fixture
def client(engine: Any) -> Iterator[TestClient]:
    from search.server import create_app

    with TestClient(create_app(engine, token=TOKEN), base_url="http://127.0.0.1:8000") as c:
        yield c


def _message(r: Any) -> str:
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    return str(r.json()["error"]["message"])


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        (5, "filters"),
        ([1], "filters.0"),
        ({"category": None}, "filters.category"),
        ({"category": {"x": [1]}}, "filters.category.x"),
        ({"minute": {">=": [1]}}, "filters.minute.>="),
    ],
)
def test_a_bad_filters_body_names_the_field_and_the_forms(
    client: TestClient, filters: Any, field: str
) -> None:
    """Hardening: {"filters": 5} was "filters.dict[str,union[str,float,bool,list[str],
    dict[str,union[str,float]]]]: Input should be a valid dictionary; filters.list[str]: ...",
    and a bad value one such clause per type it is not (over 600 characters)."""
    msg = _message(client.post("/ask", json={"question": "who scored", "filters": filters}))
    assert msg.startswith(f"{field}: "), msg
    assert "[" not in msg.split(":")[0] and "union" not in msg and "Input should" not in msg, msg
    assert 'a list of "FIELD=VALUE" strings' in msg and len(msg) < 300 and msg.count(";") <= 1, msg


@pytest.mark.parametrize("doc_id", ["a\nb", "/etc/passwd", "a\\b"])
def test_a_bad_id_says_what_an_id_may_not_hold(client: TestClient, doc_id: str) -> None:
    """Hardening: the 422 quoted the id's regular expression ("String should match pattern
    '^[^/\\\\\\x00-\\x1f...'")."""
    msg = _message(client.post("/documents", json={"id": doc_id, "text": TEXT}, headers=AUTH))
    assert msg == "id: must not start with '/' nor hold a backslash or a control character", msg


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"source": "BBC " * 200}, "source: String should have at most 500 characters"),
        ({"published": "2" * 200}, "published: String should have at most 100 characters"),
        ({"url": "http://x/" + "a" * 5_000}, "url: String should have at most 4000 characters"),
        ({"id": "a\nb"}, "id: must not start with '/' nor hold a backslash or a control character"),
    ],
)
def test_mcp_add_document_names_the_field(engine: Any, args: dict[str, Any], says: str) -> None:
    """Hardening: each was the tool error "1 validation error for ArticleBody" (the first
    line of pydantic's message), which says neither the field nor the problem."""
    from search.mcp_server import build_server

    server = build_server(engine, allow_writes=True)

    async def call() -> Any:
        return await server.call_tool("add_document", {"id": "b", "text": TEXT, **args})

    r = anyio.run(call)
    assert r.is_error and [c.text for c in r.content] == [says]
    assert [d.id for d in engine.documents()] == ["a"]


@pytest.mark.parametrize(
    "filters",
    [
        {"since": "x" * 100_000},
        ["x" * 100_000],
        ["minute>=1", "y" * 100_000 + "=1"],
        {"z" * 100_000: "v"},
        ["minute>=" + "9" * 100_000 + "x"],
        {"flag": "n" * 100_000},
    ],
)
def test_a_filter_error_quotes_at_most_the_head_of_a_long_value(engine: Any, filters: Any) -> None:
    """Hardening: a 100,000-character since (over MCP, the CLI or the API; HTTP caps it at 64)
    or where clause came back whole in the one-line error."""
    from search.errors import FilterError
    from search.types import Article

    engine.add(Article(id="m", title="T", text=TEXT, metadata={"minute": 89, "flag": True}))
    with pytest.raises(FilterError) as got:
        engine.search("who scored", filters=filters)
    msg = str(got.value)
    assert len(msg) < 400 and "characters)" in msg, msg


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_half_life_that_is_no_number_says_so(client: TestClient, value: str) -> None:
    """Hardening: half_life=nan was "Input should be less than or equal to 100000"."""
    for r in (
        client.get("/ask", params={"q": "who scored", "half_life": value, "sort": "recency"}),
        client.post("/ask", json={"question": "who scored", "half_life": value, "sort": "recency"}),
    ):
        msg = _message(r)
        assert msg.endswith("half_life: Input should be a finite number"), msg


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        # was 422 "1: JSON decode error": a character position named as if it were a field
        (
            b"{not json",
            422,
            "body: not valid JSON at character 1 (Expecting property name enclosed in double quotes)",
        ),
        (b'{"question": "x",}', 422, "body: not valid JSON at character 17"),
        # were 400 "There was an error parsing the body"
        ('{"question": "wh\xf6 scored"}'.encode("latin-1"), 400, "the body could not be read as JSON"),
        (b'{"question": "x", "k": ' + b"9" * 5_000 + b"}", 400, "the body could not be read as JSON"),
        (
            b'{"question": "x", "filters": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
            400,
            "the body could not be read",
        ),
    ],
)
def test_a_body_that_is_not_json_says_so(client: TestClient, body: bytes, status: int, says: str) -> None:
    r = client.post("/ask", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    msg = r.json()["error"]["message"]
    assert msg.startswith(says) and "send" in msg, msg
