"""A small search engine speaking the http_json contract (docs/cli.md): stdlib sqlite3 FTS5 and http.server.

One file on purpose (about 800 lines): it runs as `python -m demo.search_service` with the standard
library only, and stands on its own as a small engine to read or copy.

Run it:  python -m demo.search_service --corpus FILE.jsonl [--host 127.0.0.1] [--port 8765]
         [--synonyms FILE] [--generation ID] [--delay-ms N] [--min-should-match N]
         [--jitter RATE] [--jitter-seed N]
It prints one line `listening on http://HOST:PORT` once it accepts connections (`--port 0` picks a free
port and the line names it).

Contract:
- `POST /search` with `{"q", "filters", "size", "locale", "rewrite"}` answers `{"hits": [{"id", "title",
  "score"}], "meta": {"index_generation", "rewriter", "rewritten_query", "took_ms"}}` and the header
  `X-Index-Generation`. Unknown body keys are ignored (harnesses send stage toggles of other engines).
- `GET /health` answers `{"status": "ok", "documents", "index_generation", "synonyms"}`.
- Two optional body fields tune the ranking of one request (`assay sweep` tries a grid of them):
  `title_weight`, a number from 0 to 20 (default 3: the title's BM25 weight against the body's 1), and
  `min_should_match`, an integer from 1 to 10 (default the server's `--min-should-match`, 3).
- A bad request (not JSON, `q` missing or not a string, `size` not an integer in 1..100, malformed
  `filters`/`locale`/`rewrite`, `title_weight` or `min_should_match` outside its bounds) gets 400 and
  `{"error", "problems": [...]}` naming each bad field (and the bound).

Query semantics, deliberately like a stock Elasticsearch `match` query on a help center:
- The query is lowercased and split into words; a short English/German/French stopword list is dropped.
  Each remaining word is one clause (`"q"`-string in, clauses out: the engine knows nothing of synonyms).
- A document matches when at least `min(clauses, min_should_match)` clauses (default 3) occur in its title
  or body: one- to three-word queries need every word, longer questions need any three.
- Matches are ranked by FTS5's BM25 over title (weight 3, or `title_weight`) and snippet + body (weight 1),
  summed over clauses;
  ties by document id ascending, so the order is deterministic.
- Filters keep documents whose `fields[name]` equals the value (a list value means any of; a list-valued
  field matches when any element does); a missing field never matches. `locale` keeps documents whose
  `fields.locale` equals it (case-insensitive); documents without a locale are kept.
- `"rewrite": true` runs the synonym rewriter *before* the engine: a word with a `replace` rule is swapped
  for its replacement (spelling variants: one word for one word), a word with an `expand` rule is
  followed by its expansions, and the rewritten string is searched as if the user had typed it. Every
  added word is therefore an ordinary clause: it adds its own BM25 term to the score and counts towards
  the minimum-should-match. demo/README.md explains why that erases refunds.

Jitter (off by default): `--jitter RATE` makes the service an engine that moves between runs with nothing
changed, to see a noise floor above 0 (docs/metrics.md, "Noise floor"). The n-th time the server is asked
one request (the same `q`, `filters`, `locale`, `rewrite`, `size`, `title_weight` and `min_should_match`),
its two top hits are swapped when a hash of (`--jitter-seed`, the request, n) falls below RATE: a run of
the golden file sees some queries swapped, the next run others, reproducibly for a fresh server and a
seed, whatever order the requests come in (a sweep's configurations each keep their own count).
`meta.jittered` says whether this reply was swapped. The search itself stays deterministic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from demo.serving import LISTEN_BACKLOG

DEFAULT_SIZE = 10
MAX_SIZE = 100
DEFAULT_MIN_SHOULD_MATCH = 3
TITLE_WEIGHT = 3.0
# The per-request tuning parameters (`title_weight`, `min_should_match`) and their bounds: a sweep tries
# values within them, and a value outside gets a 400 naming the bound rather than a silent clamp.
TITLE_WEIGHT_BOUNDS = (0.0, 20.0)
MIN_SHOULD_MATCH_BOUNDS = (1, 10)
BODY_WEIGHT = 1.0
MAX_REQUEST_BYTES = 1 << 20
# Like Lucene's max clause count: one index lookup per clause, so an unbounded query is a denial of service.
MAX_CLAUSES = 256
DEFAULT_SYNONYMS_PATH = Path(__file__).with_name("synonyms.json")

# Small on purpose: a word that carries meaning in a help center ("plan", "return", "account") must never
# be here, because a dropped word cannot match. German and French lists cover the localized articles;
# s, t, ll, ... are what the word splitter leaves of English contractions ("can't" -> "can", "t").
_STOPWORD_TEXT = """
    a an and are as at be been but by can could did do does for from had has have how i if in into is it
    no not s t d ll re ve m
    its me my of on or our so than that the their them then there these they this to was we were what
    when where which who why will with would you your yours
    am auf aus bei das dem den der des die ein eine einem einen einer es für hat ich ihr im ist kann mein
    meine mit nicht oder sie sind und von was wie wo zu zum zur
    au aux avec ce ces dans de des du elle en est et il je la le les leur ma mes mon ne ou par pas pour
    que qui sa se son sur un une vos votre
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[^\W_]+")
JsonScalar = str | int | float | bool | None


class ProblemsError(ValueError):
    """Every problem found at once, each naming its place (`line 4: id: ...`)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class CorpusError(ProblemsError):
    pass


class SynonymsError(ProblemsError):
    pass


class RequestError(ProblemsError):
    pass


# --------------------------------------------------------------------------------------------- corpus


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str = ""
    body: str = ""
    key: str | None = None
    url: str | None = None
    snippet: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _check_field_value(value: object, where: str, problems: list[str]) -> None:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if not _is_scalar(item):
                problems.append(f"{where}[{i}]: expected a string, number, boolean or null")
    elif not _is_scalar(value):
        problems.append(f"{where}: expected a string, number, boolean, null or a list of those")


def parse_document(obj: object, *, where: str = "document") -> Document:
    """One corpus record. Only `id` and one of `title`/`body` are required; ids may be JSON integers."""
    problems: list[str] = []
    if not isinstance(obj, dict):
        raise CorpusError([f"{where}: expected a JSON object"])
    raw_id = obj.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        problems.append(f"{where}: id: expected a string or an integer")
    elif isinstance(raw_id, str) and not raw_id.strip():
        problems.append(f"{where}: id: must not be empty")
    texts: dict[str, str | None] = {}
    for name in ("title", "body", "key", "url", "snippet"):
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            problems.append(f"{where}: {name}: expected a string")
            value = None
        texts[name] = value
    if not (texts["title"] or "").strip() and not (texts["body"] or "").strip():
        problems.append(f"{where}: needs a non-empty title or body")
    fields = obj.get("fields", {})
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        problems.append(f"{where}: fields: expected an object")
        fields = {}
    for name, value in fields.items():
        _check_field_value(value, f"{where}: fields.{name}", problems)
    if problems:
        raise CorpusError(problems)
    return Document(
        id=str(raw_id),
        title=texts["title"] or "",
        body=texts["body"] or "",
        key=texts["key"],
        url=texts["url"],
        snippet=texts["snippet"],
        fields=dict(fields),
    )


def parse_corpus(lines: Iterable[str], *, source: str = "corpus") -> list[Document]:
    """Parse JSONL text; blank lines are skipped; every bad line and duplicate id is reported at once."""
    docs: list[Document] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg} at column {exc.colno})")
            continue
        try:
            doc = parse_document(obj, where=where)
        except CorpusError as exc:
            problems.extend(exc.problems)
            continue
        if doc.id in first_line:
            problems.append(f"{where}: id: {doc.id!r} already used on line {first_line[doc.id]}")
            continue
        first_line[doc.id] = number
        docs.append(doc)
    if problems:
        raise CorpusError(problems)
    if not docs:
        raise CorpusError([f"{source}: no documents"])
    return docs


def load_corpus(path: str | os.PathLike[str]) -> list[Document]:
    with open(path, encoding="utf-8") as handle:
        return parse_corpus(handle, source=str(path))


# ------------------------------------------------------------------------------------------- synonyms


@dataclass(frozen=True, slots=True)
class SynonymRule:
    """`terms` -> either `expand` (words added after the original) or `replace` (words instead of it)."""

    terms: tuple[str, ...]
    expand: tuple[str, ...] = ()
    replace: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SynonymPack:
    """A versioned list of one-way rules, applied word by word before the engine sees the query."""

    name: str
    version: str
    rules: tuple[SynonymRule, ...]

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def rewrite(self, word: str) -> tuple[str, ...]:
        """The words that stand for `word` after rewriting: itself (unless replaced) and its expansions."""
        replacements: list[str] = []
        expansions: list[str] = []
        for rule in self.rules:
            if word in rule.terms:
                replacements.extend(rule.replace)
                expansions.extend(rule.expand)
        out: list[str] = []
        for w in (*(replacements or [word]), *expansions):
            if w not in out:
                out.append(w)
        return tuple(out)


def _word_list(value: object, where: str, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        problems.append(f"{where}: expected a non-empty list of words")
        return ()
    words: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or _WORD.fullmatch(item.lower()) is None:
            problems.append(f"{where}[{i}]: expected one word (letters and digits), got {item!r}")
            continue
        if item.lower() in STOPWORDS:
            problems.append(f"{where}[{i}]: {item!r} is a stopword and would never match")
            continue
        words.append(item.lower())
    return tuple(words)


def parse_synonyms(obj: object, *, source: str = "synonyms") -> SynonymPack:
    problems: list[str] = []
    if not isinstance(obj, dict):
        raise SynonymsError([f"{source}: expected a JSON object"])
    for name in ("name", "version"):
        if not isinstance(obj.get(name), str) or not obj[name].strip():
            problems.append(f"{source}: {name}: expected a non-empty string")
    raw_rules = obj.get("rules")
    rules: list[SynonymRule] = []
    if not isinstance(raw_rules, list):
        problems.append(f"{source}: rules: expected a list")
        raw_rules = []
    for i, raw in enumerate(raw_rules):
        where = f"{source}: rules[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{where}: expected an object")
            continue
        unknown = sorted(set(raw) - {"terms", "expand", "replace", "note"})
        if unknown:
            problems.append(f"{where}: unknown keys {unknown}")
        terms = _word_list(raw.get("terms"), f"{where}.terms", problems)
        if ("expand" in raw) == ("replace" in raw):
            problems.append(f"{where}: needs exactly one of expand or replace")
            continue
        if "expand" in raw:
            rules.append(
                SynonymRule(terms=terms, expand=_word_list(raw["expand"], f"{where}.expand", problems))
            )
        else:
            words = _word_list(raw["replace"], f"{where}.replace", problems)
            rules.append(SynonymRule(terms=terms, replace=words))
    if problems:
        raise SynonymsError(problems)
    return SynonymPack(name=obj["name"], version=obj["version"], rules=tuple(rules))


def load_synonyms(path: str | os.PathLike[str]) -> SynonymPack:
    with open(path, encoding="utf-8") as handle:
        try:
            obj = json.load(handle)
        except json.JSONDecodeError as exc:
            raise SynonymsError([f"{path}: not JSON ({exc.msg} at line {exc.lineno})"]) from exc
    return parse_synonyms(obj, source=str(path))


# --------------------------------------------------------------------------------------------- query


def query_words(text: str) -> list[str]:
    """The user's words as clauses: lowercased, stopwords dropped, repeats dropped, order kept."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS and word not in words:
            words.append(word)
    return words


def rewrite_words(words: Sequence[str], pack: SynonymPack) -> list[str]:
    """The query as the rewriter hands it to the engine: each word's rewrite, in order, repeats dropped."""
    clauses: list[str] = []
    for word in words:
        for clause in pack.rewrite(word):
            if clause not in clauses:
                clauses.append(clause)
    return clauses


@dataclass(frozen=True, slots=True)
class SearchRequest:
    q: str
    filters: Mapping[str, Any] = field(default_factory=dict)
    size: int = DEFAULT_SIZE
    locale: str | None = None
    rewrite: bool = False
    title_weight: float | None = None  # None: TITLE_WEIGHT
    min_should_match: int | None = None  # None: the server's


def parse_search_request(payload: object) -> SearchRequest:
    """Validate a decoded request body; raises RequestError naming every bad field."""
    if not isinstance(payload, dict):
        raise RequestError(["body: expected a JSON object"])
    problems: list[str] = []
    q = payload.get("q")
    if "q" not in payload:
        problems.append("q: required")
    elif not isinstance(q, str):
        problems.append("q: expected a string")
    size = payload.get("size", DEFAULT_SIZE)
    if size is None:
        size = DEFAULT_SIZE
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SIZE:
        problems.append(f"size: expected an integer from 1 to {MAX_SIZE}, got {size!r}")
    filters = payload.get("filters")
    if filters is None:
        filters = {}
    if not isinstance(filters, dict):
        problems.append("filters: expected an object")
        filters = {}
    for name, value in filters.items():
        _check_field_value(value, f"filters.{name}", problems)
    locale = payload.get("locale")
    if locale is not None and not isinstance(locale, str):
        problems.append("locale: expected a string or null")
    rewrite = payload.get("rewrite", False)
    if rewrite is None:
        rewrite = False
    if not isinstance(rewrite, bool):
        problems.append("rewrite: expected true or false")
    title_weight = payload.get("title_weight")
    low, high = TITLE_WEIGHT_BOUNDS
    if title_weight is not None and (
        isinstance(title_weight, bool)
        or not isinstance(title_weight, int | float)
        or not low <= title_weight <= high  # NaN fails here too
    ):
        problems.append(f"title_weight: expected a number from {low:g} to {high:g}, got {title_weight!r}")
    min_should_match = payload.get("min_should_match")
    fewest, most = MIN_SHOULD_MATCH_BOUNDS
    if min_should_match is not None and (
        isinstance(min_should_match, bool)
        or not isinstance(min_should_match, int)
        or not fewest <= min_should_match <= most
    ):
        problems.append(
            f"min_should_match: expected an integer from {fewest} to {most}, got {min_should_match!r}"
        )
    if problems:
        raise RequestError(problems)
    assert isinstance(q, str) and isinstance(size, int)
    return SearchRequest(
        q=q,
        filters=dict(filters),
        size=size,
        locale=(locale or None) if isinstance(locale, str) else None,
        rewrite=bool(rewrite),
        title_weight=None if title_weight is None else float(title_weight),
        min_should_match=min_should_match,
    )


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


# -------------------------------------------------------------------------------------------- search


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    title: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    clauses: tuple[str, ...]
    rewriter: str | None
    rewritten_query: str | None
    took_ms: float


def _same_value(wanted: object, actual: object) -> bool:
    # JSON true is not the number 1, whatever Python thinks.
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return isinstance(wanted, bool) and isinstance(actual, bool) and wanted == actual
    return wanted == actual


def filters_match(fields: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    for name, wanted in filters.items():
        if name not in fields:
            return False
        wanted_values = wanted if isinstance(wanted, list) else [wanted]
        actual = fields[name]
        actual_values = actual if isinstance(actual, list) else [actual]
        if not any(_same_value(w, a) for w in wanted_values for a in actual_values):
            return False
    return True


def locale_matches(fields: Mapping[str, Any], locale: str | None) -> bool:
    doc_locale = fields.get("locale")
    if locale is None or not isinstance(doc_locale, str):
        return True
    return doc_locale.lower() == locale.lower()


def search(
    index: SearchIndex,
    q: str,
    *,
    filters: Mapping[str, Any] | None = None,
    size: int = DEFAULT_SIZE,
    locale: str | None = None,
    rewrite: bool = False,
    synonyms: SynonymPack | None = None,
    min_should_match: int = DEFAULT_MIN_SHOULD_MATCH,
    title_weight: float | None = None,
    request_min_should_match: int | None = None,
) -> SearchResult:
    """Run one query (the semantics are in the module docstring). Raises RequestError on bad arguments.
    `min_should_match` is the server's setting; `title_weight` and `request_min_should_match` are the
    request's own (bounded as in a request body), over the defaults."""
    started = time.perf_counter()
    request = parse_search_request(
        {
            "q": q,
            "filters": filters,
            "size": size,
            "locale": locale,
            "rewrite": rewrite,
            "title_weight": title_weight,
            "min_should_match": request_min_should_match,
        }
    )
    if request.min_should_match is not None:
        min_should_match = request.min_should_match
    if min_should_match < 1:
        raise ValueError(f"min_should_match: expected at least 1, got {min_should_match}")
    if request.rewrite and synonyms is None:
        raise RequestError(["rewrite: no synonym pack is loaded"])
    words = query_words(request.q)
    clauses = rewrite_words(words, synonyms) if request.rewrite and synonyms else words
    if len(clauses) > MAX_CLAUSES:
        raise RequestError([f"q: {len(clauses)} distinct words to search for; at most {MAX_CLAUSES}"])
    hits: list[Hit] = []
    if clauses:
        weight = TITLE_WEIGHT if request.title_weight is None else request.title_weight
        scores, per_clause = index.match(clauses, title_weight=weight)
        required = min(len(clauses), min_should_match)
        for rowid, score in scores.items():
            if sum(rowid in rows for rows in per_clause) < required:
                continue
            doc = index.documents[rowid]
            if filters_match(doc.fields, request.filters) and locale_matches(doc.fields, request.locale):
                hits.append(Hit(id=doc.id, title=doc.title, score=score))
        hits.sort(key=lambda h: (-h.score, h.id))
        del hits[request.size :]
    return SearchResult(
        hits=tuple(hits),
        clauses=tuple(clauses),
        rewriter=synonyms.label if request.rewrite and synonyms else None,
        rewritten_query=" ".join(clauses) if request.rewrite else None,
        took_ms=(time.perf_counter() - started) * 1000,
    )


# ---------------------------------------------------------------------------------------------- http


class SearchServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default of 5 drops a chunk's burst of connects (demo/serving.py).
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        *,
        index: SearchIndex,
        synonyms: SynonymPack | None,
        generation: str,
        delay_ms: int,
        min_should_match: int,
        jitter: float = 0.0,
        jitter_seed: int = 0,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, SearchHandler)
        self.index = index
        self.synonyms = synonyms
        self.generation = generation
        self.delay_ms = delay_ms
        self.min_should_match = min_should_match
        self.jitter = jitter
        self.jitter_seed = jitter_seed
        self._asked: dict[str, int] = {}  # request -> how many times it was asked (for the jitter)
        self._asked_lock = threading.Lock()

    def jittered(self, request: SearchRequest) -> bool:
        """Whether this asking of `request` swaps its two top hits (the module docstring, "Jitter")."""
        if self.jitter <= 0:
            return False
        # The tuning parameters are part of the request: keyed without them, the askings of a sweep's
        # configurations would share one count, and a configuration's jitter would depend on how many
        # others were asked the query before it (docs/experiments.md).
        key = json.dumps(
            [
                request.q,
                request.filters,
                request.locale,
                request.rewrite,
                request.size,
                request.title_weight,
                request.min_should_match,
            ],
            sort_keys=True,
        )
        with self._asked_lock:
            asked = self._asked.get(key, 0)
            self._asked[key] = asked + 1
        digest = hashlib.sha256(f"{self.jitter_seed}\0{key}\0{asked}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.jitter

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class SearchHandler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections alive for harnesses that pool them; every reply sets Content-Length.
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes; with Nagle on, the body waits ~40 ms for a delayed ACK.
    disable_nagle_algorithm = True
    server: SearchServer

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet by default: evaluation runs send thousands of requests and stdout is the readiness channel.
        return

    def _send(self, status: int, payload: Mapping[str, Any], *, close: bool = False) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Index-Generation", self.server.generation)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, problems: Sequence[str], *, close: bool = False) -> None:
        self._send(status, {"error": "; ".join(problems), "problems": list(problems)}, close=close)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/health":
            synonyms = self.server.synonyms
            self._send(
                200,
                {
                    "status": "ok",
                    "documents": len(self.server.index),
                    "index_generation": self.server.generation,
                    "synonyms": synonyms.label if synonyms else None,
                },
            )
        elif path == "/search":
            self._error(405, ["method: use POST for /search"])
        else:
            self._error(404, [f"path: no such endpoint {path!r}"])

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        length_header = self.headers.get("Content-Length")
        # isascii too: "²".isdigit() is true and int() refuses it.
        if length_header is None or not (length_header.isascii() and length_header.isdigit()):
            self._error(411 if length_header is None else 400, ["body: Content-Length required"], close=True)
            return
        length = int(length_header)
        if length > MAX_REQUEST_BYTES:
            self._error(413, [f"body: larger than {MAX_REQUEST_BYTES} bytes"], close=True)
            return
        raw = self.rfile.read(length)
        if path != "/search":
            self._error(404, [f"path: no such endpoint {path!r}"])
            return
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._error(400, ["body: not valid UTF-8 JSON"])
            return
        try:
            request = parse_search_request(payload)
            result = search(
                self.server.index,
                request.q,
                filters=request.filters,
                size=request.size,
                locale=request.locale,
                rewrite=request.rewrite,
                synonyms=self.server.synonyms,
                min_should_match=self.server.min_should_match,
                title_weight=request.title_weight,
                request_min_should_match=request.min_should_match,
            )
        except RequestError as exc:
            self._error(400, exc.problems)
            return
        if self.server.delay_ms:
            time.sleep(self.server.delay_ms / 1000)
        hits = list(result.hits)
        jittered = len(hits) >= 2 and self.server.jittered(request)
        if jittered:
            hits[0], hits[1] = hits[1], hits[0]
        meta: dict[str, Any] = {
            "index_generation": self.server.generation,
            "rewriter": result.rewriter,
            "rewritten_query": result.rewritten_query,
            "took_ms": result.took_ms,
        }
        if self.server.jitter > 0:
            meta["jittered"] = jittered
        self._send(
            200, {"hits": [{"id": h.id, "title": h.title, "score": h.score} for h in hits], "meta": meta}
        )


def make_server(
    index: SearchIndex,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    synonyms: SynonymPack | None = None,
    generation: str | None = None,
    delay_ms: int = 0,
    min_should_match: int = DEFAULT_MIN_SHOULD_MATCH,
    jitter: float = 0.0,
    jitter_seed: int = 0,
) -> SearchServer:
    """A bound (not yet serving) server; call `serve_forever()` in a thread, `shutdown()` to stop.
    `jitter`: the share of askings whose two top hits are swapped (the module docstring, "Jitter")."""
    if delay_ms < 0:
        raise ValueError(f"delay_ms: expected 0 or more, got {delay_ms}")
    if not 0 <= jitter <= 1:
        raise ValueError(f"jitter: expected a share from 0 to 1, got {jitter}")
    if min_should_match < 1:
        raise ValueError(f"min_should_match: expected at least 1, got {min_should_match}")
    return SearchServer(
        (host, port),
        index=index,
        synonyms=synonyms,
        generation=generation or index.generation,
        delay_ms=delay_ms,
        min_should_match=min_should_match,
        jitter=jitter,
        jitter_seed=jitter_seed,
    )


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.search_service", description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="JSONL, one document per line")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_non_negative, default=8765, help="0 picks a free port")
    parser.add_argument(
        "--synonyms", default=str(DEFAULT_SYNONYMS_PATH), help="synonym pack for rewrite=true requests"
    )
    parser.add_argument("--generation", default=None, help="index generation id (default: content hash)")
    parser.add_argument("--delay-ms", type=_non_negative, default=0, help="added to every search reply")
    parser.add_argument("--min-should-match", type=_positive, default=DEFAULT_MIN_SHOULD_MATCH)
    parser.add_argument(
        "--jitter",
        type=_share,
        default=0.0,
        help="share of askings whose two top hits are swapped (default 0: off)",
    )
    parser.add_argument("--jitter-seed", type=int, default=0, help="seed of the jitter's choice")
    args = parser.parse_args(argv)
    try:
        docs = load_corpus(args.corpus)
        synonyms = load_synonyms(args.synonyms)
    except (OSError, ProblemsError) as exc:
        problems = exc.problems if isinstance(exc, ProblemsError) else [str(exc)]
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    index = build_index(docs)
    try:
        server = make_server(
            index,
            host=args.host,
            port=args.port,
            synonyms=synonyms,
            generation=args.generation,
            delay_ms=args.delay_ms,
            min_should_match=args.min_should_match,
            jitter=args.jitter,
            jitter_seed=args.jitter_seed,
        )
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"listening on {server.url}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        index.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
