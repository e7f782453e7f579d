"""Hybrid BM25 + dense search over football match coverage, with cited answers.

>>> from search import Engine
>>> with Engine.open("index") as engine:
...     answer = engine.ask("who scored the winner")
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Engine
    from .types import Answer, AnswerBlock, Article, Hit, Passage

__all__ = ["Engine", "Answer", "AnswerBlock", "Article", "Hit", "Passage", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy, so `import search` stays cheap for the CLI's fast paths.
    if name == "Engine":
        from .engine import Engine

        return Engine
    if name in ("Answer", "AnswerBlock", "Article", "Hit", "Passage"):
        from . import types

        return getattr(types, name)
    raise AttributeError(f"module 'search' has no attribute {name!r}")
