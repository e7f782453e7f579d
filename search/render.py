"""Human output for the terminal (rich): answers, passages, articles, document lists."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from .backends import DocRecord
from .text import analyze_spans
from .types import Answer, Article, Hit


def highlight(text: str, terms: set[str], base_style: str = "") -> Text:
    """``text`` with the words whose index term is in ``terms`` in bold yellow."""
    out = Text(text, style=base_style)
    if terms:
        for t, s, e in analyze_spans(text):
            if t in terms:
                out.stylize("bold yellow", s, e)
    return out


def _cite(h: Hit) -> str:
    p = h.passage
    bits = [h.title or p.doc_id]
    if h.source:
        bits.append(h.source)
    if h.published:
        bits.append(h.published[:10])
    cat = h.metadata.get("category")
    if isinstance(cat, str) and cat:
        bits.append(cat)
    return " · ".join(bits)


def print_answer(console: Console, result: Answer, engine: Any = None) -> None:
    block = result.answer
    if block is not None:
        if block.text:
            console.print(Text.assemble(("Answer: ", "bold"), (block.text, "bold green")))
        elif block.sentences:
            console.print(Text("No short answer. The best supporting sentence:", style="bold"))
        elif result.hits:
            console.print(
                Text("No short answer: no passage states it; the closest passages follow.", style="bold")
            )
        else:  # nothing follows (e.g. no passage passes the filters): say no more than that
            console.print(Text("No short answer: no passage states it.", style="bold"))
        for s in block.sentences[:3]:
            console.print(Text.assemble("  “", (s.text, "italic"), f"” [{s.passage_rank}]"))
        if block.text:
            console.print(Text(f"  {block.summary} · confidence {block.confidence:.2f}", style="dim"))
        elif block.sentences and block.withheld:
            console.print(Text(f"  No short answer: {block.withheld}.", style="dim"))
        elif block.sentences and block.confidence > 0:
            console.print(
                Text(
                    f"  confidence {block.confidence:.2f}, below the {block.needed:.2f} a short answer "
                    "needs (--min-confidence or SEARCH_MIN_CONFIDENCE sets it)",
                    style="dim",
                )
            )
        for c in block.versions:
            cites = ", ".join(f"[{s.passage_rank}]" for s in c.sentences)
            n = "1 article" if c.support == 1 else f"{c.support} articles"
            what = ("  Version: ", "bold") if c is block.reference else ("  Conflict: ", "bold red")
            console.print(Text.assemble(what, f"{c.text} — {n} {cites}"))
            for s in c.sentences[:2]:
                console.print(Text.assemble("    “", (s.text, "italic"), f"” [{s.passage_rank}]"))
        if block.notice:
            console.print(Text(f"  Note: {block.notice}", style="yellow"))
        console.print()
    if not result.hits:
        if result.filters:
            console.print("No passage passes the filters.")
        else:
            console.print("No passages matched.")
        print_facets(console, result)
        return
    for h in result.hits:
        p = h.passage
        ranks = []
        if h.bm25_rank:
            ranks.append(f"bm25 #{h.bm25_rank}")
        if h.dense_rank:
            ranks.append(f"dense #{h.dense_rank}")
        head = Text.assemble(
            (f"[{h.rank}] ", "bold cyan"),
            (_cite(h), "bold"),
            (f"  {p.doc_id}:{p.start}-{p.end}", "dim"),
            (f"  score {h.score:.4f}" + (f" ({', '.join(ranks)})" if ranks else ""), "dim"),
        )
        console.print(head)
        if h.url:
            console.print(Text(f"    {h.url}", style="dim"))
        if h.duplicates:
            console.print(Text(f"    also in: {', '.join(h.duplicates)}", style="dim"))
        body = highlight(" ".join(p.text.split()), set(h.terms))
        body.pad_left(4)
        console.print(body)
        console.print()
    console.print(
        Text(f"{len(result.hits)} passages in {result.took_ms:.0f} ms ({result.mode})", style="dim")
    )
    print_facets(console, result)


def print_article(console: Console, art: Article, rec: DocRecord, span: tuple[int, int] | None) -> None:
    console.print(Text(art.title or art.id, style="bold"))
    meta = [art.id]
    for v in (rec.source, rec.published, rec.url):
        if v:
            meta.append(v)
    meta.extend(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in (art.metadata or {}).items())
    console.print(Text(" · ".join(meta), style="dim"))
    marked = span is not None and not (console.is_terminal and console.color_system)
    if span:
        how = "marked [[ ]]" if marked else "highlighted"
        console.print(Text(f"cited span {span[0]}:{span[1]} {how}", style="dim"))
    console.print()
    if span and marked:  # piped or no colour: a highlight would not show, so mark it in text
        a, b = span
        console.print(Text(f"{art.text[:a]}[[{art.text[a:b]}]]{art.text[b:]}"))
        return
    body = Text(art.text)
    if span:
        body.stylize("bold black on yellow", span[0], span[1])
    console.print(body)


def print_documents(
    console: Console, docs: list[DocRecord], total: int | None = None, offset: int = 0
) -> None:
    if not docs:
        if total:
            console.print(f"No documents past {offset}: {total} match.")
        else:
            console.print("No documents: add articles with `search add PATH` (or loosen the filters).")
        return
    w_id = max(len(d.id) for d in docs)
    w_src = max([len(d.source) for d in docs] + [6])
    console.print(
        Text(f"{'id':<{w_id}}  {'passages':>8}  {'source':<{w_src}}  {'added':<10}  title", style="bold")
    )
    for d in docs:
        title = d.title + (f"  (copy of {d.duplicate_of})" if d.duplicate_of else "")
        line = f"{d.id:<{w_id}}  {d.passages:>8}  {d.source:<{w_src}}  {d.added[:10]:<10}  {title}"
        # Titles in full: a line wraps rather than cutting the title short (#16).
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    groups: dict[str, list[str]] = {}
    for d in docs:
        if d.duplicate_of:
            groups.setdefault(d.duplicate_of, []).append(d.id)
    if groups:
        console.print()
        console.print(Text("Near-duplicate groups (first copy ← copies):", style="bold"))
        for first, copies in sorted(groups.items()):
            console.print(f"  {first} ← {', '.join(copies)}", markup=False, highlight=False)
    total = len(docs) if total is None else total
    shown = f"{offset + 1}-{offset + len(docs)} of {total}" if len(docs) < total else f"{total}"
    console.print(Text(f"{shown} documents", style="dim"))


def print_facets(console: Console, result: Answer) -> None:
    """One dim line per facet: where the matching passages come from (narrow with --where)."""
    f = result.facets
    if f is None or not f.passages:
        return
    head = "Without the filters, the matching passages" if f.unfiltered else "Matching passages"
    console.print(Text(f"{head}: {f.passages}", style="dim"))
    sampled = f.entities_over is not None and f.entities_over < f.passages
    for name, counts in f.fields.items():
        if counts:
            shown = ", ".join(f"{v} ({c})" for v, c in counts[:6]) + (", …" if len(counts) > 6 else "")
            if sampled and name in ("people", "teams"):
                shown += f"  (in the best {f.entities_over:,} passages)"
            console.print(Text(f"  {name}: {shown}", style="dim"), markup=False, highlight=False)
