"""The hostile-input campaign (#14): a corpus of >= 1,000 hostile files and 50 good
articles through `index`, `add`, `serve` and `mcp`; >= 20,000 generated questions over
the Python API, HTTP, MCP and the CLI; >= 60 SIGKILLs over `index`, `add`, `remove`
and `reindex`. Prints what held, as a markdown list (or one JSON line with --json).

    python scripts/hostile.py                       # fake embedder (fast), all three parts
    python scripts/hostile.py --embedder auto       # the real model for index/add/serve
    python scripts/hostile.py --questions 2000 --kills 8   # a quick run

Only loopback is used; everything is written under --work (a temp folder by default).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "tests")]

from hostile_corpus import CANARY, build  # noqa: E402

TOKEN = "hostile-token"


def _env(embedder: str) -> dict[str, str]:
    env = {**os.environ, "SEARCH_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(args: list[str], embedder: str, stats: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [sys.executable, "-m", "search", *args],
        env=_env(embedder),
        capture_output=True,
        text=True,
        errors="replace",
    )
    stats["tracebacks"] += (r.stderr + r.stdout).count("Traceback")
    stats["commands"] += 1
    return r


def _outside_bytes_in_index(index: Path, secret: Path, embedder: str) -> int:
    """Bytes of files outside the root that the index holds (the canary, /etc/passwd)."""
    from search.engine import Engine

    found = 0
    passwd = Path("/etc/passwd").read_text(errors="replace") if Path("/etc/passwd").exists() else ""
    with Engine.open(index, embedder=embedder) as e:
        for d in e.documents():
            text = e.get_document(d.id).text
            if CANARY in text:
                found += text.count(CANARY) * len(secret.read_text()) // 20
            if passwd and "root:x:0:0" in text:
                found += len(passwd)
    return found


# -- part 1: the corpus through every face -----------------------------------------------------
def corpus_part(work: Path, embedder: str, stats: dict[str, Any]) -> None:
    root, outside = work / "corpus", work / "outside"
    info = build(root, outside)
    stats["hostile_files"] = int(info["files"]) - len(info["good"])  # type: ignore[arg-type]
    stats["good_articles"] = len(info["good"])  # type: ignore[arg-type]
    idx = work / "idx"
    r = _run(["index", str(root), "--index", str(idx)], embedder, stats)
    stats["index_exit"] = r.returncode
    stats["index_warning_lines"] = sum(1 for line in r.stderr.splitlines() if line.startswith("warning: "))
    stats["index_other_stderr_lines"] = [
        line for line in r.stderr.splitlines() if line and not line.startswith(("warning: ", "indexed: "))
    ][:5]
    from search.engine import Engine

    with Engine.open(idx, embedder=embedder) as e:
        ids = {d.id for d in e.documents()}
    lost = set(info["good"]) - ids  # type: ignore[arg-type]
    # `add` with explicit hostile paths (the special ones too), then the whole tree again.
    explicit = sorted(str(p) for p in (root / "special").iterdir())[:60]
    explicit += sorted(str(p) for p in (root / "bin").iterdir())[:40]
    explicit += [str(root / "good-001.txt")]
    r = _run(["add", *explicit, "--index", str(idx)], embedder, stats)
    stats["add_explicit_exit"] = r.returncode
    r = _run(["add", str(root), "--index", str(idx)], embedder, stats)
    stats["add_tree_exit"] = r.returncode
    with Engine.open(idx, embedder=embedder) as e:
        lost |= set(info["good"]) - {d.id for d in e.documents()}  # type: ignore[arg-type]
    stats["good_lost"] = len(lost)
    stats["outside_bytes_in_index"] = _outside_bytes_in_index(idx, info["secret"], embedder)  # type: ignore[arg-type]
    _serve_part(work, idx, root, embedder, stats)
    _mcp_part(idx, root, stats)


def _records(root: Path, rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Hostile article records: texts and ids from the corpus files, odd fields."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    out = []
    for i in range(n):
        f = rng.choice(files)
        try:
            text = f.read_bytes()[: rng.choice([10, 1000, 150_000])].decode("utf-8", "surrogateescape")
        except OSError:
            text = ""
        out.append(
            {
                "id": rng.choice([f"rec-{i}", f.name, "../x", "a\x00b", "s\udc80", ""]),
                "text": text,
                "title": f.name,
            }
        )
    return out


def _serve_part(work: Path, idx: Path, root: Path, embedder: str, stats: dict[str, Any]) -> None:
    import httpx
    from serving import ServerProcess

    srv = ServerProcess(idx, work / "serve.log", token=TOKEN, extra=["--embedder", embedder])
    try:
        srv.wait(120)
        rng = random.Random(1)
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            for rec in _records(root, rng, 150):
                body = json.dumps(rec, ensure_ascii=True)
                r = c.post(
                    "/documents",
                    content=body,
                    headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
                )
                stats["http_5xx"] += r.status_code >= 500
                stats["http_requests"] += 1
            for doc in ("good-001.txt", "good-002.txt", "no/such", "names/%ff"):
                r = c.get(f"/documents/{doc}")
                stats["http_5xx"] += r.status_code >= 500
                stats["http_requests"] += 1
            stats["http_stats_has_path"] = str(idx.resolve()) in c.get("/stats").text
    finally:
        srv.stop()
        stats["tracebacks"] += srv.log.read_text(errors="replace").count("Traceback")


def _mcp_part(idx: Path, root: Path, stats: dict[str, Any]) -> None:
    from mcp_wire import Wire

    rng = random.Random(2)
    w = Wire(idx, "--allow-writes")
    try:
        for i, rec in enumerate(_records(root, rng, 100), 1):
            args = {k: v for k, v in rec.items() if k in ("id", "text", "title")}
            r = w.call(100_000 + i, "add_document", args)
            stats["mcp_requests"] += 1
            stats["mcp_unanswered"] += r is None or r.get("id") != 100_000 + i
    finally:
        w.close()


# -- part 2: generated questions ---------------------------------------------------------------
WORDS = 'who scored the winner goal Messi Kane final minute penalty Argentina England AND OR NOT * ? " ( ) - : ~ ^'.split()


def questions(rng: random.Random, n: int) -> list[str]:
    def one() -> str:
        kind = rng.randrange(7)
        if kind == 0:
            return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 10)))
        if kind == 1:  # any code point, surrogates included
            return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(0, 30)))
        if kind == 2:
            return "".join(
                rng.choice(" \t\n\r\x00\x0b\u00a0\u2028\ufeff\ud800\udfff?!*")
                for _ in range(rng.randint(0, 12))
            )
        if kind == 3:
            return "goal " * rng.randint(395, 405)  # around the 2,000-character limit
        if kind == 4:
            return rng.choice(WORDS) + chr(rng.randrange(0xD800, 0xE000)) + rng.choice(WORDS)
        if kind == 5:
            return bytes(rng.randrange(256) for _ in range(rng.randint(1, 20))).decode(
                "utf-8", "surrogateescape"
            )
        return "who scored " + "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randint(1, 20)))

    return [one() for _ in range(n)]


def questions_part(idx: Path, n: int, stats: dict[str, Any]) -> None:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.errors import SearchError

    rng = random.Random(3)
    modes = ["hybrid", "bm25", "dense"]
    share = {"api": 0.4, "http": 0.3, "mcp": 0.2, "cli": 0.1}
    # API
    with Engine.open(idx, embedder=HashEmbedder()) as e:
        for q in questions(rng, int(n * share["api"])):
            try:
                e.ask(q, k=rng.choice([1, 5, 10]), mode=rng.choice(modes)).to_dict()
            except (SearchError, ValueError):
                pass
            except Exception as ex:  # undocumented
                stats["undocumented"] += 1
                stats.setdefault("undocumented_examples", []).append(f"{type(ex).__name__}: {ex}"[:200])
            stats["questions_api"] += 1
    # HTTP, against the real server
    import httpx
    from serving import ServerProcess

    srv = ServerProcess(idx, idx.parent / "serve-q.log", token=TOKEN, extra=["--embedder", "hash"])
    try:
        srv.wait(120)
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            for q in questions(rng, int(n * share["http"])):
                mode = rng.choice(modes)
                if rng.random() < 0.5:
                    body = json.dumps({"question": q, "mode": mode}, ensure_ascii=True)
                    r = c.post("/ask", content=body, headers={"Content-Type": "application/json"})
                else:
                    raw = q.encode("utf-8", "surrogatepass")
                    from urllib.parse import quote_from_bytes

                    r = c.get(f"/search?mode={mode}&q={quote_from_bytes(raw)}")
                stats["http_5xx"] += r.status_code >= 500
                stats["questions_http"] += 1
    finally:
        srv.stop()
        stats["tracebacks"] += srv.log.read_text(errors="replace").count("Traceback")
    # MCP
    from mcp_wire import Wire

    w = Wire(idx)
    try:
        for i, q in enumerate(questions(rng, int(n * share["mcp"])), 1):
            tool = rng.choice(["ask", "search", "get_document"])
            args = {"doc_id": q} if tool == "get_document" else {"question": q, "mode": rng.choice(modes)}
            r = w.call(i, tool, args)
            stats["mcp_unanswered"] += r is None or r.get("id") != i
            stats["questions_mcp"] += 1
    finally:
        w.close()
    # CLI
    from click.testing import CliRunner

    from search.cli import cli

    runner = CliRunner()
    for q in questions(rng, int(n * share["cli"])):
        r = runner.invoke(
            cli,
            ["ask", "--index", str(idx), "--json", "--mode", rng.choice(modes), "--", q],
            env={"SEARCH_EMBEDDER": "hash"},
        )
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            stats["undocumented"] += 1
            stats.setdefault("undocumented_examples", []).append(
                f"cli {type(r.exception).__name__}: {r.exception}"[:200]
            )
        stats["tracebacks"] += r.output.count("Traceback")
        stats["questions_cli"] += 1


# -- part 3: kills -----------------------------------------------------------------------------
def kills_part(work: Path, kills: int, stats: dict[str, Any]) -> None:
    from killing import campaign, write_corpus

    from search.embed import HashEmbedder
    from search.engine import Engine

    rng = random.Random(4)
    each = max(1, kills // 4)
    old_dir, new_dir, src = work / "k-old", work / "k-new", work / "k-src"
    old = write_corpus(old_dir, "old", 40, seed=1)
    new = write_corpus(new_dir, "new", 100, seed=2)

    def base_from(folder: Path) -> Any:
        def make(path: Path) -> None:
            with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
                e.index([folder])

        return make

    write_corpus(src, "old", 40, seed=1)
    gone = set(sorted(old)[:10])

    def reindex_base(path: Path) -> None:
        base_from(src)(path)
        write_corpus(src, "more", 80, seed=3)
        for name in gone:
            (src / name).unlink()

    plans = [
        ("index", base_from(old_dir), lambda i: ["index", str(new_dir), "--index", str(i)], old, new),
        ("add", base_from(old_dir), lambda i: ["add", str(new_dir), "--index", str(i)], old, old | new),
        (
            "remove",
            base_from(old_dir),
            lambda i: ["remove", *sorted(old)[:20], "--index", str(i)],
            old,
            old - set(sorted(old)[:20]),
        ),
        (  # reindex rebuilds the articles the index holds, not its sources (changed below it)
            "reindex",
            reindex_base,
            lambda i: ["reindex", "--index", str(i)],
            old,
            old,
        ),
    ]
    extra = work / "k-extra"
    write_corpus(extra, "extra", 1, seed=5)
    for name, make, cmd, before, after in plans:
        # Removing what a killed `remove` already removed is a user error (exit 1): after
        # a remove, the next writer adds one article instead.
        is_remove = name == "remove"
        out = campaign(
            name=name,
            kills=each,
            make_base=make,
            command=cmd,
            old=before,
            new=after,
            engine_kwargs=lambda p: {"path": str(p)},
            work=work,
            rng=rng,
            next_writer=(lambda i: ["add", str(extra), "--index", str(i)]) if is_remove else None,
            after_next=(lambda ids: ids | {"extra-0.txt"}) if is_remove else None,
        )
        stats["kills"] += out.kills
        stats["kills_old_state"] += out.old
        stats["kills_new_state"] += out.new
        stats["kill_failures"] += len(out.failures)
        stats.setdefault("kill_failure_examples", []).extend(out.failures[:3])
        stats[f"kills_{name}"] = out.kills


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--embedder",
        default="hash",
        choices=["hash", "auto"],
        help="for index/add/serve (questions use hash)",
    )
    ap.add_argument("--questions", type=int, default=20_000)
    ap.add_argument("--kills", type=int, default=64)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.monotonic()
    work = args.work or Path(tempfile.mkdtemp(prefix="hostile-"))
    work.mkdir(parents=True, exist_ok=True)
    keys = [
        "tracebacks",
        "commands",
        "http_5xx",
        "http_requests",
        "mcp_requests",
        "mcp_unanswered",
        "undocumented",
        "questions_api",
        "questions_http",
        "questions_mcp",
        "questions_cli",
        "kills",
        "kills_old_state",
        "kills_new_state",
        "kill_failures",
    ]
    stats: dict[str, Any] = dict.fromkeys(keys, 0)
    os.environ["SEARCH_EMBEDDER"] = "hash"
    os.environ["PYTHONPATH"] = str(ROOT)
    try:
        corpus_part(work, args.embedder, stats)
        if args.questions:
            qidx = work / "q-idx"
            shutil.copytree(work / "idx", qidx) if args.embedder == "hash" else _run(
                ["index", str(work / "corpus"), "--index", str(qidx)], "hash", stats
            )
            questions_part(qidx, args.questions, stats)
        if args.kills:
            kills_part(work, args.kills, stats)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    stats["questions"] = sum(stats[f"questions_{f}"] for f in ("api", "http", "mcp", "cli"))
    rss = max(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    )
    stats["peak_rss_mb"] = round(rss / 1024, 1)
    stats["total_s"] = round(time.monotonic() - t0, 1)
    if args.json:
        print(json.dumps(stats))
        return
    for k, v in stats.items():
        print(f"- {k}: {v}")


if __name__ == "__main__":
    main()
