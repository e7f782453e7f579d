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
    return " · ".join(bits)


def print_answer(console: Console, result: Answer, engine: Any = None) -> None:
    block = result.answer
    if block is not None:
        if block.text:
            console.print(Text.assemble(("Answer: ", "bold"), (block.text, "bold green")))
        elif block.sentences:
            console.print(Text("No short answer. The best supporting sentence:", style="bold"))
        else:
            console.print(
                Text("No short answer: no passage states it; the closest passages follow.", style="bold")
            )
        for s in block.sentences[:3]:
            console.print(Text.assemble("  “", (s.text, "italic"), f"” [{s.passage_rank}]"))
        if block.text:
            console.print(Text(f"  {block.summary} · confidence {block.confidence:.2f}", style="dim"))
        elif block.sentences and block.confidence > 0:
            console.print(
                Text(
                    f"  confidence {block.confidence:.2f}, below the {block.needed:.2f} a short answer "
                    "needs (SEARCH_MIN_CONFIDENCE sets it)",
                    style="dim",
                )
            )
        for c in block.conflicts:
            cites = ", ".join(f"[{s.passage_rank}]" for s in c.sentences)
            n = "1 article" if c.support == 1 else f"{c.support} articles"
            console.print(Text.assemble(("  Conflict: ", "bold red"), f"{c.text} — {n} {cites}"))
            for s in c.sentences[:2]:
                console.print(Text.assemble("    “", (s.text, "italic"), f"” [{s.passage_rank}]"))
        if block.notice:
            console.print(Text(f"  Note: {block.notice}", style="yellow"))
        console.print()
    if not result.hits:
        console.print("No passages matched.")
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


def print_article(console: Console, art: Article, rec: DocRecord, span: tuple[int, int] | None) -> None:
    console.print(Text(art.title or art.id, style="bold"))
    meta = [art.id]
    for v in (rec.source, rec.published, rec.url):
        if v:
            meta.append(v)
    console.print(Text(" · ".join(meta), style="dim"))
    if span:
        console.print(Text(f"cited span {span[0]}:{span[1]} highlighted", style="dim"))
    console.print()
    body = Text(art.text)
    if span:
        body.stylize("bold black on yellow", span[0], span[1])
    console.print(body)


def print_documents(console: Console, docs: list[DocRecord]) -> None:
    if not docs:
        console.print("The index is empty: add articles with `search add PATH`.")
        return
    w_id = max(len(d.id) for d in docs)
    w_src = max([len(d.source) for d in docs] + [6])
    console.print(
        Text(f"{'id':<{w_id}}  {'passages':>8}  {'source':<{w_src}}  {'added':<10}  title", style="bold")
    )
    for d in docs:
        title = d.title + (f"  (copy of {d.duplicate_of})" if d.duplicate_of else "")
        line = f"{d.id:<{w_id}}  {d.passages:>8}  {d.source:<{w_src}}  {d.added[:10]:<10}  {title}"
        console.print(line, no_wrap=True, overflow="ellipsis", markup=False, highlight=False)
    groups: dict[str, list[str]] = {}
    for d in docs:
        if d.duplicate_of:
            groups.setdefault(d.duplicate_of, []).append(d.id)
    if groups:
        console.print()
        console.print(Text("Near-duplicate groups (first copy ← copies):", style="bold"))
        for first, copies in sorted(groups.items()):
            console.print(f"  {first} ← {', '.join(copies)}")
    console.print(Text(f"{len(docs)} documents", style="dim"))
