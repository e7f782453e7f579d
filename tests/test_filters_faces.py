"""Filters on every face: the CLI, HTTP, MCP; the issue's acceptance query; metadata at ingest (#16)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from search.cli import cli
from search.dates import html_published, iso_utc, timestamp
from search.embed import HashEmbedder
from search.engine import Engine
from search.ingest import load

ROOT = Path(__file__).resolve().parent.parent
BBC = Path(os.environ.get("BBC_JSONL", ROOT.parent / "shared" / "data" / "bbcsport" / "bbcsport.jsonl"))


def no_entities(texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    return [[] for _ in texts]


@pytest.fixture(scope="module")
def bbc_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seeds + the 737 BBC Sport articles, each given a date (the originals carry none):
    article i of each category on day i after 2004-09-01, so about half fall in 2005."""
    if not BBC.is_file():
        pytest.skip(f"{BBC} is not here (set BBC_JSONL)")
    base = tmp_path_factory.mktemp("bbc")
    (base / "bbc").mkdir()
    lines = []
    for line in BBC.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        n = int(rec["id"].rsplit("/", 1)[1])
        day = 1 + n % 28
        month = 9 + n // 28  # 2004-09 onwards
        year, month = 2004 + (month - 1) // 12, (month - 1) % 12 + 1
        rec["published"] = f"{year}-{month:02d}-{day:02d}"
        lines.append(json.dumps(rec))
    (base / "bbc" / "bbcsport.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    idx = base / "idx"
    with Engine.open(idx, create=True, embedder=HashEmbedder(), tagger=no_entities) as e:
        e.index([ROOT / "seeds", base / "bbc"])
    return idx


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("k", [5, 40])
def test_the_issues_query_returns_only_matching_passages_and_k_of_them(
    bbc_index: Path, monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    args = ["ask", "who scored", "--where", "category=football", "--since", "2005-01-01", "--json"]
    r = _cli(*args, "-k", str(k), "--index", str(bbc_index))
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    since = timestamp("2005-01-01")
    with Engine.open(bbc_index, embedder=HashEmbedder()) as e:
        ok = {
            d.id
            for d in e.documents()
            if (d.metadata or {}).get("category") == "football" and (d.published_ts or 0) >= since
        }
        hits = e.search("who scored", k=100, filters={"category": "football", "since": "2005-01-01"})
    assert ok and all(p["doc_id"] in ok for p in out["passages"])
    assert all(p["metadata"]["category"] == "football" for p in out["passages"])
    shown = [p for p in out["passages"] if p["rank"] <= k]
    assert len(shown) == min(k, len(hits))
    assert out["facets"]["category"] == [{"value": "football", "count": out["facets"]["passages"]}]
    assert all(m["value"] >= "2005-01" for m in out["facets"]["month"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", "colour=red"], "unknown filter field 'colour'"),
        (["--since", "next week"], "'next week' is not a date"),
        (
            ["--since", "2005-06-01", "--until", "2005-01-01"],
            "since 2005-06-01 is after until 2005-01-01",
        ),
        (["--where", "category>=x"], "category holds text"),
        (["--where", "oops"], "is not a filter"),
    ],
)
def test_cli_bad_filters_are_one_line_errors(
    bbc_index: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    r = CliRunner().invoke(cli, ["ask", "who scored", *args, "--index", str(bbc_index)])
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output
    assert len([line for line in r.output.splitlines() if line.strip()]) == 1


def test_cli_list_pages_filters_and_shows_full_titles(
    bbc_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_EMBEDDER", "hash")
    r = _cli("list", "--where", "category=tennis", "--limit", "3", "--offset", "2", "--index", str(bbc_index))
    assert r.exit_code == 0, r.output
    assert "tennis/003" in r.output and "tennis/006" not in r.output and "3-5 of 100 documents" in r.output
    r = _cli("list", "--where", "category=tennis", "--json", "--limit", "2", "--index", str(bbc_index))
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [x["metadata"]["category"] for x in rows] == ["tennis", "tennis"]
    long = max(rows, key=lambda x: len(x["title"]))["title"]
    r = _cli("list", "--where", "category=tennis", "--limit", "2", "--index", str(bbc_index))
    assert long in " ".join(r.output.split())  # the title in full, never cut with an ellipsis


@pytest.fixture(scope="module")
def client(bbc_index: Path) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from search.server import create_app

    engine = Engine.open(bbc_index, embedder=HashEmbedder())
    with TestClient(create_app(engine), base_url="http://127.0.0.1") as c:
        yield c
    engine.close()


def test_http_filters_as_parameters_and_as_a_json_object(client: Any) -> None:
    got = client.get(
        "/search", params={"q": "who scored", "k": 8, "where": "category=football", "since": "2005-01-01"}
    )
    assert got.status_code == 200
    body = got.json()
    posted = client.post(
        "/ask",
        json={"question": "who scored", "k": 8, "filters": {"category": "football", "since": "2005-01-01"}},
    ).json()
    asked = client.get(
        "/ask", params={"q": "who scored", "k": 8, "where": "category=football", "since": "2005-01-01"}
    ).json()
    assert [p["passage_id"] for p in posted["passages"]] == [p["passage_id"] for p in asked["passages"]]
    assert body["filters"] == posted["filters"] and body["facets"] == posted["facets"]
    assert all(p["metadata"]["category"] == "football" for p in body["passages"])
    page = client.get(
        "/search", params={"q": "who scored", "k": 4, "offset": 4, "where": "category=football"}
    )
    assert [p["rank"] for p in page.json()["passages"]] == [5, 6, 7, 8]
    newest = client.get("/search", params={"q": "who scored", "k": 5, "sort": "newest"}).json()
    dates = [p.get("published_utc") or "" for p in newest["passages"]]
    assert dates == sorted(dates, reverse=True)


def test_http_documents_page_with_a_total(client: Any) -> None:
    r = client.get("/documents", params={"offset": 10, "limit": 5, "where": "category=rugby"})
    assert r.status_code == 200
    body = r.json()
    assert body["total"] == 147 and body["offset"] == 10 and len(body["documents"]) == 5
    assert all("path" not in d and d["metadata"]["category"] == "rugby" for d in body["documents"])
    assert client.get("/documents", params={"limit": 1}).json()["total"] == 742


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"where": "colour=red"}, "unknown filter field 'colour'"),
        ({"since": "soon"}, "'soon' is not a date"),
        ({"since": "2005-06-01", "until": "2005-01-01"}, "is after until"),
    ],
)
def test_http_bad_filters_are_400(client: Any, params: dict[str, str], message: str) -> None:
    r = client.get("/ask", params={"q": "who scored", **params})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_filter"
    assert message in r.json()["error"]["message"]
    r = client.post("/ask", json={"question": "who scored", "filters": {"category": 3}})
    assert r.status_code == 400 and "category holds text: give a string value" in r.json()["error"]["message"]


def test_mcp_tools_take_filters(bbc_index: Path) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "search", "mcp", "--index", str(bbc_index), "--embedder", "hash"],
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
                args = {
                    "question": "who scored",
                    "k": 6,
                    "where": ["category=cricket"],
                    "since": "2005-01-01",
                }
                r = await client.call_tool("search", args)
                assert not r.is_error
                ps = r.structured_content["passages"]
                assert len(ps) == 6 and all(p["metadata"]["category"] == "cricket" for p in ps)
                assert r.structured_content["facets"]["category"][0]["value"] == "cricket"
                r = await client.call_tool("ask", {"question": "who scored", "where": ["colour=red"]})
                assert r.is_error and "unknown filter field 'colour'" in r.content[0].text

    anyio.run(main)


# -- metadata at ingest -------------------------------------------------------------------------
def test_jsonl_extra_fields_are_kept_typed(tmp_path: Path) -> None:
    rec = {
        "id": "x/1",
        "text": "Kane scored twice as Spurs won the derby at home.",
        "category": "football",
        "minute": 89,
        "live": False,
        "tags": ["derby", "spurs"],
        "nested": {"dropped": True},
        "url": "https://www.bbc.co.uk/sport/1",
        "published": "Sat, 05 Mar 2005 17:00:00 GMT",
    }
    (tmp_path / "a.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    (art,), problems = load([tmp_path / "a.jsonl"])
    assert not problems
    assert art.metadata == {"category": "football", "minute": 89, "live": False, "tags": ["derby", "spurs"]}
    assert art.source == "bbc.co.uk"  # filled from the site when the record names none
    assert art.published_utc == "2005-03-05T17:00:00Z"
    assert art.to_dict()["metadata"]["category"] == "football"


def test_bbc_records_keep_their_category() -> None:
    if not BBC.is_file():
        pytest.skip(f"{BBC} is not here")
    arts, problems = load([BBC])
    assert len(arts) == 737 and not problems
    cats = {a.metadata.get("category") for a in arts}
    assert cats == {"football", "rugby", "cricket", "athletics", "tennis"}


@pytest.mark.parametrize(
    ("raw", "utc"),
    [
        ("2005-03-01", "2005-03-01T00:00:00Z"),
        ("2005-03-01T18:30:00+01:00", "2005-03-01T17:30:00Z"),
        ("2005-03-01T18:30:00Z", "2005-03-01T18:30:00Z"),
        ("Tue, 01 Mar 2005 18:30:00 GMT", "2005-03-01T18:30:00Z"),
        ("Tue, 01 Mar 2005 18:30:00 -0500", "2005-03-01T23:30:00Z"),
        ("1 March 2005", "2005-03-01T00:00:00Z"),
        ("not a date", None),
        # In year 10000 or year 0 once in UTC (hardening: an OverflowError traceback, and
        # the whole `search add` batch lost, from one record's date).
        ("9999-12-31T23:59:59-05:00", None),
        ("0001-01-01T00:00:00+05:00", None),
        ("Fri, 31 Dec 9999 23:59:59 -0500", None),
    ],
)
def test_dates_parse_to_utc(raw: str, utc: str | None) -> None:
    assert iso_utc(timestamp(raw)) == utc


def test_html_dates_from_meta_tags_and_trafilatura(tmp_path: Path) -> None:
    page = (
        "<html><head><title>Win</title>"
        '<meta property="article:published_time" content="2005-04-02T15:00:00+00:00">'
        '<meta property="og:site_name" content="Match Daily"></head><body><article><h1>Win</h1>'
        + "<p>Kane scored twice in the second half as Spurs beat Arsenal at home on Saturday.</p>" * 3
        + "</article></body></html>"
    )
    assert html_published(page) == "2005-04-02T15:00:00+00:00"
    assert html_published('<time datetime="2005-04-03">Sunday</time>') == "2005-04-03"
    (tmp_path / "p.html").write_text(page, encoding="utf-8")
    (art,), _ = load([tmp_path / "p.html"])
    assert art.published_utc == "2005-04-02T15:00:00Z"  # the meta tag's time, not only trafilatura's day
    assert art.source == "Match Daily"


def test_http_post_keeps_extra_fields_as_metadata(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from search.server import create_app

    with Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder(), tagger=no_entities) as e:
        app = create_app(e, token="t0k3n-filters")
        with TestClient(app, base_url="http://127.0.0.1") as c:
            body = {
                "id": "p/1",
                "text": "Saka scored the winner late on.",
                "category": "football",
                "minute": 88,
            }
            r = c.post("/documents", json=body, headers={"Authorization": "Bearer t0k3n-filters"})
            assert r.status_code == 200, r.text
            got = c.get("/documents/p/1").json()
            assert got["metadata"] == {"category": "football", "minute": 88}
            r = c.get("/search", params={"q": "winner", "where": "minute>=80"})
            assert [p["doc_id"] for p in r.json()["passages"]] == ["p/1"]
