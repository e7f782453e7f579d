"""A write's lexical side: analysing each article and writing its whoosh segments and postings arrays.

A small write does this in the writing thread (:class:`InProcess`). A bulk write hands it to
a process of its own (:class:`Child`, ``python -m search.lexical_process``), so the lexical
work (a third of a build without the model: analysis, term counting, whoosh's blocks, the
postings arrays) runs on the second core beside chunking, deduplication and the vector
segments (#17 item 5). Both run the same code, :class:`Writers`, on the same files; the
child is told the articles' text and passage spans (a passage is always
``article.text[start:end]``) and answers only deletes and the commit.

The child is started as a fresh interpreter, not forked: the writing process may hold model
threads, and a fork would also re-run nothing of the caller's ``__main__``.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
from bisect import bisect_left
from pathlib import Path
from typing import IO, Any

from .errors import IndexWriteError, write_failed
from .lexical_stats import DOCS
from .lexical_writer import LexicalWriter
from .text import analyze, analyze_spans, headline, stable

log = logging.getLogger(__name__)

#: A write whose first batch holds at least this many articles indexes them in a child
#: process (when the machine has a second core); smaller ones in the writing thread, where
#: starting an interpreter (~0.3 s) would cost more than it saves.
BULK_ARTICLES = 500
SEND_EVERY = 256  # articles sent to the child at once

#: (article id, title, text, [(passage id, start, end), ...])
ArticleRow = tuple[str, str, str, list[tuple[str, int, int]]]


def doc_text(title: str, text: str) -> str:
    """An article as the document-level index holds it: its title and whole text, analysed."""
    return " ".join(analyze(f"{headline(title, text)}\n{text}"))


def analysed(title: str, text: str, spans: list[tuple[int, int]]) -> tuple[str, list[str], str]:
    """The article's indexed title, passages (``text[start:end]`` each) and whole text, its
    words analysed once (passages overlap): the same terms as analysing each on its own,
    which it falls back to where a word would cross a passage's edge or Unicode
    normalisation would change the text's length."""
    head = headline(title, text)
    atitle = analyze(head)
    words = analyze_spans(text)
    starts = [s for _, s, _ in words]
    out: list[str] = []
    steady = stable(text)  # once: it normalises the whole text
    for a, b in spans:
        lo, hi = bisect_left(starts, a), bisect_left(starts, b)
        if (hi > lo and words[hi - 1][2] > b) or (lo > 0 and words[lo - 1][2] > a) or not steady:
            return " ".join(atitle), [" ".join(analyze(text[s:e])) for s, e in spans], doc_text(title, text)
        out.append(" ".join(t for t, _, _ in words[lo:hi]))
    if not stable(head):
        return " ".join(atitle), out, doc_text(title, text)
    return " ".join(atitle), out, " ".join(atitle + [t for t, _, _ in words])


class Writers:
    """The passages' and the documents' whoosh writers of one write, on one directory."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._w: tuple[LexicalWriter, LexicalWriter] | None = None

    def _writers(self) -> tuple[LexicalWriter, LexicalWriter]:
        if self._w is None:
            self._w = (LexicalWriter(self.path), LexicalWriter(self.path, indexname=DOCS))
        return self._w

    def add(self, rows: list[ArticleRow]) -> None:
        w, dw = self._writers()
        for art_id, title, text, passages in rows:
            atitle, texts, whole = analysed(title, text, [(s, e) for _, s, e in passages])
            for (pid, _, _), ptext in zip(passages, texts):
                w.add(pid, art_id, ptext, atitle)
            dw.add(art_id, art_id, whole)

    def delete(self, doc_id: str, passages: dict[str, str | tuple[str, str]], whole: str) -> int:
        w, dw = self._writers()
        n = w.delete_doc(doc_id, passages)
        dw.delete_doc(doc_id, {doc_id: whole})
        return n

    def commit(self) -> None:
        if self._w is not None:
            for w in self._w:
                w.commit()
            self._w = None

    def cancel(self) -> None:
        if self._w is not None:
            for w in self._w:
                w.cancel()
            self._w = None


class InProcess(Writers):
    """The lexical side in the writing thread: :class:`Writers`, with the child's interface."""

    def start_commit(self) -> None:
        self.commit()

    def wait(self) -> None:
        pass


class Child:
    """The lexical side in a child process: the same calls, sent as pickled messages."""

    def __init__(self, path: Path) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "search.lexical_process", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._rows: list[ArticleRow] = []
        self._committing = False

    def _send(self, msg: tuple[Any, ...]) -> None:
        try:
            stdin = self._proc.stdin
            assert stdin is not None
            pickle.dump(msg, stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.flush()
        except (BrokenPipeError, OSError):
            self._failed()

    def _reply(self) -> Any:
        try:
            status, value = pickle.load(self._proc.stdout)  # type: ignore[arg-type]
        except (EOFError, OSError, pickle.UnpicklingError):
            self._failed()
        if status == "error":
            self.cancel()
            raise IndexWriteError(value)
        return value

    def _failed(self) -> None:
        code = self._proc.poll()
        if code is None:  # its pipe closed: it is ending
            try:
                code = self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.cancel()
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
            if code == -signal.SIGKILL:
                how += ", as when the system runs out of memory"
        else:
            how = f"exit status {code}: any error it printed is above"
        raise IndexWriteError(
            f"the lexical indexing process stopped ({how}); the index is unchanged: run the write again"
        )

    def _flush(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self._send(("add", rows))

    def add(self, rows: list[ArticleRow]) -> None:
        self._rows += rows
        if len(self._rows) >= SEND_EVERY:
            self._flush()

    def delete(self, doc_id: str, passages: dict[str, str | tuple[str, str]], whole: str) -> int:
        self._flush()
        self._send(("delete", doc_id, passages, whole))
        return int(self._reply())

    def start_commit(self) -> None:
        """Ask the child to commit, and go on: :meth:`wait` collects the result."""
        self._flush()
        self._send(("commit",))
        self._committing = True

    def wait(self) -> None:
        if self._committing:
            self._committing = False
            self._reply()
            self._proc.wait()

    def commit(self) -> None:
        self.start_commit()
        self.wait()

    def cancel(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for f in (self._proc.stdin, self._proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:  # pragma: no cover
                pass


def start(path: Path) -> Child | InProcess:
    """A child process for a bulk write's lexical side; the writing thread where none
    can be started (an interpreter embedded without ``sys.executable``, no processes left)."""
    try:
        return Child(path)
    except OSError as e:
        log.warning("lexical indexing stays in this process: could not start a child (%s)", e)
        return InProcess(path)


def serve(path: Path, inp: IO[bytes], out: IO[bytes]) -> None:
    """The child's loop: messages from ``inp`` until a commit, answers to ``out``.

    An error while adding is kept and given as the answer to the next delete or commit;
    the writers are then cancelled, so nothing half-written is committed."""
    writers = Writers(path)
    error: str | None = None

    def answer(status: str, value: Any) -> None:
        pickle.dump((status, value), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    while True:
        try:
            msg = pickle.load(inp)
        except EOFError:  # the parent went away: nothing is committed
            writers.cancel()
            return
        try:
            if error is None:
                if msg[0] == "add":
                    writers.add(msg[1])
                elif msg[0] == "delete":
                    answer("ok", writers.delete(msg[1], msg[2], msg[3]))
                elif msg[0] == "commit":
                    writers.commit()
                    answer("ok", None)
                    return
            elif msg[0] != "add":
                writers.cancel()
                answer("error", error)
                return
        except Exception as e:  # sent to the parent, which raises it
            error = write_failed(e)
            if msg[0] != "add":
                writers.cancel()
                answer("error", error)
                return


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the parent handles it (and ends this process).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Replies go to the original stdout; anything printed goes to stderr instead.
    _out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(Path(sys.argv[1]), sys.stdin.buffer, _out)
