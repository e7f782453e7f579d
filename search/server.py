"""The HTTP face: a FastAPI app over one :class:`search.engine.Engine`.

Routes are named after the engine's methods and return the same dicts as the CLI's
``--json`` (``Answer.to_dict()``, ``WriteReport.to_dict()``, ``Engine.stats()``)::

    GET  /ask?q=...&k=5&mode=hybrid      POST /ask {"question", "k", "mode"}
    GET  /search?q=...&k=10&mode=hybrid  (the ask dict without "answer")
    GET  /documents/{id}                 POST /documents {"id", "title", "text", ...}
    DELETE /documents/{id}               GET /stats    GET /healthz    GET /docs  GET /redoc

A browser gets HTML from the same server: ``GET /`` is the search page (``search/web/``,
served from the package, no outside resources), and ``GET /documents/{id}`` renders the
article as a page when asked for HTML (``?format=html``, or an ``Accept`` header that
prefers ``text/html`` to JSON, as a browser's does); anything else still gets the JSON.
``?span=START:END`` on the page highlights that span of the article, marked ``#cited``.
HTML responses carry a Content-Security-Policy that allows only the server's own files.

Every error is ``{"error": {"code": ..., "message": ...}}`` with its status; no traceback
ever reaches a client. Writes need ``Authorization: Bearer <token>``: with no token
configured they are refused (403); a missing or wrong token is 401.

The engine is synchronous, so the endpoints are plain ``def`` functions that Starlette
runs in its threadpool: reads run in parallel (the engine is thread-safe for queries),
writes are serialised by a lock here, since one engine writes through one index lock.

Build the app with :func:`create_app`; ``search serve`` runs it under uvicorn.
"""

from __future__ import annotations

import hmac
import html
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path as FilePath
from string import Template
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from .engine import MAX_K, MAX_QUESTION_CHARS, Engine
from .errors import (
    DocumentNotFoundError,
    FilterError,
    IngestError,
    MissingExtraError,
    QueryError,
    SearchError,
    WriterBusyError,
    scrub_paths,
)
from .filters import Filters
from .ingest import MAX_ARTICLE_CHARS, MAX_ID_CHARS
from .types import Article

try:
    from fastapi import Depends, FastAPI, Header, Path, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from .apidocs import add_api_docs
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        f"the HTTP server needs fastapi and uvicorn ({e.name} is missing): pip install 'search[serve]'"
    ) from None

from .http_query import QueryFields, QueryOptions, filter_params, query_params  # noqa: E402 (needs fastapi)

log = logging.getLogger(__name__)

TOKEN_ENV = "SEARCH_API_TOKEN"
#: Largest request body accepted, checked on Content-Length and on the bytes streamed.
MAX_BODY_BYTES = 1_000_000
#: Seconds a client is told to wait when another process holds the index's writer lock.
RETRY_AFTER_S = 2
#: Longest article text POST /documents takes (characters). Encoding it is what holds the
#: write lock, so this bounds how long one write makes the others wait: 100,000 characters
#: (about 150 passages) take a few seconds with the ONNX model on 2 cores. Longer: 413.
MAX_HTTP_ARTICLE_CHARS = min(MAX_ARTICLE_CHARS, 100_000)
#: How long a write waits for the one before it before it is answered 503 (seconds).
WRITE_WAIT_S = 30.0
#: Host names a server bound to loopback answers to: a page on another name (DNS
#: rebinding) is refused, so it cannot read the index through the user's browser.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

#: The search page's files (index.html, app.js, style.css, article.html), package data.
WEB_DIR = FilePath(__file__).resolve().parent / "web"
#: What GET /web/{name} serves: only these files, with these types.
WEB_ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
#: On every HTML response: only the server's own scripts, styles and fetches; no inline
#: script or style, no plugins, no framing. Article text is escaped anyway; this is the
#: second wall should an escape ever be missed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HTML_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

Mode = Literal["hybrid", "bm25", "dense"]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# -- request parameters and bodies -------------------------------------------------------------------
QuestionParam = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question (at most 2,000 characters).",
        examples=["who scored the winner"],
    ),
]
KParam = Annotated[int, Query(ge=1, le=MAX_K, description="How many passages.")]
ModeParam = Annotated[Mode, Query(description="hybrid, bm25 or dense.")]
DocIdParam = Annotated[
    str, Path(min_length=1, max_length=MAX_ID_CHARS, description="The document id; it may contain '/'.")
]
QueryDep = Annotated[QueryOptions, Depends(query_params)]
FilterDep = Annotated[Filters, Depends(filter_params)]
AuthHeader = Annotated[str | None, Header(description="Bearer <token>, for writes.")]
FormatParam = Annotated[
    Literal["json", "html"] | None,
    Query(
        alias="format",
        description="json or html; by default the Accept header decides (JSON unless it prefers text/html).",
    ),
]
SpanParam = Annotated[
    str | None, Query(description="START:END, for format=html: the span of the article to highlight.")
]


class AskBody(QueryFields):
    """A question, as the body of POST /ask (with optional filters, sort and offset)."""

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question, at most 2,000 characters.",
        examples=["who scored the winner"],
    )
    k: int = Field(5, ge=1, le=MAX_K, description="How many passages to return.")
    mode: Mode = Field("hybrid", description="hybrid, bm25 or dense retrieval.")


class ArticleBody(BaseModel):
    """One article, as a line of JSONL ingestion: POST /documents adds or replaces it by id."""

    # Fields beyond these are the article's metadata, as on a JSONL line (text, number,
    # true/false or a list of strings; anything else is dropped).
    model_config = ConfigDict(extra="allow")

    id: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        # What ingest.validate_id checks that a pattern can say: no control character, no
        # backslash, no leading '/'. A '..' segment is refused by the route (422).
        pattern=r"^[^/\\\x00-\x1f\x7f-\x9f][^\\\x00-\x1f\x7f-\x9f]*$",
        examples=["2024/final-report"],
    )
    title: str = Field(
        "",
        max_length=2_000,
        description="Empty: derived from the text.",
        examples=["Argentina edge the final"],
    )
    # No maxLength here: a longer text is answered 413 (not 422), by the route.
    text: str = Field(
        min_length=1,
        description=f"The article's text, at most {MAX_HTTP_ARTICLE_CHARS:,} characters (longer: 413).",
        examples=["Lautaro Martinez headed home the winner in the 89th minute."],
    )
    source: str = Field("", max_length=500)
    url: str | None = Field(None, max_length=4_000)
    published: str | None = Field(None, max_length=100)


def _article(body: ArticleBody) -> Article:
    """The article a JSONL line with these fields gives: same checks, same normalisation.

    A bad id or empty text raises :class:`IngestError` with ingestion's own message.
    """
    # The JSONL reader's record parser, so both ways in agree on ids, titles and text.
    from .ingest import IngestProblem, _record

    item = _record(body.model_dump(), "POST /documents", "", 1)
    if isinstance(item, IngestProblem):
        raise IngestError(item.message)
    item.path = None
    return item


# -- HTML pages -------------------------------------------------------------------------
def _wants_html(accept: str | None, fmt: str | None) -> bool:
    """HTML when asked by ``?format=html``, or when Accept ranks text/html above JSON.

    A browser sends ``text/html,...,*/*;q=0.8``; fetch, curl and httpx send ``*/*``, which
    keeps them on JSON: a wildcard never selects the page.
    """
    if fmt is not None:
        return fmt == "html"
    html_q = json_q = 0.0
    for part in (accept or "").split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        media = media.lower()
        if media in ("text/html", "application/xhtml+xml"):
            html_q = max(html_q, q)
        elif media == "application/json":
            json_q = max(json_q, q)
    return html_q > 0 and html_q > json_q


def _parse_span(span: str | None, length: int) -> tuple[int, int] | None:
    """``START:END`` as a non-empty span inside a text of ``length`` characters, else None."""
    if not span:
        return None
    start_s, sep, end_s = span.partition(":")
    if not sep or not start_s.isdigit() or not end_s.isdigit():
        return None
    start, end = int(start_s), int(end_s)
    return (start, end) if 0 <= start < end <= length else None


def _html_page(template: str, status: int = 200, **fields: str) -> HTMLResponse:
    """``search/web/<template>`` filled with ``fields``, which the caller has escaped."""
    text = Template((WEB_DIR / template).read_text(encoding="utf-8")).substitute(fields)
    return HTMLResponse(text, status_code=status, headers={**HTML_HEADERS, "Vary": "Accept"})


def _article_page(art: Article, span: str | None) -> HTMLResponse:
    """The article as a page; every value from the article is HTML-escaped here.

    Offsets are Python string indices (code points), as in citations, so the span is cut
    here rather than in the browser, whose strings count UTF-16 units.
    """
    esc = html.escape
    text = art.text
    meta = [f'<span class="source">{esc(art.source)}</span>'] if art.source else []
    if art.published:
        meta.append(f'<time datetime="{esc(art.published)}">{esc(art.published)}</time>')
    meta.append(f'<span class="doc-id">{esc(art.id)}</span>')
    if art.url and urlsplit(art.url).scheme in ("http", "https"):  # never a javascript: link
        meta.append(f'<a href="{esc(art.url)}" rel="noopener noreferrer">original article</a>')
    cut = _parse_span(span, len(text))
    if cut is None:
        body = esc(text)
        notice = ""
        if span:
            notice = (
                f'<p class="notice" role="status">The cited span {esc(span)} is not in this article '
                f"({len(text):,} characters): it may have changed since it was cited.</p>"
            )
    else:
        start, end = cut
        body = (
            f'{esc(text[:start])}<mark id="cited" tabindex="-1">{esc(text[start:end])}</mark>'
            f"{esc(text[end:])}"
        )
        notice = (
            f'<p class="notice">The cited passage is highlighted '
            f'(characters {start:,}&ndash;{end:,}): <a href="#cited">jump to it</a>.</p>'
        )
    return _html_page(
        "article.html",
        title=esc(art.title or art.id),
        meta=' <span aria-hidden="true">&middot;</span> '.join(meta),
        notice=notice,
        body=body,
    )


# -- errors ---------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    code: str = Field(description="A stable, machine-readable code, e.g. bad_question.")
    message: str = Field(description="One line: what was wrong and what to do.")


class ErrorBody(BaseModel):
    """Every error response: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


_WHY = {
    400: "The question or a parameter is unusable, or the Host header is not allowed.",
    401: "The bearer token is missing or wrong.",
    403: "Writes are disabled on this server (no token configured).",
    404: "No such document.",
    413: "The request body or the article is too large.",
    422: "The request does not match the schema.",
    503: "The index is busy or unavailable; retry later.",
}


def _responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route really answers."""
    every = (400, 413, 422)
    return {code: {"model": ErrorBody, "description": _WHY[code]} for code in sorted({*every, *statuses})}


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class ApiError(Exception):
    """An error response decided by the server itself (auth, not found)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}


def _validation_message(exc: RequestValidationError) -> str:
    """One line naming each bad field: 'query.k: Input should be less than or equal to 100'."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is invalid"


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (Starlette names only the first route's)."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def _question_error(err: Any) -> bool:
    """A schema error about the question's length or text (not its absence or type)."""
    loc = tuple(err.get("loc", ()))
    kinds = ("string_too_short", "string_too_long", "string_unicode")
    return loc[-1:] in (("q",), ("question",)) and err.get("type") in kinds


def _install_error_handlers(app: FastAPI) -> None:
    def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        # Last wall: no message ever names where the index lives on the server (#14).
        return _error(status, code, scrub_paths(message, app.state.engine.path), headers)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        if errs and all(_question_error(e) for e in errs):
            # Too short, too long or not text (a lone surrogate): the engine's own 400,
            # so a question is refused the same way whichever check catches it.
            try:
                Engine.check_question(errs[0].get("input"))
            except QueryError as e:
                return error(400, "bad_question", str(e))
        if errs and all(e.get("type") == "string_unicode" for e in errs):
            where = ", ".join(".".join(str(p) for p in e.get("loc", ()) if p != "body") for e in errs)
            return error(
                400,
                "bad_request",
                f"{where}: holds a character that is not text (a lone surrogate, often from bytes "
                "that are not UTF-8): send UTF-8 text",
            )
        return error(422, "invalid_request", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.url.path}: see /docs"
        if exc.status_code == 405:
            allow = _allowed_methods(request)
            headers["Allow"] = allow
            message = f"{request.method} is not allowed here: use {allow}"
        return error(exc.status_code, code, message, headers or None)

    @app.exception_handler(SearchError)
    async def search_error(request: Request, exc: SearchError) -> JSONResponse:
        if isinstance(exc, FilterError):
            return error(400, "bad_filter", str(exc))
        if isinstance(exc, QueryError):
            return error(400, "bad_question", str(exc))
        if isinstance(exc, DocumentNotFoundError):
            return error(404, "not_found", str(exc))
        if isinstance(exc, IngestError):
            return error(422, "bad_document", str(exc))
        log.error("%s %s: %s", request.method, request.url.path, exc)
        if isinstance(exc, WriterBusyError):
            return error(
                503,
                "busy",
                "another process or request is writing to the index: try again in a few seconds",
                {"Retry-After": str(RETRY_AFTER_S)},
            )
        # Index missing or damaged under a running server: the details (paths) are logged.
        return error(
            503,
            "index_unavailable",
            "the index is not available (missing, damaged or being rebuilt): the server log has the details",
        )

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        # The engine's API boundary raises ValueError for bad arguments (k, mode).
        return error(400, "bad_request", str(exc).splitlines()[0] if str(exc) else "bad request")


def _host_name(host: str) -> str:
    """The name part of a Host header: 'localhost:8000' → 'localhost', '[::1]:80' → '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, sep, port = host.rpartition(":")
    return name if sep and port.isdigit() and ":" not in name else host


class _Guard:
    """Outermost ASGI layer: checks the Host header, caps request bodies and turns any crash
    into a generic 500.

    Only the ``allowed_hosts`` names are answered (``*``: any), so a page whose name was
    rebound to 127.0.0.1 cannot read the index through the user's browser.

    The cap is checked on Content-Length first, then on the bytes actually received, so a
    chunked body cannot slip past it; the body is buffered (at most the cap) and replayed.
    A crash is logged with its traceback here and answered with a JSON body that holds no
    detail; Starlette's own handler would also re-raise it into uvicorn's log.
    """

    def __init__(
        self, app: ASGIApp, max_body: int = MAX_BODY_BYTES, allowed_hosts: tuple[str, ...] = ("*",)
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.allowed_hosts = {h.lower().strip("[]") for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def reply(status: int, code: str, message: str) -> None:
            resp = _error(status, code, message)
            await resp(scope, receive, send_tracking)

        too_big = f"the request body is larger than {self.max_body:,} bytes: send one article per request"
        headers = dict(scope.get("headers") or [])
        if "*" not in self.allowed_hosts:
            host = _host_name(headers.get(b"host", b"").decode("latin-1"))
            if host not in self.allowed_hosts:
                await reply(
                    400,
                    "bad_host",
                    "the Host header names a host this server does not answer to: "
                    "start it with --allowed-host NAME (or SEARCH_ALLOWED_HOSTS) to allow it",
                )
                return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await reply(400, "bad_request", "Content-Length is not a number")
                return
            if declared > self.max_body:
                await reply(413, "payload_too_large", too_big)
                return
        if scope.get("method") in ("POST", "PUT", "PATCH", "DELETE"):
            chunks: list[bytes] = []
            size = 0
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    await reply(413, "payload_too_large", too_big)
                    return
                chunks.append(chunk)
                more = message.get("more_body", False)
            body = b"".join(chunks)
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            inner_receive: Receive = replay
        else:
            inner_receive = receive
        try:
            await self.app(scope, inner_receive, send_tracking)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await reply(500, "internal", "internal server error: the server log has the details")


# -- the app --------------------------------------------------------------------------
def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def create_app(
    engine_or_path: Engine | str | os.PathLike[str],
    token: str | None = None,
    *,
    embedder: str | Any = "auto",
    max_body: int = MAX_BODY_BYTES,
    allowed_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """The HTTP API over one engine.

    ``engine_or_path``: an open :class:`Engine` (the caller closes it) or an index
    directory (opened here, closed when the app shuts down; ``embedder`` is passed on).
    ``token``: the bearer token writes must carry; ``None`` or empty refuses every write
    with 403. The token is not read from the environment here: ``search serve`` passes
    ``$SEARCH_API_TOKEN``. ``allowed_hosts``: the names the Host header may carry (any
    port); by default the loopback names, ``["*"]`` answers any.
    """
    if isinstance(engine_or_path, Engine):
        engine, owned = engine_or_path, False
    else:
        engine, owned = Engine.open(engine_or_path, embedder=embedder), True
    token = token or None
    token_bytes = token.encode("utf-8") if token else None
    write_lock = threading.Lock()
    if token is None:
        log.warning(
            "writes are disabled: no API token configured (set %s to allow POST/DELETE /documents)", TOKEN_ENV
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        yield
        if owned:
            engine.close()

    app = FastAPI(
        title="search",
        summary="Search football match coverage; answers cite the passages they come from.",
        version=_version(),
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc come from local files: search/apidocs.py
        redoc_url=None,
    )
    add_api_docs(app, favicon_url="/web/favicon.svg")
    app.state.engine = engine
    _install_error_handlers(app)
    hosts = tuple(allowed_hosts) if allowed_hosts else LOOPBACK_HOSTS
    app.add_middleware(_Guard, max_body=max_body, allowed_hosts=hosts)

    def require_token(authorization: AuthHeader = None) -> None:
        if token_bytes is None:
            raise ApiError(
                403,
                "writes_disabled",
                f"writes are disabled on this server: start it with {TOKEN_ENV} set to allow them",
            )
        given = _bearer(authorization)
        challenge = {"WWW-Authenticate": 'Bearer realm="search"'}
        if given is None:
            raise ApiError(401, "unauthorized", "this write needs 'Authorization: Bearer <token>'", challenge)
        if not hmac.compare_digest(given.encode("utf-8"), token_bytes):
            raise ApiError(401, "unauthorized", "the bearer token is not valid", challenge)

    @contextmanager
    def _writing() -> Iterator[None]:
        """The write lock, waited for at most WRITE_WAIT_S (then 503 busy, retry later)."""
        if not write_lock.acquire(timeout=WRITE_WAIT_S):
            raise WriterBusyError("another write is in progress")
        try:
            yield
        finally:
            write_lock.release()

    @app.get(
        "/ask",
        tags=["query"],
        summary="Answer a question with cited passages",
        responses=_responses(503),
    )
    def ask_get(
        q: QuestionParam, opts: QueryDep, k: KParam = 5, mode: ModeParam = "hybrid"
    ) -> dict[str, Any]:
        return engine.ask(q, k=k, mode=mode, facets=True, **opts.kwargs()).to_dict()

    @app.post("/ask", tags=["query"], summary="Answer a question (JSON body)", responses=_responses(503))
    def ask_post(body: AskBody) -> dict[str, Any]:
        opts = body.options().kwargs()
        return engine.ask(body.question, k=body.k, mode=body.mode, facets=True, **opts).to_dict()

    @app.get(
        "/search",
        tags=["query"],
        summary="Ranked passages, without the extracted answer",
        responses=_responses(503),
    )
    def search(
        q: QuestionParam, opts: QueryDep, k: KParam = 10, mode: ModeParam = "hybrid"
    ) -> dict[str, Any]:
        return engine.ask(q, k=k, mode=mode, answer=False, facets=True, **opts.kwargs()).to_dict()

    @app.get(
        "/documents",
        tags=["documents"],
        summary="A page of the documents (by id), with the total that pass the filters",
        responses=_responses(503),
    )
    def list_documents(
        flt: FilterDep,
        offset: Annotated[int, Query(ge=0, description="Skip this many documents.")] = 0,
        limit: Annotated[int, Query(ge=1, le=1000, description="At most this many documents.")] = 100,
    ) -> dict[str, Any]:
        docs, total = engine.list_documents(offset, limit, flt)
        out = []
        for d in docs:
            rec = d.to_dict()
            rec.pop("path", None)  # a path on the server's disk is not the client's business
            out.append(rec)
        return {"total": total, "offset": offset, "limit": limit, "documents": out}

    @app.get("/", include_in_schema=False)
    def index_page() -> HTMLResponse:
        return _html_page("index.html")

    @app.get("/web/{name}", include_in_schema=False)
    def web_asset(name: str) -> Response:
        media = WEB_ASSETS.get(name)
        if media is None:
            raise ApiError(404, "not_found", f"no file {name!r} in the web page's assets")
        body = (WEB_DIR / name).read_bytes()
        return Response(body, media_type=media, headers={"X-Content-Type-Options": "nosniff"})

    @app.get(
        "/documents/{doc_id:path}",
        tags=["documents"],
        summary="One article, with its passage count (an HTML page with format=html or Accept: text/html)",
        response_model=None,
        responses={
            **_responses(404, 503),
            200: {"content": {"application/json": {}, "text/html": {}}},
            404: {
                "model": ErrorBody,
                "description": "No such document (an HTML page when HTML was asked for).",
                "content": {"text/html": {}},
            },
        },
    )
    def get_document(
        doc_id: DocIdParam,
        request: Request,
        response: Response,
        fmt: FormatParam = None,
        span: SpanParam = None,
    ) -> dict[str, Any] | HTMLResponse:
        if _wants_html(request.headers.get("accept"), fmt):
            try:
                return _article_page(engine.get_document(doc_id), span)
            except DocumentNotFoundError:
                return _html_page(
                    "article.html",
                    status=404,
                    title="Article not found",
                    meta="",
                    notice=f'<p class="notice" role="alert">No article {html.escape(repr(doc_id))} in the '
                    'index: it may have been removed. <a href="/">Search again</a>.</p>',
                    body="",
                )
        response.headers["Vary"] = "Accept"
        art = engine.get_document(doc_id)
        try:
            passages = engine.document_record(doc_id).passages
        except DocumentNotFoundError:  # removed between the two reads
            passages = 0
        d = art.to_dict()
        d.pop("path", None)  # a path on the server's disk is not the client's business
        d["passages"] = passages
        return d

    @app.post(
        "/documents",
        tags=["documents"],
        summary="Add or replace one article (needs the bearer token)",
        dependencies=[Depends(require_token)],
        responses=_responses(401, 403, 503),
    )
    def add_document(body: ArticleBody) -> dict[str, Any]:
        if len(body.text) > MAX_HTTP_ARTICLE_CHARS:
            raise ApiError(
                413,
                "article_too_large",
                f"the article's text is {len(body.text):,} characters; this server takes at most "
                f"{MAX_HTTP_ARTICLE_CHARS:,} per article: split it, or add it with `search add` on the server",
            )
        art = _article(body)
        with _writing():
            report = engine.add(art)
        if report.problems and not (report.added or report.replaced or report.unchanged):
            raise IngestError(report.problems[0])
        return report.to_dict()

    @app.delete(
        "/documents/{doc_id:path}",
        tags=["documents"],
        summary="Remove one article (needs the bearer token)",
        dependencies=[Depends(require_token)],
        responses=_responses(401, 403, 404, 503),
    )
    def remove_document(doc_id: DocIdParam) -> dict[str, Any]:
        with _writing():
            report = engine.remove([doc_id])
        if report.missing:
            raise DocumentNotFoundError(f"no document {doc_id!r} in the index: see GET /documents/{{id}}")
        return report.to_dict()

    @app.get(
        "/stats",
        tags=["index"],
        summary="Counts, sizes, model and last update of the index",
        responses=_responses(503),
    )
    def stats() -> dict[str, Any]:
        st = engine.stats()
        st.pop("path", None)  # where the index lives on the server is not the client's business
        st.pop("uri", None)
        return st

    @app.get(
        "/healthz", tags=["index"], summary="Liveness: 200 when the server answers", responses=_responses()
    )
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("search")
    except Exception:  # not installed as a distribution (running from a checkout)
        return "0"


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, access_log: bool = False) -> None:
    """Run the app under uvicorn until interrupted."""
    try:
        import uvicorn
    except ImportError as e:  # pragma: no cover
        raise MissingExtraError("the HTTP server needs uvicorn: pip install 'search[serve]'") from e
    uvicorn.run(app, host=host, port=port, access_log=access_log, log_level="info", server_header=False)
