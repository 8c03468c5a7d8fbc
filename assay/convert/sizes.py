"""How many queries and judgments a file in a judgment format holds, counted before it is read (pure): what
lets the import page refuse a file too large for one web request at once, before the conversion and the
checks that take seconds a thousand rows (docs/labeling.md, "Imports").

The count scans the file and stops as soon as it is past a limit: the distinct query texts (or qids) and
the rows of a CSV or qrels file, streamed line by line; the query entries and their ratings of a JSON file,
read one level at a time (`msgspec.Raw`: nothing below the level counted is built into objects); the
lines of the members of a BEIR zip. It checks nothing: a file it cannot count (not UTF-8, not JSON, a
header it does not know) counts as what was counted before the trouble, and the reader says why it is
refused.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import msgspec

from assay.convert.core import ConvertError
from assay.convert.zipped import zip_members


@dataclass(frozen=True, slots=True)
class Size:
    """What a file holds: queries and judgments (rows); `over` says the count stopped past a limit
    (the figures are then where it stopped)."""

    queries: int
    judgments: int
    over: bool = False


class _Counter:
    """Queries (by text or qid) and judgments counted until past `max_queries` or `max_judgments`."""

    def __init__(self, max_queries: int, max_judgments: int) -> None:
        self.max_queries, self.max_judgments = max_queries, max_judgments
        self.texts: set[str] = set()
        self.anonymous = (
            0  # queries without a text to tell them apart (a golden file's: ids are checked later)
        )
        self.judgments = 0

    def add(self, text: str | None, judgments: int = 0) -> bool:
        """Count a query (None: one counted without its text) and its judgments; False once past a limit."""
        if text is None:
            self.anonymous += 1
        elif text:
            self.texts.add(text)
        self.judgments += judgments
        return not self.over

    @property
    def queries(self) -> int:
        return len(self.texts) + self.anonymous

    @property
    def over(self) -> bool:
        return self.queries > self.max_queries or self.judgments > self.max_judgments

    def size(self) -> Size:
        return Size(self.queries, self.judgments, self.over)


def measure(
    name: str,
    data: bytes,
    *,
    max_queries: int,
    max_judgments: int,
    topics_data: bytes | None = None,
    unzip_limit: int | None = None,
) -> Size:
    """The queries and judgments of `data`, a file in format `name` (assay.convert.formats), counted until
    past either limit. `topics_data`: a TREC qrels file's topics (every topic is a query); `unzip_limit`:
    the most a BEIR zip's members may unpack to (Options.unzip_limit)."""
    counter = _Counter(max_queries, max_judgments)
    if name in ("golden", "golden-jsonl"):
        _golden(counter, data)
    elif name in ("quepid-csv", "srw-csv"):
        _ratings_csv(counter, data)
    elif name == "srw-json":
        _srw_json(counter, data)
    elif name == "rre":
        _rre(counter, data)
    elif name == "trec-qrels":
        for qid in _firsts(_lines(topics_data or b""), "\t"):
            if not counter.add(qid):
                break
        else:
            for qid in _firsts(_lines(data), None):
                if not counter.add(qid, 1):
                    break
    elif name == "beir":
        _beir(counter, data, unzip_limit)
    else:
        raise ValueError(f"no count for the format {name!r}")
    return counter.size()


# --------------------------------------------------------------------------------------------- text


def _lines(data: bytes) -> Iterator[str]:
    """The file's lines, decoded one at a time (a byte-order mark dropped); stops at bytes that are not
    UTF-8 (the reader reports them)."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    try:
        yield from text
    except UnicodeDecodeError:
        return


def _firsts(lines: Iterable[str], sep: str | None) -> Iterator[str]:
    """The first column of each non-blank line (a qid)."""
    for line in lines:
        first = line.split(sep, 1)[0].strip()
        if first:
            yield first


def _ratings_csv(counter: _Counter, data: bytes) -> None:
    """`query,docid,rating`: the distinct query texts and the rows."""
    rows = csv.reader(_lines(data))
    try:
        header = [cell.strip().lower() for cell in next(rows, [])]
        if "query" not in header:
            return
        at = header.index("query")
        for row in rows:
            if any(cell.strip() for cell in row) and not counter.add(
                row[at].strip() if at < len(row) else "", 1
            ):
                return
    except csv.Error:
        return


def _beir(counter: _Counter, data: bytes, unzip_limit: int | None) -> None:
    """A zip of a BEIR folder: the lines of queries.jsonl (each a query, judged or not: each is read) and
    of the qrels splits (each a judgment; the qrels name queries by qid, so those count as queries too)."""
    try:
        members = zip_members(
            Path("upload"),
            data,
            lambda name: name == "queries.jsonl" or name.startswith("qrels/"),
            limit=unzip_limit,
        )
    except ConvertError:
        return
    judged = _Counter(counter.max_queries, counter.max_judgments)
    for name, body in sorted(members.items()):
        if name.startswith("qrels/"):
            for qid in _firsts(islice(_lines(body), 1, None), "\t"):  # after the header
                if not judged.add(qid, 1):
                    break
    counter.texts, counter.judgments = judged.texts, judged.judgments
    listed = sum(1 for line in _lines(members.get("queries.jsonl", b"")) if line.strip())
    counter.anonymous = max(listed - counter.queries, 0)


# --------------------------------------------------------------------------------------------- JSON

_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()


def _object(raw: bytes | msgspec.Raw | None) -> dict[str, msgspec.Raw]:
    """One JSON object's members, their values unread ({} for anything else)."""
    return _decoded(_OBJECT, raw) or {}


def _array(raw: bytes | msgspec.Raw | None) -> list[msgspec.Raw]:
    """One JSON array's items, unread ([] for anything else)."""
    return _decoded(_ARRAY, raw) or []


def _text(raw: msgspec.Raw | None) -> str:
    value = _decoded(_ANY, raw)
    return value.strip() if isinstance(value, str) else ""


def _decoded(decoder: msgspec.json.Decoder[Any], raw: bytes | msgspec.Raw | None) -> Any:
    if raw is None:
        return None
    try:
        return decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None


def _golden(counter: _Counter, data: bytes) -> None:
    """Either form, as the golden file's parser tells them: one JSON object, else JSONL (a header line,
    then a query a line)."""
    body = _decoded(_OBJECT, data)
    if body is not None:
        queries: Iterable[bytes | msgspec.Raw] = _array(body.get("queries"))
    else:
        lines = (line.encode() for line in _lines(data) if line.strip())
        next(lines, None)  # the header
        queries = lines
    for query in queries:
        if not counter.add(None, len(_array(_object(query).get("judgments")))):
            return


def _srw_json(counter: _Counter, data: bytes) -> None:
    for entry in _array(_object(data).get("judgmentRatings")):
        fields = _object(entry)
        if not counter.add(_text(fields.get("query")), len(_array(fields.get("ratings")))):
            return


def _rre(counter: _Counter, data: bytes) -> None:
    """Every shape assay.convert.rre reads: topics of query groups (or topics that are groups), query
    groups, or queries at the top level each with its own ratings; a group's ratings count once for each
    of its queries."""
    body = _object(data)
    placeholder = _decoded(_ANY, body.get("query_placeholder"))
    placeholder = placeholder if isinstance(placeholder, str) else "$query"
    groups: list[dict[str, msgspec.Raw]] = []  # each: its relevant_documents, and its queries
    if "topics" in body:
        for topic in _array(body["topics"]):
            fields = _object(topic)
            inner = _array(fields["query_groups"]) if "query_groups" in fields else [topic]
            groups += map(_object, inner)
    elif "query_groups" in body:
        groups = [_object(group) for group in _array(body["query_groups"])]
    for group in groups:
        rated = _rated(group.get("relevant_documents"))
        for query in _array(group.get("queries")):
            if not counter.add(_placeholder(query, placeholder), rated):
                return
    if "topics" not in body and "query_groups" not in body:  # Quepid's RRE export
        for query in _array(body.get("queries")):
            rated = _rated(_object(query).get("relevant_documents"))
            if not counter.add(_placeholder(query, placeholder), rated):
                return


def _placeholder(query: msgspec.Raw, name: str) -> str:
    """A query's text: its placeholder `name`."""
    return _text(_object(_object(query).get("placeholders")).get(name))


def _rated(raw: msgspec.Raw | None) -> int:
    """How many documents RRE's `relevant_documents` rates, in either shape."""
    return sum(
        len(_array(value)) if bytes(value).lstrip().startswith(b"[") else 1 for value in _object(raw).values()
    )
