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
from collections.abc import Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any

from .engine import Engine
from .errors import (
    DocumentNotFoundError,
    IngestError,
    MissingExtraError,
    WriterBusyError,
)

try:
    # The stage modules below import these unguarded: this is the one check for the extra.
    import pydantic  # noqa: F401
    import starlette  # noqa: F401
    from fastapi import Depends, FastAPI, Query, Request
    from fastapi.responses import HTMLResponse, Response

    from .apidocs import add_api_docs
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        f"the HTTP server needs fastapi and uvicorn ({e.name} is missing): pip install 'search[serve]'"
    ) from None


# Re-exported: the names callers have imported from here since before the split.
from .server_errors import RETRY_AFTER_S as RETRY_AFTER_S  # noqa: E402
from .server_errors import ApiError, ErrorBody, _install_error_handlers, _responses  # noqa: E402
from .server_guard import MAX_BODY_BYTES as MAX_BODY_BYTES  # noqa: E402
from .server_guard import _bearer, _Guard  # noqa: E402
from .server_pages import CSP as CSP  # noqa: E402
from .server_pages import HTML_HEADERS as HTML_HEADERS  # noqa: E402
from .server_pages import WEB_ASSETS, WEB_DIR, _article_page, _html_page, _wants_html  # noqa: E402
from .server_params import MAX_HTTP_ARTICLE_CHARS as MAX_HTTP_ARTICLE_CHARS  # noqa: E402
from .server_params import (  # noqa: E402
    ArticleBody,
    AskBody,
    AuthHeader,
    DocIdParam,
    FilterDep,
    FormatParam,
    KParam,
    ModeParam,
    QueryDep,
    QuestionParam,
    SpanParam,
    _article,
    check_span,
)

log = logging.getLogger(__name__)

TOKEN_ENV = "SEARCH_API_TOKEN"
#: Largest request body accepted, checked on Content-Length and on the bytes streamed.
#: How long a write waits for the one before it before it is answered 503 (seconds).
WRITE_WAIT_S = 30.0
#: Host names a server bound to loopback answers to: a page on another name (DNS
#: rebinding) is refused, so it cannot read the index through the user's browser.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


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
        cut = check_span(span)  # malformed: 422 whatever the format, as the CLI refuses it
        if _wants_html(request.headers.get("accept"), fmt):
            try:
                return _article_page(engine.get_document(doc_id), cut)
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
