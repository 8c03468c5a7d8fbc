"""The index: the corpus in SQLite FTS5, named by its generation (a hash of the corpus).

Part of `demo.search_service` (its docstring has the contract and the query semantics).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterable, Sequence

from demo.search_service.base import BODY_WEIGHT, TITLE_WEIGHT, CorpusError
from demo.search_service.corpus import Document

# --------------------------------------------------------------------------------------------- index


def corpus_generation(docs: Sequence[Document]) -> str:
    """A content hash: the same corpus always gets the same generation id, any edit a new one."""
    digest = hashlib.sha256()
    for doc in docs:
        record = [doc.id, doc.title, doc.body, doc.key, doc.url, doc.snippet, dict(doc.fields)]
        digest.update(json.dumps(record, sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return "gen-" + digest.hexdigest()[:12]


class SearchIndex:
    """A built FTS5 index and its documents. Safe to share between threads (one connection, a lock)."""

    def __init__(self, conn: sqlite3.Connection, docs: Sequence[Document], generation: str) -> None:
        self._conn = conn
        # sqlite3 connections are not safe for concurrent use; queries are a few ms, so one lock is enough.
        self._lock = threading.Lock()
        self.documents: tuple[Document, ...] = tuple(docs)
        self.generation = generation

    def __len__(self) -> int:
        return len(self.documents)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def match(
        self, clauses: Sequence[str], *, title_weight: float = TITLE_WEIGHT
    ) -> tuple[dict[int, float], list[set[int]]]:
        """BM25 score of every row matching any clause (the title weighted `title_weight`, the body 1),
        and per clause the rows it matches."""
        quoted = ['"' + c.replace('"', '""') + '"' for c in clauses]
        with self._lock:
            scores = {
                rowid: -value
                for rowid, value in self._conn.execute(
                    "SELECT rowid, bm25(docs_fts, ?, ?) FROM docs_fts WHERE docs_fts MATCH ?",
                    (title_weight, BODY_WEIGHT, " OR ".join(quoted)),
                )
            }
            per_clause = [
                {
                    row[0]
                    for row in self._conn.execute("SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?", (q,))
                }
                for q in quoted
            ]
        return scores, per_clause


def _indexed_body(doc: Document) -> str:
    # The snippet is the article's own summary, so it is searchable like the body.
    return "\n\n".join(part for part in (doc.snippet, doc.body) if part)


def build_index(
    docs: Iterable[Document], path: str | os.PathLike[str] = ":memory:", *, generation: str | None = None
) -> SearchIndex:
    """Index the documents (title; snippet and body) into a new SQLite database.

    `path` other than ":memory:" is written to a temporary file and renamed into place, so a reader never
    sees a half-built index; an existing file at `path` is replaced. `generation` defaults to a content hash.
    """
    docs = list(docs)
    if not docs:
        raise CorpusError(["corpus: no documents"])
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise CorpusError([f"corpus: id {doc.id!r} appears twice"])
        seen.add(doc.id)
    target = os.fspath(path)
    build_path = target
    if target != ":memory:":
        fd, build_path = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(target)), suffix=".building")
        os.close(fd)
    conn = sqlite3.connect(build_path, check_same_thread=False)
    try:
        conn.executescript(
            """
            CREATE VIRTUAL TABLE docs_fts USING fts5(
                title, body, tokenize = 'porter unicode61 remove_diacritics 2');
            CREATE TABLE documents (
                rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, key TEXT, title TEXT, url TEXT,
                snippet TEXT, fields TEXT NOT NULL);
            """
        )
        with conn:
            conn.executemany(
                "INSERT INTO docs_fts (rowid, title, body) VALUES (?, ?, ?)",
                ((i, d.title, _indexed_body(d)) for i, d in enumerate(docs)),
            )
            conn.executemany(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    (i, d.id, d.key, d.title, d.url, d.snippet, json.dumps(dict(d.fields), sort_keys=True))
                    for i, d in enumerate(docs)
                ),
            )
    except BaseException:
        conn.close()
        if build_path != ":memory:":
            os.unlink(build_path)
        raise
    if target != ":memory:":
        conn.close()
        os.replace(build_path, target)
        conn = sqlite3.connect(target, check_same_thread=False)
    return SearchIndex(conn, docs, generation or corpus_generation(docs))
