"""`search mcp` answers every line (#14): malformed lines get their JSON-RPC 2.0 error
(-32700 / -32600, id null), and a question holding a lone surrogate gets a tool error
for its id instead of leaving the client waiting forever.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_wire import MALFORMED, Wire

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from search.embed import HashEmbedder
    from search.engine import Engine

    path = tmp_path_factory.mktemp("mcpwire") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.index([SEEDS])
    return path


def _id_of(line: bytes) -> object:
    """The id a malformed line carries, when it can be read (JSON-RPC: else null)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj.get("id") if isinstance(obj, dict) and isinstance(obj.get("id"), (int, str)) else None


def test_every_malformed_line_gets_its_json_rpc_error(seed_index: Path) -> None:
    wire = Wire(seed_index)
    try:
        for line, code in MALFORMED:
            wire.send(line)
            r = wire.reply()
            assert r is not None, f"no answer to {line[:40]!r}"
            assert r["jsonrpc"] == "2.0" and r["error"]["code"] == code, (line[:40], r)
            assert r["id"] in (None, _id_of(line)), r
        # Still serving, and in order.
        r = wire.call(99, "search", {"question": "who scored the winner", "k": 1})
        assert r is not None and r["id"] == 99 and not r["result"].get("isError"), r
    finally:
        assert wire.close() == 0


@pytest.mark.parametrize("tool", ["ask", "search"])
def test_a_lone_surrogate_in_a_question_is_answered_with_a_tool_error(seed_index: Path, tool: str) -> None:
    wire = Wire(seed_index)
    try:
        for i, q in enumerate(["goal \ud800 goal", "\udcff", "who scored \udfff the winner"], 1):
            r = wire.call(i, tool, {"question": q, "mode": "dense"})
            assert r is not None, f"no answer to {q!r}"
            assert r["id"] == i and r["result"]["isError"] is True, r
            assert "lone surrogate" in r["result"]["content"][0]["text"]
        r = wire.call(10, "get_document", {"doc_id": "doc\ud800"})
        assert r is not None and r["id"] == 10 and r["result"]["isError"] is True, r
    finally:
        assert wire.close() == 0


def test_errors_name_no_server_path(seed_index: Path) -> None:
    wire = Wire(seed_index)
    try:
        r = wire.call(1, "get_document", {"doc_id": "no/such/doc"})
        assert r is not None and r["result"]["isError"]
        text = r["result"]["content"][0]["text"]
        assert str(seed_index) not in text and str(seed_index.resolve()) not in text
    finally:
        wire.close()
