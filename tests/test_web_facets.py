"""The web page's facet chips in headless Chromium: a chip narrows the results and the URL,
the URL alone brings the filtered search back, and the chip again widens it (#16).

Uses the generated corpus of ``test_filters`` (sources, categories, months) behind the
real server with the fake embedder; skipped like the other browser tests only when
Chromium is not installed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from serving import ServerProcess
from test_filters import corpus, fake_tagger
from test_web import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, _Watch

QUESTION = "who scored for Arsenal"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed ({CHROMIUM} is missing): apt-get install -y chromium")
    from search.embed import HashEmbedder
    from search.engine import Engine

    base = tmp_path_factory.mktemp("webfacets")
    with Engine.open(base / "idx", create=True, embedder=HashEmbedder(), tagger=fake_tagger) as e:
        e.add(corpus())
    srv = ServerProcess(base / "idx", base / "server.log", extra=["--embedder", "hash"])
    try:
        srv.wait()
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def page(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, _Watch]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1100, "height": 900},
            timeout=60_000,
        )
        context.set_default_timeout(20_000)
        p = context.new_page()
        try:
            yield p, _Watch(p, server.url)
        finally:
            context.close()


def _shown(p: Any) -> list[str]:
    # the link's text is "N. " (for screen readers) and the title
    return [t.split("\n", 1)[-1].strip() for t in p.locator(".passage h3 a").all_inner_texts()]


def _api(server: ServerProcess, **params: Any) -> dict[str, Any]:
    r = httpx.get(server.url + "/ask", params={"q": QUESTION, "mode": "bm25", **params}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.integration
def test_a_facet_chip_narrows_the_results_and_the_url(
    page: tuple[Any, _Watch], server: ServerProcess
) -> None:
    p, watch = page
    p.goto(f"{server.url}/?q={QUESTION.replace(' ', '+')}&mode=bm25")
    p.wait_for_selector(".facets .facet[data-facet=category] .chip")
    before = _api(server)
    assert len(_shown(p)) == len(before["passages"])
    football = next(c for c in before["facets"]["category"] if c["value"] == "football")

    p.click(".facet[data-facet=category] .chip[data-value=football]")
    p.wait_for_function("new URLSearchParams(location.search).getAll('where').includes('category=football')")
    p.wait_for_selector(".active-filters .chip.active")
    after = _api(server, where="category=football")
    p.wait_for_function("n => document.querySelectorAll('.passage').length === n", arg=len(after["passages"]))
    assert _shown(p) == [x["title"] for x in after["passages"]]
    assert all(x["metadata"]["category"] == "football" for x in after["passages"])
    assert p.inner_text("#facets-heading").startswith(f"{football['count']} passage")
    chips = p.locator(".facet[data-facet=category] .chip").all_inner_texts()
    assert [c.split(" (")[0] for c in chips] == ["football"]
    assert parse_qs(urlsplit(p.url).query) == {
        "q": [QUESTION],
        "mode": ["bm25"],
        "where": ["category=football"],
    }
    ARTIFACTS.mkdir(exist_ok=True)
    p.screenshot(path=str(ARTIFACTS / "web-facets.png"), full_page=True)

    # The URL is the search: a fresh load shows the same filtered results.
    url = p.url
    p.goto("about:blank")
    p.goto(url)
    p.wait_for_selector(".active-filters .chip.active")
    p.wait_for_selector(".passage")
    assert _shown(p) == [x["title"] for x in after["passages"]]

    # A second filter (a month), then the first chip again removes only its filter.
    month = after["facets"]["month"][0]["value"]
    p.click(f".facet[data-facet=month] .chip[data-value='{month}']")
    p.wait_for_function(f"new URLSearchParams(location.search).getAll('where').includes('published={month}')")
    p.click(".active-filters .chip[data-filter='where=category=football']")
    p.wait_for_function("!new URLSearchParams(location.search).getAll('where').includes('category=football')")
    assert parse_qs(urlsplit(p.url).query)["where"] == [f"published={month}"]
    watch.check()


@pytest.mark.integration
def test_a_filter_with_no_match_shows_the_wider_counts(
    page: tuple[Any, _Watch], server: ServerProcess
) -> None:
    p, watch = page
    p.goto(f"{server.url}/?q={QUESTION.replace(' ', '+')}&mode=bm25&source=Nobody")
    p.wait_for_selector(".empty")
    assert "with these filters" in p.inner_text(".empty h2")
    assert p.inner_text("#facets-heading").startswith("Without the filters")
    p.click(".active-filters .chip.active")
    p.wait_for_selector(".passage")
    assert "source" not in parse_qs(urlsplit(p.url).query)
    watch.check()
