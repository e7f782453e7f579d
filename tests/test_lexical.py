"""BM25 against a reference implementation, and exact after adds and removes."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest
from whoosh.util.numeric import byte_to_length, length_to_byte

from search import lexical as lx
from search.text import analyze, query_terms

DOCS = {
    "p1": "Lautaro Martinez headed home the winner in stoppage time.",
    "p2": "Enzo Fernandez equalised in the 85th minute with a stunning strike.",
    "p3": "The equaliser came from Fernandez; the winner from Martinez.",
    "p4": "England led through Anthony Gordon in the 55th minute.",
    "p5": "Messi provided both assists as Argentina beat England 2-1.",
}


def reference_bm25(
    docs: dict[str, str], terms: list[str], k1: float = 0.9, b: float = 0.4
) -> dict[str, float]:
    """Lucene BM25 written out plainly, with whoosh's one-byte length encoding."""
    toks = {d: analyze(t) for d, t in docs.items()}
    n = len(docs)
    avg = sum(len(t) for t in toks.values()) / n
    out: dict[str, float] = {}
    for d, tt in toks.items():
        tf = Counter(tt)
        dl = byte_to_length(length_to_byte(len(tt)))
        s = 0.0
        for term, qf in Counter(terms).items():
            if tf[term] == 0:
                continue
            df = sum(1 for x in toks.values() if term in x)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += qf * idf * tf[term] / (tf[term] + k1 * (1 - b + b * dl / avg))
        if s > 0:
            out[d] = s
    return out


def build(path: Path, docs: dict[str, str]) -> lx.LexicalIndex:
    lx.create(path)
    w = lx.LexicalWriter(path)
    for pid, text in docs.items():
        w.add(pid, pid.split("#")[0], " ".join(analyze(text)))
    w.commit()
    return lx.LexicalIndex(path)


@pytest.mark.parametrize(
    "q", ["who scored the winner", "equaliser Fernandez", "England 55th minute", "Messi"]
)
def test_scores_match_reference(tmp_path: Path, q: str) -> None:
    ix = build(tmp_path / "lex", DOCS)
    terms = query_terms(q)
    got = ix.score_all(terms)
    want = reference_bm25(DOCS, terms)
    assert got.keys() == want.keys()
    for d in want:
        assert got[d] == pytest.approx(want[d], rel=1e-6)


def test_question_syntax_is_text() -> None:
    # Query syntax is just text: no wildcards, fields or operators survive analysis.
    assert query_terms("winner?") == query_terms("winner")
    assert query_terms('title:"Messi" AND (Kane OR NOT Rice*)') == ["titl", "messi", "kane", "rice"]
    assert query_terms("equaliser") == query_terms("equalizer")
    assert query_terms("favourite centre") == query_terms("favorite center")


def test_exact_after_random_adds_and_removes(hash_engine, tmp_path: Path) -> None:
    """After a random sequence of adds, replaces and removes, scores equal a fresh build."""
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.types import Article

    rng = random.Random(7)
    words = (
        "goal winner equaliser header minute england argentina messi kane stoppage penalty save cross".split()
    )

    def article(i: int) -> Article:
        sents = [
            " ".join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize() + "."
            for _ in range(rng.randint(1, 8))
        ]
        return Article(id=f"d{i}", title="", text=" ".join(sents))

    live: dict[str, Article] = {}
    for _step in range(12):
        op = rng.random()
        if op < 0.5 or not live:
            batch = [article(rng.randint(0, 15)) for _ in range(rng.randint(1, 4))]
            hash_engine.add(batch)
            for a in batch:
                live[a.id] = a
        elif op < 0.8:
            gone = rng.sample(sorted(live), k=min(len(live), rng.randint(1, 3)))
            hash_engine.remove(gone)
            for g in gone:
                del live[g]
        else:
            a = article(int(rng.choice(sorted(live))[1:]))
            hash_engine.add([a])
            live[a.id] = a
    fresh = Engine.open(tmp_path / "fresh", create=True, embedder=HashEmbedder())
    fresh.add(list(live.values()))
    for q in ["winner goal", "messi header", "stoppage time penalty save", "england"]:
        terms = query_terms(q)
        got = hash_engine._backend.snap.lexical.score_all(terms)
        want = fresh._backend.snap.lexical.score_all(terms)
        assert got.keys() == want.keys()
        for pid in want:
            assert got[pid] == pytest.approx(want[pid], rel=1e-9), (q, pid)
    fresh.close()


def test_deleted_documents_leave_statistics(tmp_path: Path) -> None:
    """A delete without a merge is corrected for, so scores equal a fresh build."""
    path = tmp_path / "lex"
    build(path, DOCS).close()
    w = lx.LexicalWriter(path)
    w.delete_doc("p3", {"p3": " ".join(analyze(DOCS["p3"]))})
    w.commit(merge=False)
    ix = lx.LexicalIndex(path)
    assert ix.correction.docs == 1  # the deleted passage is still in whoosh's segment
    rest = {k: v for k, v in DOCS.items() if k != "p3"}
    for q in ["who scored the winner", "equaliser Fernandez"]:
        terms = query_terms(q)
        got = ix.score_all(terms)
        want = reference_bm25(rest, terms)
        assert got.keys() == want.keys()
        for d in want:
            assert got[d] == pytest.approx(want[d], rel=1e-6)
    # Without the correction, whoosh's own statistics would still count p3.
    raw = lx.LexicalIndex(path)
    raw.correction = lx.SegmentCorrection()
    assert raw.score_all(query_terms("winner")) != ix.score_all(query_terms("winner"))


def test_a_program_that_seeds_random_can_write_twice(tmp_path: Path) -> None:
    # whoosh draws segment names from the global random; seeded alike before two
    # commits, it used to name both segments the same and fail on the second.
    path = tmp_path / "lex"
    lx.create(path)
    for n in range(2):
        random.seed(1234)
        w = lx.LexicalWriter(path)
        w.add(f"d{n}#0", f"d{n}", " ".join(analyze(f"goal number {n} scored late")))
        w.commit(merge=False)
    ix = lx.LexicalIndex(path)
    assert ix.doc_count() == 2
    ix.close()


def test_passage_ids_are_stored_not_indexed_and_an_older_schema_still_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pid`` is stored only (#17 item 4: an indexed ID field cost a term a passage); an
    index created when it was also indexed scores, deletes and searches through whoosh alike."""
    from whoosh import fields

    from search import lexical_writer

    build(tmp_path / "new", DOCS).close()

    current = lexical_writer.make_schema

    def older_schema() -> fields.Schema:
        s = current()
        s.remove("pid")
        s.add("pid", fields.ID(stored=True, unique=True))
        return s

    with monkeypatch.context() as m:
        m.setattr(lexical_writer, "make_schema", older_schema)
        build(tmp_path / "old", DOCS).close()
    for path in (tmp_path / "new", tmp_path / "old"):
        w = lx.LexicalWriter(path)
        assert w.delete_doc("p3", {"p3": " ".join(analyze(DOCS["p3"]))}) == 1
        w.add("p6", "p6", " ".join(analyze("Kane missed a penalty.")))
        w.commit(merge=False)
    rest = {**{k: v for k, v in DOCS.items() if k != "p3"}, "p6": "Kane missed a penalty."}
    for path in (tmp_path / "new", tmp_path / "old"):
        ix = lx.LexicalIndex(path)
        with ix._ix.reader() as r:  # the schema each index recorded, and its terms
            assert ix._ix.schema["pid"].indexed == (path.name == "old")
            pid_terms = sum(1 for field, _ in r.all_terms() if field == "pid")
            assert pid_terms == (6 if path.name == "old" else 0)  # five, and one added
        for q in ["who scored the winner", "equaliser Fernandez", "Kane penalty"]:
            terms = query_terms(q)
            want = reference_bm25(rest, terms)
            assert ix.score_all(terms) == pytest.approx(want, rel=1e-6)
            assert dict(ix.search_whoosh(terms, 10)) == pytest.approx(want, rel=1e-6)
        ix.close()


def test_an_article_analysed_once_gives_each_passage_its_own_terms() -> None:
    """The write analyses an article once and slices each passage's terms out: the same
    terms as analysing each passage, the title and the whole on their own, including where
    a word crosses a passage's edge or NFKC changes the text's length (which fall back)."""
    from search.chunk import chunk
    from search.lexical_process import analysed, doc_text
    from search.text import headline
    from search.types import Article, Passage

    seeds = sorted((Path(__file__).resolve().parent.parent / "seeds").glob("*.txt"))
    arts = [Article(id=p.name, title="", text=p.read_text(encoding="utf-8")) for p in seeds]
    arts.append(
        Article(id="lig.txt", title="Oﬃcial", text="The ﬁnal whistle went. Messi's side won the ﬁnal.")
    )
    cases = [(a, chunk(a.id, a.text, target_chars=300, overlap=60)) for a in arts]
    split = Article(id="cut.txt", title="Cut", text="Martinez headed home the winner in stoppage time.")
    cases.append(
        (
            split,
            [
                Passage("cut.txt#0", "cut.txt", 0, 12, split.text[:12]),
                Passage("cut.txt#1", "cut.txt", 12, 49, split.text[12:49]),
            ],
        )
    )
    for art, ps in cases:
        old = (
            " ".join(analyze(headline(art.title, art.text))),
            [" ".join(analyze(p.text)) for p in ps],
            doc_text(art.title, art.text),
        )
        assert analysed(art.title, art.text, [(p.start, p.end) for p in ps]) == old, art.id
    assert len(cases) > 4 and all(len(ps) > 1 for _, ps in cases[:-2])
