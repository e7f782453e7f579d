"""What every `search` command shares: the consoles, opening the index, --index/--backend/--uri.

The index options read ``SEARCH_INDEX``, ``SEARCH_BACKEND`` and ``SEARCH_URI``;
:func:`_open` opens the engine (imported only then, so ``search --help`` loads no
model or index code); :func:`one_line` makes any message one printable line, since a
file name may hold a newline or bytes that are not UTF-8. The commands themselves are
in :mod:`search.cli_write`, :mod:`search.cli_read` and :mod:`search.cli_serve`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

SEEDS = "seeds"
MODES = ["hybrid", "bm25", "dense"]


# emoji=False: ``feed.jsonl:100:`` (a line number) or ``:fire:`` in a title is text, not 💯 or 🔥.
def _err_console() -> Any:
    from rich.console import Console

    return _shown_not_obeyed(Console(stderr=True, highlight=False, emoji=False))


def _console() -> Any:
    from rich.console import Console

    return _shown_not_obeyed(Console(highlight=False, emoji=False))


# Every control character but newline and tab, as a visible character of the same length
# (C0 as its Control Picture, ␛ for ESC; DEL ␡; C1 U+FFFD), so styled spans keep their place.
_TERMINAL = str.maketrans(
    {
        **{c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)},
        0x7F: 0x2421,
        **{c: 0xFFFD for c in range(0x80, 0xA0)},
    }
)


def _shown_not_obeyed(console: Any) -> Any:
    """``console``, printing an article's control characters instead of obeying them: a
    title, source or text holding ESC sequences (a feed's, a POST's) could clear the
    screen, set the window title or recolour the rest of the output."""
    from rich.console import RenderHook
    from rich.text import Text

    class Hook(RenderHook):
        def process_renderables(self, renderables: list[Any]) -> list[Any]:
            for r in renderables:
                if isinstance(r, Text) and (safe := r.plain.translate(_TERMINAL)) != r.plain:
                    r.plain = safe
            return renderables

    console.push_render_hook(Hook())
    return console


def _open(
    index: str | None,
    create: bool = False,
    backend: str | None = None,
    uri: str | None = None,
    embedder: Any = None,
) -> Any:
    from .engine import Engine

    return Engine.open(index, create=create, backend=backend, uri=uri, embedder=embedder)


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


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` as one printable line: control characters escaped (a file name may hold a
    newline), lone surrogates (a name that is not UTF-8) shown as U+FFFD."""
    from .ingest import printable

    return printable(_CONTROL.sub(lambda m: ascii(m.group())[1:-1], text))
