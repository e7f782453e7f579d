"""Re-indexing in place: atomic under concurrent queries, crash-safe, metadata, near-duplicates."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from killing import kill_at

from search.embed import HashEmbedder
from search.engine import Engine
from search.types import Article

ROOT = Path(__file__).resolve().parent.parent


def _batch(tag: str, n: int) -> list[Article]:
    return [
        Article(
            id=f"{tag}-{i}.txt",
            title=f"Report {i}",
            text=f"The {tag} derby ended level. Report number {i} says the {tag} crowd was loud. "
            f"Striker {i} hit the post twice before half-time.",
        )
        for i in range(n)
    ]


def test_queries_never_see_half_an_update(tmp_path: Path) -> None:
    """Readers query while a writer adds and removes a 10-document batch: 0 or 10, never between."""
    path = tmp_path / "idx"
    reader = Engine.open(path, create=True, embedder=HashEmbedder())
    reader.add(_batch("base", 3))
    writer = Engine.open(path, embedder=HashEmbedder())
    batch = _batch("quux", 10)
    stop = threading.Event()
    errors: list[str] = []
    seen: set[int] = set()

    def write() -> None:
        try:
            for _ in range(8):
                writer.add(batch)
                writer.remove([a.id for a in batch])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))
        finally:
            stop.set()

    def read() -> None:
        while not stop.is_set():
            try:
                for mode in ("bm25", "dense", "hybrid"):
                    hits = reader.search("quux derby crowd", k=40, mode=mode, collapse=False)
                    n = len({h.passage.doc_id for h in hits if h.passage.doc_id.startswith("quux")})
                    if mode == "bm25":
                        seen.add(n)
                        if n not in (0, 10):
                            errors.append(f"{mode} saw {n} of 10 documents")
                    for h in hits:
                        art = reader._backend.reader().article(h.passage.doc_id)
                        if art is not None and art.text[h.passage.start : h.passage.end] != h.passage.text:
                            errors.append("passage text does not match its article")
            except Exception as e:  # pragma: no cover
                errors.append(repr(e))
                return

    threads = [threading.Thread(target=read) for _ in range(3)] + [threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    assert seen <= {0, 10}


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "search", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@pytest.mark.integration
def test_killed_writers_leave_old_or_new_state(tmp_path: Path) -> None:
    """SIGKILL `search add` (and `index`, `remove`) at random moments: the index opens and answers,
    holding exactly the old or the new set of documents."""
    env = {**os.environ, "SEARCH_EMBEDDER": "hash", "PYTHONPATH": str(ROOT)}
    base = tmp_path / "base"
    e = Engine.open(base, create=True, embedder=HashEmbedder())
    e.add([ROOT / "seeds"])
    old = {d.id for d in e.documents()}
    e.close()
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    for a in _batch("late", 40):
        (new_dir / a.id).write_text(a.title + "\n\n" + a.text, encoding="utf-8")
    added = old | {f"late-{i}.txt" for i in range(40)}

    # How long an uninterrupted add takes, to spread the kills over it.
    trial = tmp_path / "trial"
    shutil.copytree(base, trial)
    t0 = time.monotonic()
    assert _cli("add", str(new_dir), "--index", str(trial), env=env).wait() == 0
    duration = time.monotonic() - t0

    rng = random.Random(42)
    plans = (
        [("add", added)] * 10
        + [("remove", old - {"000_e3a89f9a78d59e55.txt"})] * 3
        + [("index", {a for a in added if a.startswith("late")})] * 3
    )
    nth = {cmd: 0 for cmd, _ in plans}
    outcomes = {"old": 0, "new": 0}
    for i, (cmd, new_state) in enumerate(plans):
        idx = tmp_path / f"run{i}"
        shutil.copytree(base, idx)
        args = {
            "add": ["add", str(new_dir)],
            "remove": ["remove", "000_e3a89f9a78d59e55.txt"],
            "index": ["index", str(new_dir)],
        }[cmd]
        p = _cli(*args, "--index", str(idx), env=env)
        # Up to 1.4x the measured duration: the machine is shared and timings drift, and
        # some kills should land after the commit point too. Each command's kills are spread
        # over that span in equal slices, so a few of them cover all of it.
        runs = sum(c == cmd for c, _ in plans)
        time.sleep(kill_at(nth[cmd], runs, 1.4 * duration, rng))
        nth[cmd] += 1
        p.send_signal(signal.SIGKILL)
        p.wait()
        eng = Engine.open(idx, embedder=HashEmbedder())
        ids = {d.id for d in eng.documents()}
        assert ids in (old, new_state), f"{cmd} killed: {len(ids)} documents"
        outcomes["old" if ids == old else "new"] += 1
        assert eng.search("who scored the winner", k=3), "the index must still answer"
        # ... and the next writer cleans up and works.
        eng.add(_batch("after", 1))
        assert "after-0.txt" in {d.id for d in eng.documents()}
        eng.close()
        shutil.rmtree(idx)
    # The kills must have landed on both sides of the commit at least once.
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes


def test_update_replaces_in_both_retrievers(hash_engine) -> None:
    a = Article(id="r.txt", title="Report", text="Harry Kane scored a penalty in the 12th minute at Wembley.")
    hash_engine.add([a, *_batch("base", 3)])
    b = Article(
        id="r.txt", title="Report (corrected)", text="Bukayo Saka scored from open play in the 14th minute."
    )
    rep = hash_engine.add([b])
    assert rep.replaced == ["r.txt"]
    for mode in ("bm25", "dense", "hybrid"):
        hits = hash_engine.search("Kane penalty Wembley", k=20, mode=mode)
        assert all("Kane" not in h.passage.text for h in hits), mode
        hits = hash_engine.search("Saka open play", k=3, mode=mode)
        assert hits[0].passage.doc_id == "r.txt" and "Saka" in hits[0].passage.text, mode
    hash_engine.remove(["r.txt"])
    for mode in ("bm25", "dense", "hybrid"):
        assert all(h.passage.doc_id != "r.txt" for h in hash_engine.search("Saka open play", k=20, mode=mode))


def test_near_duplicates_grouped_and_collapsed(hash_engine) -> None:
    story = (
        "Arsenal beat Chelsea 2-0 at the Emirates on Saturday. Bukayo Saka opened the scoring after ten minutes "
        "with a curling shot. Martin Odegaard doubled the lead before half-time from the penalty spot. Chelsea "
        "pressed late on but could not find a way past David Raya, who made three fine saves."
    )
    copy = story.replace("on Saturday", "on Saturday afternoon") + " Additional reporting by agencies."
    other = "Liverpool drew 1-1 with Everton in the Merseyside derby. Mohamed Salah scored a late equaliser."
    rep = hash_engine.add(
        [
            Article(id="wire/a.txt", title="Arsenal beat Chelsea", text=story, source="PA"),
            Article(id="site/b.txt", title="Gunners see off Blues", text=copy, source="Site"),
            Article(id="c.txt", title="Derby draw", text=other),
        ]
    )
    assert rep.duplicates == {"site/b.txt": "wire/a.txt"}
    rec = {d.id: d for d in hash_engine.documents()}
    assert rec["site/b.txt"].duplicate_of == "wire/a.txt" and rec["c.txt"].duplicate_of is None
    hits = hash_engine.search("Saka Arsenal Chelsea", k=5, mode="bm25")
    docs = [h.passage.doc_id for h in hits]
    assert "site/b.txt" not in docs and docs[0] == "wire/a.txt"
    assert hits[0].duplicates == ["site/b.txt"]
    all_hits = hash_engine.search("Saka Arsenal Chelsea", k=5, mode="bm25", collapse=False)
    assert {"wire/a.txt", "site/b.txt"} <= {h.passage.doc_id for h in all_hits}


def test_html_and_feed_metadata_reach_citations(hash_engine, tmp_path: Path) -> None:
    feed = tmp_path / "feed.xml"
    feed.write_text(
        """<?xml version="1.0"?><rss version="2.0"><channel><title>Club news</title>
        <item><title>Keeper signs new deal</title><link>https://example.com/keeper</link>
        <guid>keeper-1</guid><pubDate>Tue, 01 Dec 2026 10:00:00 GMT</pubDate>
        <description>The club goalkeeper has signed a new three-year contract after a superb season between the posts.</description></item>
        </channel></rss>""",
        encoding="utf-8",
    )
    rep = hash_engine.add([feed])
    assert len(rep.added) == 1, rep.problems
    hit = hash_engine.search("goalkeeper contract", k=1, mode="bm25")[0]
    d = hit.to_dict()
    assert d["url"] == "https://example.com/keeper" and d["published"].startswith("2026-12-01")


def test_ids_do_not_depend_on_how_a_file_was_added(hash_engine, tmp_path: Path) -> None:
    """#16: `search index DIR` and `search add DIR/sub/file` give one id; a different file is refused."""
    raw = tmp_path / "raw"
    for cat, body in (
        ("football", "Chelsea sack Mutu after a positive test."),
        ("cricket", "Windies women upbeat."),
    ):
        (raw / cat).mkdir(parents=True)
        (raw / cat / "105.txt").write_text(f"{cat} 105\n{body} More words follow here.\n", encoding="utf-8")
    hash_engine.index([raw])
    assert sorted(d.id for d in hash_engine.documents()) == ["cricket/105.txt", "football/105.txt"]
    r = hash_engine.add([raw / "football" / "105.txt"])  # the same file, given alone
    assert r.unchanged == ["football/105.txt"] and not r.added

    other = tmp_path / "elsewhere" / "football"
    other.mkdir(parents=True)
    (other / "105.txt").write_text(
        "another\nA different story entirely, with its own words.\n", encoding="utf-8"
    )
    r = hash_engine.add([other / "105.txt"], root=tmp_path / "elsewhere")
    assert r.refused == ["football/105.txt"] and not r.added and not r.replaced
    assert "--replace" in r.problems[-1] and str(raw / "football" / "105.txt") in r.problems[-1]
    assert "Chelsea" in hash_engine.get_document("football/105.txt").text
    r = hash_engine.add([other / "105.txt"], root=tmp_path / "elsewhere", replace=True)
    assert r.replaced == ["football/105.txt"]
