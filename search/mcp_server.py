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

import io
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from .engine import MAX_K, Engine
from .errors import MissingExtraError, SearchError, scrub_paths
from .types import Answer, Article

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import Field, ValidationError
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        f"the MCP server needs the mcp SDK ({e.name} is missing): pip install 'search[serve]'"
    ) from None

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "bm25", "dense"]
Question = Annotated[str, Field(description="The question, in plain words (at most 2,000 characters).")]
K = Annotated[int, Field(ge=1, le=MAX_K, description="How many passages to return.")]
ModeArg = Annotated[Mode, Field(description="hybrid (default), bm25 (exact words) or dense (meaning).")]
SourceArg = Annotated[list[str] | None, Field(description="Only these outlets (any of them).")]
SinceArg = Annotated[
    str | None, Field(description="Published on or after this date (ISO 8601, e.g. 2005-01-01).")
]
UntilArg = Annotated[str | None, Field(description="Published on or before this date (ISO 8601).")]
WhereArg = Annotated[
    list[str] | None,
    Field(
        description='Metadata conditions, e.g. ["category=football", "minute>=80"] (>=, <=, >, < for numbers, dates).'
    ),
]
SortArg = Annotated[
    Literal["relevance", "newest", "recency"],
    Field(description="relevance (default), newest first, or recency (relevance decayed by age)."),
]
OffsetArg = Annotated[int, Field(ge=0, le=1000, description="Skip this many passages (the next page).")]


def _filters(source: list[str] | None, since: str | None, until: str | None, where: list[str] | None) -> Any:
    from .filters import Filters

    return Filters.parse(source=source or [], since=since, until=until, where=where or [])


INSTRUCTIONS = (
    "Search news coverage of football matches. Use `ask` for a question (it returns a short answer, "
    "when one is found, and the passages it comes from), `search` for ranked passages only, and "
    "`get_document` to read a whole article. Cite passages by their [n] numbers."
)


def _ok(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _fail(exc: Exception, index: object = None) -> CallToolResult:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    message = scrub_paths(message, index)  # where the index lives is not the client's business
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def answer_text(result: Answer, max_chars: int = 8000) -> str:
    """The readable form of an ask/search result: the answer line, then numbered passages."""
    lines: list[str] = []
    # to_context leads with the answer, its support and any conflicts, each cited [n].
    if not result.hits:
        lines.append("No passages pass the filters." if result.filters else "No passages match the question.")
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


class _Server(MCPServer[Any]):
    """The SDK's server, with an argument that breaks a tool's schema told in one line."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                # pydantic's text is several lines with a documentation link per error.
                raise ToolError(invalid_arguments(e.__cause__)) from None
            raise


def invalid_arguments(e: ValidationError) -> str:
    """One line: each bad argument, what it must be, and what was given."""
    bits = []
    for err in e.errors():
        where = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        got = err.get("input")
        shown = f" (got {got!r})" if not isinstance(got, dict) and len(repr(got)) <= 40 else ""
        bits.append(f"{where}: {err.get('msg', 'invalid')}{shown}")
    return "invalid arguments: " + "; ".join(bits)


def build_server(engine: Engine, *, allow_writes: bool = False) -> MCPServer[Any]:
    """An MCP server exposing ``engine``; ``add_document`` exists only with ``allow_writes``."""
    mcp: MCPServer[Any] = _Server(
        "search", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING"
    )
    write_lock = threading.Lock()
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    # Tools are plain functions: the SDK runs them in a worker thread, and an engine
    # serves concurrent queries. Errors a caller can cause come back as tool errors.
    @mcp.tool(annotations=read_only)
    def ask(
        question: Question,
        k: K = 5,
        mode: ModeArg = "hybrid",
        source: SourceArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        where: WhereArg = None,
        sort: SortArg = "relevance",
        offset: OffsetArg = 0,
    ) -> CallToolResult:
        """Answer a question about football matches with a short answer and numbered, cited passages.

        Narrow with source, since/until and where (metadata such as category=football);
        the result's facets count every matching passage per source, category and month."""
        try:
            flt = _filters(source, since, until, where)
            result = engine.ask(question, k=k, mode=mode, filters=flt, sort=sort, offset=offset, facets=True)
        except (SearchError, ValueError) as e:
            return _fail(e, engine.path)
        return _ok(answer_text(result), result.to_dict())

    @mcp.tool(annotations=read_only)
    def search(
        question: Question,
        k: K = 10,
        mode: ModeArg = "hybrid",
        source: SourceArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        where: WhereArg = None,
        sort: SortArg = "relevance",
        offset: OffsetArg = 0,
    ) -> CallToolResult:
        """Ranked passages for a question, numbered [1]..[k], each with its article, source and span.

        Narrow with source, since/until and where (metadata such as category=football)."""
        try:
            flt = _filters(source, since, until, where)
            result = engine.ask(
                question, k=k, mode=mode, answer=False, filters=flt, sort=sort, offset=offset, facets=True
            )
        except (SearchError, ValueError) as e:
            return _fail(e, engine.path)
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
            return _fail(e, engine.path)
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
            from .schema_errors import schema_message
            from .server import ArticleBody, _article

            try:
                art = _article(
                    ArticleBody(id=id, title=title, text=text, source=source, url=url, published=published)
                )
                with write_lock:
                    report = engine.add(art)
            except ValidationError as e:  # a ValueError too, whose first line names no field
                return _fail(ValueError(schema_message(e.errors())), engine.path)
            except (SearchError, ValueError) as e:
                return _fail(e, engine.path)
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


def _rpc_error(code: int, message: str, msg_id: Any = None) -> Any:
    """A JSON-RPC 2.0 error response (``id`` null when the request's id is unknown)."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    err = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    return SessionMessage(types.jsonrpc_message_adapter.validate_python(err))


def _bad_id(line: str) -> Any:
    """The -32600 reply for a request whose id is no string or number, else None.

    The SDK would read it as a notification (which is never answered) and drop the id.
    """
    if '"id"' not in line:
        return None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None  # the SDK's parser reports it
    if isinstance(obj, dict) and "id" in obj and "method" in obj:
        i = obj["id"]
        if isinstance(i, bool) or not isinstance(i, (str, int)):
            return _rpc_error(-32600, "Invalid Request: a request's id is a string or a whole number")
    return None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_again(exc: Exception) -> tuple[Any, Any]:
    """A line the SDK could not read: (the message after all, None) or (None, the error reply).

    The SDK's parser refuses a lone surrogate escape (``"\\ud800"``), which JSON allows:
    such a line is parsed again here, so the request reaches its tool and is answered
    with the engine's own error for that id. Anything else is answered as JSON-RPC 2.0
    requires: -32700 for a line that is not JSON, -32600 for JSON that is no message.
    """
    import json
    import math

    import mcp_types as types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    line, obj = None, None
    if isinstance(exc, ValidationError):
        errs = exc.errors()
        line = next((e.get("input") for e in errs if e.get("type") == "json_invalid"), None)
        if line is None and errs:
            obj = errs[0].get("input")  # valid JSON, no message
        if any(isinstance(e.get("input"), float) and not math.isfinite(e["input"]) for e in errs):
            line = "NaN"  # the SDK's parser takes NaN and Infinity, which JSON does not have
    try:
        if isinstance(line, str):
            obj = json.loads(line, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return None, _rpc_error(
            -32700, "Parse error: the line is not JSON; send one JSON-RPC message per line"
        )
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(obj, by_name=False)), None
    except Exception:
        pass
    msg_id = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):
        msg_id = None
    return None, _rpc_error(
        -32600,
        "Invalid Request: send a JSON-RPC 2.0 object with jsonrpc, method and, for a request, id",
        _no_surrogates(msg_id),
    )


def _writable(message: Any) -> Any:
    """``message`` if it serialises to UTF-8 JSON, else the same with unencodable text replaced,
    else an internal error for its id: a request always gets some answer."""
    try:
        message.message.model_dump_json(by_alias=True, exclude_unset=True)
        return message
    except Exception:
        pass
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    data = message.message.model_dump(mode="python", by_alias=True, exclude_unset=True)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(_no_surrogates(data)))
    except Exception:
        log.exception("an MCP reply could not be written")
        return _rpc_error(-32603, "Internal error: the reply could not be encoded", data.get("id"))


def _no_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Run ``server`` over stdio, answering what the SDK's transport leaves unanswered.

    The SDK hands a line it cannot parse to the session as an exception, and the session
    drops it, so the client waits forever; and a reply holding a lone surrogate (echoed
    from a ``\ud800`` escape) cannot be written at all. Here every unreadable line gets
    its JSON-RPC error (-32700 parse error, -32600 invalid request, ``id`` null) and
    every reply is made writable first.
    """
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    low = server._lowlevel_server
    # The server's replies and our own error replies share the wire: one writer.
    errors_out, errors_in = anyio.create_memory_object_stream[SessionMessage](100)

    async def screened(lines: Any) -> AsyncIterator[str]:
        async for line in lines:
            reply = _bad_id(line)
            if reply is None:
                yield line
            else:
                await errors_out.send(reply)

    stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin=screened(stdin)) as (wire_in, wire_out):  # type: ignore[arg-type]
        to_server, server_in = create_context_streams[SessionMessage | Exception](0)
        server_out, from_server = create_context_streams[SessionMessage](0)

        async def pump_in() -> None:
            async with to_server, errors_out:
                async for item in wire_in:
                    if isinstance(item, Exception):
                        item, reply = _read_again(item)
                        if reply is not None:
                            await errors_out.send(reply)
                            continue
                    await to_server.send(item)

        async def pump_out() -> None:
            async def replies() -> None:
                async for message in from_server:
                    await wire_out.send(_writable(message))

            async def line_errors() -> None:
                async for message in errors_in:
                    await wire_out.send(message)

            async with wire_out, anyio.create_task_group() as tg:
                tg.start_soon(replies)
                tg.start_soon(line_errors)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_in)
            tg.start_soon(pump_out)
            async with server_out:
                await low.run(server_in, server_out, low.create_initialization_options())


def run(engine: Engine, *, allow_writes: bool = False) -> None:
    """Serve ``engine`` over stdio until the client closes the connection."""
    import anyio

    anyio.run(serve_stdio, build_server(engine, allow_writes=allow_writes))
