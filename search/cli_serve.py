"""The commands that serve the index: `search serve` (the HTTP API) and `search mcp` (stdio).

Both open the index once, warm the query path (the model and the searcher) before the
first request, and hand the engine to :mod:`search.server` or :mod:`search.mcp_server`,
imported only then. ``serve`` binds loopback unless told otherwise and warns when it
does not; writes need ``SEARCH_API_TOKEN``.
"""

from __future__ import annotations

import os
from typing import Any

import click

from .cli_base import _err_console, _index_option, one_line
from .errors import SearchError

_EMBEDDERS = ["auto", "onnx", "onnx-int8", "sentence-transformers", "hash"]


def _serving_engine(index_dir: str, backend: str, uri: str | None, embedder: str) -> Any:
    """Open the index for a long-running server and warm the query path (model, searcher)."""
    from .engine import Engine

    engine = Engine.open(index_dir, backend=backend, uri=uri, embedder=embedder)
    try:
        engine.search("warm up", k=1)
    except SearchError:
        pass
    return engine


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Anything but loopback exposes the index to the network.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--access-log", is_flag=True, help="Log every request on stderr.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A name the Host header may carry (repeatable; `*`: any). Default: the loopback names "
    "when bound to loopback, any otherwise. Or SEARCH_ALLOWED_HOSTS=a,b.",
)
@click.option("--embedder", type=click.Choice(_EMBEDDERS), default="auto", hidden=True)
@_index_option
def serve_cmd(
    host: str,
    port: int,
    access_log: bool,
    allowed_hosts: tuple[str, ...],
    embedder: str,
    index_dir: str,
    backend: str,
    uri: str | None,
) -> None:
    """Serve the HTTP API (JSON; OpenAPI docs at /docs).

    Writes (POST and DELETE /documents) are allowed only when SEARCH_API_TOKEN is set;
    clients send it as 'Authorization: Bearer <token>'.

    Example: SEARCH_API_TOKEN=s3cret search serve --port 8000
    """
    from .server import LOOPBACK_HOSTS, TOKEN_ENV, create_app, serve

    hosts = list(allowed_hosts) or [
        h.strip() for h in os.environ.get("SEARCH_ALLOWED_HOSTS", "").split(",") if h.strip()
    ]
    if host not in LOOPBACK_HOSTS:
        _err_console().print(
            one_line(f"warning: binding {host}: anyone who can reach it can query the index"), markup=False
        )
        hosts = hosts or ["*"]
    with _serving_engine(index_dir, backend, uri, embedder) as engine:
        app = create_app(engine, token=os.environ.get(TOKEN_ENV) or None, allowed_hosts=hosts or None)
        serve(app, host=host, port=port, access_log=access_log)


@click.command("mcp")
@click.option("--allow-writes", is_flag=True, help="Also offer the add_document tool.")
@click.option("--embedder", type=click.Choice(_EMBEDDERS), default="auto", hidden=True)
@_index_option
def mcp_cmd(allow_writes: bool, embedder: str, index_dir: str, backend: str, uri: str | None) -> None:
    """Serve the index to an MCP client over stdio (tools: search, ask, get_document).

    Example client config: {"command": "search", "args": ["mcp", "--index", "/abs/path/index"]}
    """
    from .mcp_server import run

    with _serving_engine(index_dir, backend, uri, embedder) as engine:
        run(engine, allow_writes=allow_writes)
