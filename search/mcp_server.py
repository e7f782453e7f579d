"""The MCP face: a stdio server (official ``mcp`` SDK, ``MCPServer``) over one Engine.

Tools: ``search``, ``ask``, ``get_document`` and, only when started with writes allowed,
``add_document``. Each result carries the same dict as the CLI's ``--json`` as structured
content, and a readable text block numbered like :meth:`Answer.to_context`
(``[1] title, source (doc:start-end)`` then the passage), so a model can cite ``[n]``.
A user's mistake (an empty question, an unknown document) comes back as a tool error
whose text is the engine's one-line message; the server keeps running.

Run it with ``search mcp --index DIR [--allow-writes]``.
"""

from __future__ import annotations

import logging
import threading
from typing import Annotated, Any, Literal

from .engine import MAX_K, Engine
from .errors import MissingExtraError, SearchError
from .types import Answer, Article

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import Field
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        f"the MCP server needs the mcp SDK ({e.name} is missing): pip install 'search[serve]'"
    ) from None

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "bm25", "dense"]
Question = Annotated[str, Field(description="The question, in plain words (at most 2,000 characters).")]
K = Annotated[int, Field(ge=1, le=MAX_K, description="How many passages to return.")]
ModeArg = Annotated[Mode, Field(description="hybrid (default), bm25 (exact words) or dense (meaning).")]

INSTRUCTIONS = (
    "Search news coverage of football matches. Use `ask` for a question (it returns a short answer, "
    "when one is found, and the passages it comes from), `search` for ranked passages only, and "
    "`get_document` to read a whole article. Cite passages by their [n] numbers."
)


def _ok(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _fail(exc: Exception) -> CallToolResult:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def answer_text(result: Answer, max_chars: int = 8000) -> str:
    """The readable form of an ask/search result: the answer line, then numbered passages."""
    lines: list[str] = []
    # to_context leads with the answer, its support and any conflicts, each cited [n].
    if not result.hits:
        lines.append("No passages match the question.")
        return "\n".join(lines)
    if lines:
        lines.append("")
    lines.append(result.to_context(max_chars=max_chars))
    return "\n".join(lines).rstrip() + "\n"


def document_text(art: Article) -> str:
    head = [art.title or art.id]
    meta = ", ".join(x for x in (art.source, art.published, art.url) if x)
    if meta:
        head.append(meta)
    head.append(f"id: {art.id}")
    return "\n".join(head) + "\n\n" + art.text


def build_server(engine: Engine, *, allow_writes: bool = False) -> MCPServer[Any]:
    """An MCP server exposing ``engine``; ``add_document`` exists only with ``allow_writes``."""
    mcp: MCPServer[Any] = MCPServer(
        "search", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING"
    )
    write_lock = threading.Lock()
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    # Tools are plain functions: the SDK runs them in a worker thread, and an engine
    # serves concurrent queries. Errors a caller can cause come back as tool errors.
    @mcp.tool(annotations=read_only)
    def ask(question: Question, k: K = 5, mode: ModeArg = "hybrid") -> CallToolResult:
        """Answer a question about football matches with a short answer and numbered, cited passages."""
        try:
            result = engine.ask(question, k=k, mode=mode)
        except (SearchError, ValueError) as e:
            return _fail(e)
        return _ok(answer_text(result), result.to_dict())

    @mcp.tool(annotations=read_only)
    def search(question: Question, k: K = 10, mode: ModeArg = "hybrid") -> CallToolResult:
        """Ranked passages for a question, numbered [1]..[k], each with its article, source and span."""
        try:
            result = engine.ask(question, k=k, mode=mode, answer=False)
        except (SearchError, ValueError) as e:
            return _fail(e)
        return _ok(answer_text(result), result.to_dict())

    @mcp.tool(annotations=read_only)
    def get_document(
        doc_id: Annotated[str, Field(description="A document id, as in a passage's doc_id.")],
    ) -> CallToolResult:
        """The full text of one article, by its document id."""
        try:
            art = engine.get_document(doc_id)
            passages = engine.document_record(doc_id).passages
        except (SearchError, ValueError) as e:
            return _fail(e)
        d = art.to_dict()
        d.pop("path", None)
        d["passages"] = passages
        return _ok(document_text(art), d)

    if allow_writes:

        @mcp.tool(
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
        )
        def add_document(
            id: Annotated[
                str,
                Field(min_length=1, max_length=200, description="Document id; an existing id is replaced."),
            ],
            text: Annotated[str, Field(min_length=1, description="The article's full text.")],
            title: Annotated[
                str, Field(description="The article's headline (empty: derived from the text).")
            ] = "",
            source: Annotated[str, Field(description="The outlet, e.g. 'BBC Sport'.")] = "",
            url: str | None = None,
            published: Annotated[str | None, Field(description="ISO date, e.g. 2022-12-18.")] = None,
        ) -> CallToolResult:
            """Add an article to the index, or replace the one with the same id; it is searchable at once."""
            from .server import ArticleBody, _article

            try:
                art = _article(
                    ArticleBody(id=id, title=title, text=text, source=source, url=url, published=published)
                )
                with write_lock:
                    report = engine.add(art)
            except (SearchError, ValueError) as e:
                return _fail(e)
            d = report.to_dict()
            what = "added" if report.added else "replaced" if report.replaced else "unchanged"
            return _ok(f"{id}: {what}, {report.passages} passages indexed", d)

    return mcp


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("search")
    except Exception:
        return "0"


def run(engine: Engine, *, allow_writes: bool = False) -> None:
    """Serve ``engine`` over stdio until the client closes the connection."""
    build_server(engine, allow_writes=allow_writes).run("stdio")
