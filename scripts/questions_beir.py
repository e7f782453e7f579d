"""Turn question files over folders of reports into a BEIR-layout folder for scripts/beir.py.

    python scripts/questions_beir.py --out /tmp/othersport \\
        ../shared/data/bbcsport/raw/rugby:scripts/questions/othersport/rugby.jsonl \\
        ../shared/data/bbcsport/raw/cricket:scripts/questions/othersport/cricket.jsonl
    python scripts/beir.py --data /tmp/othersport --split test

Each ``FOLDER:QUESTIONS`` pair adds every ``.txt`` report of FOLDER to ``corpus.jsonl``
(id ``<folder name>/<file>``, the first line as title, the rest as text, read as the engine
reads files: UTF-8, else Windows-1252), and every answerable question to ``queries.jsonl``
with its cited reports (``doc``) as relevant in ``qrels/test.tsv``. Questions no report
answers are left out: BEIR scores only queries with a relevant document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from search.ingest_base import _decode  # noqa: E402


def read_text(path: Path) -> str:
    """The file's text as `search index` decodes it (search.ingest_base)."""
    text, _problem = _decode(path.read_bytes(), str(path))
    return text or ""


def convert(pairs: list[tuple[Path, Path]], out: Path) -> tuple[int, int]:
    """Write the folder; return (documents, queries)."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    docs = queries = 0
    with (
        open(out / "corpus.jsonl", "w", encoding="utf-8") as corpus,
        open(out / "queries.jsonl", "w", encoding="utf-8") as qf,
        open(out / "qrels" / "test.tsv", "w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for folder, questions in pairs:
            for f in sorted(folder.glob("*.txt")):
                title, _, text = read_text(f).strip().partition("\n")
                doc = {"_id": f"{folder.name}/{f.name}", "title": title.strip(), "text": text.strip()}
                corpus.write(json.dumps(doc) + "\n")
                docs += 1
            for line in questions.read_text(encoding="utf-8").splitlines():
                q = json.loads(line) if line.strip() else None
                if not q or not q.get("doc"):
                    continue
                qf.write(json.dumps({"_id": q["id"], "text": q["question"]}) + "\n")
                for d in q["doc"]:
                    qrels.write(f"{q['id']}\t{folder.name}/{d}\t1\n")
                queries += 1
    return docs, queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", help="FOLDER:QUESTIONS.jsonl")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    pairs = [(Path(a), Path(b)) for a, b in (p.split(":", 1) for p in args.pairs)]
    docs, queries = convert(pairs, args.out)
    print(f"{args.out}: {docs} documents, {queries} queries")


if __name__ == "__main__":
    main()
