"""Build a hostile corpus (#14): at least 1,000 files of every kind that should never hurt
the indexer, mixed with 50 good BBC Sport articles. Used by scripts/hostile.py.

Every kind: special files (FIFOs, sockets, links to devices), symlinks inside and out
(to a canary file outside the root, a folder outside, loops, dangling), encodings, sizes
(empty, 1 byte, over the file and article limits), nesting (JSON, HTML, folders),
entity bombs (billion laughs, external entities) in feeds and HTML, odd and non-UTF-8
names, binary, huge lines, broken JSONL, hidden and unsupported files.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
from pathlib import Path

GOOD_SOURCE = Path("/work/shared/data/bbcsport/raw/football")
CANARY = "CANARY-6b1f0c9e-outside-the-root"

LOL = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(
        f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n' for i in range(1, 10)
    )
    + "]>\n"
)
XXE = '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x SYSTEM "file://{path}">]>\n'


def _w(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)


def build(root: Path, outside: Path, seed: int = 14) -> dict[str, object]:
    """Write the corpus under ``root`` and the files it must never read under ``outside``.

    Returns ``good`` (the 50 good document ids), ``outside_bytes`` (what lives outside) and
    ``files`` (how many entries were made under the root).
    """
    rng = random.Random(seed)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    outside.mkdir(parents=True, exist_ok=True)
    secret = outside / "secret.txt"
    secret.write_text(f"{CANARY} The secret outside the corpus: it must never be indexed.\n" * 20)
    (outside / "folder").mkdir(exist_ok=True)
    (outside / "folder" / "inner.txt").write_text(f"{CANARY} inner file of an outside folder.\n" * 20)

    goods = sorted(GOOD_SOURCE.glob("*.txt"))[:50]
    texts = [g.read_text(encoding="utf-8", errors="replace") for g in goods]
    good_ids = set()
    for g in goods:
        shutil.copy(g, root / f"good-{g.name}")
        good_ids.add(f"good-{g.name}")
    para = " ".join(texts[0].split()[:120])

    # Encodings.
    encs = [
        "latin-1",
        "cp1252",
        "utf-16",
        "utf-16-le",
        "utf-32",
        "utf-8-sig",
        "koi8-r",
        "gb18030",
        "shift_jis",
        "mac_roman",
    ]
    for i in range(120):
        enc = encs[i % len(encs)]
        body = f"Match report {i}: Müller, Señor Ñ, Ærø, 東京, Кубок. " + para
        _w(root / "enc" / f"e{i}.{['txt', 'md', 'html'][i % 3]}", body.encode(enc, "replace"))
    for i in range(30):  # invalid UTF-8 with some text
        _w(
            root / "enc" / f"bad{i}.txt",
            b"Goal \xff\xfe\xc3\x28 late \xed\xa0\x80 winner " * rng.randint(1, 50),
        )

    # Binary and empty.
    exts = ["txt", "md", "html", "htm", "jsonl", "xml", "rss", "atom"]
    for i in range(200):
        _w(root / "bin" / f"b{i}.{exts[i % len(exts)]}", rng.randbytes(rng.randint(1, 20_000)))
    for i, e in enumerate(exts * 8):
        _w(root / "empty" / f"z{i}.{e}", ["", " ", "\n\n\n", "\t \r\n", "\ufeff"][i % 5])
    for i in range(20):
        _w(root / "tiny" / f"t{i}.txt", bytes([rng.randint(32, 126)]))

    # Sizes: over the file limit (8 MiB), and an article over 200,000 characters.
    _w(root / "sizes" / "huge.txt", ("goal " * 2_000_000).encode())
    _w(root / "sizes" / "huge.jsonl", b'{"id": "h", "text": "' + b"goal " * 1_800_000 + b'"}\n')
    _w(root / "sizes" / "long-article.txt", "Long report\n\n" + ("Kane scored again. " * 12_000))
    _w(root / "sizes" / "oneline.txt", "Title\n\n" + "word " * 1_200_000)  # a 6 MB single line
    _w(root / "sizes" / "oneline.jsonl", '{"id": "one", "text": "' + "x" * 5_000_000 + '"}\n')

    # JSONL: broken, nested, surrogates, hostile ids.
    bad_lines = [
        "{",
        "null",
        "42",
        "[]",
        '"text"',
        "NaN",
        '{"id": "a"}',
        '{"text": "no id"}',
        '{"id": "../../etc/passwd", "text": "traversal"}',
        '{"id": "/abs", "text": "abs"}',
        '{"id": "a\\u0000b", "text": "nul id"}',
        '{"id": "s\\ud800", "text": "surrogate id"}',
        '{"id": "t", "text": "surrogate \\udfff text"}',
        '{"id": true, "text": "bool id"}',
        '{"id": "' + "i" * 5000 + '", "text": "long id"}',
        '{"id": "n", "text": 12}',
        '{"id": "deep", "text": "x", "meta": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"id": "dup", "text": "first"}',
        '{"id": "dup", "text": "second"}',
        '{"id": "ok-jsonl", "text": "Saka scored the winner for Arsenal."}',
        "\ufeff{}",
        "\x00\x01",
    ]
    for i in range(100):
        lines = rng.sample(bad_lines, rng.randint(1, len(bad_lines)))
        _w(root / "jsonl" / f"j{i}.jsonl", "\n".join(lines) + "\n")

    # HTML and feeds: entity bombs, external entities to the canary, nesting, scripts.
    for i in range(60):
        kind = i % 6
        if kind == 0:
            page = LOL + "<html><body><p>&lol9;</p></body></html>"
        elif kind == 1:
            page = XXE.format(path=secret) + "<html><body><p>&x;</p></body></html>"
        elif kind == 2:
            page = "<html><body>" + "<div>" * 50_000 + "deep" + "</div>" * 10 + "</body></html>"
        elif kind == 3:
            page = f"<html><head><meta charset='utf-7'></head><body><script>alert(1)</script><p>{para}</p>"
        elif kind == 4:
            page = "<html><body><p " + "a=" * 100_000 + ">x</p>"
        else:
            page = "<<<<>>>>&&&&;;;;" * 1000
        _w(root / "html" / f"h{i}.html", page)
    for i in range(60):
        kind = i % 5
        item = "<item><title>t</title><description>{}</description></item>"
        if kind == 0:
            feed = LOL + "<rss version='2.0'><channel>" + item.format("&lol9;") + "</channel></rss>"
        elif kind == 1:
            feed = (
                XXE.format(path=secret)
                + "<rss version='2.0'><channel>"
                + item.format("&x;")
                + "</channel></rss>"
            )
        elif kind == 2:
            feed = "<rss><channel>" + item.format(para) * 3000 + "</channel></rss>"
        elif kind == 3:
            feed = "<feed xmlns='http://www.w3.org/2005/Atom'><entry><title>" + "<x>" * 20_000
        else:
            feed = (
                "<?xml version='1.0' encoding='ebcdic-xyz'?><rss><channel>"
                + item.format("x")
                + "</channel></rss>"
            )
        _w(root / "feeds" / f"f{i}.{['xml', 'rss', 'atom'][i % 3]}", feed)

    # Odd names, and names that are not UTF-8.
    names = [
        "with space.txt",
        "tab\tname.txt",
        "new\nline.txt",
        "-leading-dash.txt",
        "--help.txt",
        "CON.txt",
        "emoji-⚽.txt",
        "rtl-\u202eevil.txt",
        "q?.txt",
        "star*.txt",
        "colon:.txt",
        'quote".txt',
        "back\\slash.txt",
    ]
    for i in range(130):
        n = names[i % len(names)]
        _w(root / "names" / f"{i}-{n}", f"Odd name {i}. " + para)
    for i in range(40):
        _w(root / "names" / f"{i}-{'n' * 200}.txt"[:250], f"Long name {i}. " + para)
    bdir = os.fsencode(root / "names")
    for i in range(40):
        raw = bdir + b"/" + bytes([0xFF, 0xFE, 0x80 + i % 60]) + b"-%d.txt" % i
        fd = os.open(raw, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, f"Not UTF-8 name {i}. {para}".encode())
        os.close(fd)

    # Special files and symlinks.
    sp = root / "special"
    sp.mkdir()
    for i in range(10):
        os.mkfifo(sp / f"fifo{i}.txt")
    for i in range(5):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(sp / f"sock{i}.txt"))
        s.close()
    for i, dev in enumerate(["/dev/zero", "/dev/urandom", "/dev/null", "/dev/full", "/dev/zero"]):
        os.symlink(dev, sp / f"dev{i}.txt")
    for i in range(30):
        os.symlink(secret, sp / f"out{i}.txt")
    os.symlink("/etc/passwd", sp / "passwd.txt")
    os.symlink(outside / "folder", sp / "outdir")
    os.symlink(root, sp / "loop-to-root")
    for i in range(5):
        os.symlink(sp / f"loop{i}b.txt", sp / f"loop{i}a.txt")
        os.symlink(sp / f"loop{i}a.txt", sp / f"loop{i}b.txt")
        os.symlink(sp / f"missing{i}.txt", sp / f"dangling{i}.txt")
    for i in range(20):
        os.symlink(root / f"good-{goods[i].name}", sp / f"in{i}.txt")
    os.symlink("../../" + os.path.relpath(secret, root.parent), sp / "relative-out.txt")

    # Deep folders, hidden and unsupported files.
    deep = root / "deep"
    for i in range(60):
        deep = deep / f"d{i}"
    _w(deep / "bottom.txt", "Deep report. " + para)
    for i in range(20):
        _w(root / "misc" / f".hidden{i}.txt", f"{CANARY} hidden")
        _w(root / "misc" / f"doc{i}.{['pdf', 'docx', 'exe', 'json', 'csv'][i % 5]}", rng.randbytes(100))
    (root / ".git").mkdir()
    _w(root / ".git" / "HEAD.txt", f"{CANARY} git internals")

    # Everything but real folders: files, special files, links (to files or folders).
    files = sum(len(fs) + sum(os.path.islink(os.path.join(d, x)) for x in ds) for d, ds, fs in os.walk(root))
    return {"good": good_ids, "outside_bytes": secret.stat().st_size, "files": files, "secret": secret}
