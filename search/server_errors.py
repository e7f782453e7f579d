"""The HTTP face's errors: one JSON shape, ``{"error": {"code", "message"}}``, for every failure.

:class:`ApiError` is raised by the routes; :func:`_install_error_handlers` maps it, request
validation, Starlette's own errors and the engine's :class:`SearchError` kinds to a status,
and no traceback ever reaches a client. Imported by :mod:`search.server`.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from .engine import Engine
from .errors import (
    DocumentNotFoundError,
    FilterError,
    IndexWriteError,
    IngestError,
    QueryError,
    SearchError,
    WriterBusyError,
    scrub_paths,
)
from .schema_errors import schema_message

# The handlers' notes keep the name they always had, so a log filter on it still works.
log = logging.getLogger("search.server")

#: Seconds a client is told to wait when another process holds the index's writer lock.
RETRY_AFTER_S = 2


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
    return schema_message(exc.errors())


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
        if exc.status_code == 400 and message == "There was an error parsing the body":
            # FastAPI's words for a body json.loads could not take at all (not a JSON error)
            message = (
                "the body could not be read as JSON (not UTF-8, nested too deep, or a number of over "
                "4,300 digits): send one JSON object in UTF-8"
            )
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
        if isinstance(exc, IndexWriteError):  # a full disk, a read-only folder: logged above
            return error(
                503,
                "write_failed",
                "the index could not be written (the server log has the details); it is unchanged: try again later",
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
