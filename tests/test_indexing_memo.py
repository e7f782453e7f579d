"""Each distinct text reaches the tagger once per batch and the encoder once per write
(search.memo), and every copy is stored as if it had been tagged and encoded alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from search import indexing, memo
from search.embed import HashEmbedder
from search.engine import Engine
from search.enrich import check_spans
from search.types import Article

BODY = [
    "Kane scored twice at Wembley. The Spurs striker headed in from a corner.\n\n"
    "Report: Press Association. Kane scored twice at Wembley.",
    "Arsenal drew with Chelsea in the London derby. Report: Press Association.",
    "Rooney signed a new contract with Everton until 2026. The striker is 19.",
]


def tagger(texts: Sequence[str]) -> list[list[tuple[int, int, str, str]]]:
    """Capitalised words as spans, with a role: a function of the text alone."""
    import re

    return [
        [(m.start(), m.end(), "ORG", "nsubj score") for m in re.finditer(r"[A-Z][a-z]+", t)] for t in texts
    ]


class CountingTagger:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[list[tuple[int, int, str, str]]]:
        self.calls.append(list(texts))
        return tagger(texts)


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting every text the model is given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[str] = Counter()

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: Any = None) -> np.ndarray:
        self.seen.update(texts)
        return super().encode(texts, batch_size, progress)


def one_by_one(texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts`` with each encoded alone: what the write must store."""
    e = HashEmbedder()
    return np.stack([e.encode([t])[0] for t in texts])


def corpus() -> list[Article]:
    """Exact copies (syndication), copies under another title, and distinct stories."""
    out = []
    for i in range(30):
        title = "Same headline" if i % 2 else f"Headline {i % 4}"
        out.append(Article(id=f"d{i:02d}", title=title, text=BODY[i % 3]))
    out.append(Article(id="lone", title="Alone", text="Bale scored a late winner for Wales."))
    return out


def test_the_tagger_sees_each_distinct_text_once_and_copies_get_their_own_lists() -> None:
    arts = corpus()
    count = CountingTagger()
    indexing.chunk_and_tag(arts, count, indexing.Clock())
    assert count.calls == [[*BODY, arts[-1].text]]
    want = check_spans([a.text for a in arts], tagger([a.text for a in arts]))
    assert [(a.entities, a.roles) for a in arts] == want
    first, copy = arts[0], arts[3]
    assert first.entities is not copy.entities and first.roles is not copy.roles
    first.entities.clear()
    assert copy.entities == want[3][0]


def _prepared(arts: list[Article]) -> indexing.Prepared:
    return indexing.chunk_and_tag(arts, tagger, indexing.Clock())


def _passage_texts(prep: indexing.Prepared) -> list[str]:
    from search.engine import dense_text
    from search.text import headline

    return [
        dense_text(headline(a.title, a.text), p.text)
        for a, ps in zip(prep.articles, prep.passages)
        for p in ps
    ]


def test_encode_runs_the_model_once_per_distinct_text_and_scatters_exact_rows() -> None:
    prep = _prepared(corpus())
    texts = _passage_texts(prep)
    sentences = [a.text[s:e] for a in prep.articles for s, e in a.sentences]
    assert len(set(texts)) < len(texts) and len(set(sentences)) < len(sentences)
    emb, ticks, clock = CountingEmbedder(), [], indexing.Clock()
    indexing.encode(emb, prep, clock, ticks.append, memo.VectorMemo())
    assert set(emb.seen.values()) == {1} and set(emb.seen) == set(texts) | set(sentences)
    assert prep.vectors is not None and prep.vectors.dtype == np.float32
    assert np.array_equal(prep.vectors, one_by_one(texts))  # bit for bit, in order
    for a in prep.articles:
        want = one_by_one([a.text[s:e] for s, e in a.sentences]).astype(np.float16)
        assert a.sentence_vectors is not None and np.array_equal(a.sentence_vectors, want)
    assert sum(ticks) == len(texts)  # progress counts every passage, copies too
    assert len(clock.spans["encode"]) == 2  # passages, then sentences: the model's time alone


def test_the_memo_spans_batches_and_is_bounded() -> None:
    emb = CountingEmbedder()
    kept = memo.VectorMemo(size=4)
    texts = [f"text {i}" for i in range(6)]
    clock = indexing.Clock()
    assert np.array_equal(kept.encode(emb, texts[:3], clock), one_by_one(texts[:3]))
    got = kept.encode(emb, [texts[2], texts[1], texts[3], texts[1]], clock)
    assert np.array_equal(got, one_by_one([texts[2], texts[1], texts[3], texts[1]]))
    assert emb.seen == Counter(texts[:4])  # the second batch encoded text 3 alone
    kept.encode(emb, texts[4:], clock)  # 6 texts held by a memo of 4: texts 0 and 2 dropped
    assert len(kept._kept) == 4
    assert np.array_equal(kept.encode(emb, texts[:2], clock), one_by_one(texts[:2]))
    assert emb.seen == Counter(texts) + Counter(texts[:1])
    assert kept.encode(emb, [], clock).shape == (0, emb.dim)


def test_distinct_gives_first_copies_and_where_each_item_went() -> None:
    assert memo.distinct([]) == ([], [])
    assert memo.distinct(["a", "b", "a", "c", "b"]) == ([0, 1, 3], [0, 1, 0, 2, 1])


def _build(path: Path, emb: HashEmbedder, tag: Any, arts: list[Article]) -> dict[str, Any]:
    """What the index stores for each article: entities, roles, sentence and passage vectors."""
    with Engine.open(path, create=True, embedder=emb, tagger=tag) as e:
        e.add(arts)
        view = e._backend.reader()
        out = {}
        for a in arts:
            doc = e.get_document(a.id)
            pids = [p.id for p in e.passages_of(a.id)]
            out[a.id] = (doc.entities, doc.roles, doc.sentence_vectors, view.passage_vectors(pids))
        return out


def test_a_write_stores_the_same_as_one_without_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "BATCH_ARTICLES", 8)
    monkeypatch.setattr(indexing, "MIN_BATCH_ARTICLES", 8)
    arts = corpus()
    emb, count = CountingEmbedder(), CountingTagger()
    got = _build(tmp_path / "memo", emb, count, arts)
    assert max(emb.seen.values()) == 1  # across the write's 4 batches
    assert all(len(set(c)) == len(c) for c in count.calls) and len(count.calls) == 4

    def alone(
        self: memo.VectorMemo, embedder: Any, texts: Sequence[str], clock: Any, progress: Any = None
    ) -> Any:
        return one_by_one(texts)

    monkeypatch.setattr(memo.VectorMemo, "encode", alone)
    monkeypatch.setattr(indexing, "distinct", lambda xs: (list(range(len(xs))), list(range(len(xs)))))
    plain = CountingTagger()
    want = _build(tmp_path / "plain", HashEmbedder(), plain, arts)
    assert sum(map(len, plain.calls)) == len(arts)  # the reference tagged every copy
    assert got.keys() == want.keys()
    for doc_id, (ents, roles, sv, pv) in got.items():
        w_ents, w_roles, w_sv, w_pv = want[doc_id]
        assert ents == w_ents and roles == w_roles and ents
        assert sv is not None and w_sv is not None and np.array_equal(sv, w_sv)
        assert len(pv) and np.array_equal(pv, w_pv)
