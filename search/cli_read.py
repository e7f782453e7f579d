"""The commands that read the index: `search ask`, `show`, `list`, `stats` and `eval`.

They print through :mod:`search.render` (rich) or, with ``--json``, the result's
``to_dict()``. `ask` and `eval` open the default index through :func:`_ensure_index`,
which builds it from ``seeds/`` on first use; an ``--index`` that does not exist is
an error, most likely a typo, and says how to create it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from .cli_base import MODES, SEEDS, _console, _err_console, _index_option, _open
from .cli_options import filter_options, filters_from, sort_options
from .cli_write import _build, _print_report


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


def _not_nan(value: float | None, hint: str) -> float | None:
    """click's FloatRange lets NaN through (it compares false with both bounds)."""
    if value is not None and value != value:
        raise click.BadParameter("nan is not a number from 0 to 1", param_hint=hint)
    return value


@click.command("ask")
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
    callback=lambda ctx, param, v: _not_nan(v, "--min-confidence"),
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


@click.command("show")
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
            d = art.to_dict()
            if rng:  # the cited span, as the JSON of ask cites it
                d["span"] = {"start": rng[0], "end": rng[1], "text": art.text[rng[0] : rng[1]]}
            click.echo(json.dumps(d, ensure_ascii=False))
            return
        from .render import print_article

        print_article(_console(), art, engine.document_record(doc_id), rng)


def _parse_span(span: str | None) -> tuple[int, int] | None:
    if span is None:
        return None
    # ASCII digits only, as HTTP's ?span= takes them: int() would also read "+5", "1_0" and "٣".
    m = re.fullmatch(r"([0-9]{1,18}):([0-9]{1,18})", span)
    if m is None:
        raise click.BadParameter(f"{span!r} is not START:END (two whole numbers)", param_hint="--span")
    start, end = int(m.group(1)), int(m.group(2))
    if start < 0 or end <= start:
        raise click.BadParameter(f"{span!r}: need 0 <= START < END", param_hint="--span")
    return start, end


@click.command("list")
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


@click.command("stats")
@click.option("--json", "as_json", is_flag=True)
@_index_option
def stats_cmd(as_json: bool, index_dir: str, backend: str, uri: str | None) -> None:
    """Counts, sizes, model and last update of the index. Example: search stats"""
    with _open(index_dir, backend=backend, uri=uri) as engine:
        st = engine.stats()
    if as_json:
        click.echo(json.dumps(st))
        return
    from rich.markup import escape

    c = _console()
    for key, val in st.items():
        if key == "size_bytes":
            key, val = "size", f"{val / 1e6:.1f} MB"
        elif isinstance(val, dict):
            val = ", ".join(f"{k}={v}" for k, v in val.items())
        c.print(f"[bold]{key}[/]: {escape(str(val))}", highlight=False)  # a path may hold "[/]"


@click.command("eval")
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
