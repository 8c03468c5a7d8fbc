"""The golden file's fast path (pure): a valid JSON file decoded by msgspec and checked in bulk, into columns.

`assay.golden.format.parse` and the `assay` command's golden reading try this first. msgspec decodes the
bytes straight into typed records (a judgment is a doc id string, an integer grade, maybe a key and a
source; no
unknown field anywhere), which is most of the checking and several times quicker than decoding into
dicts; the rest is done over all queries or all judgments at once (joined strings searched by one regex,
per-query duplicates found in sorted columns). Queries with fields beyond id, text and judgments go
through the careful walk of `assay.golden.checks` one by one. Anything wrong, or anything this module does
not recognise, returns None and the careful walk reads the whole file again, so every problem keeps its
exact message. The careful walk is the reference: tests hold the two to the same GoldenFile on every input
both accept (tests/assay/golden/test_fast.py), and every rule of `assay.golden.checks` has a case this
path must leave to the careful walk (tests/assay/golden/test_fast_rules.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import chain, pairwise
from operator import attrgetter
from typing import Annotated, Any, NamedTuple

import msgspec
import numpy as np
from msgspec import UNSET, Meta, Struct, UnsetType
from numpy.typing import NDArray

from assay.golden.checks import NOT_IN_ID, Checker, bad_chars
from assay.golden.columns import GoldenColumns, offsets
from assay.golden.fields import HEADER_FIELDS, JUDGMENT_FIELDS, MAX_LENGTH, QUERY_FIELDS, natural_key
from assay.golden.model import JUDGMENT_SOURCES, TIERS, TRAFFIC_BANDS, GoldenFile, GoldenQuery, Scale
from assay.memory import gc_paused
from assay.storable import CONTROL, SURROGATE

# In space-joined numbers, one with a leading zero (a lone 0 is fine): natural order is then not numeric.
_LEADING_ZERO = re.compile(r" 0[0-9]")
_PREFIX = re.compile(r"[^0-9]*")
_SIMPLE = ("id", "text", "judgments")
_RICH = tuple(field for field in QUERY_FIELDS if field not in _SIMPLE)
_rich = attrgetter(*_RICH)
_ID, _TEXT, _JUDGMENTS = attrgetter("id"), attrgetter("text"), attrgetter("judgments")
_DOC_ID, _GRADE, _KEY, _SOURCE = (
    attrgetter("doc_id"),
    attrgetter("grade"),
    attrgetter("key"),
    attrgetter("source"),
)
_NONE_RICH = (UNSET,) * len(_RICH)


class _PlainJudgment(Struct, forbid_unknown_fields=True, gc=False):
    # Its length checked as it is decoded: a blank or overlong doc id sends the file to the careful walk.
    doc_id: Annotated[str, Meta(min_length=1, max_length=MAX_LENGTH["doc_id"])]
    grade: int


class _Judgment(_PlainJudgment, forbid_unknown_fields=True, gc=False):
    key: str | UnsetType | None = UNSET
    # Any JSON value: a source other than JUDGMENT_SOURCES or null sends the file to the careful walk.
    source: Any = UNSET


class _PlainQuery(Struct, forbid_unknown_fields=True, gc=False):
    id: str
    text: str
    judgments: list[_PlainJudgment] | UnsetType = UNSET


class _Query(Struct, forbid_unknown_fields=True, gc=False):
    id: str
    text: str
    judgments: list[_Judgment] | UnsetType = UNSET
    # The other query fields, checked by the careful walk (`Checker.query`) when present.
    locale: Any = UNSET
    filters: Any = UNSET
    stratum: Any = UNSET
    traffic_band: Any = UNSET
    failure_mode: Any = UNSET
    weight: Any = UNSET
    tier: Any = UNSET
    expect_empty: Any = UNSET
    critical: Any = UNSET
    tags: Any = UNSET


def _decoder(query: type[Struct]) -> msgspec.json.Decoder[Any]:
    """A decoder of the whole file: its queries as `query`, the header's fields as any JSON value."""
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [("queries", list[query])]  # type: ignore[valid-type]
    fields.extend((name, Any, UNSET) for name in HEADER_FIELDS)
    return msgspec.json.Decoder(msgspec.defstruct("_File", fields, forbid_unknown_fields=True, gc=False))


# A file whose queries hold only an id, a text and judgments of a doc id and a grade (the usual shape) is
# decoded without the other fields: no query then needs looking at one by one. Any other file fails that
# decoder, mostly at its first query, and is decoded with every field.
_PLAIN_DECODER, _DECODER = _decoder(_PlainQuery), _decoder(_Query)


def _clean(strings: Sequence[str], *, ident: bool, field: str) -> bool:
    """Every string non-blank, no lone surrogate or control character, at most MAX_LENGTH[field] long
    and, for ids, no whitespace."""
    lengths = list(map(len, strings))
    if strings and max(lengths) > MAX_LENGTH[field]:
        return False
    joined = "".join(strings)
    # Printable ASCII (the usual case) holds no surrogate or control character: one C pass, no regex.
    plain = joined.isascii() and joined.isprintable()
    if not plain and (SURROGATE.search(joined) or CONTROL.search(joined)):
        return False
    if ident:  # no whitespace in them: non-blank is non-empty
        if (" " in joined) if plain else NOT_IN_ID.search(joined):
            return False
        return min(lengths, default=1) > 0
    return all(map(str.strip, strings))


def _sort_keys(values: list[str]) -> list[Any]:
    """Sort keys ordering distinct ids `values` as `natural_key` does: when every value is one shared
    digit-free prefix and a number without leading zeros (q1, q2, ... or plain numbers), the number."""
    numbers = _numbers(values)
    return numbers.tolist() if numbers is not None else list(map(natural_key, values))


def _numbers(values: list[str], joined: str | None = None) -> NDArray[np.int64] | None:
    """The number after each id's shared digit-free prefix, when natural order is that number's order
    (every id is the prefix and a number without leading zeros); None otherwise. `joined`: the ids
    joined by single spaces, when the caller has it already."""
    if not values:
        return None
    prefix = _PREFIX.match(values[0]).group()  # type: ignore[union-attr]  # matches every string
    # Ids hold no whitespace, so a space separates them.
    if joined is None:
        joined = " ".join(values)
    if prefix:
        # Every id starts with the prefix (the first, and each after a space) and holds it nowhere else.
        if not joined.startswith(prefix) or joined.count(" " + prefix) != len(values) - 1:
            return None
        if joined.count(prefix) != len(values):
            return None
        joined = joined.replace(prefix, "")
    digits = joined.replace(" ", "")
    if not (digits.isascii() and digits.isdigit()) or "  " in joined or joined.endswith(" "):
        return None  # something other than digits, or an id that is the prefix alone
    if joined.startswith(" ") or _LEADING_ZERO.search(" " + joined):
        return None
    # Checked above: digit runs, one space apart, which numpy's text reader takes (clamping any beyond
    # int64, which the limit below then refuses: without leading zeros, 19 digits or more is >= 10^18).
    numbers = np.fromstring(joined, dtype=np.int64, sep=" ")
    return numbers if int(numbers.max()) < 10**18 else None


def _colons(value: Any) -> tuple[int, int]:
    """(object members, ':' inside strings) of a decoded value: members counted against the text's
    colons show a key repeated in one object, which a decoder keeps only once. Iterative: nesting may be
    deeper than Python's recursion limit."""
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


def _fields(record: Struct, names: Sequence[str]) -> dict[str, Any]:
    return {name: value for name in names if (value := getattr(record, name)) is not UNSET}


def _as_dict(query: _Query) -> dict[str, Any]:
    """A query with more than id, text and judgments, as the decoded JSON the careful walk reads."""
    out = _fields(query, QUERY_FIELDS)
    if "judgments" in out:
        out["judgments"] = [_fields(j, JUDGMENT_FIELDS) for j in out["judgments"]]
    return out


@gc_paused()
def fast_columns(raw: bytes, *, canonical: bool = True) -> GoldenColumns | None:
    """The columns of the JSON golden file `raw` (UTF-8), or None when it is not valid or not in a shape
    checked here (the caller then runs the careful walk, which names every problem). `canonical=False`
    checks as much but leaves queries and judgments in the file's order (enough to count them)."""
    if b"\\" in raw and (b"\\u003a" in raw or b"\\u003A" in raw):  # one byte's search, then both escapes
        return None  # an escaped colon would upset the count of object members below
    # msgspec raises RecursionError on a value nested past Python's limit (in a filter, say): the careful
    # walk then words it.
    try:
        data, plain = _PLAIN_DECODER.decode(raw), True
    except (msgspec.DecodeError, RecursionError):  # another shape, malformed, not valid, or too deep
        try:
            data, plain = _DECODER.decode(raw), False
        except (msgspec.DecodeError, RecursionError):
            return None
    header = _fields(data, HEADER_FIELDS)
    checker = Checker()
    version, k, scale, rmg, rubric = checker.header(header, "")
    if checker.problems or scale is None or not data.queries:
        return None
    members, colons = _colons(header)
    members += 1  # "queries"

    simple: list[Any] = []  # _PlainQuery or _Query
    extras: list[dict[str, Any] | None] = []  # beside `simple`: each one's fields beyond id and text
    careful: list[GoldenQuery] = []
    for i, item in enumerate(() if plain else data.queries):
        rich = _rich(item)
        extra = None if rich == _NONE_RICH else _bulk_fields(rich, item)
        if rich == _NONE_RICH or extra is not None:
            simple.append(item)
            extras.append(extra)
            if extra is not None:
                rich_members, rich_colons = _rich_colons(rich)
                members, colons = members + rich_members, colons + rich_colons
            continue
        as_dict = _as_dict(item)
        query = checker.query(as_dict, f"queries[{i}]", scale)
        if query is None or checker.problems:
            return None
        careful.append(query)
        sub_members, sub_colons = _colons(as_dict)
        members, colons = members + sub_members, colons + sub_colons
    if plain:
        simple, extras = data.queries, [None] * len(data.queries)
    bulk = _simple_columns(simple, extras, scale, plain=plain)
    if bulk is None:
        return None
    queries, docs, grades, keys, sources, sizes, spaced = bulk[:7]
    if raw.count(b":") - colons - bulk.colons != members + bulk.members:
        return None
    if careful:
        spaced = None  # the doc ids below are not in it
        judgments = [j for query in careful for j in query.judgments]
        queries.extend(careful)
        docs.extend(j.doc_id for j in judgments)
        grades = np.concatenate([grades, np.fromiter((j.grade for j in judgments), np.int64, len(judgments))])
        keys.extend(j.key for j in judgments)
        sources.extend(j.source for j in judgments)
        sizes.extend(len(query.judgments) for query in careful)
    ids = [q.id for q in queries]
    if len(set(ids)) != len(ids):
        return None
    assert version is not None and k is not None and rmg is not None
    columns = (queries, docs, grades, keys, sources, sizes)
    return _in_order(version, k, scale, rmg, rubric, *columns, canonical=canonical, spaced=spaced)


def _in_order(
    version: str,
    k: int,
    scale: Scale,
    rmg: int,
    rubric: str | None,
    queries: list[GoldenQuery],
    docs: list[str],
    grades: NDArray[np.int64],
    keys: list[str | None],
    sources: list[str | None],
    sizes: list[int],
    *,
    canonical: bool,
    spaced: str | None,
) -> GoldenColumns | None:
    """The columns in canonical order (with `canonical`: else in the file's): queries in natural id order,
    each query's judgments in natural doc id order; None when a query holds a doc id twice. `spaced`: the
    doc ids joined by single spaces, when the caller has it."""
    if canonical:
        query_order = np.asarray(
            sorted(range(len(queries)), key=_sort_keys([q.id for q in queries]).__getitem__)
        )
    else:
        query_order = np.arange(len(queries))
    place = np.empty(len(queries), dtype=np.int64)
    place[query_order] = np.arange(len(queries))
    owner = place[np.repeat(np.arange(len(queries)), sizes)]
    perm = _judgment_order(owner, docs, spaced)
    if perm is None:
        return None
    if not canonical:
        perm = np.arange(len(docs))
    return GoldenColumns(
        version=version,
        k=k,
        relevant_min_grade=rmg,
        scale=scale,
        rubric=rubric,
        queries=tuple(queries[i] for i in query_order.tolist()),
        doc_ids=_taken(docs, perm),
        grades=grades[perm],
        keys=_taken(keys, perm) if keys.count(None) < len(keys) else None,
        bounds=offsets(np.asarray(sizes, dtype=np.int64)[query_order]),
        sources=_taken(sources, perm) if sources.count(None) < len(sources) else None,
    )


def _taken(values: list[Any], order: NDArray[np.intp]) -> list[Any]:
    """`values` in `order` (a permutation of their indices)."""
    if bool((order[1:] > order[:-1]).all()):
        return values  # the identity
    return np.array(values, dtype=object)[order].tolist()


def _bulk_fields(rich: tuple[Any, ...], item: _Query) -> dict[str, Any] | None:
    """A query's fields beyond id, text and judgments as GoldenQuery takes them, when each is valid and in
    a shape checked here (the careful walk's rules, without its messages); None sends the query through
    the careful walk, which takes or names what is left: tags, filters holding lists, every invalid value."""
    out: dict[str, Any] = {}
    for name, value in zip(_RICH, rich, strict=True):
        if value is UNSET:
            continue
        if name in _OPTIONAL_STRINGS:
            if value is not None and not (type(value) is str and _string_ok(value, MAX_LENGTH[name])):
                return None
        elif name == "traffic_band":
            if value is not None and value not in TRAFFIC_BANDS:
                return None
        elif name == "tier":
            if type(value) is not str or value not in TIERS:
                return None
        elif name == "weight":
            value = _weight(value)
            if value is None:
                return None
        elif name in ("expect_empty", "critical"):
            if type(value) is not bool:
                return None
        elif name == "filters":
            value = _flat_filters(value)
            if value is None:
                return None
        else:  # tags
            return None
        out[name] = value
    if out.get("critical") and (
        out.get("expect_empty") or item.judgments is UNSET or not any(j.grade >= 1 for j in item.judgments)
    ):
        return None  # the careful walk names the conflict, or the missing positive judgment
    return out


_OPTIONAL_STRINGS = frozenset({"locale", "stratum", "failure_mode"})


def _string_ok(value: str, limit: int | None) -> bool:
    """`Checker.string`'s rule (non-blank, no lone surrogate or control character, at most `limit` long)."""
    if limit is not None and len(value) > limit:
        return False
    if value.isascii() and value.isprintable():
        return bool(value.strip())
    return bool(value.strip()) and bad_chars(value) is None


def _weight(value: Any) -> float | None:
    """A weight as `Checker.weight` takes it (a finite number above 0, not a boolean), or None."""
    if type(value) not in (int, float):
        return None
    try:
        weight = float(value)
    except OverflowError:
        return None
    return weight if math.isfinite(weight) and weight > 0 else None


def _flat_filters(value: Any) -> dict[str, Any] | None:
    """Filters of scalars, checked as `Checker.filters` checks them and in its order (keys sorted); None
    for anything else (a list value goes the careful way)."""
    if type(value) is not dict:
        return None
    for key, item in value.items():
        if type(key) is not str or not _string_ok(key, None):
            return None
        if item is None or type(item) in (bool, int):
            continue
        if type(item) is str:
            if not (item.isascii() and item.isprintable()) and bad_chars(item) is not None:
                return None
        elif type(item) is not float or not math.isfinite(item):
            return None
    return {key: value[key] for key in sorted(value)}


def _rich_colons(rich: tuple[Any, ...]) -> tuple[int, int]:
    """(members, ':' inside strings) of a query's fields beyond id, text and judgments (see `_colons`)."""
    present = [value for value in rich if value is not UNSET]
    members, colons = _colons(present)
    return members + len(present), colons


class _Bulk(NamedTuple):
    """What `_simple_columns` gives: the columns of the queries checked in bulk, in the file's order."""

    queries: list[GoldenQuery]
    docs: list[str]
    grades: NDArray[np.int64]
    keys: list[str | None]
    sources: list[str | None]
    sizes: list[int]  # judgments per query
    spaced: str | None  # the doc ids joined by single spaces, when they are all printable ASCII
    members: int  # object members of their id, text and judgments
    colons: int  # ':' inside those strings


def _simple_columns(
    items: list[Any], extras: list[dict[str, Any] | None], scale: Scale, *, plain: bool
) -> _Bulk | None:
    """Queries whose id, text and judgments are checked in bulk (their other fields `extras`, checked by
    `_bulk_fields`), or None when not valid. `plain`: the items are `_PlainQuery`s (judgments without a
    key or source), else `_Query`s."""
    ids = list(map(_ID, items))
    texts = list(map(_TEXT, items))
    lists = [[] if judgments is UNSET else judgments for judgments in map(_JUDGMENTS, items)]
    if not _clean(ids, ident=True, field="id") or not _clean(texts, ident=False, field="text"):
        return None
    flat = list(chain.from_iterable(lists))
    docs = list(map(_DOC_ID, flat))
    try:
        grades = np.fromiter(map(_GRADE, flat), dtype=np.int64, count=len(flat))
    except OverflowError:
        return None  # beyond 64 bits, so off the scale
    if grades.size and (int(grades.min()) < scale.min or int(grades.max()) > scale.max):
        return None
    # The doc ids' lengths were checked as they were decoded: what is left is their characters.
    joined = " ".join(docs)
    spaced = joined if joined.isascii() and joined.isprintable() else None  # no surrogate or control
    if spaced is not None:
        if spaced.count(" ") != max(len(docs) - 1, 0):
            return None  # a space inside a doc id
    elif not _clean(docs, ident=True, field="doc_id"):
        return None
    keys: list[Any] = [] if plain else list(map(_KEY, flat))
    absent = keys.count(UNSET)
    given = [key for key in keys if key is not UNSET] if absent < len(keys) else []
    present = [key for key in given if key is not None]
    if present and not _clean(present, ident=False, field="key"):
        return None
    keys = [None if key is UNSET else key for key in keys] if given else [None] * len(flat)
    # A source is the careful walk's `Checker.source`: absent or null (humans), else one of the sources.
    raw_sources: list[Any] = [] if plain else list(map(_SOURCE, flat))
    unset_sources = raw_sources.count(UNSET)
    stated = (
        [source for source in raw_sources if source is not UNSET] if unset_sources < len(raw_sources) else []
    )
    if stated and not all(source is None or source in JUDGMENT_SOURCES for source in stated):
        return None
    sources: list[str | None] = (
        [None if source is UNSET else source for source in raw_sources] if stated else [None] * len(flat)
    )

    sizes = list(map(len, lists))
    if present and _keys_repeat(keys, np.repeat(np.arange(len(lists)), sizes)):
        return None
    queries = [
        GoldenQuery(qid, text) if extra is None else GoldenQuery(qid, text, **extra)
        for qid, text, extra in zip(ids, texts, extras, strict=True)
    ]
    members = 2 * len(items) + len(items) - list(map(_JUDGMENTS, items)).count(UNSET)
    members += 2 * len(flat) + len(given) + len(stated)  # JUDGMENT_SOURCES hold no ':'
    colons = "".join(ids).count(":") + "".join(texts).count(":") + "".join(present).count(":")
    colons += joined.count(":")  # the spaces add none
    return _Bulk(queries, docs, grades, keys, sources, sizes, spaced, members, colons)


def _judgment_order(owner: NDArray[np.int64], docs: list[str], spaced: str | None) -> NDArray[np.intp] | None:
    """Indices putting the judgments in order of their query's place (`owner`), then natural doc id order,
    or None when a query holds a doc id twice (`spaced`: as `_in_order`)."""
    numbers = _numbers(docs, spaced)
    if numbers is not None and (not numbers.size or int(numbers.max()) < 2**62 // max(len(owner), 1)):
        # One shared prefix: equal numbers are equal doc ids. One integer key per judgment, sorted.
        key = owner * (int(numbers.max(initial=0)) + 1) + numbers
        if bool((key[1:] > key[:-1]).all()):
            return np.arange(len(key))  # already in canonical order (a file Assay wrote)
        perm = np.argsort(key)
        ordered = key[perm]
        return None if bool((ordered[1:] == ordered[:-1]).any()) else perm
    order = list(map(natural_key, docs))
    owners = owner.tolist()
    ranked = sorted(range(len(docs)), key=lambda i: (owners[i], order[i]))
    for a, b in pairwise(ranked):
        if owners[a] == owners[b] and docs[a] == docs[b]:
            return None
    return np.asarray(ranked, dtype=np.intp)


def _keys_repeat(keys: list[str | None], owner: Any) -> bool:
    """Whether a query gives one durable key to two of its judgments."""
    seen: set[tuple[int, str]] = set()
    for query, key in zip(owner.tolist(), keys, strict=True):
        if key is not None:
            if (query, key) in seen:
                return True
            seen.add((query, key))
    return False


def fast_parse(raw: bytes) -> GoldenFile | None:
    """`fast_columns` as a GoldenFile (an object per judgment), or None."""
    columns = fast_columns(raw)
    return None if columns is None else columns.to_file()
