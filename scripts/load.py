"""Load-test a running `search serve` on this machine: N clients asking for a bounded time.

Each client asks the next question from a question file (GET /ask) as soon as its last
answer arrives. With --writer, one more client adds or replaces an article every ~0.5 s
through POST /documents (token from $SEARCH_API_TOKEN), so reads are measured while the
index changes under them. Prints a markdown table (or, with --json, one JSON line):
throughput, latency percentiles and errors.

Only loopback URLs are accepted, and both the run time and the request count are capped.

    SEARCH_API_TOKEN=s3cret search serve --index /tmp/idx &
    python scripts/load.py --clients 8 --duration 60 --writer
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev.jsonl"
MAX_DURATION_S = 3600.0
MAX_CLIENTS = 256
WRITE_EVERY_S = 0.5
WRITER_DOCS = 5  # the writer cycles through this many ids, replacing each in turn


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    errors: int = 0
    samples: list[str] = field(default_factory=list)  # the first few error descriptions

    def fail(self, what: str) -> None:
        self.errors += 1
        if len(self.samples) < 5:
            self.samples.append(what)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of ``values``; 0 when empty."""
    if not values:
        return 0.0
    s = sorted(values)
    rank = max(1, min(len(s), int(-(-p * len(s) // 100))))
    return s[rank - 1]


def check_loopback(url: str) -> str:
    """The URL without a trailing slash, or SystemExit when it is not http(s) on loopback."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    ok = host == "localhost"
    if not ok:
        try:
            ok = ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = False
    if parts.scheme not in ("http", "https") or not ok:
        raise SystemExit(f"load.py only targets a server on this machine (127.0.0.1/localhost), not {url!r}")
    return url.rstrip("/")


def read_questions(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SystemExit(f"cannot read questions from {path}: {e.strerror}") from None
    qs = [json.loads(line)["question"] for line in lines if line.strip()]
    if not qs:
        raise SystemExit(f"{path} holds no questions (one JSON object with a 'question' per line)")
    return qs


async def reader(
    client: httpx.AsyncClient,
    questions: list[str],
    k: int,
    mode: str,
    deadline: float,
    budget: list[int],
    st: Stats,
) -> None:
    rng = random.Random()
    while time.monotonic() < deadline and budget[0] > 0:
        budget[0] -= 1
        q = rng.choice(questions)
        t0 = time.perf_counter()
        try:
            r = await client.get("/ask", params={"q": q, "k": k, "mode": mode})
            ok = r.status_code == 200 and isinstance(r.json().get("passages"), list)
            if ok:
                st.latencies.append(time.perf_counter() - t0)
            else:
                st.fail(f"GET /ask {r.status_code}: {r.text[:200]}")
        except (httpx.HTTPError, ValueError) as e:
            st.fail(f"GET /ask {type(e).__name__}: {e}")


async def writer(client: httpx.AsyncClient, token: str, deadline: float, st: Stats) -> None:
    n = 0
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        doc = {
            "id": f"load/{n % WRITER_DOCS}",
            "title": f"Load test report {n}",
            "text": (
                f"Load test report number {n}. The visitors scored the winner in minute {n % 90 + 1} "
                "after a long spell of pressure, and the home keeper could not reach the header."
            ),
            "source": "load.py",
        }
        try:
            r = await client.post("/documents", json=doc, headers={"Authorization": f"Bearer {token}"})
            if r.status_code == 200:
                st.latencies.append(time.perf_counter() - t0)
            else:
                st.fail(f"POST /documents {r.status_code}: {r.text[:200]}")
        except httpx.HTTPError as e:
            st.fail(f"POST /documents {type(e).__name__}: {e}")
        n += 1
        await asyncio.sleep(max(0.0, WRITE_EVERY_S - (time.perf_counter() - t0)))


async def run(args: argparse.Namespace, questions: list[str], token: str | None) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=args.clients + 1, max_keepalive_connections=args.clients + 1)
    reads, writes = Stats(), Stats()
    async with httpx.AsyncClient(base_url=args.url, timeout=args.timeout, limits=limits) as client:
        r = await client.get("/healthz")
        if r.status_code != 200:
            raise SystemExit(f"{args.url}/healthz answered {r.status_code}: is `search serve` running?")
        t0 = time.monotonic()
        deadline = t0 + args.duration
        budget = [args.max_requests]
        tasks = [
            reader(client, questions, args.k, args.mode, deadline, budget, reads) for _ in range(args.clients)
        ]
        if token:
            tasks.append(writer(client, token, deadline, writes))
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - t0
        if token:  # leave the index as it was
            for i in range(WRITER_DOCS):
                await client.delete(f"/documents/load/{i}", headers={"Authorization": f"Bearer {token}"})
    ms = [x * 1000 for x in reads.latencies]
    out: dict[str, Any] = {
        "url": args.url,
        "clients": args.clients,
        "duration_s": round(elapsed, 2),
        "mode": args.mode,
        "k": args.k,
        "requests": len(ms) + reads.errors,
        "errors": reads.errors,
        "throughput_rps": round(len(ms) / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms, default=0.0), 1),
        "writer": bool(token),
    }
    if token:
        wms = [x * 1000 for x in writes.latencies]
        out.update(
            writes=len(wms) + writes.errors,
            write_errors=writes.errors,
            write_p50_ms=round(percentile(wms, 50), 1),
        )
        out["write_p95_ms"] = round(percentile(wms, 95), 1)
    for s in reads.samples + writes.samples:
        print(f"error: {s}", file=sys.stderr)
    return out


def table(r: dict[str, Any]) -> str:
    rows = [
        ("clients", r["clients"]),
        ("duration", f"{r['duration_s']} s"),
        ("mode / k", f"{r['mode']} / {r['k']}"),
        ("requests", r["requests"]),
        ("errors", r["errors"]),
        ("throughput", f"{r['throughput_rps']} req/s"),
        ("p50", f"{r['p50_ms']} ms"),
        ("p95", f"{r['p95_ms']} ms"),
        ("p99", f"{r['p99_ms']} ms"),
        ("max", f"{r['max_ms']} ms"),
    ]
    if r["writer"]:
        rows += [
            ("writes (POST /documents)", r["writes"]),
            ("write errors", r["write_errors"]),
            ("write p50 / p95", f"{r['write_p50_ms']} / {r['write_p95_ms']} ms"),
        ]
    return "\n".join(["| metric | value |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8000", help="server base URL (loopback only)")
    p.add_argument("--clients", type=int, default=8, help=f"concurrent readers (1..{MAX_CLIENTS})")
    p.add_argument(
        "--duration", type=float, default=60.0, help=f"seconds to run (at most {MAX_DURATION_S:.0f})"
    )
    p.add_argument("--max-requests", type=int, default=1_000_000, help="stop after this many reads")
    p.add_argument(
        "--questions", type=Path, default=DEFAULT_QUESTIONS, help="JSONL with a 'question' per line"
    )
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default="hybrid")
    p.add_argument("--timeout", type=float, default=30.0, help="per-request timeout in seconds")
    p.add_argument(
        "--writer", action="store_true", help="also POST /documents every ~0.5 s ($SEARCH_API_TOKEN)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    args = p.parse_args(argv)
    args.url = check_loopback(args.url)
    if not 1 <= args.clients <= MAX_CLIENTS:
        p.error(f"--clients must be 1..{MAX_CLIENTS}")
    if not 0 < args.duration <= MAX_DURATION_S:
        p.error(f"--duration must be in (0, {MAX_DURATION_S:.0f}]")
    if args.max_requests < 1:
        p.error("--max-requests must be positive")
    token = None
    if args.writer:
        token = os.environ.get("SEARCH_API_TOKEN")
        if not token:
            p.error("--writer needs SEARCH_API_TOKEN set to the server's token")
    result = asyncio.run(run(args, read_questions(args.questions), token))
    print(json.dumps(result) if args.json else table(result))
    return 1 if result["errors"] or result.get("write_errors") else 0


if __name__ == "__main__":
    sys.exit(main())
