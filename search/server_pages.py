"""The HTML the HTTP face serves: which responses want it, the article page, its headers.

Imported by :mod:`search.server`, which checks first that fastapi is installed.
"""

from __future__ import annotations

import html
from pathlib import Path as FilePath
from string import Template
from urllib.parse import urlsplit

from fastapi.responses import HTMLResponse

from .types import Article

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


def _html_page(template: str, status: int = 200, **fields: str) -> HTMLResponse:
    """``search/web/<template>`` filled with ``fields``, which the caller has escaped."""
    text = Template((WEB_DIR / template).read_text(encoding="utf-8")).substitute(fields)
    return HTMLResponse(text, status_code=status, headers={**HTML_HEADERS, "Vary": "Accept"})


def _article_page(art: Article, span: tuple[int, int] | None) -> HTMLResponse:
    """The article as a page, ``span`` (checked START < END) highlighted; every value from
    the article is HTML-escaped here.

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
    if span is None or span[1] > len(text):
        body = esc(text)
        notice = ""
        if span:
            notice = (
                f'<p class="notice" role="status">The cited span {span[0]}:{span[1]} is not in this article '
                f"({len(text):,} characters): it may have changed since it was cited.</p>"
            )
    else:
        start, end = span
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
