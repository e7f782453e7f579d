"""The commands that write the index: `search index`, `add`, `remove` and `reindex`.

Each opens (or, for `index`, creates) the index, reads the articles with a progress
bar on stderr for long runs, and prints a one-line report (added, replaced, unchanged,
removed, near-duplicates, and where the time went) or, with ``--json``, the report's
``to_dict()``. ``--workers ray[:ADDRESS]`` computes the passage embeddings on Ray.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from .cli_base import SEEDS, _err_console, _index_option, _open, one_line


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


SHOWN_PER_KIND = 20  # warnings of one kind printed before the rest are only counted (not with -v)
_WHERE = re.compile(r"^(?:warning: )?.*?: ")  # the file (and line) a problem names first
_PARENS = re.compile(r"\([^()]*\)")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'")
_PATHISH = re.compile(r"\S*/\S*")
_NUMBER = re.compile(r"(?<![\w-])\d[\d,.]*")


def problem_kind(problem: str) -> str:
    """What went wrong, without where or the particulars: ``b4.jsonl:7: malformed JSON
    (Expecting value at column 1); fix or remove the line`` is ``malformed JSON``. Only
    groups warnings for display, so a message it reads oddly is still shown, not lost."""
    msg = _WHERE.sub("", problem, count=1)
    while (bare := _PARENS.sub("", msg)) != msg:  # "(<unknown>:1:2: not (well) formed)"
        msg = bare
    msg = _QUOTED.sub("…", msg).split(";", 1)[0]
    msg = _NUMBER.sub("N", _PATHISH.sub("…", msg))
    return " ".join(msg.split()) or problem


def _print_report(report: Any, what: str) -> None:
    c = _err_console()
    ctx = click.get_current_context(silent=True)
    verbose = bool(ctx and ctx.find_root().params.get("verbose"))
    seen: dict[str, int] = {}  # kind → warnings of it so far
    for p in report.problems:
        kind = problem_kind(p)
        seen[kind] = seen.get(kind, 0) + 1
        if verbose or seen[kind] <= SHOWN_PER_KIND:
            line = one_line(p if p.startswith("warning: ") else f"warning: {p}")
            c.print(line, markup=False, soft_wrap=True)
    command = f"search -v {ctx.info_name}" if ctx else "search -v"
    for kind, n in seen.items():
        if not verbose and n > SHOWN_PER_KIND:
            c.print(
                one_line(
                    f"warning: ... and {n - SHOWN_PER_KIND:,} more like this: {kind} "
                    f"(see them all with `{command}` or --json)"
                ),
                markup=False,
                soft_wrap=True,
            )
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


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM (``timeout``, ``docker stop``, systemd) and SIGHUP (the terminal closed) stop
    a write as Ctrl-C does: the half-built generation is removed and the lexical process
    ended, instead of both left behind until the next write."""
    # Not from another thread (signal.signal refuses), nor where a signal was set on purpose
    # (``nohup`` ignores SIGHUP: the write goes on).
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    sigs = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) is signal.SIG_DFL]
    old = {s: signal.signal(s, interrupt) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _build(engine: Any, paths: list[str], reset: bool, **opts: Any) -> Any:
    prog, cb = _progress_bar()
    with prog:
        report = engine.add(paths, reset=reset, progress=cb, **opts)
    return report


@click.command("index")
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
        with (
            _sigterm_as_ctrl_c(),
            _open(index_dir, create=reset, backend=backend, uri=uri, embedder=emb) as engine,
        ):
            return _build(engine, paths, reset=reset, **opts)
    finally:
        if emb is not None:
            emb.close()


def _require_paths(paths: list[str]) -> None:
    missing = [p for p in paths if not Path(p).exists()]
    if missing and len(missing) == len(paths):
        raise click.ClickException(f"{missing[0]}: no such file or folder")


@click.command("add")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@_index_option
@_workers_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default=None,
    help="Corpus folder the ids are relative to (default: the folder indexed before that holds "
    "the files or folders given, else a folder given, or a file's own folder).",
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
            # The reason itself, not its "warning: " prefix (the warning is printed above).
            "no article was added: "
            + (report.problems[0].removeprefix("warning: ") if report.problems else "nothing to read")
        )


@click.command("remove")
@click.argument("doc_ids", nargs=-1, required=True)
@_index_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def remove_cmd(
    doc_ids: tuple[str, ...], index_dir: str, backend: str, uri: str | None, as_json: bool
) -> None:
    """Remove articles by document id. Example: search remove 000_e3a89f9a78d59e55.txt"""
    with _sigterm_as_ctrl_c(), _open(index_dir, backend=backend, uri=uri) as engine:
        report = engine.remove(list(doc_ids))
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    elif report.removed:  # nothing removed: the error below is the one line
        c = _err_console()
        for d in report.missing:
            c.print(one_line(f"warning: no document {d!r} in the index (see `search list`)"), markup=False)
        c.print(f"removed {len(report.removed)} document(s)")
    if not report.removed:
        raise click.ClickException(
            # Quoted: an empty id was shown as nothing at all ("index:  (see").
            one_line(f"none of the ids is in the index: {', '.join(map(repr, doc_ids))} (see `search list`)")
        )


@click.command("reindex")
@_index_option
@_workers_option
def reindex_cmd(index_dir: str, backend: str, uri: str | None, workers: str | None) -> None:
    """Rebuild every article the index holds with this version (chunks, entities, vectors). Example: search reindex"""
    from .engine import Engine

    emb = _writer_embedder(workers)
    try:
        prog, cb = _progress_bar()
        with _sigterm_as_ctrl_c(), prog:
            engine, report = Engine.rebuild(index_dir, progress=cb, backend=backend, uri=uri, embedder=emb)
        engine.close()
    finally:
        if emb is not None:
            emb.close()
    _print_report(report, "reindexed")
