"""Offline API docs: Swagger UI at ``/docs`` and ReDoc at ``/redoc``, from local files.

FastAPI's own ``/docs`` and ``/redoc`` load their scripts from a CDN, so they are blank
without a network. These pages load Swagger UI and ReDoc from the files the
``fastapi-offline`` package ships (MIT), served under ``/docs-assets/``; nothing comes
from another host. ReDoc's Google fonts are off, Swagger UI's online validator badge is
off, and a Content-Security-Policy on both pages allows only the server's own scripts,
fetches and images: ReDoc's menu footer shows the Redocly logo from ``cdn.redoc.ly``,
which the policy blocks (the footer keeps its text link).
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: Swagger UI's and ReDoc's bundles (swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js).
ASSETS_DIR = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS_URL = "/docs-assets"
DOCS_URL = "/docs"
REDOC_URL = "/redoc"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"

#: Only the server's own files; the pages' inline scripts are allowed by hash, not wholesale.
#: Swagger UI and ReDoc set styles at run time (ReDoc through styled-components), hence
#: inline styles; images may be data: URLs (Swagger UI's icons).
_CSP = (
    "default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def _local(page: HTMLResponse) -> HTMLResponse:
    """``page`` with a CSP that allows its own inline scripts (by SHA-256) and nothing remote."""
    body = bytes(page.body).decode("utf-8")
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii") + "'"
        for s in _INLINE_SCRIPT.findall(body)
    ]
    headers = {
        "Content-Security-Policy": _CSP.format(scripts=" ".join(["'self'", *hashes])),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    return HTMLResponse(body, headers=headers)


def add_api_docs(app: FastAPI, favicon_url: str | None = None) -> None:
    """Serve ``/docs`` (Swagger UI), ``/redoc`` and their assets on ``app``, without a CDN.

    ``app`` is built with ``docs_url=None, redoc_url=None`` so FastAPI's CDN pages are off.
    """
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS_DIR), name="docs-assets")
    favicon = favicon_url or f"{ASSETS_URL}/favicon.png"

    @app.get(DOCS_URL, include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(
            get_swagger_ui_html(
                openapi_url=f"{root}{app.openapi_url}",
                title=f"{app.title} - Swagger UI",
                oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT_URL}",
                swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
                swagger_favicon_url=favicon,
                # No badge that sends the spec's URL to validator.swagger.io.
                swagger_ui_parameters={"validatorUrl": None, **(app.swagger_ui_parameters or {})},
            )
        )

    @app.get(OAUTH2_REDIRECT_URL, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return _local(get_swagger_ui_oauth2_redirect_html())

    @app.get(REDOC_URL, include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(
            get_redoc_html(
                openapi_url=f"{root}{app.openapi_url}",
                title=f"{app.title} - ReDoc",
                redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
                redoc_favicon_url=favicon,
                with_google_fonts=False,
            )
        )
