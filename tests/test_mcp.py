"""The MCP face, driven through the official SDK's stdio client against `search mcp`.

The server runs in a subprocess on the seed articles indexed with the fake HashEmbedder
(hidden ``--embedder hash`` option), so no test loads the real model.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from search.embed import HashEmbedder
    from search.engine import Engine

    path = tmp_path_factory.mktemp("mcp") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.index([SEEDS])
    return path


def _run(index: Path, *flags: str, body: Callable[[Any], Awaitable[None]]) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "search", "mcp", "--index", str(index), "--embedder", "hash", *flags],
        env={
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        cwd=ROOT,
    )

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(params, read_timeout_seconds=30) as client:
                await body(client)

    anyio.run(main)


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def test_read_only_tools(seed_index: Path) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine

    with Engine.open(seed_index, embedder=HashEmbedder()) as engine:
        want_ask = engine.ask("who scored the winner", k=3, facets=True).to_dict()
        want_search = engine.ask(
            "who scored the winner", k=4, mode="bm25", answer=False, facets=True
        ).to_dict()
        doc_id = want_ask["passages"][0]["doc_id"]
        want_doc = engine.get_document(doc_id)

    async def body(client: Any) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search", "ask", "get_document"}
        assert tools["ask"].input_schema["required"] == ["question"]
        assert tools["ask"].annotations.read_only_hint is True

        r = await client.call_tool("ask", {"question": "who scored the winner", "k": 3})
        assert not r.is_error
        got = dict(r.structured_content)
        got.pop("took_ms")
        assert got == {k: v for k, v in want_ask.items() if k != "took_ms"}
        text = _text(r)
        first = want_ask["passages"][0]
        assert f"[1] {first['title']}" in text
        assert f"({first['doc_id']}:{first['start']}-{first['end']})" in text
        assert "[1] " in text and "[3] " in text  # deeper passages appear only when the answer cites them

        r = await client.call_tool("search", {"question": "who scored the winner", "k": 4, "mode": "bm25"})
        assert not r.is_error and "answer" not in r.structured_content
        assert r.structured_content["passages"] == want_search["passages"]

        r = await client.call_tool("get_document", {"doc_id": doc_id})
        assert not r.is_error
        assert r.structured_content["text"] == want_doc.text and r.structured_content["passages"] >= 1
        assert want_doc.text in _text(r)

        # A user's mistake is a tool error with the engine's one-line message.
        r = await client.call_tool("ask", {"question": "   "})
        assert r.is_error and _text(r).startswith("the question is empty")
        r = await client.call_tool("search", {"question": "x" * 2001})
        assert r.is_error and "2,000" in _text(r) and "\n" not in _text(r)
        r = await client.call_tool("get_document", {"doc_id": "no/such/doc"})
        assert r.is_error and "no document 'no/such/doc'" in _text(r)
        r = await client.call_tool("ask", {"question": "who", "k": 101})
        assert r.is_error and "Traceback" not in _text(r)
        for bad in ({"question": "who", "k": 0}, {"question": "who", "mode": "fast"}, {"k": 3}):
            r = await client.call_tool("ask", bad)  # pydantic's text was lines and links
            assert r.is_error and "\n" not in _text(r) and "http" not in _text(r), _text(r)
            assert "invalid arguments: " in _text(r)
        r = await client.call_tool("add_document", {"id": "x", "title": "t", "text": "w"})
        assert r.is_error
        # Still serving after the errors.
        r = await client.call_tool("search", {"question": "final score", "k": 1})
        assert not r.is_error and len(r.structured_content["passages"]) == 1

    _run(seed_index, body=body)


def test_add_document_only_with_allow_writes(seed_index: Path, tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)

    async def body(client: Any) -> None:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"search", "ask", "get_document", "add_document"}
        doc = {
            "id": "2024/cup/final",
            "title": "Zebulon Quartermaine wins it",
            "text": "Zebulon Quartermaine volleyed the winner in the 93rd minute.",
            "source": "Test Gazette",
        }
        r = await client.call_tool("add_document", doc)
        assert not r.is_error, _text(r)
        assert r.structured_content["added"] == [doc["id"]]
        r = await client.call_tool("search", {"question": "Zebulon Quartermaine", "k": 1, "mode": "bm25"})
        hit = r.structured_content["passages"][0]
        assert hit["doc_id"] == doc["id"]
        assert "[1] Zebulon Quartermaine wins it, Test Gazette (2024/cup/final:" in _text(r)
        r = await client.call_tool("add_document", {**doc, "text": "Zebulon Quartermaine scored twice."})
        assert r.structured_content["replaced"] == [doc["id"]]
        r = await client.call_tool("add_document", {**doc, "id": "blank", "text": "   "})
        assert r.is_error and "empty text" in _text(r)

    _run(idx, "--allow-writes", body=body)
