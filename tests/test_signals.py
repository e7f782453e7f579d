"""Headlines and whole documents count (#15): the title field, BM25F, the document-level
signal, the fusion choice and the switches that keep football rules off other corpora."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from whoosh.util.numeric import byte_to_length, length_to_byte

from search import fusion
from search import lexical as lx
from search.embed import HashEmbedder
from search.engine import Engine, dense_text
from search.text import analyze, headline, query_terms
from search.types import Article

PASSAGES = {
    "a#0": ("Spain beat England in Berlin after extra time.", "Spain win the World Cup final"),
    "a#1": ("Fans celebrated in Madrid until dawn.", "Spain win the World Cup final"),
    "b#0": ("The final whistle went after a long night; the cup stayed home.", "Quiet night in Paris"),
    "c#0": ("Argentina won the World Cup final in Qatar.", ""),
    "d#0": ("Rain in Manchester; the match was called off.", "Weather stops play"),
}


def _norm(n: int) -> float:
    return byte_to_length(length_to_byte(n))


def reference_bm25f(terms: list[str], w: float, k1: float = 0.9, b: float = 0.4) -> dict[str, float]:
    """BM25F written out plainly: per-field length normalisation, one saturation."""
    text = {p: analyze(t) for p, (t, _) in PASSAGES.items()}
    title = {p: analyze(h) for p, (_, h) in PASSAGES.items()}
    n = len(PASSAGES)
    avg_x = sum(len(v) for v in text.values()) / n
    avg_t = sum(len(v) for v in title.values()) / n
    out = {}
    for p in PASSAGES:
        s = 0.0
        tx, tt = Counter(text[p]), Counter(title[p])
        for term, qf in Counter(terms).items():
            ntf = tx[term] / (1 - b + b * _norm(len(text[p])) / avg_x)
            if tt[term]:
                ntf += w * tt[term] / (1 - b + b * _norm(len(title[p])) / avg_t)
            if ntf == 0:
                continue
            df = sum(1 for q in PASSAGES if term in text[q] or term in title[q])
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += qf * idf * ntf / (ntf + k1)
        if s > 0:
            out[p] = s
    return out


def _lex(path: Path) -> lx.LexicalIndex:
    lx.create(path)
    wr = lx.LexicalWriter(path)
    for pid, (t, h) in PASSAGES.items():
        wr.add(pid, pid.split("#")[0], " ".join(analyze(t)), " ".join(analyze(h)))
    wr.commit()
    return lx.LexicalIndex(path)


@pytest.mark.parametrize("w", [0.0, 0.5, 1.0, 3.0])
def test_bm25f_matches_reference(tmp_path: Path, w: float) -> None:
    ix = _lex(tmp_path / "lex")
    for q in ["who won the World Cup final", "Spain", "final night", "rain match"]:
        terms = query_terms(q)
        got = dict(ix.search(terms, 100, title_weight=w))
        want = reference_bm25f(terms, w)
        if w == 0:  # no title: exactly the text field's BM25, df of the text only
            want = dict(ix.search_whoosh(terms, 100))
        assert got.keys() == want.keys(), q
        for p in want:
            assert got[p] == pytest.approx(want[p], rel=1e-6), (q, p)
    ix.close()


def test_deleting_a_passage_corrects_the_title_statistics(tmp_path: Path) -> None:
    path = tmp_path / "lex"
    _lex(path).close()
    wr = lx.LexicalWriter(path)
    t, h = PASSAGES["d#0"]
    wr.delete_doc("d", {"d#0": (" ".join(analyze(t)), " ".join(analyze(h)))})
    wr.commit(merge=False)
    ix = lx.LexicalIndex(path)
    assert ix.correction.title_length == len(analyze(h))
    fresh_path = tmp_path / "fresh"
    lx.create(fresh_path)
    wr = lx.LexicalWriter(fresh_path)
    for pid, (t, h) in PASSAGES.items():
        if pid != "d#0":
            wr.add(pid, pid.split("#")[0], " ".join(analyze(t)), " ".join(analyze(h)))
    wr.commit()
    fresh = lx.LexicalIndex(fresh_path)
    terms = query_terms("Spain win the final in Paris")
    got, want = dict(ix.search(terms, 10, title_weight=1.0)), dict(fresh.search(terms, 10, title_weight=1.0))
    assert got.keys() == want.keys()
    for p in want:
        assert got[p] == pytest.approx(want[p], rel=1e-9)
    ix.close()
    fresh.close()


def test_a_headline_reaches_both_retrievers(hash_engine: Engine, tmp_path: Path) -> None:
    """The issue's case: an article titled "Spain win the final" for "who won the World Cup final"."""
    src = tmp_path / "news.jsonl"
    filler = [
        {
            "id": f"f{i}",
            "title": f"Round {i} report",
            "text": f"Club {i} drew in the league. The final score was level.",
        }
        for i in range(12)
    ]
    recs = [
        {"id": "spain", "title": "Spain win the World Cup final", "text": "Celebrations went on all night."}
    ]
    src.write_text("\n".join(json.dumps(r) for r in filler + recs), encoding="utf-8")
    hash_engine.add([src])
    q = "who won the World Cup final"
    assert hash_engine.search(q, k=1, mode="bm25")[0].passage.doc_id == "spain"
    # the fake embedder hashes words: only the headline in the encoded text can match
    assert hash_engine.search("Spain win the World Cup", k=1, mode="dense")[0].passage.doc_id == "spain"
    assert "spain" in [h.passage.doc_id for h in hash_engine.search(q, k=3)]


def test_dense_text_carries_the_headline() -> None:
    assert dense_text("Spain win", "They beat England.") == "Spain win\nThey beat England."
    assert dense_text("Spain win", "Spain win the final.") == "Spain win the final."
    assert dense_text("", "x") == "x"


def test_a_title_derived_from_the_opening_is_no_headline() -> None:
    text = "Argentina beat England 2-1 in the semi-final on Wednesday. Messi starred."
    assert headline("Argentina beat England 2-1 in the semi-final on Wednesday", text) == ""
    assert headline("Argentina beat England 2-1 in the…", text) == ""
    assert headline("Messi inspires comeback", text) == "Messi inspires comeback"


def test_with_documents_ranks_up_a_passage_of_a_matching_document() -> None:
    passages = [("x#0", 2.0), ("y#1", 1.8)]
    docs = [("y", 3.0), ("z", 2.5), ("x", 0.5)]
    out = fusion.with_documents(passages, docs, weight=0.5)
    assert [p for p, _ in out] == ["y#1", "x#0", "z#0"]
    assert dict(out)["z#0"] == pytest.approx(1.25)
    assert [p for p, _ in fusion.with_documents(passages, docs, 0.5, add_missing=False)] == ["y#1", "x#0"]
    assert fusion.with_documents(passages, docs, weight=0) == passages


def test_document_level_signal_on_the_engine(hash_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Words "kane" and "hattrick" never share a passage of k, but k as a whole holds both."""
    monkeypatch.setattr(fusion, "DOC_MIN_DOCS", 1)
    long = " ".join(["Tottenham played well in the first half and pressed high."] * 14)
    k = Article(
        id="k", title="Derby day", text=f"Kane opened the scoring early on today. {long} A hattrick late on."
    )
    other = [Article(id=f"h{i}", title=f"Cup tie {i}", text=f"{long} A hattrick for them.") for i in range(3)]
    other.append(Article(id="o", title="Report", text=f"Kane was booked. {long}"))
    hash_engine.add([k, *other])
    assert len(hash_engine.passages_of("k")) > 1
    assert hash_engine.search("Kane hattrick", k=1, mode="bm25")[0].passage.doc_id == "k"
    monkeypatch.setattr(fusion, "DOC_WEIGHT", 0.0)  # without it, a short passage with one word wins
    assert hash_engine.search("Kane hattrick", k=1, mode="bm25")[0].passage.doc_id != "k"


def test_fusion_choices() -> None:
    lex = [("a", 9.0), ("b", 3.0), ("c", 2.9), ("d", 2.8)]
    flat = [("d", 0.50), ("c", 0.49), ("b", 0.48), ("a", 0.47)]
    # the lexical side's top stands out, the dense side's does not: lean lexical
    assert fusion.confidence_alpha(lex, flat, 0.5) > 0.5
    assert fusion.confidence_alpha(flat, lex, 0.5) < 0.5
    assert fusion.confidence_alpha([], [], 0.3) == 0.3
    with pytest.raises(ValueError):
        fusion.Fusion.from_str("nope")


def test_the_engine_uses_the_measured_default(hash_engine: Engine) -> None:
    assert hash_engine.fusion is fusion.Fusion.from_str(fusion.DEFAULT_FUSION)
    assert hash_engine.alpha is None  # chosen per corpus
    assert hash_engine._alpha(False) == fusion.CONVEX_ALPHA


def test_the_lexical_weight_follows_the_corpus(tmp_path: Path) -> None:
    """Football coverage of many matches leans on names (BM25); the reports of one match,
    and any other corpus, keep the weight fitted on SciFact and dev. A weight given wins."""
    many, few = fusion.DOC_MIN_DOCS, fusion.DOC_MIN_DOCS - 1
    assert fusion.corpus_alpha(True, many) == fusion.MANY_MATCHES_ALPHA > fusion.CONVEX_ALPHA
    assert fusion.corpus_alpha(True, few) == fusion.corpus_alpha(False, many) == fusion.CONVEX_ALPHA
    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder(), alpha=0.25)
    try:
        assert e._alpha(True) == 0.25
    finally:
        e.close()
    with pytest.raises(ValueError, match="alpha"):
        Engine.open(tmp_path / "idx2", create=True, embedder=HashEmbedder(), alpha=1.5)


@pytest.mark.parametrize("how", ["rrf", "convex", "confidence"])
def test_every_fusion_runs_through_the_engine(tmp_path: Path, how: str) -> None:
    e = Engine.open(tmp_path / "idx", create=True, embedder=HashEmbedder(), fusion=how)
    e.add([Article(id="a", title="Late winner", text="Martinez headed home the winner in stoppage time.")])
    assert e.search("who scored the winner", k=1)[0].passage.doc_id == "a"
    e.close()


def test_the_football_vocabulary_switches_off_for_other_corpora(hash_engine: Engine, tmp_path: Path) -> None:
    """Measured by a corpus statistic from the index itself, never a flag the user sets."""
    from search import vocab

    science = [
        Article(
            id=f"s{i}", title=f"Study {i}", text=f"Cells treated with compound {i} showed lower expression."
        )
        for i in range(20)
    ]
    hash_engine.add(science)
    view = hash_engine._backend.reader()
    assert vocab.football_share(view.idf) < vocab.FOOTBALL_SHARE
    assert not hash_engine._is_football(view)
    football = Engine.open(tmp_path / "fb", create=True, embedder=HashEmbedder())
    football.add(
        [
            Article(
                id=f"m{i}",
                title=f"Match {i}",
                text=f"The striker scored a late goal in the league match {i}.",
            )
            for i in range(5)
        ]
    )
    assert football._is_football(football._backend.reader())
    football.close()
    # forced (for measurements): the engine attribute wins over the statistic
    hash_engine.football = True
    assert hash_engine._is_football(view)


def test_other_sports_and_tiny_corpora_are_not_football() -> None:
    """Rugby reports say goal, scored, penalty, referee and match as often as football ones;
    only football's own words count. A corpus too small for the idf smoothing to vanish is
    judged on the words it holds, not on the smoothing."""
    from search import vocab

    def idf_of(passages: list[str]) -> Any:
        n = len(passages)
        sets = [set(analyze(p)) for p in passages]
        return lambda t: math.log((n + 1) / (sum(t in s for s in sets) + 0.5))

    rugby = [
        f"The referee awarded a penalty and the fly-half scored a drop goal in match {i}." for i in range(40)
    ]
    football = [
        f"The striker and the midfielder beat the goalkeeper in stoppage time, game {i}." for i in range(40)
    ]
    science = [f"Cells treated with compound {i} showed lower expression." for i in range(8)]
    assert not vocab.is_football(idf_of(rugby))
    assert vocab.is_football(idf_of(football))
    assert vocab.football_share(idf_of(science)) == pytest.approx(0.0, abs=1e-9)
    assert not vocab.is_football(idf_of(science))
    assert vocab.is_football(idf_of(football + rugby * 3))  # a quarter of it football


def test_the_document_signal_needs_enough_documents() -> None:
    assert fusion.doc_weight(fusion.DOC_MIN_DOCS - 1) == 0.0
    assert fusion.doc_weight(fusion.DOC_MIN_DOCS) == fusion.DOC_WEIGHT
