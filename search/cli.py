"""The `search` command: a thin face over :class:`search.engine.Engine`.

Every command maps to one engine call; ``--json`` prints the result's ``to_dict()``.
Errors a user can cause print one line on stderr and exit non-zero, never a traceback.

This module is the group (its error handling and logging) and the entry point; the
commands are in :mod:`search.cli_write` (index, add, remove, reindex),
:mod:`search.cli_read` (ask, show, list, stats, eval) and :mod:`search.cli_serve`
(serve, mcp), over :mod:`search.cli_base` and :mod:`search.cli_options`.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

# Re-exported: the names callers have imported from here since before the split.
from .cli_base import MODES as MODES
from .cli_base import SEEDS as SEEDS
from .cli_base import one_line
from .cli_read import ask_cmd, eval_cmd, list_cmd, show_cmd, stats_cmd
from .cli_serve import mcp_cmd, serve_cmd
from .cli_write import add_cmd, index_cmd, reindex_cmd, remove_cmd
from .errors import QueryError, SearchError

log = logging.getLogger("search")


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


for _command in (
    index_cmd,
    add_cmd,
    remove_cmd,
    reindex_cmd,
    ask_cmd,
    show_cmd,
    list_cmd,
    stats_cmd,
    eval_cmd,
    serve_cmd,
    mcp_cmd,
):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `search` command."""
    try:
        code = cli.main(args=argv, prog_name="search", standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code:  # ctx.exit(code)
            sys.exit(code)
    except click.UsageError as e:
        # One line, as every other mistake ("Usage:" and "Try --help" made it three), with
        # the command's help named at its end.
        cmd = e.ctx.command_path if e.ctx is not None else "search"
        click.echo(f"Error: {one_line(e.format_message())} (see {cmd} --help)", err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BrokenPipeError:
        # Output piped into `head`: not an error; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
