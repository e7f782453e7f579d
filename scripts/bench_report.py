"""The benchmark's one table: p50/p95 per stage, RSS, open time, build time and disk, for
ours and each peer, with the machine and its load average."""

from __future__ import annotations

from typing import Any

import numpy as np

STAGES = ("total", "encode", "bm25", "vector", "rest", "answer", "facets")
LABELS = {
    "bm25s-hnsw": "bm25s + FAISS HNSW",
    "txtai": "txtai hybrid",
    "ours": "ours",
}


def recall(tops: list[list[Any]], exact: list[list[int]], rows: dict[str, int] | None) -> float:
    """Mean share of the exact top-k found by the vector stage (ids mapped to rows when given)."""
    got = []
    for top, want in zip(tops, exact):
        ids = {rows.get(t, -1) for t in top} if rows is not None else set(top)
        got.append(len(ids & set(want)) / max(len(want), 1))
    return float(np.mean(got)) if got else float("nan")


def summarise(
    served: dict[str, Any], exact: list[list[int]] | None = None, rows: dict[str, int] | None = None
) -> dict[str, Any]:
    """Per system: open, first question, peak RSS, p50/p95 (ms) of every stage and, given
    the exact top-k of each question (in the order asked), the vector stage's recall@k."""
    out: dict[str, Any] = {}
    for system, r in served.items():
        s: dict[str, Any] = {
            k: r[k]
            for k in ("open_s", "first_s", "model_s", "peak_rss_mb", "rss_anon_mb", "rss_file_mb")
            if k in r
        }
        hybrid = r["times"].get("hybrid", [])
        if exact is not None and hybrid and all("top" in row for row in hybrid):
            s["recall@10"] = recall([row["top"] for row in hybrid], exact, rows if system == "ours" else None)
        for what, timed in r["times"].items():
            s[what] = {"n": len(timed)}
            for stage in STAGES:
                xs = [row[stage] for row in timed if stage in row]
                if xs:
                    s[what][stage] = {
                        "p50_ms": float(np.percentile(xs, 50)) * 1000,
                        "p95_ms": float(np.percentile(xs, 95)) * 1000,
                    }
        out[system] = s
    return out


def _pair(d: dict[str, Any] | None, stage: str) -> tuple[float, float] | None:
    if not d or stage not in d:
        return None
    return d[stage]["p50_ms"], d[stage]["p95_ms"]


def _cell(v: tuple[float, float] | None, ours: tuple[float, float] | None, is_ours: bool) -> str:
    if v is None:
        return "—"
    text = f"{v[0]:.2f} / {v[1]:.1f}" if v[0] < 10 else f"{v[0]:.1f} / {v[1]:.1f}"
    if not is_ours and ours is not None and v[0] > 0:
        text += f" (ours {ours[0] / v[0]:.2f}×)"
    return text


def _num(v: float | None, fmt: str, ours: float | None, is_ours: bool) -> str:
    if v is None:
        return "—"
    text = format(v, fmt)
    if not is_ours and ours is not None and v > 0:
        text += f" (ours {ours / v:.2f}×)"
    return text


def report(res: dict[str, Any]) -> str:
    m = res["machine"]
    systems = list(res["builds"])
    sv, bd = res["serving"], res["builds"]
    head = f"| {res['passages']:,} passages, {res['questions']} questions | " + " | ".join(
        LABELS.get(s, s) for s in systems
    )
    lines = [head + " |", "|---" * (len(systems) + 1) + "|"]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for what, title in (
        ("hybrid", "search, hybrid"),
        ("ask", "Engine.ask"),
        ("ask_default", "Engine.ask, default (no facets)"),
    ):
        for stage in STAGES:
            vals = [_pair(sv[s].get(what), stage) for s in systems]
            if all(v is None for v in vals):
                continue
            name = f"{title}: {stage} p50 / p95 ms" if stage != "total" else f"{title} p50 / p95 ms"
            row(name, [_cell(v, vals[0], i == 0) for i, v in enumerate(vals)])
    open_s = [sv[s].get("open_s") for s in systems]
    row("open the index, s", [_num(v, ".2f", open_s[0], i == 0) for i, v in enumerate(open_s)])
    first = [sv[s].get("first_s") for s in systems]
    row("first question after open, s", [_num(v, ".2f", first[0], i == 0) for i, v in enumerate(first)])
    rec = [sv[s].get("recall@10") for s in systems]
    if any(v is not None for v in rec):
        row("vector stage recall@10 vs exact", ["—" if v is None else f"{v:.3f}" for v in rec])
    rss = [sv[s].get("peak_rss_mb") for s in systems]
    row("serving process peak RSS, MB", [_num(v, ".0f", rss[0], i == 0) for i, v in enumerate(rss)])
    anon = [sv[s].get("rss_anon_mb") for s in systems]
    if any(v is not None for v in anon):
        split = [
            "—" if a is None else f"{a:.0f} + {sv[s].get('rss_file_mb', 0):.0f}"
            for s, a in zip(systems, anon)
        ]
        row("serving RSS at the end: anonymous + file-backed, MB", split)
    bs = [bd[s].get("build_s") for s in systems]
    row("build wall time, s", [_num(v, ".1f", bs[0], i == 0) for i, v in enumerate(bs)])
    row("build: model/stand-in share", [_model_share(bd[s]) for s in systems])
    brss = [bd[s].get("peak_rss_mb") for s in systems]
    row("build process peak RSS, MB", [_num(v, ".0f", brss[0], i == 0) for i, v in enumerate(brss)])
    disk = [bd[s].get("disk_mb") for s in systems]
    row("disk, MB", [_num(v, ".0f", disk[0], i == 0) for i, v in enumerate(disk)])
    la0, la1 = " ".join(m["loadavg_start"]), " ".join(m.get("loadavg_end", []))
    lines += [
        "",
        f"Machine: {m['cores']} cores, {m['ram_gb']} GB RAM ({m['mem_available_gb']} GB available at start), "
        f"Python {m['python']}. Load average (1, 5, 15 min): {la0} at start, {la1} at the end. "
        f"{res['date']}.",
        f"Vectors and entities: {_models(res['models'])}. Corpus: {res['articles']:,} articles, "
        f"{res['passages']:,} passages ({res['corpus']}).",
        "Ratios are ours / peer (below 1: ours is faster or smaller). Reused builds: "
        + (", ".join(s for s in systems if bd[s].get("reused")) or "none")
        + ".",
    ]
    lines += [f"Note: {n}" for n in res.get("notes", [])]
    if "ours" in systems:
        lines.append(
            "Note: ours encodes a hybrid question on a worker thread while BM25 runs, so its encode "
            "and bm25 stages overlap: stages can sum past the total, and rest is what is left."
        )
    return "\n".join(lines)


def _model_share(b: dict[str, Any]) -> str:
    """How much of the build's wall time a model (or its stand-in) was running. Ours reports
    ``rest``, the wall time when none was: its NER and encode overlap (two threads), so their
    sum can pass the build's time. A peer runs them one after the other."""
    st = b.get("stages_s") or {}
    total = b.get("build_s") or 0.0
    if not total:
        return "—"
    rest = st["rest"] if "rest" in st else total - st.get("encode", 0.0) - st.get("ner", 0.0)
    return f"{1 - rest / total:.0%} model, {rest / total:.0%} the rest"


def _models(models: str) -> str:
    return {
        "real": "the real models (ONNX MiniLM encoder, spaCy NER) at build and query time",
        "replay": "replayed at build time (each passage: the mean of its BBC sentences' real MiniLM vectors; "
        "NER spans from spaCy on each sentence), questions encoded by the real model",
        "hash": "the hash embedder (no model, no NER): timings of the index only",
    }[models]
