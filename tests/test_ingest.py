"""Tests for search.ingest: odd files, ids, titles, teasers, HTML and feeds (all on tmp_path)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from search.chunk import heading_spans
from search.ingest import (
    IngestProblem,
    clean_text,
    derive_title,
    detect_source,
    ingest,
    load,
    read_path,
    validate_id,
)

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading files must never reach the network (feedparser could fetch a URL)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8", newline="")
    return path


def only_problem(path: Path) -> IngestProblem:
    articles, problems = load(path)
    assert articles == []
    assert len(problems) == 1, problems
    return problems[0]


# --- odd files -----------------------------------------------------------------------------


def test_empty_and_whitespace_only_files_are_problems(tmp_path: Path) -> None:
    for name, data in [("empty.txt", ""), ("blank.txt", "  \r\n\t\n")]:
        p = only_problem(write(tmp_path / name, data))
        assert p.level == "error" and "empty file" in p.message and p.path.endswith(name)


def test_binary_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    p = only_problem(write(tmp_path / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
    assert "binary" in p.message


def test_undecodable_bytes_are_a_problem(tmp_path: Path) -> None:
    # 0x81 is undefined in Windows-1252 too.
    p = only_problem(write(tmp_path / "bad.txt", b"Title\n\nSome text \x81\x8d here."))
    assert "UTF-8" in p.message and "convert" in p.message


def test_cp1252_file_is_read_with_a_warning_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "105.txt", "Cole fined\r\n\r\nHe was fined £100,000.\r\n".encode("cp1252"))
    articles, problems = load(path)
    assert [a.text for a in articles] == ["He was fined £100,000."]
    assert len(problems) == 1 and problems[0].level == "warning"
    assert "105.txt" in str(problems[0]) and "Windows-1252" in problems[0].message


def test_bom_crlf_and_nfc_are_normalised_but_curly_quotes_kept(tmp_path: Path) -> None:
    raw = "\ufeffMessi’s night\r\n\r\n“We’re through,” said Scalone\u0301.\r\rNext line.\r\n"
    (a,) = load(write(tmp_path / "a.txt", raw))[0]
    assert a.title == "Messi’s night"
    assert a.text == "“We’re through,” said Scalon\u00e9.\n\nNext line."
    assert "\r" not in a.text and "\ufeff" not in a.text


def test_utf16_with_bom_is_decoded(tmp_path: Path) -> None:
    (a,) = load(write(tmp_path / "u16.txt", "Title here\n\nBody text.".encode("utf-16")))[0]
    assert a.title == "Title here" and a.text == "Body text."


def test_missing_path_is_a_problem(tmp_path: Path) -> None:
    p = only_problem(tmp_path / "nope.txt")
    assert "no such file" in p.message


def test_unsupported_extension_named_explicitly_is_a_problem(tmp_path: Path) -> None:
    p = only_problem(write(tmp_path / "report.pdf", b"%PDF-1.4"))
    assert "unsupported file type '.pdf'" in p.message


def test_folder_skips_hidden_and_unsupported_files_but_counts_them(tmp_path: Path) -> None:
    write(tmp_path / "b" / "two.txt", "Second story\n\nText two.")
    write(tmp_path / "a.md", "# First story\n\nText one.")
    write(tmp_path / ".hidden.txt", "Hidden\n\nNo.")
    write(tmp_path / ".git" / "x.txt", "Git\n\nNo.")
    write(tmp_path / "notes.pdf", b"%PDF")
    report = ingest(tmp_path)
    assert [a.id for a in report.articles] == ["a.md", "b/two.txt"]
    assert report.problems == []
    assert len(report.skipped) == 3
    assert report.articles[0].title == "First story"
    assert report.articles[1].path == str((tmp_path / "b" / "two.txt").resolve())


def test_empty_folder_is_a_problem(tmp_path: Path) -> None:
    write(tmp_path / "x.pdf", b"%PDF")
    p = only_problem(tmp_path)
    assert "no articles were found" in p.message


def test_single_file_id_is_its_name_and_root_gives_relative_ids(tmp_path: Path) -> None:
    f = write(tmp_path / "sub" / "story.txt", "Headline\n\nBody.")
    assert [a.id for a in load(f)[0]] == ["story.txt"]
    assert [a.id for a in read_path(f, root=tmp_path)] == ["sub/story.txt"]


def test_a_bad_file_does_not_stop_the_batch(tmp_path: Path) -> None:
    write(tmp_path / "1.txt", "")
    write(tmp_path / "2.txt", b"\x00\x01")
    write(tmp_path / "3.txt", "Good one\n\nIt loads.")
    articles, problems = load([tmp_path, tmp_path / "missing"])
    assert [a.id for a in articles] == ["3.txt"]
    assert len(problems) == 3


# --- JSONL ----------------------------------------------------------------------------------


def test_jsonl_bad_lines_are_reported_with_line_numbers(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "ok1", "title": "One", "text": "First text.", "source": "BBC", "extra": 1}),
        "{not json",
        "",
        json.dumps(["a", "list"]),
        json.dumps({"id": "", "title": "x", "text": "y"}),
        json.dumps({"id": 7, "title": "", "text": "Messi scored twice. Then he left."}),
        json.dumps({"id": "nt", "title": "No text"}),
        json.dumps({"id": "../etc/passwd", "title": "x", "text": "y"}),
        json.dumps({"id": True, "title": "x", "text": "y"}),
        json.dumps({"id": "ws", "title": "x", "text": "   "}),
        json.dumps({"id": "p", "title": "T", "text": "B.", "url": "https://x/y", "published": "2026-07-15"}),
    ]
    articles, problems = load(write(tmp_path / "c.jsonl", "\n".join(lines) + "\n"))
    assert [a.id for a in articles] == ["ok1", "7", "p"]
    assert articles[0].source == "BBC" and articles[0].title == "One"
    assert articles[1].title == "Messi scored twice"  # derived from the first sentence
    assert articles[2].url == "https://x/y" and articles[2].published == "2026-07-15"
    assert all(a.path == str((tmp_path / "c.jsonl").resolve()) for a in articles)
    assert [p.line for p in problems] == [2, 4, 5, 7, 8, 9, 10]
    assert "malformed JSON" in problems[0].message
    assert "'..' segment" in problems[4].message
    assert all(str(p).startswith(f"{tmp_path / 'c.jsonl'}:{p.line}: ") for p in problems)


def test_empty_jsonl_is_a_problem(tmp_path: Path) -> None:
    assert "empty JSONL" in only_problem(write(tmp_path / "e.jsonl", "\n\n")).message


def test_duplicate_ids_keep_the_later_one_with_a_warning(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", json.dumps({"id": "x", "title": "A", "text": "First."}))
    write(tmp_path / "b.jsonl", json.dumps({"id": "x", "title": "B", "text": "Second."}))
    articles, problems = load(tmp_path)
    assert [(a.id, a.title) for a in articles] == [("x", "B")]
    assert [p.level for p in problems] == ["warning"]


@pytest.mark.parametrize(
    ("doc_id", "reason"),
    [
        ("", "empty"),
        ("a\x07b", "control"),
        ("a/../b", "'..'"),
        ("/abs", "'/'"),
        ("a\\b", "backslash"),
        ("x" * 201, "201 characters"),
    ],
)
def test_validate_id_rejects_unsafe_ids(doc_id: str, reason: str) -> None:
    assert reason in (validate_id(doc_id) or "")


def test_validate_id_accepts_ordinary_ids() -> None:
    for ok in ["football/001.txt", "d-1", "x" * 200, "https://example.com/a?b=1", "a..b"]:
        assert validate_id(ok) is None


# --- teasers and cleaning -------------------------------------------------------------------


def test_seed_002_read_also_teaser_is_cut_exactly(tmp_path: Path) -> None:
    raw = (SEEDS.glob("002_*.txt").__next__()).read_text(encoding="utf-8")
    (a,) = load(write(tmp_path / "002.txt", raw))[0]
    removed = " Read also: ICC Format Overhaul Could Add India-Pakistan Showdown"
    assert removed in raw
    assert a.text == raw.strip().replace(removed, "")
    assert (
        "before finally breaking through. Messi set up Enzo Fernandez for the 85th-minute equalizer" in a.text
    )
    # The chunker still finds the glued-in headings in the cleaned text.
    assert len(heading_spans(a.text)) == 4


def test_seeds_lose_nothing_else(tmp_path: Path) -> None:
    articles, problems = load(SEEDS)
    assert problems == [] and len(articles) == 5
    for a in articles:
        raw = Path(a.path or "").read_text(encoding="utf-8").strip()
        if not a.id.startswith("002_"):
            assert a.text == raw


def test_seed_titles_and_source() -> None:
    by_id = {a.id[:3]: a for a in load(SEEDS)[0]}
    assert (
        by_id["000"].title == "England have melted down in spectacular fashion to be cruelly denied a World…"
    )
    assert by_id["001"].title == "Argentina snatched victory from the jaws of defeat with two late goals to…"
    assert by_id["002"].title == "On a sweltering Atlanta evening, the reigning World Cup champions found…"
    # The dateline is not part of the title, and names the source.
    assert by_id["003"].title.startswith("Lionel Messi engineered a spectacular comeback")
    assert by_id["003"].source == "AFP" and by_id["000"].source == ""
    assert by_id["004"].title.startswith("In one of the most dramatic comebacks")
    for key in ["000", "001", "002", "004"]:  # a derived title is the start of the kept body
        a = by_id[key]
        assert len(a.title) <= 81 and a.text.startswith(a.title.rstrip("…"))


def test_bbc_style_file_title_is_the_first_line(tmp_path: Path) -> None:
    raw = (
        b"Man Utd stroll to Cup win\r\n\r\nWayne Rooney made a winning return to Everton as Manchester "
        b"United cruised into the FA Cup quarter-finals.\r\n\r\nRooney received a hostile reception.\r\n"
    )
    (a,) = load(write(tmp_path / "football" / "001.txt", raw))[0]
    assert a.title == "Man Utd stroll to Cup win"
    assert a.text.startswith("Wayne Rooney made a winning return") and "\n\nRooney received" in a.text
    assert "Man Utd stroll" not in a.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Messi scored.\nRead also: Another story here\nHe left.", "Messi scored.\nHe left."),
        ("A.\n\nRELATED: Other\n\nB.", "A.\n\nB."),
        ("A.\nRelated stories\nB.", "A.\nB."),
        ("A.\nAlso read Some Other Story\nB.", "A.\nB."),
        ("A.\n\nADVERTISEMENT\n\nB.", "A.\n\nB."),
        ("A.\nClick here to subscribe to our newsletter\nB.", "A.\nB."),
        ("Argentina won. ADVERTISEMENT Messi left.", "Argentina won. Messi left."),
        ("Argentina won. Click here to read more. Messi left.", "Argentina won. Messi left."),
        ("Argentina won. Read more: Messi wins award. Messi left.", "Argentina won. Messi left."),
        ("Related to this, Messi stayed.", "Related to this, Messi stayed."),
        (
            "He said he would read more books. Then he left.",
            "He said he would read more books. Then he left.",
        ),
    ],
)
def test_clean_text_drops_teasers_and_nothing_else(text: str, expected: str) -> None:
    assert clean_text(text) == expected


def test_derive_title_and_source_helpers() -> None:
    assert derive_title("Short one. Then more.") == "Short one"
    long = "word " * 40
    t = derive_title(long + ".")
    assert t.endswith("…") and len(t) <= 81 and " " not in t[-2:]
    assert detect_source("LONDON, March 3 (Reuters) - Chelsea won.") == "Reuters"
    assert detect_source("ATLANTA (AFP) — Messi won.") == "AFP"
    assert detect_source("Messi (Argentina) — won.") == ""


# --- HTML ----------------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><title>Messi stuns England | Daily Sport</title>
<meta property="og:title" content="Messi stuns England">
<meta property="og:site_name" content="Daily Sport">
<link rel="canonical" href="https://example.com/messi"></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/football">Football</a></li><li>Cricket</li></ul></nav>
<article><h1>Messi stuns England</h1>
<p>Argentina beat England 2-1 in Atlanta on Wednesday after a late comeback led by Lionel Messi, who set up both goals.</p>
<p>Enzo Fernandez equalised in the 85th minute and Lautaro Martinez headed the winner in stoppage time.</p>
</article>
<footer><p>Copyright Daily Sport. All rights reserved.</p><a href="/privacy">Privacy policy</a></footer>
</body></html>"""


def test_html_page_keeps_the_article_and_drops_navigation(tmp_path: Path) -> None:
    (a,) = load(write(tmp_path / "page.html", PAGE))[0]
    assert a.id == "page.html"
    assert a.title == "Messi stuns England"
    assert a.text.startswith("Argentina beat England 2-1")
    assert "Lautaro Martinez headed the winner" in a.text
    for junk in ["Home", "Cricket", "Privacy", "Copyright"]:
        assert junk not in a.text
    assert a.url == "https://example.com/messi" and a.source == "Daily Sport"


def test_html_page_without_article_text_is_a_problem(tmp_path: Path) -> None:
    html = "<html><head><title>Index</title></head><body><nav><a href='/'>Home</a></nav></body></html>"
    p = only_problem(write(tmp_path / "empty.htm", html))
    assert "no article text" in p.message


# --- feeds ----------------------------------------------------------------------------------

RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Sport Wire</title><link>https://wire.example</link>
<item><title>Messi stuns England</title><link>https://wire.example/1</link><guid>wire-1</guid>
<pubDate>Wed, 15 Jul 2026 22:10:00 GMT</pubDate>
<description>&lt;p&gt;Argentina beat England 2-1.&lt;/p&gt;&lt;p&gt;Messi set up both goals.&lt;/p&gt;</description></item>
<item><title>Spain await</title><link>https://wire.example/2</link>
<pubDate>Thu, 16 Jul 2026 08:00:00 +0200</pubDate>
<description>Spain will meet Argentina in the final.</description></item>
</channel></rss>"""


def test_rss_feed_gives_one_article_per_entry(tmp_path: Path) -> None:
    articles, problems = load(write(tmp_path / "wire.rss", RSS))
    assert problems == []
    assert [a.id for a in articles] == ["wire-1", "https://wire.example/2"]  # guid, else link
    first, second = articles
    assert first.title == "Messi stuns England" and first.url == "https://wire.example/1"
    assert first.text == "Argentina beat England 2-1.\n\nMessi set up both goals."
    assert first.published == "2026-07-15T22:10:00+00:00"
    assert second.published == "2026-07-16T06:00:00+00:00"
    assert first.source == "Sport Wire"
    # Stable ids: reading again gives the same ids.
    assert [a.id for a in load(tmp_path / "wire.rss")[0]] == ["wire-1", "https://wire.example/2"]


def test_atom_feed(tmp_path: Path) -> None:
    atom = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom Sport</title><id>urn:feed</id><updated>2026-07-15T00:00:00Z</updated>
<entry><title>Final set</title><id>urn:uuid:1</id><link href="https://a.example/final"/>
<updated>2026-07-15T20:00:00Z</updated><content type="html">&lt;p&gt;Spain meet Argentina.&lt;/p&gt;</content></entry>
</feed>"""
    (a,) = load(write(tmp_path / "f.atom", atom))[0]
    assert (a.id, a.title, a.text, a.url) == (
        "urn:uuid:1",
        "Final set",
        "Spain meet Argentina.",
        "https://a.example/final",
    )


def test_empty_feed_and_non_feed_xml_are_problems(tmp_path: Path) -> None:
    empty = '<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title></channel></rss>'
    assert "no entries" in only_problem(write(tmp_path / "empty.xml", empty)).message
    assert "not an RSS or Atom feed" in only_problem(write(tmp_path / "data.xml", "<a><b>1</b></a>")).message
