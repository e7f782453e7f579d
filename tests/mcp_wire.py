"""`search mcp` driven over its raw stdio wire: one line out, the replies read back.

Used by tests/test_mcp_hostile.py and scripts/hostile.py, which send lines no SDK
client would (garbage, bare values, lone surrogate escapes, 50 MB lines).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "wire", "version": "1"},
    },
}


class Wire:
    """A `search mcp` subprocess; :meth:`send` writes a line, :meth:`reply` reads one."""

    def __init__(self, index: Path, *flags: str, hang_s: float = 120.0) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH", str(ROOT))
        self.hang_s = hang_s  # a guard against waiting forever, not a speed limit
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "search", "mcp", "--index", str(index), "--embedder", "hash", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
        self._buf = b""
        self.send(json.dumps(INIT).encode())
        first = self.reply()
        assert first is not None and first.get("id") == 0, first
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any] | None:
        """The next reply line as JSON, or None when none came within the hang guard."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            ready, _, _ = select.select([fd], [], [], self.hang_s)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return dict(json.loads(line))

    def call(self, msg_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """A tools/call (ensure_ascii keeps a lone surrogate as its escape on the wire)."""
        req = {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        self.send(json.dumps(req, ensure_ascii=True).encode())
        return self.reply()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(self.hang_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9


#: Lines that are not JSON-RPC messages, each with the error code it must get back.
MALFORMED: list[tuple[bytes, int]] = [
    (b"garbage", -32700),
    (b"{", -32700),
    (b"}", -32700),
    (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
    (b"\xff\xfe\xfd", -32700),
    (b"\x00\x01\x02", -32700),
    (b"'single quotes'", -32700),
    (b"NaN", -32700),
    (b"[" * 100_000, -32700),
    (b"x" * (50 * 1024 * 1024), -32700),
    (b"null", -32600),
    (b"42", -32600),
    (b"-1.5e300", -32600),
    (b"true", -32600),
    (b'"a string"', -32600),
    (b"[]", -32600),
    (b"[1, 2, 3]", -32600),
    (b"{}", -32600),
    (b'{"jsonrpc": "2.0"}', -32600),
    (b'{"id": 5}', -32600),
    (b'{"jsonrpc": "1.0", "id": 3, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 4, "method": 7}', -32600),
    (b'{"jsonrpc": "2.0", "id": 6, "result": 1, "error": {}}', -32600),
]
