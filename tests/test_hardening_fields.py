"""An article's fields under the same limits on every way in (hardening): POST /documents,
MCP's add_document, files and JSONL (`search index`, `search add`) and Articles given to
``Engine.add`` in code; and what ``Engine.add`` says of a dict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from search import ingest, ingest_base
from search.types import Article

GOOD = (
    "Chelsea beat Portsmouth 3-0 at Stamford Bridge on Saturday. Frank Lampard scored twice "
    "and Didier Drogba added a late third for the visitors' neighbours.\n"
)
LONG = {"source": "BBC " * 200, "url": "http://example.com/" + "a" * 5_000, "published": "2005-01-01" * 20}


def test_the_limits_are_the_ones_post_documents_takes() -> None:
    from search.server_params import ArticleBody

    for name, limit in [
        ("title", ingest_base.MAX_TITLE_CHARS),
        ("source", ingest_base.MAX_SOURCE_CHARS),
        ("url", ingest_base.MAX_URL_CHARS),
        ("published", ingest_base.MAX_PUBLISHED_CHARS),
    ]:
        got = [m.max_length for m in ArticleBody.model_fields[name].metadata if hasattr(m, "max_length")]
        assert got == [limit], name


def _check_cut(a: Article, problems: list[str]) -> None:
    """A label (source) is cut like a title; a link or a date is dropped (part of one is
    wrong); the article is kept, and each field is named in a warning about the document."""
    assert len(a.source) == ingest_base.MAX_SOURCE_CHARS and a.source.endswith("…")
    assert a.source.startswith("BBC BBC")
    assert a.url is None and a.published is None and a.published_ts is None
    assert len(problems) == 3, problems
    for name, n in [("source", 800), ("url", 5_019), ("published", 200)]:
        assert any("document 'long'" in p and f"the {name} is {n:,} characters" in p for p in problems), (
            name,
            problems,
        )


def test_jsonl_fields_over_the_http_limits_are_cut_or_dropped(tmp_path: Path) -> None:
    """Hardening: a JSONL record's source, url and published were kept at any length, while
    POST /documents takes at most 500, 4,000 and 100 characters."""
    f = tmp_path / "feed.jsonl"
    f.write_text(
        json.dumps({"id": "long", "text": GOOD, **LONG})
        + "\n"
        + json.dumps({"id": "ok", "text": GOOD})
        + "\n",
        encoding="utf-8",
    )
    arts, problems = ingest.load(f)
    got = {a.id: a for a in arts}
    assert set(got) == {"long", "ok"}
    assert all(p.level == "warning" for p in problems)
    _check_cut(got["long"], [str(p) for p in problems])


def test_engine_add_of_a_file_cuts_the_same_way(hash_engine, tmp_path: Path) -> None:
    f = tmp_path / "feed.jsonl"
    f.write_text(json.dumps({"id": "long", "text": GOOD, **LONG}) + "\n", encoding="utf-8")
    r = hash_engine.add(f)
    assert r.added == ["long"]
    _check_cut(hash_engine.get_document("long"), r.problems)


def test_articles_given_in_code_are_cut_the_same_way(hash_engine) -> None:
    """Hardening: an Article given to Engine.add kept a title of any length (and any
    source, url or date), while the same record from a file was cut."""
    long = Article(id="long", title="Lampard " * 1_000, text=GOOD, **LONG)
    r = hash_engine.add([long, Article(id="ok", title="Fine", text=GOOD)])
    assert sorted(r.added) == ["long", "ok"]
    stored = hash_engine.get_document("long")
    assert len(stored.title) == ingest_base.MAX_TITLE_CHARS and stored.title.endswith("…")
    titles = [p for p in r.problems if "the title is 8,000 characters" in p]
    assert len(titles) == 1 and "document 'long'" in titles[0]
    _check_cut(stored, [p for p in r.problems if p not in titles])
    assert long.title == "Lampard " * 1_000  # the caller's object is left alone


@pytest.mark.parametrize("items", [{"a": 1}, {"id": "x", "text": GOOD}, {}])
def test_a_dict_is_a_value_error_saying_what_add_takes(hash_engine, items: object) -> None:
    """Hardening: add({"a": 1}) iterated the dict and read its keys as paths ("a: no such
    file or folder"); a dict is said to be neither a path nor an Article."""
    with pytest.raises(ValueError, match="add takes paths .* and Article objects") as got:
        hash_engine.add(items)
    assert "a dict" in str(got.value) and "Article(" in str(got.value)
    assert hash_engine.documents() == []


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("title", None, "title must be a string"),
        ("source", 5, "source must be a string"),
        ("url", 5, "url must be a string or None"),
        ("published", 20050101, "published must be a string or None"),
    ],
)
def test_an_article_field_of_the_wrong_type_is_a_value_error(field: str, value: object, says: str) -> None:
    """Hardening: Article(title=None) was "'NoneType' object has no attribute 'encode'",
    source=5 a TypeError from deep in the write ("intern() argument must be str"), and
    url=5 or published=20050101 were stored as numbers."""
    kwargs: dict[str, object] = {"id": "x", "title": "T", "text": GOOD, field: value}
    with pytest.raises(ValueError, match=f"article 'x': {says}"):
        Article(**kwargs)  # type: ignore[arg-type]


def test_a_number_past_floats_range_costs_only_its_field(hash_engine, tmp_path: Path) -> None:
    """Hardening: a JSONL field holding a 400-digit integer was an OverflowError traceback
    ("int too large to convert to float") from `search index` and `search add`, and the
    whole batch was lost; as metadata of an Article, or over POST /documents, the same (500)."""
    big = "9" * 400
    f = tmp_path / "feed.jsonl"
    f.write_text(
        f'{{"id": "big", "text": "{GOOD.strip()}", "minute": {big}, "category": "football"}}\n'
        + json.dumps({"id": "ok", "text": GOOD, "minute": 89})
        + "\n",
        encoding="utf-8",
    )
    r = hash_engine.add(f)
    assert sorted(r.added) == ["big", "ok"] and r.problems == []
    assert hash_engine.get_document("big").metadata == {"category": "football"}  # not a number to filter on
    r = hash_engine.add(
        [
            Article(id="code", title="T", text=GOOD, metadata={"minute": int(big)}),
            Article(id="x", title="X", text=GOOD),
        ]
    )
    assert r.added == ["x"] and len(r.problems) == 1 and "metadata field 'minute'" in r.problems[0]


@pytest.mark.parametrize("key", ["", "home\nteam", "a\x00b", "x" * 101])
def test_a_metadata_field_no_filter_can_name_is_not_kept(hash_engine, tmp_path: Path, key: str) -> None:
    """Hardening: a JSONL or POST /documents field named "", "home\\nteam", "a\\x00b" or 5,000
    characters long was kept as a filter field: none can be named in a filter, and every
    "unknown filter field" error listed them, a newline splitting it and 5,000 x's in it."""
    from search.errors import FilterError

    f = tmp_path / "feed.jsonl"
    f.write_text(
        json.dumps({"id": "a", "text": GOOD, key: "v", "category": "football"}) + "\n", encoding="utf-8"
    )
    r = hash_engine.add(f)
    assert r.added == ["a"] and hash_engine.get_document("a").metadata == {"category": "football"}
    assert set(hash_engine.fields()) == {"source", "published", "category"}
    with pytest.raises(FilterError) as got:
        hash_engine.search("Lampard", filters=["colour=red"])
    assert "\n" not in str(got.value) and "xxx" not in str(got.value)
    r = hash_engine.add(
        [Article(id="code", title="T", text=GOOD, metadata={key: "v"}), Article(id="b", title="B", text=GOOD)]
    )
    assert r.added == ["b"] and len(r.problems) == 1 and "metadata field name" in r.problems[0], r.problems
    assert "\n" not in r.problems[0] and "\x00" not in r.problems[0] and len(r.problems[0]) < 300


def test_an_unknown_field_error_names_at_most_a_few_fields(hash_engine) -> None:
    """An index with hundreds of metadata fields gave an error line naming every one."""
    meta = {f"field{i:03d}": "v" for i in range(300)}
    hash_engine.add(Article(id="a", title="T", text=GOOD, metadata=meta))
    from search.errors import FilterError

    with pytest.raises(FilterError) as got:
        hash_engine.search("Lampard", filters=["colour=red"])
    msg = str(got.value)
    assert (
        "unknown filter field 'colour'" in msg and "field000" in msg and "and 2" in msg and len(msg) < 600
    ), msg


def test_a_published_date_that_does_not_parse_is_kept_and_said(hash_engine, tmp_path: Path) -> None:
    """Hardening: "2005-02-30" or "01.03.2005" was kept with no timestamp and not a word, so
    --since, --until and --sort newest passed the article by in silence."""
    f = tmp_path / "feed.jsonl"
    rows = [
        ("bad", "2005-02-30"),
        ("dots", "01.03.2005"),
        ("iso", "2005-03-01"),
        ("rfc", "Tue, 01 Mar 2005 18:30:00 GMT"),
    ]
    f.write_text(
        "".join(json.dumps({"id": i, "text": GOOD, "published": d}) + "\n" for i, d in rows), encoding="utf-8"
    )
    r = hash_engine.add(f)
    assert sorted(r.added) == ["bad", "dots", "iso", "rfc"]
    said = [p for p in r.problems if "is not a date" in p]
    assert len(said) == 2 and len(r.problems) == 2, r.problems
    assert "document 'bad': published '2005-02-30' is not a date" in said[0] and "ISO 8601" in said[0]
    assert hash_engine.get_document("dots").published == "01.03.2005"  # kept as written
    r = hash_engine.add(Article(id="code", title="T", text=GOOD + " More.", published="yesterday"))
    assert (
        r.added == ["code"]
        and len(r.problems) == 1
        and "published 'yesterday' is not a date" in r.problems[0]
    )


def test_a_number_past_pythons_digit_limit_is_a_line_error_in_the_files_terms(tmp_path: Path) -> None:
    """Hardening: a 5,000-digit number gave "Exceeds the limit (4300 digits) for integer string
    conversion: ...; use sys.set_int_max_str_digits() to increase the limit" (Python's advice)."""
    f = tmp_path / "feed.jsonl"
    f.write_text(
        f'{{"id": "a", "text": "{GOOD.strip()}", "n": {"9" * 5_000}}}\n'
        + json.dumps({"id": "b", "text": GOOD})
        + "\n",
        encoding="utf-8",
    )
    arts, problems = ingest.load(f)
    assert [a.id for a in arts] == ["b"]
    assert [str(p) for p in problems] == [
        f"{f}:1: a number of over 4,300 digits, which JSON readers refuse; fix or remove the line"
    ]
