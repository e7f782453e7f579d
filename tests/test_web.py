"""The web page: GET / and the article pages, in process and in headless Chromium.

The browser tests drive Debian's Chromium (``apt-get install -y chromium``) with
Playwright's Python package, against the real server in a subprocess over a copy of the
seed index built with the real model (the session's ``seed_engine``). They are skipped,
with the reason, only when Chromium is not installed; ``playwright install`` is never
needed. Screenshots go to ``artifacts/`` for review.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from serving import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("SEARCH_TEST_CHROMIUM", "/usr/bin/chromium")
TOKEN = "web-test-token-91ab"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
#: Launch flags this machine needs (a fresh --user-data-dir comes from the persistent context).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"
EVIL_DOC = {
    "id": "xss/<b>id</b>&\"quoted'",
    "title": "Quixotic <b>bold</b> <img src=x onerror=alert(3)> title",
    "text": (
        f"Quixotic Zanzibar report. {EVIL} The <i>Zanzibar</i> keeper & the striker "
        '<a href="javascript:alert(4)">clicked</a> in the 90th minute.'
    ),
    "source": "<em>Evil Gazette</em>",
    "url": "javascript:alert(5)",
    "published": "2024-05-25<script>alert(6)</script>",
}


# -- in process: the routes, headers and escaping (no browser) -------------------------------
@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.server import create_app
    from search.types import Article

    path = tmp_path_factory.mktemp("web") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as engine:
        engine.index([SEEDS])
        engine.add(Article(**EVIL_DOC))
        with TestClient(create_app(engine, token=TOKEN), base_url="http://127.0.0.1") as c:
            yield c


def _assert_html(r: httpx.Response, status: int = 200) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"


def test_the_page_and_its_assets_are_served_from_the_package(client: Any) -> None:
    r = client.get("/")
    _assert_html(r)
    assert '<script src="/web/app.js"' in r.text and 'href="/web/style.css"' in r.text
    # Nothing from outside: every src/href is local (or a fragment).
    for ref in re.findall(r'(?:src|href)="([^"]*)"', r.text):
        assert ref.startswith(("/", "#")), ref
    assert "<script>" not in r.text and "style=" not in r.text  # the CSP forbids inline code
    assert client.get("/web/app.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/web/style.css").headers["content-type"].startswith("text/css")
    for bad in ("/web/nope.js", "/web/index.html", "/web/..%2Fserver.py", "/web/article.html"):
        r = client.get(bad)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", bad
    assert "/" not in client.get("/openapi.json").json()["paths"]


def test_api_docs_reference_only_local_files(client: Any) -> None:
    """/docs and /redoc load Swagger UI and ReDoc from the server itself, never a CDN (#16)."""
    for url, scripts in (
        ("/docs", ["/docs-assets/swagger-ui-bundle.js"]),
        ("/redoc", ["/docs-assets/redoc.standalone.js"]),
    ):
        r = client.get(url)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), url
        assert re.findall(r'<script src="([^"]*)"', r.text) == scripts, url
        refs = re.findall(r'(?:src|href|spec-url)="([^"]*)"', r.text) + re.findall(r"url: '([^']*)'", r.text)
        assert refs, url
        for ref in refs:
            assert ref.startswith("/") and not ref.startswith("//"), (url, ref)
        # No absolute URL anywhere in the page: no CDN, no Google fonts, no online validator.
        assert not re.search(r"(?:https?:)?//[\w.-]+\.\w", r.text), (url, r.text)
        for ref in refs:
            asset = client.get(ref)
            assert asset.status_code == 200, (url, ref)
        # And the browser is told to load nothing from elsewhere, nor run other inline code.
        csp = dict(d.strip().split(" ", 1) for d in r.headers["content-security-policy"].split(";"))
        assert csp["default-src"] == "'self'" and csp["connect-src"] == "'self'", csp
        assert csp["img-src"] == "'self' data:" and "http" not in r.headers["content-security-policy"]
        assert re.fullmatch(r"'self'( 'sha256-[A-Za-z0-9+/=]+')*", csp["script-src"]), csp
        assert r.headers["x-content-type-options"] == "nosniff"
    assert '"validatorUrl": null' in client.get("/docs").text
    assert client.get("/docs/oauth2-redirect").status_code == 200
    for name, kind in (("swagger-ui-bundle.js", "text/javascript"), ("swagger-ui.css", "text/css")):
        assert client.get(f"/docs-assets/{name}").headers["content-type"].startswith(kind)
    for bad in ("/docs-assets/", "/docs-assets/nope.js", "/docs-assets/..%2F__init__.py"):
        assert client.get(bad).status_code == 404, bad
    assert not any(p.startswith("/docs") for p in client.get("/openapi.json").json()["paths"])
    # The Host allow-list covers the docs and their files like every other route.
    r = client.get("/docs-assets/swagger-ui-bundle.js", headers={"Host": "evil.example"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_host"


def test_documents_negotiate_html_and_json(client: Any) -> None:
    doc = "002_547adb95b189fdfd.txt"
    for headers in (
        {},
        {"Accept": "*/*"},
        {"Accept": "application/json"},
        {"Accept": "application/json, text/html"},
    ):
        r = client.get(f"/documents/{doc}", headers=headers)
        assert r.headers["content-type"].startswith("application/json"), headers
        assert r.json()["id"] == doc and r.headers["vary"] == "Accept"
    r = client.get(f"/documents/{doc}", headers={"Accept": BROWSER_ACCEPT})
    _assert_html(r)
    assert r.headers["vary"] == "Accept"
    _assert_html(client.get(f"/documents/{doc}", params={"format": "html"}))
    r = client.get(f"/documents/{doc}", params={"format": "json"}, headers={"Accept": BROWSER_ACCEPT})
    assert r.json()["id"] == doc
    assert client.get(f"/documents/{doc}", params={"format": "xml"}).status_code == 422


def test_the_article_page_highlights_the_span_and_reports_a_bad_one(client: Any) -> None:
    doc = "002_547adb95b189fdfd.txt"
    text = client.get(f"/documents/{doc}").json()["text"]
    page = client.get(f"/documents/{doc}", params={"format": "html", "span": "100:250"}).text
    cited = re.search(r'<mark id="cited" tabindex="-1">(.*?)</mark>', page, re.S)
    assert cited and html.unescape(cited.group(1)) == text[100:250]
    assert 'href="#cited"' in page
    # well formed but past the end of the article (it changed since it was cited): the page says so
    page = client.get(f"/documents/{doc}", params={"format": "html", "span": "5:99999"}).text
    assert "<mark" not in page and "is not in this article" in page
    # an empty span is no span
    r = client.get(f"/documents/{doc}", params={"format": "html", "span": ""})
    assert r.status_code == 200 and "<mark" not in r.text and "is not in this article" not in r.text
    r = client.get("/documents/no/such/doc", params={"format": "html"})
    _assert_html(r, 404)
    assert "Article not found" in r.text
    assert client.get("/documents/no/such/doc").json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("span", "why"),
    [
        ("abc", "not START:END"),
        ("x:y", "not START:END"),
        ("10", "not START:END"),
        ("-1:5", "not START:END"),
        ("1.5:9", "not START:END"),
        ("\u00b2:9", "not START:END"),  # a digit to str.isdigit, not to int()
        (" 5:9", "not START:END"),
        ("512:356", "START < END"),
        ("7:7", "START < END"),
        ("1:" + "9" * 5000, "too large"),
    ],
)
@pytest.mark.parametrize("fmt", ["html", "json"])
def test_a_malformed_span_is_422_with_the_form_it_needs(client: Any, span: str, why: str, fmt: str) -> None:
    """Like `search show --span` (exit 2), not a page saying the article may have changed (hardening)."""
    r = client.get("/documents/002_547adb95b189fdfd.txt", params={"format": fmt, "span": span})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_request"
    msg = err["message"]
    assert "\n" not in msg and msg.startswith("query.span: ") and why in msg, msg
    assert "START:END" in msg and "whole numbers" in msg and "START < END" in msg, msg


def test_the_article_page_escapes_everything(client: Any) -> None:
    r = client.get(f"/documents/{EVIL_DOC['id']}", params={"format": "html"})
    _assert_html(r)
    body = r.text
    cited = client.get(f"/documents/{EVIL_DOC['id']}", params={"format": "html", "span": "20:60"}).text
    assert f'<mark id="cited" tabindex="-1">{html.escape(EVIL_DOC["text"][20:60])}</mark>' in cited
    assert "<script>alert" not in body and "<img" not in body and "<b>" not in body and "<em>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in body
    assert "javascript:" not in body.replace("&quot;javascript:alert(4)&quot;", "")  # no link to it
    assert "&lt;b&gt;bold&lt;/b&gt;" in body


# -- in Chromium --------------------------------------------------------------------------------
class _Server(ServerProcess):
    """``search serve`` with the real model on a copy of the seed index, on a loopback port.

    The page is tested with short answers shown: a confidence floor of 0.5 rather than the
    fitted threshold, which moves whenever the answer weights are refitted. A floor of 1
    shows none, whatever the fit."""

    def __init__(self, index: Path, log: Path, floor: str = "0.5") -> None:
        super().__init__(index, log, token=TOKEN, more_env={"SEARCH_MIN_CONFIDENCE": floor})


@pytest.fixture(scope="module")
def chromium() -> str:
    if not Path(CHROMIUM).exists():
        reason = f"Chromium is not installed ({CHROMIUM} is missing): apt-get install -y chromium"
        print(f"SKIP web browser tests: {reason}")
        pytest.skip(reason)
    return CHROMIUM


def _serve(seed_engine: Any, tmp_path_factory: pytest.TempPathFactory, floor: str) -> Iterator[_Server]:
    base = tmp_path_factory.mktemp("webserver")
    idx = base / "idx"
    shutil.copytree(seed_engine.path, idx, ignore=shutil.ignore_patterns(".lock"))
    srv = _Server(idx, base / "server.log", floor)
    try:
        srv.wait()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def server(chromium: str, seed_engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Server]:
    yield from _serve(seed_engine, tmp_path_factory, "0.5")


@pytest.fixture(scope="module")
def unsure_server(
    chromium: str, seed_engine: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[_Server]:
    """The same, with no short answer at all: a page that must show the quote and the
    versions, whatever confidence the current fit gives the question."""
    yield from _serve(seed_engine, tmp_path_factory, "1")


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need playwright: pip install -e '.[dev]' (never `playwright install`)")
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1100, "height": 900},
            timeout=60_000,
        )
        context.set_default_timeout(20_000)
        try:
            yield context
        finally:
            context.close()


class _Watch:
    """What a page did that it should not: dialogs, console errors (CSP reports), outside requests."""

    def __init__(self, page: Any, origin: str) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.outside: list[str] = []

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith(origin) else self.outside.append(r.url))

    def check(self, allow_errors: str | None = None) -> None:
        assert not self.dialogs, f"a dialog opened: {self.dialogs}"
        errors = [e for e in self.errors if not (allow_errors and re.search(allow_errors, e))]
        assert not errors, errors
        assert not self.outside, f"requests outside the server: {self.outside}"


@pytest.fixture
def page(browser: Any, server: _Server) -> Iterator[tuple[Any, _Watch]]:
    p = browser.new_page()
    watch = _Watch(p, server.url)
    try:
        yield p, watch
    finally:
        p.close()


def _shot(page: Any, name: str, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full_page)


def _ask(page: Any, question: str) -> None:
    page.fill("#q", question)
    page.press("#q", "Enter")


@pytest.mark.integration
def test_ask_on_the_page_and_open_a_cited_article(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    p.goto(server.url + "/")
    assert p.evaluate("document.activeElement.id") == "q"  # focused on load
    p.keyboard.type("who scored the winner")
    p.keyboard.press("Enter")
    p.wait_for_selector(".short-answer")
    assert "Lautaro Martinez" in p.inner_text(".short-answer")
    query = parse_qs(urlsplit(p.url).query)
    assert query == {"q": ["who scored the winner"], "mode": ["hybrid"]}
    support = p.inner_text(".support")
    # The same words as the CLI and MCP: support among the articles that address the question.
    assert re.fullmatch(
        r"(\d+ of \d+ articles agree|\d+ articles state it, of \d+ on the question|One source).*", support
    ), support
    assert "Lautaro Martinez" in p.text_content("#status")  # the live region says it
    # Query words are highlighted in the passages, stop words are not.
    marks = {m.lower() for m in p.locator(".passage-text mark").all_inner_texts()}
    assert marks and marks <= {"scored", "winner"}
    n_passages = p.locator(".passage").count()
    assert n_passages >= 5
    assert p.locator(".passage h3 a").count() == n_passages
    _shot(p, "web-results.png")

    cite = p.locator(".answer a.cite").first
    href = cite.get_attribute("href")
    assert href and re.fullmatch(r"/documents/.+\?format=html&span=\d+:\d+#cited", href)
    cite.click()
    p.wait_for_selector("mark#cited")
    doc_id = urlsplit(p.url).path.removeprefix("/documents/")
    start, end = map(int, parse_qs(urlsplit(p.url).query)["span"][0].split(":"))
    text = httpx.get(f"{server.url}/documents/{doc_id}").json()["text"]
    assert p.inner_text("mark#cited") == text[start:end]
    assert p.text_content("mark#cited") == text[start:end]
    assert p.locator("mark#cited").is_visible()
    box = p.locator("mark#cited").bounding_box()
    assert box and 0 <= box["y"] < p.viewport_size["height"]  # scrolled to it
    assert p.text_content("#article-text") == text  # the whole article, as text
    _shot(p, "web-article.png", full_page=False)

    # Back: the results come back from the URL.
    p.go_back()
    p.wait_for_selector(".short-answer")
    assert p.input_value("#q") == "who scored the winner"
    watch.check()


@pytest.mark.integration
def test_mode_switch_reload_and_phone_size(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    p.set_viewport_size({"width": 390, "height": 844})
    p.goto(server.url + "/?q=who+scored+the+winner&mode=dense")
    p.wait_for_selector(".passage")
    assert p.is_checked("#mode-dense") and p.input_value("#q") == "who scored the winner"
    p.click("label[for=mode-bm25]")  # switching the mode asks again
    p.wait_for_function("new URLSearchParams(location.search).get('mode') === 'bm25'")
    p.wait_for_selector(".passage")
    assert p.is_checked("#mode-bm25")
    p.reload()
    p.wait_for_selector(".short-answer")
    assert p.is_checked("#mode-bm25") and "Lautaro Martinez" in p.inner_text(".short-answer")
    # Keyboard: Tab from the search box reaches the button, then the mode radios.
    p.focus("#q")
    p.keyboard.press("Tab")
    assert p.evaluate("document.activeElement.type") == "submit"
    # Nothing wider than the phone's screen.
    assert p.evaluate("document.documentElement.scrollWidth") <= 390
    _shot(p, "web-phone.png", full_page=False)
    _shot(p, "web-phone-full.png")
    watch.check()


@pytest.mark.integration
def test_conflicting_versions_are_side_by_side(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    p.goto(server.url + "/?q=when+did+Enzo+Fernandez+score&mode=hybrid")
    p.wait_for_selector(".versions")
    versions = p.locator(".versions .version")
    assert versions.count() >= 2
    texts = [versions.nth(i).locator(".version-text").text_content() for i in range(versions.count())]
    assert texts[0] == p.text_content(".short-answer") and len(set(texts)) == len(texts)
    boxes = [versions.nth(i).bounding_box() for i in range(2)]
    assert boxes[0] and boxes[1] and boxes[0]["y"] == boxes[1]["y"]  # side by side on a wide screen
    for i in range(versions.count()):  # each version cites its own sources
        assert versions.nth(i).locator("a.cite").count() >= 1
    _shot(p, "web-conflict.png", full_page=False)
    watch.check()


@pytest.mark.integration
def test_with_no_short_answer_the_page_shows_the_quote_and_every_side(
    browser: Any, unsure_server: _Server
) -> None:
    """No short answer, yet the outlets disagree (how Fernandez scored: a header in one
    report, a strike from distance in two): the quote comes first, then the version the
    conflicts contradict (``answer.reference``) beside them, each with its own citations,
    never the quote standing in for a side."""
    server = unsure_server
    q = "how did Fernandez score"
    answer = httpx.get(f"{server.url}/ask", params={"q": q, "mode": "hybrid"}, timeout=60).json()["answer"]
    assert answer["text"] is None and answer["reference"] and answer["conflicts"], answer
    p = browser.new_page()
    try:
        _every_side(p, _Watch(p, server.url), server, q, answer)
    finally:
        p.close()


def _every_side(p: Any, watch: _Watch, server: _Server, q: str, answer: dict[str, Any]) -> None:
    p.goto(server.url + "/?q=" + q.replace(" ", "+") + "&mode=hybrid")
    p.wait_for_selector(".versions")
    assert p.locator(".short-answer").count() == 0
    versions = p.locator(".versions .version")
    texts = [versions.nth(i).locator(".version-text").text_content() for i in range(versions.count())]
    assert texts == [answer["reference"]["text"], *(c["text"] for c in answer["conflicts"])]
    assert (
        versions.nth(0)
        .locator(".version-support")
        .text_content()
        .startswith(str(answer["reference"]["support"]))
    )
    for i in range(versions.count()):
        assert versions.nth(i).locator("a.cite").count() >= 1
    # the quote is shown once, above the versions
    quote = answer["sentences"][0]["text"]
    assert quote[:40] in p.text_content(".answer > ul.evidence")
    watch.check()


@pytest.mark.integration
def test_article_markup_is_shown_as_text(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    r = httpx.post(f"{server.url}/documents", json=EVIL_DOC, headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    try:
        p.goto(server.url + "/")
        p.click("label[for=mode-bm25]")
        _ask(p, "Quixotic Zanzibar <script>alert(7)</script>")
        p.wait_for_selector(".passage")
        first = p.locator(".passage").first
        assert EVIL in first.locator(".passage-text").text_content()
        assert first.locator("h3 a").text_content().endswith(EVIL_DOC["title"])
        assert first.locator(".source").text_content() == EVIL_DOC["source"]
        injected = (
            "#results script, #results img, #results b, #results i, #results em, #results a[href^=javascript]"
        )
        assert p.locator(injected).count() == 0
        assert p.locator("script").count() == 1  # app.js only
        _shot(p, "web-escaped-results.png")

        first.locator("h3 a").click()
        p.wait_for_selector("mark#cited")
        assert p.text_content("h1") == EVIL_DOC["title"]
        assert EVIL in p.text_content("#article-text")
        assert p.text_content("#article-text") == EVIL_DOC["text"]
        body = "main script, main img, main b, main i, main em, a[href^=javascript]"
        assert p.locator(body).count() == 0 and p.locator("script").count() == 0
        p.wait_for_timeout(200)  # an onerror handler would have fired by now
        watch.check()
    finally:
        httpx.delete(f"{server.url}/documents/{EVIL_DOC['id']}", headers=AUTH, timeout=30)


@pytest.mark.integration
def test_empty_error_and_slow_states(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    p.goto(server.url + "/?mode=bm25&q=zzqxv+wqxyzz")
    p.wait_for_selector(".empty")
    assert "No results" in p.inner_text(".empty") and "zzqxv wqxyzz" in p.inner_text(".empty")

    # A server error: the message and a way to try again.
    def fail(route: Any) -> None:
        route.fulfill(
            status=503,
            content_type="application/json",
            body='{"error": {"code": "index_unavailable", "message": "the index is being rebuilt"}}',
        )

    p.route("**/ask?*", fail)
    _ask(p, "who scored the winner")
    p.wait_for_selector("[role=alert]")
    alert = p.inner_text("[role=alert]")
    assert "503" in alert and "the index is being rebuilt" in alert
    assert p.locator("button.retry").is_visible()
    _shot(p, "web-error.png", full_page=False)
    p.unroute("**/ask?*")

    # A slow answer: a spinner at once, a word about why after a few seconds, then results.
    held: list[Any] = []
    p.route("**/ask?*", lambda route: held.append(route))
    p.click("button.retry")
    p.wait_for_selector(".status .spinner")
    assert p.get_attribute("#results", "aria-busy") == "true"
    p.wait_for_selector(".status.slow", timeout=10_000)
    assert "Still working" in p.inner_text("#status")
    _shot(p, "web-slow.png", full_page=False)
    assert held
    held[0].continue_()
    p.wait_for_selector(".short-answer")
    assert p.locator(".status .spinner").count() == 0
    p.unroute("**/ask?*")
    watch.check(allow_errors=r"status of 503")  # the browser logs the failed fetch


def _offline(p: Any, server: _Server) -> list[str]:
    """Abort every request the page makes to a host other than the server; returns their URLs."""
    aborted: list[str] = []

    def handle(route: Any) -> None:
        if route.request.url.startswith(server.url + "/"):
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort("internetdisconnected")

    p.route("**/*", handle)
    return aborted


@pytest.mark.integration
def test_swagger_ui_renders_with_the_network_off(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    aborted = _offline(p, server)
    p.goto(server.url + "/docs")
    p.wait_for_selector(".opblock")
    assert "search" in p.inner_text(".info .title")
    paths = set(p.locator(".opblock .opblock-summary-path").all_inner_texts())
    assert {"/ask", "/search", "/documents/{doc_id}", "/stats"} <= {x.replace("\u200b", "") for x in paths}
    assert p.locator(".opblock.opblock-get").count() >= 4
    assert p.locator(".opblock.opblock-post").count() >= 2
    assert p.locator(".errors-wrapper").count() == 0  # the spec loaded and parsed
    # GET /ask opens with its parameters, and "Try it out" calls the server (the CSP allows it).
    ask = p.locator("#operations-query-ask_get_ask_get")
    ask.locator(".opblock-summary").click()
    ask.locator(".parameters").wait_for()
    assert "The question (at most 2,000 characters)." in ask.inner_text()
    _shot(p, "docs-swagger.png", full_page=False)
    ask.locator("button.try-out__btn").click()
    ask.locator("input[placeholder=q]").fill("who scored the winner")
    ask.locator("button.execute").click()
    live = ask.locator(".live-responses-table tbody .response")
    live.wait_for()
    assert live.locator(".response-col_status").inner_text().strip() == "200"
    assert "Lautaro Martinez" in live.locator(".response-col_description").inner_text()
    assert not aborted, aborted
    watch.check()


@pytest.mark.integration
def test_redoc_renders_with_the_network_off(page: tuple[Any, _Watch], server: _Server) -> None:
    p, watch = page
    aborted = _offline(p, server)
    blocked: dict[str, str | None] = {}
    p.on("requestfailed", lambda r: blocked.__setitem__(r.url, r.failure))
    p.goto(server.url + "/redoc")
    p.wait_for_selector(".api-content h1")
    assert p.inner_text(".api-content h1").startswith("search")
    # The menu has the tags, and each operation's section is rendered from /openapi.json.
    menu = p.locator(".menu-content")
    tags = menu.locator("li[data-item-id^='tag/']:not([data-item-id*='/operation/'])")
    assert [tags.nth(i).get_attribute("aria-label") for i in range(tags.count())] == [
        "query",
        "documents",
        "index",
    ]
    assert menu.locator("li[data-item-id='tag/query/operation/ask_get_ask_get']").count() == 1
    sections = p.locator(".api-content h2").all_inner_texts()
    assert "Answer a question with cited passages" in sections, sections
    assert "Counts, sizes, model and last update of the index" in sections, sections
    menu.get_by_text("query", exact=True).click()
    assert menu.get_by_text("Answer a question with cited passages").is_visible()
    # ReDoc's menu footer asks cdn.redoc.ly for its logo: the page's CSP blocks that, so
    # no request leaves and the image is dropped (the "API docs by Redocly" link stays).
    p.wait_for_function("!document.querySelector(\"img[alt='redocly logo']\")")
    _shot(p, "docs-redoc.png", full_page=False)
    assert not aborted, aborted
    # Chromium reports the blocked image as a request; it failed in the browser, by the CSP.
    assert watch.outside == ["https://cdn.redoc.ly/redoc/logo-mini.svg"], watch.outside
    assert all(blocked.get(url) == "csp" for url in watch.outside), blocked
    watch.outside.clear()
    watch.check(allow_errors=r"^Loading the image 'https://cdn\.redoc\.ly/redoc/logo-mini\.svg' violates")
