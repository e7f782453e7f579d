"""Property tests (#14): no generated question or record raises anything but the package's
documented errors, on every face.

Documented: :class:`search.errors.SearchError` and its subtypes, and ``ValueError`` for a
bad argument at the API boundary. On HTTP: never a 5xx, always the JSON error shape. On
MCP: every request gets an answer with its id. On the CLI: never a traceback, exit 0, 1
or 2 with one line on stderr for an error.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
TOKEN = "prop-token"

# Any code point, surrogates included (Hypothesis leaves them out unless asked).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
WORDS = st.sampled_from(
    ["goal", "who", "scored", "the", "winner", "Messi", "?", "AND", "OR", "*", '"', "(", "-"]
)
QUESTIONS = st.one_of(
    st.text(ANY_CHAR, max_size=60),
    st.lists(WORDS, max_size=8).map(" ".join),
    st.tuples(st.lists(WORDS, max_size=4).map(" ".join), st.text(ANY_CHAR, max_size=5)).map(" ".join),
    st.text(st.sampled_from(" \t\n\r\x00\x0b\u00a0\u2028\ufeff\ud800\udfff"), max_size=20),
    st.integers(1990, 2010).map(lambda n: "x" * n),
)
MODES = st.sampled_from(["hybrid", "bm25", "dense"])
KS = st.one_of(st.integers(1, 100), st.integers(-5, 200))
FAST = settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from search.embed import HashEmbedder
    from search.engine import Engine

    path = tmp_path_factory.mktemp("props") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.index([SEEDS])
    return path


@pytest.fixture(scope="module")
def engine(seed_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from search.embed import HashEmbedder
    from search.engine import Engine

    idx = tmp_path_factory.mktemp("props-rw") / "idx"
    shutil.copytree(seed_index, idx)
    with Engine.open(idx, embedder=HashEmbedder()) as e:
        yield e


def _documented(e: BaseException) -> bool:
    from search.errors import SearchError

    return isinstance(e, (SearchError, ValueError)) and "\n" not in str(e).strip()


# -- Python API ---------------------------------------------------------------------------
@FAST
@given(q=QUESTIONS, k=KS, mode=MODES)
def test_api_questions_raise_only_documented_errors(engine: Any, q: str, k: int, mode: str) -> None:
    for call in (lambda: engine.search(q, k=k, mode=mode), lambda: engine.ask(q, k=k, mode=mode)):
        try:
            result = call()
        except Exception as e:
            assert _documented(e), f"{type(e).__name__}: {e}"
        else:
            json.dumps(result.to_dict() if hasattr(result, "to_dict") else [h.to_dict() for h in result])


RECORD_FIELD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(ANY_CHAR, max_size=40),
    st.lists(st.integers(), max_size=2),
)
RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(
            st.text(ANY_CHAR, min_size=1, max_size=30),
            st.integers(),
            st.sampled_from(["../x", "/abs", "a\\b", " "]),
        ),
        "title": RECORD_FIELD,
        "text": st.one_of(
            st.text(ANY_CHAR, max_size=300), st.lists(WORDS, min_size=1, max_size=40).map(" ".join)
        ),
        "source": RECORD_FIELD,
        "url": RECORD_FIELD,
        "published": RECORD_FIELD,
    },
)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(records=st.lists(RECORDS, min_size=1, max_size=4))
def test_api_records_raise_only_documented_errors(
    engine: Any, tmp_path_factory: Any, records: list[Any]
) -> None:
    # whoosh names segments with the global random, which Hypothesis seeds alike per example.
    random.seed(os.urandom(16))
    folder = tmp_path_factory.mktemp("rec")
    lines = [json.dumps(r, ensure_ascii=True) for r in records]
    (folder / "r.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        report = engine.add([folder / "r.jsonl"])
    except Exception as e:
        assert _documented(e), f"{type(e).__name__}: {e}"
        return
    for doc_id in report.added + report.replaced:
        assert engine.get_document(doc_id).id == doc_id
    engine.remove(report.added)


# -- HTTP ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def http(engine: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from search.server import create_app

    with TestClient(
        create_app(engine, token=TOKEN), base_url="http://127.0.0.1", raise_server_exceptions=True
    ) as c:
        yield c


def _http_ok(r: Any) -> None:
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        body = r.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body


@FAST
@given(q=QUESTIONS, k=KS, mode=MODES)
def test_http_questions_never_5xx(http: Any, q: str, k: int, mode: str) -> None:
    body = json.dumps({"question": q, "k": k, "mode": mode}, ensure_ascii=True)
    _http_ok(http.post("/ask", content=body, headers={"Content-Type": "application/json"}))
    safe = q.encode("utf-8", "surrogatepass")
    _http_ok(http.get("/search", params={"q": safe, "k": str(k), "mode": mode}))


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(record=RECORDS)
def test_http_records_never_5xx(http: Any, record: Any) -> None:
    random.seed(os.urandom(16))
    body = json.dumps(record, ensure_ascii=True)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    r = http.post("/documents", content=body, headers=headers)
    _http_ok(r)
    if r.status_code == 200 and isinstance(record.get("id"), (str, int)):
        doc = str(record["id"])
        _http_ok(http.delete(f"/documents/{doc}", headers=headers))


# -- MCP ----------------------------------------------------------------------------------
@pytest.mark.integration
@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["ask", "search", "get_document"]), QUESTIONS, MODES),
        min_size=1,
        max_size=8,
    )
)
def test_mcp_answers_every_generated_request(mcp_wire: Any, calls: list[tuple[str, str, str]]) -> None:
    for tool, q, mode in calls:
        mcp_wire.n += 1
        args = {"doc_id": q} if tool == "get_document" else {"question": q, "mode": mode}
        r = mcp_wire.call(mcp_wire.n, tool, args)
        assert r is not None, f"no answer to {tool} {q!r}"
        assert r["id"] == mcp_wire.n and ("result" in r or "error" in r), r


@pytest.fixture(scope="module")
def mcp_wire(seed_index: Path) -> Iterator[Any]:
    from mcp_wire import Wire

    w = Wire(seed_index)
    w.n = 0  # type: ignore[attr-defined]
    yield w
    assert w.close() == 0


# -- CLI ----------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(q=QUESTIONS, mode=MODES)
def test_cli_questions_never_traceback(seed_index: Path, q: str, mode: str) -> None:
    from click.testing import CliRunner

    from search.cli import cli

    r = CliRunner().invoke(
        cli,
        ["ask", "--mode", mode, "--index", str(seed_index), "--json", "--", q],
        env={"SEARCH_EMBEDDER": "hash"},
    )
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in (0, 1, 2), (r.exit_code, r.output)
    assert "Traceback" not in r.output
    if r.exit_code:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    else:
        json.loads(r.stdout)
