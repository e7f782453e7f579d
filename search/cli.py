"""The `search` command: a thin face over :class:`search.engine.Engine`.

Every command maps to one engine call; ``--json`` prints the result's ``to_dict()``.
Errors a user can cause print one line on stderr and exit non-zero, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .cli_options import filter_options, filters_from, sort_options
from .errors import QueryError, SearchError

log = logging.getLogger("search")

SEEDS = "seeds"
MODES = ["hybrid", "bm25", "dense"]


def _err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def _open(
    index: str | None,
    create: bool = False,
    backend: str | None = None,
    uri: str | None = None,
    embedder: Any = None,
) -> Any:
    from .engine import Engine

    return Engine.open(index, create=create, backend=backend, uri=uri, embedder=embedder)


def _workers_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--workers",
        default=None,
        metavar="ray[:ADDRESS]",
        help="Compute passage embeddings on Ray: `ray` (a local cluster on loopback) or `ray:ADDRESS`.",
    )(f)


def _writer_embedder(workers: str | None) -> Any:
    """None (the default embedder) or a Ray embedder for bulk writes; caller closes it."""
    if not workers:
        return None
    from .ray_embed import RayEmbedder, parse_workers

    try:
        address = parse_workers(workers)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--workers") from None
    return RayEmbedder("auto", address=address)


def _progress_bar() -> tuple[Any, Callable[[str, int, int], None]]:
    """A rich progress bar with rate and ETA, shown on stderr for long runs only."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=_err_console(),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    tasks: dict[str, Any] = {}  # stage → rich TaskID

    def cb(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = prog.add_task(f"{stage} passages", total=total, rate="")
        t = prog.tasks[tasks[stage]]
        rate = f"{t.speed:.0f}/s" if t.speed else ""
        prog.update(tasks[stage], completed=done, total=total, rate=rate)

    return prog, cb


def _index_option(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--uri",
        envvar="SEARCH_URI",
        default=None,
        help="Milvus URI for --backend milvus: a file path (Milvus Lite) or http://host:19530.",
    )(f)
    f = click.option(
        "--backend",
        envvar="SEARCH_BACKEND",
        type=click.Choice(["local", "milvus"]),
        default="local",
        show_default=True,
        help="Where the indexes live.",
    )(f)
    return click.option(
        "--index",
        "index_dir",
        envvar="SEARCH_INDEX",
        default="index",
        show_default=True,
        type=click.Path(file_okay=True, dir_okay=True),
        help="Index directory (or SEARCH_INDEX).",
    )(f)


class _BadQuestion(click.ClickException):
    """A question that cannot be searched: a usage mistake (exit 2), told in one line."""

    exit_code = 2


class _Group(click.Group):
    """Turns the package's errors into one-line messages with a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except QueryError as e:
            raise _BadQuestion(one_line(str(e))) from None
        except SearchError as e:
            raise click.ClickException(one_line(str(e))) from None
        except ValueError as e:  # bad arguments at the API boundary
            raise click.UsageError(str(e)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show progress and library messages.")
@click.version_option(package_name="search", prog_name="search")
def cli(verbose: bool) -> None:
    """Search football match coverage and answer questions with cited passages.

    Example: search ask "who scored the winner"
    """
    _configure_logging(verbose)


def _ours(record: logging.LogRecord) -> bool:
    return record.name == "search" or record.name.startswith("search.")


def _configure_logging(verbose: bool) -> None:
    """Without -v, the user sees only this package's warnings (each problem once, one line):
    libraries' messages (trafilatura's parse errors, model-loading progress bars) go nowhere.
    With -v, everything from INFO up, from every library, is shown."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_search_cli", False)]:
        root.removeHandler(h)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler._search_cli = True  # type: ignore[attr-defined]
    if not verbose:
        handler.addFilter(_ours)
        # Read when huggingface_hub / transformers / tqdm are imported, which is later.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "critical")
        os.environ.setdefault("TQDM_DISABLE", "1")
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` as one printable line: control characters escaped (a file name may hold a
    newline), lone surrogates (a name that is not UTF-8) shown as U+FFFD."""
    from .ingest import printable

    return printable(_CONTROL.sub(lambda m: ascii(m.group())[1:-1], text))


def _print_report(report: Any, what: str) -> None:
    c = _err_console()
    for p in report.problems:
        line = one_line(p if p.startswith("warning: ") else f"warning: {p}")
        c.print(line, markup=False, soft_wrap=True)
    parts = []
    if report.added:
        parts.append(f"{len(report.added)} added")
    if report.replaced:
        parts.append(f"{len(report.replaced)} replaced")
    if report.unchanged:
        parts.append(f"{len(report.unchanged)} unchanged (skipped)")
    if report.removed:
        parts.append(f"{len(report.removed)} removed")
    if report.duplicates:
        parts.append(f"{len(report.duplicates)} near-duplicates grouped")
    summary = ", ".join(parts) or "nothing changed"
    st = report.stages
    split = (
        f" (encode {st.get('encode', 0):.1f} s, NER {st.get('ner', 0):.1f} s, rest {st.get('rest', 0):.1f} s)"
        if report.passages
        else ""
    )
    c.print(f"{what}: {summary}; {report.passages} passages in {report.took_s:.1f} s{split}")


def _build(engine: Any, paths: list[str], reset: bool, **opts: Any) -> Any:
    prog, cb = _progress_bar()
    with prog:
        report = engine.add(paths, reset=reset, progress=cb, **opts)
    return report


@cli.command("index")
@click.argument("paths", nargs=-1, type=click.Path())
@_index_option
@_workers_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def index_cmd(
    paths: tuple[str, ...], index_dir: str, backend: str, uri: str | None, workers: str | None, as_json: bool
) -> None:
    """Build the index from articles (files or folders; default: seeds/).

    The index then holds exactly these articles. Example: search index seeds/
    """
    paths_l = list(paths) or [SEEDS]
    _require_paths(paths_l)
    report = _write(index_dir, backend, uri, workers, paths_l, reset=True)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        _print_report(report, "indexed")


def _write(
    index_dir: str,
    backend: str,
    uri: str | None,
    workers: str | None,
    paths: list[str],
    reset: bool,
    **opts: Any,
) -> Any:
    """Open (or create) the index and add ``paths`` (``reset``: the index holds exactly these)."""
    emb = _writer_embedder(workers)
    try:
        # Only `search index` creates an index: `add` into a mistyped --index is an error.
        with _open(index_dir, create=reset, backend=backend, uri=uri, embedder=emb) as engine:
            return _build(engine, paths, reset=reset, **opts)
    finally:
        if emb is not None:
            emb.close()


def _require_paths(paths: list[str]) -> None:
    missing = [p for p in paths if not Path(p).exists()]
    if missing and len(missing) == len(paths):
        raise click.ClickException(f"{missing[0]}: no such file or folder")


@cli.command("add")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@_index_option
@_workers_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default=None,
    help="Corpus folder the ids of single files are relative to (default: the folder they were "
    "indexed from, or their own folder).",
)
@click.option("--replace", is_flag=True, help="Let a different file take an id that is already used.")
def add_cmd(
    paths: tuple[str, ...],
    index_dir: str,
    backend: str,
    uri: str | None,
    workers: str | None,
    as_json: bool,
    root: str | None,
    replace: bool,
) -> None:
    """Add or replace articles in place (files, folders, .jsonl, .html, feeds).

    Unchanged articles are skipped; a different file under an id already used is refused
    unless --replace. Example: search add raw/cricket/105.txt --root raw
    """
    _require_paths(list(paths))
    report = _write(index_dir, backend, uri, workers, list(paths), reset=False, root=root, replace=replace)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        _print_report(report, "add")
    if not (report.added or report.replaced or report.unchanged):
        raise click.ClickException(
            "no article was added: " + (report.problems[0] if report.problems else "nothing to read")
        )


@cli.command("remove")
@click.argument("doc_ids", nargs=-1, required=True)
@_index_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def remove_cmd(
    doc_ids: tuple[str, ...], index_dir: str, backend: str, uri: str | None, as_json: bool
) -> None:
    """Remove articles by document id. Example: search remove 000_e3a89f9a78d59e55.txt"""
    with _open(index_dir, backend=backend, uri=uri) as engine:
        report = engine.remove(list(doc_ids))
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        c = _err_console()
        for d in report.missing:
            c.print(f"warning: no document {d!r} in the index (see `search list`)")
        c.print(f"removed {len(report.removed)} document(s)")
    if not report.removed:
        raise click.ClickException(
            f"none of the ids is in the index: {', '.join(doc_ids)} (see `search list`)"
        )


@cli.command("reindex")
@_index_option
@_workers_option
def reindex_cmd(index_dir: str, backend: str, uri: str | None, workers: str | None) -> None:
    """Rebuild the whole index from the sources it recorded. Example: search reindex"""
    from .engine import Engine

    emb = _writer_embedder(workers)
    try:
        prog, cb = _progress_bar()
        with prog:
            engine, report = Engine.rebuild(index_dir, progress=cb, backend=backend, uri=uri, embedder=emb)
        engine.close()
    finally:
        if emb is not None:
            emb.close()
    _print_report(report, "reindexed")


def _ensure_index(index_dir: str, backend: str, uri: str | None, preload: bool = False) -> Any:
    """Open the index; when the default one is missing, build it from seeds/ first."""
    from .engine import Engine
    from .errors import IndexMissingError

    try:
        return Engine.open(index_dir, backend=backend, uri=uri, preload=preload)
    except IndexMissingError:
        # Only the default index is built from seeds/ on first use; a --index (or
        # SEARCH_INDEX) that does not exist is most likely a typo: say how to create it.
        source = click.get_current_context().get_parameter_source("index_dir")
        if source is not click.core.ParameterSource.DEFAULT or not Path(SEEDS).is_dir():
            raise
    _err_console().print(f"No index at {index_dir}: building one from {SEEDS}/ first.")
    engine = Engine.open(index_dir, create=True, backend=backend, uri=uri)
    report = _build(engine, [SEEDS], reset=True)
    _print_report(report, "indexed")
    return engine


@cli.command("ask")
@click.argument("question")
@click.option("-k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="How many passages.")
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option(
    "--all-copies", is_flag=True, help="Show every copy of syndicated stories (default: collapse them)."
)
@click.option(
    "--min-confidence",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Confidence a short answer needs, 0-1 (default: the fitted threshold, or SEARCH_MIN_CONFIDENCE).",
)
@filter_options
@sort_options
@_index_option
def ask_cmd(
    question: str,
    k: int,
    mode: str,
    as_json: bool,
    all_copies: bool,
    min_confidence: float | None,
    sources: tuple[str, ...],
    since: str | None,
    until: str | None,
    where: tuple[str, ...],
    sort: str,
    offset: int,
    half_life: float,
    index_dir: str,
    backend: str,
    uri: str | None,
) -> None:
    """Answer a question with ranked, cited passages.

    Example: search ask "who scored" --where category=football --since 2005-01-01
    """
    from .engine import Engine

    Engine.check_question(question)
    filters = filters_from(sources, since, until, where)
    with _ensure_index(index_dir, backend, uri, preload=mode != "bm25") as engine:
        if min_confidence is not None:
            engine.min_confidence = min_confidence
        result = engine.ask(
            question,
            k=k,
            mode=mode,
            collapse=not all_copies,
            filters=filters,
            sort=sort,
            offset=offset,
            half_life=half_life,
            facets=True,
        )
        if as_json:
            click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
            return
        from .render import print_answer

        print_answer(_console(), result, engine)


@cli.command("show")
@click.argument("doc_id")
@click.option("--span", default=None, help="START:END character span to highlight.")
@click.option("--json", "as_json", is_flag=True, help="Print the article as JSON.")
@_index_option
def show_cmd(
    doc_id: str, span: str | None, as_json: bool, index_dir: str, backend: str, uri: str | None
) -> None:
    """Print an article with a cited span highlighted.

    Example: search show 001_10f36a323a73b675.txt --span 120:260
    """
    rng = _parse_span(span)
    with _open(index_dir, backend=backend, uri=uri) as engine:
        art = engine.get_document(doc_id)
        if rng and rng[1] > len(art.text):
            raise click.ClickException(
                f"span {rng[0]}:{rng[1]} is outside {doc_id} ({len(art.text)} characters): "
                "use a span from `search ask`"
            )
        if as_json:
            click.echo(json.dumps(art.to_dict(), ensure_ascii=False))
            return
        from .render import print_article

        print_article(_console(), art, engine.document_record(doc_id), rng)


def _parse_span(span: str | None) -> tuple[int, int] | None:
    if span is None:
        return None
    try:
        a, b = span.split(":")
        start, end = int(a), int(b)
    except ValueError:
        raise click.BadParameter(
            f"{span!r} is not START:END (two whole numbers)", param_hint="--span"
        ) from None
    if start < 0 or end <= start:
        raise click.BadParameter(f"{span!r}: need 0 <= START < END", param_hint="--span")
    return start, end


@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per document.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show at most this many documents.")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many documents first.")
@filter_options
@_index_option
def list_cmd(
    as_json: bool,
    limit: int | None,
    offset: int,
    sources: tuple[str, ...],
    since: str | None,
    until: str | None,
    where: tuple[str, ...],
    index_dir: str,
    backend: str,
    uri: str | None,
) -> None:
    """List the indexed documents (full titles), with near-duplicate groups.

    Example: search list --where category=football --limit 20
    """
    with _open(index_dir, backend=backend, uri=uri) as engine:
        docs, total = engine.list_documents(offset, limit, filters_from(sources, since, until, where))
    if as_json:
        for d in docs:
            click.echo(json.dumps(d.to_dict(), ensure_ascii=False))
        return
    from .render import print_documents

    print_documents(_console(), docs, total=total, offset=offset)


@cli.command("stats")
@click.option("--json", "as_json", is_flag=True)
@_index_option
def stats_cmd(as_json: bool, index_dir: str, backend: str, uri: str | None) -> None:
    """Counts, sizes, model and last update of the index. Example: search stats"""
    with _open(index_dir, backend=backend, uri=uri) as engine:
        st = engine.stats()
    if as_json:
        click.echo(json.dumps(st))
        return
    c = _console()
    for key, val in st.items():
        if key == "size_bytes":
            key, val = "size", f"{val / 1e6:.1f} MB"
        elif isinstance(val, dict):
            val = ", ".join(f"{k}={v}" for k, v in val.items())
        c.print(f"[bold]{key}[/]: {val}", highlight=False)


@cli.command("eval")
@click.argument("file", type=click.Path())
@click.option("--mode", type=click.Choice(MODES + ["all"]), default="hybrid", show_default=True)
@click.option("-k", "k", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per mode.")
@_index_option
def eval_cmd(
    file: str, mode: str, k: int, as_json: bool, index_dir: str, backend: str, uri: str | None
) -> None:
    """Score retrieval (hit@1, recall@5, mrr@10) and answers (answer@1) on a question file.

    Example: search eval ../shared/eval/dev.jsonl --mode hybrid
    """
    from .evaluate import evaluate, read_questions

    questions = read_questions(file)
    modes = MODES if mode == "all" else [mode]
    with _ensure_index(index_dir, backend, uri) as engine:
        for m in modes:
            res = evaluate(engine, questions, mode=m, k=k)
            if as_json:
                click.echo(json.dumps(res.to_dict()))
                continue
            line = (
                f"{m:7s} n={res.n}  hit@1={res.hit1:.3f}  recall@5={res.recall5:.3f}  mrr@10={res.mrr10:.3f}"
            )
            if res.answer1 is not None:
                prec = "-" if res.short_precision is None else f"{res.short_precision:.3f}"
                line += f"  answer@1={res.answer1:.3f}  short_precision={prec}  short_coverage={res.short_coverage:.3f}"
            click.echo(line)
            if res.misses:
                qs = {q.id: q.question for q in questions}
                click.echo("  missed at 5: " + "; ".join(f"{i} ({qs[i]})" for i in res.misses))
            if res.answer_misses:
                click.echo("  wrong answers: " + ", ".join(res.answer_misses))


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


@cli.command("serve")
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
        _err_console().print(f"warning: binding {host}: anyone who can reach it can query the index")
        hosts = hosts or ["*"]
    with _serving_engine(index_dir, backend, uri, embedder) as engine:
        app = create_app(engine, token=os.environ.get(TOKEN_ENV) or None, allowed_hosts=hosts or None)
        serve(app, host=host, port=port, access_log=access_log)


@cli.command("mcp")
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


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `search` command."""
    try:
        cli.main(args=argv, prog_name="search")
    except BrokenPipeError:
        # Output piped into `head`: not an error; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
