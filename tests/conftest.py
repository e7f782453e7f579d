"""Shared fixtures. No test reaches the network: sockets to anything but loopback fail."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else address
    if (
        isinstance(host, str)
        and not (host.startswith("127.") or host in ("localhost", "::1"))
        and self.family != socket.AF_UNIX
    ):
        raise RuntimeError(f"tests must not reach the network (tried {address!r})")
    return _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture
def hash_engine(tmp_path: Path):
    """An empty engine on tmp_path with the small deterministic fake embedder."""
    from search.embed import HashEmbedder
    from search.engine import Engine

    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder())
    yield e
    e.close()


@pytest.fixture(scope="session")
def seed_engine(tmp_path_factory: pytest.TempPathFactory):
    """The seeds indexed with the real model (built once per session)."""
    from search.engine import Engine

    path = tmp_path_factory.mktemp("seeds") / "idx"
    e = Engine.open(path, create=True)
    e.index([SEEDS])
    yield e
    e.close()
