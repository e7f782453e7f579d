"""The HTTP face: the real server in a subprocess on loopback, plus in-process checks.

The index is the seed articles built with the fake HashEmbedder, served with the hidden
``--embedder hash`` option, so no test loads the real model.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serving import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
TOKEN = "test-token-5f2c"
QUESTIONS = [
    "who scored the winner",
    "who scored the equaliser for Argentina",
    "what was the final score",
    "who kept goal for England",
    "where was the match played",
    "which minute was the winning goal",
]


def _strip_time(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "took_ms"}


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from search.embed import HashEmbedder
    from search.engine import Engine

    path = tmp_path_factory.mktemp("http") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.index([SEEDS])
    return path


# -- the engine is shared by the server's threads --------------------------------------
def test_one_engine_answers_concurrent_asks_like_sequential_ones(seed_index: Path, tmp_path: Path) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine

    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)
    with Engine.open(idx, embedder=HashEmbedder()) as engine:
        jobs = [(q, mode) for q in QUESTIONS for mode in ("hybrid", "bm25", "dense")]
        expected = {job: _strip_time(engine.ask(job[0], k=5, mode=job[1]).to_dict()) for job in jobs}
        results: dict[int, list[tuple[tuple[str, str], dict[str, Any]]]] = {}
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def worker(n: int) -> None:
            try:
                barrier.wait()
                out = []
                for i in range(len(jobs)):
                    job = jobs[(i + n) % len(jobs)]  # each thread starts elsewhere in the list
                    out.append((job, _strip_time(engine.ask(job[0], k=5, mode=job[1]).to_dict())))
                results[n] = out
            except BaseException as e:  # noqa: B036 - report any failure from the thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert len(results) == 8
        for out in results.values():
            for job, got in out:
                assert got == expected[job], job


def test_reads_keep_working_while_the_same_engine_writes(seed_index: Path, tmp_path: Path) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.types import Article

    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)
    with Engine.open(idx, embedder=HashEmbedder()) as engine:
        stop = threading.Event()
        errors: list[BaseException] = []
        answered = [0]

        def reader() -> None:
            try:
                while not stop.is_set():
                    for q in QUESTIONS:
                        assert engine.ask(q, k=5).hits
                        answered[0] += 1
            except BaseException as e:  # noqa: B036
                errors.append(e)
                stop.set()

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            for n in range(6):
                text = f"Late report number {n}. Substitute Lautaro Martinez headed home the winner."
                engine.add(Article(id="live/report", title=f"Report {n}", text=text))
        finally:
            stop.set()
            for t in threads:
                t.join(60)
        assert not errors, errors
        assert answered[0] > 0
        assert engine.get_document("live/report").title == "Report 5"


# -- the real server in a subprocess ---------------------------------------------------
class Server(ServerProcess):
    def __init__(self, index: Path, token: str | None, log: Path) -> None:
        super().__init__(index, log, token=token, extra=["--embedder", "hash"])


@pytest.fixture(scope="module")
def servers(seed_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Two servers on copies of the seed index: one with a token, one with writes refused."""
    base = tmp_path_factory.mktemp("servers")
    made: dict[str, Server] = {}
    try:
        for name, token in (("rw", TOKEN), ("ro", None)):
            idx = base / name
            shutil.copytree(seed_index, idx)
            made[name] = Server(idx, token, base / f"{name}.log")
        for s in made.values():  # both start at once; wait for each
            s.wait()
        yield made
    finally:
        for s in made.values():
            s.stop()


@pytest.fixture(scope="module")
def rw(servers: dict[str, Server]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=servers["rw"].url, timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def ro(servers: dict[str, Server]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=servers["ro"].url, timeout=30) as c:
        yield c


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _assert_error(
    r: httpx.Response, status: int, code: str | None = None, text: str | None = None
) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert "Traceback" not in r.text and 'File "' not in r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert "\n" not in body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code
    if text is not None:
        assert text in body["error"]["message"]
    return body["error"]


@pytest.mark.integration
def test_health_stats_and_docs(ro: httpx.Client) -> None:
    assert ro.get("/healthz").json() == {"status": "ok"}
    st = ro.get("/stats").json()
    assert st["documents"] == 5 and st["passages"] > 5
    assert "swagger" in ro.get("/docs").text.lower()
    paths = ro.get("/openapi.json").json()["paths"]
    assert {"/ask", "/search", "/documents", "/documents/{doc_id}", "/stats", "/healthz"} <= set(paths)


@pytest.mark.integration
def test_head_is_answered_as_get_without_a_body(ro: httpx.Client) -> None:
    """A load balancer probes with HEAD: the GET routes answer it with their status and
    headers and no body; a write route still refuses it."""
    for path in ("/healthz", "/stats", "/documents"):
        got, want = ro.head(path), ro.get(path)
        assert got.status_code == want.status_code == 200
        assert got.content == b"" and got.headers["content-type"] == want.headers["content-type"]
    assert ro.head("/nope").status_code == 404
    assert ro.head("/ask", params={"q": "who scored"}).status_code == 200


@pytest.mark.integration
def test_ask_returns_the_engines_dict(ro: httpx.Client, seed_index: Path) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine

    with Engine.open(seed_index, embedder=HashEmbedder()) as engine:
        for q, mode in [
            ("who scored the winner", "hybrid"),
            ("final score", "bm25"),
            ("the equaliser", "dense"),
        ]:
            want = _strip_time(engine.ask(q, k=3, mode=mode, facets=True).to_dict())
            got = ro.get("/ask", params={"q": q, "k": 3, "mode": mode})
            assert got.status_code == 200
            assert _strip_time(got.json()) == want
            posted = ro.post("/ask", json={"question": q, "k": 3, "mode": mode})
            assert _strip_time(posted.json()) == want
        want = _strip_time(engine.ask("who scored the winner", k=2, answer=False, facets=True).to_dict())
    got = ro.get("/search", params={"q": "who scored the winner", "k": 2}).json()
    assert _strip_time(got) == want
    assert set(got) == {"question", "mode", "took_ms", "passages", "facets"}
    assert [p["rank"] for p in got["passages"]] == [1, 2]


@pytest.mark.integration
def test_ask_defaults(ro: httpx.Client) -> None:
    body = ro.get("/ask", params={"q": "who scored the winner"}).json()
    # The top 5, plus any deeper passage the answer cites (so every citation resolves).
    assert body["mode"] == "hybrid" and [p["rank"] for p in body["passages"][:5]] == [1, 2, 3, 4, 5]
    cited = {s["passage_rank"] for s in body["answer"]["sentences"]}
    assert {p["rank"] for p in body["passages"][5:]} <= cited
    assert len(ro.get("/search", params={"q": "who scored the winner"}).json()["passages"]) == 10


@pytest.mark.integration
def test_document_lifecycle_with_slash_id(rw: httpx.Client) -> None:
    doc = {
        "id": "2024/cup/final-report",
        "title": "Zebulon Quartermaine wins it",
        "text": "Zebulon Quartermaine volleyed the winner in the 93rd minute at Wembley.",
        "source": "Test Gazette",
        "url": "https://example.org/final",
        "published": "2024-05-25",
    }
    r = rw.post("/documents", json=doc, headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["added"] == [doc["id"]] and r.json()["passages"] >= 1
    # Searchable by the very next request.
    hits = rw.get("/search", params={"q": "Zebulon Quartermaine", "k": 1, "mode": "bm25"}).json()["passages"]
    assert hits[0]["doc_id"] == doc["id"] and hits[0]["source"] == "Test Gazette"
    got = rw.get(f"/documents/{doc['id']}").json()
    assert {k: got[k] for k in doc} == doc
    assert got["passages"] >= 1 and "path" not in got
    # Same content: unchanged; new text: replaced.
    assert rw.post("/documents", json=doc, headers=AUTH).json()["unchanged"] == [doc["id"]]
    changed = dict(doc, text="Zebulon Quartermaine struck twice as the hosts came back.")
    assert rw.post("/documents", json=changed, headers=AUTH).json()["replaced"] == [doc["id"]]
    assert rw.get(f"/documents/{doc['id']}").json()["text"] == changed["text"]
    r = rw.delete(f"/documents/{doc['id']}", headers=AUTH)
    assert r.status_code == 200 and r.json()["removed"] == [doc["id"]]
    _assert_error(rw.get(f"/documents/{doc['id']}"), 404, "not_found", doc["id"])
    _assert_error(rw.delete(f"/documents/{doc['id']}", headers=AUTH), 404, "not_found")
    hits = rw.get("/search", params={"q": "Zebulon Quartermaine", "mode": "bm25"}).json()["passages"]
    assert all(h["doc_id"] != doc["id"] for h in hits)


@pytest.mark.integration
def test_bad_documents_are_422(rw: httpx.Client) -> None:
    _assert_error(
        rw.post("/documents", json={"id": "x", "title": "t"}, headers=AUTH), 422, "invalid_request", "text"
    )
    _assert_error(rw.post("/documents", json={"id": "", "title": "t", "text": "a"}, headers=AUTH), 422)
    _assert_error(rw.post("/documents", json={"id": "x", "title": "t", "text": "  \n "}, headers=AUTH), 422)
    _assert_error(
        rw.post("/documents", json={"id": "a\nb", "title": "t", "text": "words"}, headers=AUTH), 422
    )
    _assert_error(rw.post("/documents", json=["not", "an", "object"], headers=AUTH), 422)
    bad_json = rw.post("/documents", content=b"{nope", headers={**AUTH, "content-type": "application/json"})
    _assert_error(bad_json, 422)


@pytest.mark.integration
def test_writes_are_refused_without_a_configured_token(ro: httpx.Client, servers: dict[str, Server]) -> None:
    doc = {"id": "x", "title": "t", "text": "words"}
    for r in (
        ro.post("/documents", json=doc),
        ro.post("/documents", json=doc, headers=AUTH),
        ro.delete("/documents/x"),
    ):
        _assert_error(r, 403, "writes_disabled", "SEARCH_API_TOKEN")
    assert "writes are disabled" in servers["ro"].stderr()
    assert "writes are disabled" not in servers["rw"].stderr()


@pytest.mark.integration
def test_writes_need_the_right_bearer_token(rw: httpx.Client) -> None:
    doc = {"id": "auth-check", "title": "t", "text": "words"}
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
    ):
        for r in (
            rw.post("/documents", json=doc, headers=headers),
            rw.delete("/documents/seed", headers=headers),
        ):
            _assert_error(r, 401, "unauthorized")
            assert r.headers["www-authenticate"].startswith("Bearer")
    assert rw.get("/documents/auth-check").status_code == 404
    # Scheme is case-insensitive (RFC 7235).
    r = rw.post("/documents", json=doc, headers={"Authorization": f"bearer {TOKEN}"})
    assert r.status_code == 200
    assert rw.delete("/documents/auth-check", headers=AUTH).status_code == 200


@pytest.mark.integration
def test_question_and_k_limits(ro: httpx.Client) -> None:
    _assert_error(ro.get("/ask", params={"q": "x", "k": 101}), 422, "invalid_request", "k")
    _assert_error(ro.get("/search", params={"q": "x", "k": 0}), 422, "invalid_request", "k")
    _assert_error(ro.post("/ask", json={"question": "x", "k": 101}), 422, "invalid_request", "k")
    _assert_error(ro.get("/ask", params={"q": "x", "mode": "magic"}), 422, "invalid_request", "mode")
    _assert_error(ro.get("/ask"), 422, "invalid_request", "q")
    _assert_error(ro.post("/ask", json={"k": 3}), 422, "invalid_request", "question")
    for params in ({"q": ""}, {"q": "   "}, {"q": "?!"}):
        _assert_error(ro.get("/ask", params=params), 400, "bad_question")
    long_q = "who scored " * 200  # 2,200 characters
    _assert_error(ro.get("/ask", params={"q": long_q}), 400, "bad_question", "2,000")
    _assert_error(ro.post("/ask", json={"question": long_q}), 400, "bad_question", "2,000")


@pytest.mark.integration
def test_request_bodies_are_capped(rw: httpx.Client) -> None:
    big = {"id": "big", "title": "t", "text": "goal " * 250_000}  # ~1.25 MB
    _assert_error(rw.post("/documents", json=big, headers=AUTH), 413, "payload_too_large")
    _assert_error(rw.post("/ask", json={"question": "x" * 1_100_000}), 413, "payload_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        yield b'{"id": "big", "title": "t", "text": "'
        for _ in range(300):
            yield b"goal " * 1000
        yield b'"}'

    r = rw.post("/documents", content=chunks(), headers={**AUTH, "content-type": "application/json"})
    assert "content-length" not in r.request.headers
    _assert_error(r, 413, "payload_too_large")
    assert rw.get("/documents/big").status_code == 404
    # A chunked body under the cap goes through.
    small = json.dumps({"question": "who scored the winner", "k": 1}).encode()
    r = rw.post("/ask", content=iter([small[:10], small[10:]]), headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["passages"][0]["rank"] == 1


@pytest.mark.integration
def test_unknown_routes_and_methods_are_json(ro: httpx.Client) -> None:
    _assert_error(ro.get("/nope"), 404, "not_found")
    _assert_error(ro.put("/ask", json={}), 405, "method_not_allowed")


# -- in process: what a subprocess cannot easily provoke -------------------------------
@pytest.fixture
def app_engine(seed_index: Path, tmp_path: Path) -> Iterator[Any]:
    from search.embed import HashEmbedder
    from search.engine import Engine

    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)
    with Engine.open(idx, embedder=HashEmbedder()) as e:
        yield e


def test_a_crash_is_a_generic_500_and_is_logged(
    app_engine: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from fastapi.testclient import TestClient

    from search.server import create_app

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(app_engine, "ask", boom)
    with TestClient(create_app(app_engine, token=TOKEN), base_url="http://127.0.0.1") as client:
        r = client.get("/ask", params={"q": "who scored"})
    err = _assert_error(r, 500, "internal")
    assert "secret" not in err["message"]
    assert "secret internals" in caplog.text  # the log has it, the client does not


def test_a_busy_writer_is_503_with_retry_after(app_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from search.errors import WriterBusyError
    from search.server import create_app

    def busy(*a: Any, **k: Any) -> Any:
        raise WriterBusyError("another process is writing to idx: try again when it finishes")

    monkeypatch.setattr(app_engine, "add", busy)
    with TestClient(create_app(app_engine, token=TOKEN), base_url="http://127.0.0.1") as client:
        r = client.post("/documents", json={"id": "a", "title": "t", "text": "words"}, headers=AUTH)
    _assert_error(r, 503, "busy", "another process")
    assert int(r.headers["retry-after"]) > 0


def test_an_empty_token_means_writes_are_disabled(app_engine: Any) -> None:
    from fastapi.testclient import TestClient

    from search.server import create_app

    with TestClient(create_app(app_engine, token=""), base_url="http://127.0.0.1") as client:
        r = client.post(
            "/documents", json={"id": "a", "title": "t", "text": "w"}, headers={"Authorization": "Bearer "}
        )
    _assert_error(r, 403, "writes_disabled")


def test_create_app_opens_a_path_and_closes_it(seed_index: Path, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from search.server import create_app

    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)
    with TestClient(create_app(idx, embedder="hash"), base_url="http://127.0.0.1") as client:
        assert client.get("/ask", params={"q": "who scored the winner", "k": 1}).status_code == 200
