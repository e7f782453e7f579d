"""`search serve` in a subprocess on a free loopback port, shared by the HTTP and web tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """The real server on 127.0.0.1; ``token`` None means writes are disabled."""

    def __init__(
        self,
        index: Path,
        log: Path,
        token: str | None = None,
        extra: list[str] | None = None,
        more_env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        env = {k: v for k, v in os.environ.items() if k != "SEARCH_API_TOKEN"}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
        if token is not None:
            env["SEARCH_API_TOKEN"] = token
        env.update(more_env or {})
        cmd = [sys.executable, "-m", "search", "serve", "--port", str(self.port), "--index", str(index)]
        self._err = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*cmd, *(extra or [])], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=self._err
        )

    def wait(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}): {self.stderr()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server did not answer /healthz in {timeout} s: {self.stderr()}")

    def stderr(self) -> str:
        self._err.flush()
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._err.close()
