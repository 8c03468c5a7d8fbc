"""The golden file's fast path (pure): a valid file in the common shape, checked in bulk.

`assay.golden.format.parse` decodes with orjson and hands the result here first. Every check is done over
all queries or all judgments at once (joined strings searched by one regex, type sets, per-query sets),
and only a shape whose every rule is checked here is accepted: queries with fields beyond id, text and
judgments go through the careful walk of `assay.golden.checks` one by one. Anything wrong, or anything
this module does not recognise, returns None and the careful walk reads the whole file again, so every
problem keeps its exact message. The careful walk is the reference: tests hold the two to the same
GoldenFile on every input both accept (tests/assay/golden/test_fast.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from assay.golden.checks import _CONTROL, _NOT_IN_ID, _SURROGATE, _Checker, _file
from assay.golden.fields import FILE_FIELDS, MAX_LENGTH, natural_key
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from assay.memory import gc_paused

_SIMPLE_QUERY = frozenset(("id", "text", "judgments"))
_FILE_FIELDS = frozenset(FILE_FIELDS)
_DIGITS = frozenset("0123456789")
# Comma-joined numbers without leading zeros (a lone 0 is fine): natural order is their numeric order.
_NUMBERS = re.compile(r"(?:0|[1-9][0-9]*)(?:,(?:0|[1-9][0-9]*))*")


def _clean(strings: Sequence[str], *, ident: bool, field: str) -> bool:
    """Every string non-blank, no lone surrogate or control character, at most MAX_LENGTH[field] long
    and, for ids, no whitespace."""
    if strings and max(map(len, strings)) > MAX_LENGTH[field]:
        return False
    joined = "".join(strings)
    if _SURROGATE.search(joined) or _CONTROL.search(joined) or (ident and _NOT_IN_ID.search(joined)):
        return False
    if ident:  # no whitespace in them: non-blank is non-empty
        return min(map(len, strings), default=1) > 0
    return all(map(str.strip, strings))


def _sort_keys(values: list[str]) -> list[Any]:
    """Sort keys ordering distinct `values` as `natural_key` does: when every value is one shared
    digit-free prefix and a number without leading zeros (q1, q2, ... or plain numbers), the number."""
    prefix = os.path.commonprefix(values)  # noqa: RUF071 (strings, not paths: character by character)
    for i, ch in enumerate(prefix):
        if ch in _DIGITS:
            prefix = prefix[:i]
            break
    cut = len(prefix)
    tails = [value[cut:] for value in values]
    joined = ",".join(tails)
    if _NUMBERS.fullmatch(joined):
        return list(map(int, tails))
    return list(map(natural_key, values))


def _colons(value: Any) -> tuple[int, int]:
    """(object members, ':' inside strings) of a decoded value: members counted against the text's
    colons show a key repeated in one object, which a decoder keeps only once. Iterative: orjson reads
    nesting deeper than Python's recursion limit."""
    members = colons = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            colons += item.count(":")
        elif isinstance(item, dict):
            members += len(item)
            colons += sum(key.count(":") for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return members, colons


@gc_paused()
def fast_from_dict(data: Any, text: str) -> GoldenFile | None:
    """The GoldenFile the careful walk would build from `data` (decoded from `text`), or None when `data`
    is not in the shape checked here or is not valid (the caller then runs the careful walk)."""
    if "\\u003a" in text or "\\u003A" in text:
        return None  # an escaped colon would upset the count of object members below
    if type(data) is not dict or not data.keys() <= _FILE_FIELDS:
        return None
    checker = _Checker()
    version, k, scale, rmg, rubric = checker.header(data, "")
    raw_queries = data.get("queries")
    if checker.problems or scale is None or type(raw_queries) is not list or not raw_queries:
        return None
    members, colons = _colons({key: value for key, value in data.items() if key != "queries"})
    members += 1

    simple: list[dict[str, Any]] = []
    careful: list[GoldenQuery] = []
    for i, item in enumerate(raw_queries):
        if type(item) is dict and item.keys() <= _SIMPLE_QUERY:
            simple.append(item)
            continue
        query = checker.query(item, f"queries[{i}]", scale)
        if query is None or checker.problems:
            return None
        careful.append(query)
        sub_members, sub_colons = _colons(item)
        members, colons = members + sub_members, colons + sub_colons

    built = _simple_queries(simple, scale)
    if built is None:
        return None
    queries, simple_members, simple_colons = built
    if text.count(":") - colons - simple_colons != members + simple_members:
        return None
    queries.extend(careful)
    ids = [q.id for q in queries]
    if len(set(ids)) != len(ids):
        return None
    keys = _sort_keys(ids)
    ordered = [queries[i] for i in sorted(range(len(queries)), key=keys.__getitem__)]
    return _file(checker, version, k, scale, rmg, rubric, ordered)


def _simple_queries(items: list[dict[str, Any]], scale: Scale) -> tuple[list[GoldenQuery], int, int] | None:
    """Queries with only id, text and judgments, checked in bulk: (queries, members, colons) or None."""
    ids: list[Any] = [item.get("id") for item in items]
    texts: list[Any] = [item.get("text") for item in items]
    lists = [item.get("judgments", []) for item in items]
    if (
        {type(v) for v in ids} - {str}
        or {type(v) for v in texts} - {str}
        or {type(v) for v in lists} - {list}
    ):
        return None
    if not _clean(ids, ident=True, field="id") or not _clean(texts, ident=False, field="text"):
        return None
    flat = [j for judgments in lists for j in judgments]
    if {type(j) for j in flat} - {dict}:
        return None
    docs: list[Any] = [j.get("doc_id") for j in flat]
    grades = [j.get("grade") for j in flat]
    keys = [j.get("key") for j in flat]
    sizes = list(map(len, flat))
    if {type(v) for v in docs} - {str} or {type(v) for v in grades} - {int}:
        return None
    if grades and (min(grades) < scale.min or max(grades) > scale.max):
        return None
    if {type(v) for v in keys} - {str, type(None)}:
        return None
    # doc_id and grade are there (typed above): any third field must be "key" (null or a string).
    if max(sizes, default=2) > 2 and any(
        size != 2 + ("key" in j) for size, j in zip(sizes, flat, strict=True)
    ):
        return None
    keyed = len(keys) - keys.count(None)
    if keyed and not _clean([key for key in keys if key is not None], ident=False, field="key"):
        return None
    if not _clean(docs, ident=True, field="doc_id"):
        return None

    order = _sort_keys(docs)
    bounds: list[tuple[int, int]] = []
    perm: list[int] = []
    start = 0
    for judgments in lists:
        end = start + len(judgments)
        span = range(start, end)
        if len({docs[i] for i in span}) != len(span):
            return None
        if keyed and len({keys[i] for i in span if keys[i] is not None}) != sum(
            keys[i] is not None for i in span
        ):
            return None
        perm.extend(sorted(span, key=order.__getitem__))
        bounds.append((start, end))
        start = end
    built = list(map(Judgment, [docs[i] for i in perm], [grades[i] for i in perm], [keys[i] for i in perm]))
    queries = [
        GoldenQuery(id=qid, text=text, judgments=tuple(built[start:end]))
        for qid, text, (start, end) in zip(ids, texts, bounds, strict=True)
    ]
    members = sum(map(len, items)) + sum(sizes)
    colons = "".join(ids).count(":") + "".join(texts).count(":") + "".join(docs).count(":")
    if keyed:
        colons += "".join(key for key in keys if key is not None).count(":")
    return queries, members, colons
