"""The golden file format: parse, validate, dump (pure, no Django). Field reference: docs/golden-format.md.

Two forms hold the same content:
- JSON: one document `{"version", "k", ..., "queries": [...]}` (docs/golden-format.md has a sample);
- JSONL: a header line with the file-level fields, then one query object per line.

Contracts the rest of Assay relies on:
- Parsing never raises anything but `GoldenFormatError` for bad input, and it reports every problem it can
  find at once, each naming its place (`queries[3].judgments[1].grade: 4 is outside the scale 0..3`).
- A parsed `GoldenFile` is canonical: queries sorted by id, judgments by doc id (natural order, q-2 before
  q-10), tags sorted, filter keys sorted. So `parse(dump(g)) == g` and a canonical file dumps back to the
  very same bytes, which is what makes "import, then freeze" reproduce a file exactly.
- Dumping is byte-deterministic and refuses (with `GoldenFormatError`) a `GoldenFile` that parse would
  reject: nothing is ever written that cannot be read back.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

from assay.golden.model import (
    DEFAULT_K,
    TIERS,
    GoldenFile,
    GoldenQuery,
    Judgment,
    Scale,
    default_relevant_min_grade,
)

Format = Literal["json", "jsonl"]

FILE_FIELDS = ("version", "k", "relevant_min_grade", "scale", "rubric", "queries")
HEADER_FIELDS = FILE_FIELDS[:-1]
QUERY_FIELDS = (
    "id",
    "text",
    "locale",
    "filters",
    "stratum",
    "weight",
    "tier",
    "expect_empty",
    "critical",
    "tags",
    "judgments",
)
JUDGMENT_FIELDS = ("doc_id", "grade", "key")
SCALE_FIELDS = ("min", "max")

# Beyond this an integral weight is written as a float: `2` reads better than `2.0`, but a weight of 1e300
# written out as 301 digits would not.
_MAX_INT_WEIGHT = 1e15
# Integers must fit in 64 bits: what the database stores, and small enough to print in a message.
_MAX_INT = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong (or, from `golden_warnings`, worth a look) in a golden file.

    `where` and `message` together are the whole human text (`str(problem)`); `code` and `query_id` are
    for programs (an import page linking to the query, a test asserting the rule that fired).
    """

    where: str
    message: str
    code: str = "invalid"
    query_id: str | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class GoldenFormatError(ValueError):
    """A golden file that cannot be used; `problems` lists every problem found, in file order."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(self.problems)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problems,))


# --------------------------------------------------------------------------------------------- ordering


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(value: str) -> tuple[Any, ...]:
    """Sort key putting q-2 before q-10; a total order (ties such as q-02 / q-2 fall back to the text)."""
    parts: list[tuple[Any, ...]] = []
    for i, part in enumerate(_DIGITS.split(value)):
        if not part:
            continue
        if i % 2:
            # A digit run compares by value: by length once leading zeros are gone, then digit by digit
            # (no int(): ids may hold more digits than Python converts).
            digits = part.lstrip("0")
            parts.append((0, len(digits), digits, part))
        else:
            parts.append((1, part))
    return (tuple(parts), value)


# --------------------------------------------------------------------------------------------- decoding


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers keys the document repeated (json keeps only the last)."""

    repeated: tuple[str, ...] = ()


def _object_hook(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        obj.repeated = tuple(repeated)
    return obj


@dataclass(frozen=True, slots=True)
class _NonFinite:
    """NaN / Infinity / -Infinity: Python's json reads them, JSON does not allow them."""

    name: str


_JSON_SPACE = " \t\r\n"  # what JSON allows between tokens; anything else on a "blank" line is junk


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_object_hook, parse_constant=_NonFinite)


def _decode_json(text: str, *, line: int | None) -> tuple[Any, Problem | None]:
    """Decode one JSON text; a problem instead of an exception. `line` offsets positions for JSONL."""
    try:
        return _loads(text), None
    except json.JSONDecodeError as e:
        lineno = e.lineno if line is None else line
        return None, Problem(f"line {lineno}, column {e.colno}", f"invalid JSON: {e.msg}", "json")
    except RecursionError:
        where = "" if line is None else f"line {line}"
        return None, Problem(where, "invalid JSON: nested too deeply to read", "json")
    except ValueError:  # the only other ValueError: an integer literal beyond Python's digit limit
        where = "" if line is None else f"line {line}"
        return None, Problem(where, "invalid JSON: a number is too long to read", "json")


def _to_text(data: str | bytes | bytearray | memoryview) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"golden file data must be str or bytes, not {type(data).__name__}")
    raw = bytes(data)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        hint = " (it looks like UTF-16: save it as UTF-8)" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise GoldenFormatError(
            [
                Problem(
                    f"byte {e.start}",
                    f"not UTF-8: byte 0x{raw[e.start]:02x} on line {line} cannot be decoded "
                    f"({e.reason}){hint}",
                    "encoding",
                )
            ]
        ) from None


# --------------------------------------------------------------------------------------------- messages


def _quote(value: str, limit: int = 60) -> str:
    """A user string for a message: JSON-quoted, shortened, lone surrogates escaped so it can be printed."""
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {value}" if abs(value) < 10**30 else "a very large integer"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, _NonFinite):
        return f"{value.name} (not allowed in JSON)"
    if isinstance(value, str):
        return f"string {_quote(value, 40)}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a Python {type(value).__name__}"


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


_SURROGATE = re.compile("[\ud800-\udfff]")
# str.isspace() and the Cc category, the same sets as re's \s (str patterns) and \x00-\x1f, \x7f-\x9f.
_NOT_IN_ID = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def _bad_chars(value: str) -> str | None:
    found = _SURROGATE.search(value)
    if found:
        return f"contains a lone surrogate \\u{ord(found.group()):04x} (not valid Unicode)"
    return None


def _ident_problem(value: str) -> str | None:
    """Ids, doc ids and versions travel through TREC files (whitespace separated) and git tags."""
    found = _NOT_IN_ID.search(value)
    if found:
        return (
            f"{_quote(value)} contains whitespace or a control character ({found.group()!r}), "
            "not allowed in an id"
        )
    return None


# --------------------------------------------------------------------------------------------- validation


class _Checker:
    """Collects problems while building the dataclasses; a built value is only used if none were found."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.query_places: dict[str, str] = {}  # query id -> where it first appeared

    def add(self, where: str, message: str, code: str, query_id: str | None = None) -> None:
        if query_id is not None:
            message = f"{message} (query {_quote(query_id)})"
        # JSONL places are built as "line 5: " + path; the query line itself is just "line 5".
        self.problems.append(Problem(where.removesuffix(": "), message, code, query_id))

    # ------------------------------------------------------------------ generic shapes

    def obj(
        self,
        value: object,
        where: str,
        allowed: Sequence[str] | None,
        *,
        what: str,
        query_id: str | None = None,
        hint: Callable[[str], str | None] | None = None,
    ) -> Mapping[str, Any] | None:
        """An object with string keys, only `allowed` ones unless that is None.

        An unknown key is an error, with the close match suggested (a typo must not be silently ignored).
        """
        if not isinstance(value, Mapping):
            self.add(where, f"{what} must be an object, got {_describe(value)}", "type", query_id)
            return None
        for key in getattr(value, "repeated", ()):
            self.add(
                _join(where, key),
                "appears more than once in the same object (JSON would keep only the last)",
                "duplicate_field",
                query_id,
            )
        for key in value:
            if not isinstance(key, str):
                self.add(where, f"field names must be strings, got {_describe(key)}", "type", query_id)
            elif allowed is not None and key not in allowed:
                extra = hint(key) if hint else None
                self.add(_join(where, key), extra or _unknown_field(key, allowed), "unknown_field", query_id)
        return value

    def required(self, obj: Mapping[str, Any], key: str, where: str, query_id: str | None = None) -> bool:
        if key in obj:
            return True
        self.add(_join(where, key), "missing required field", "missing", query_id)
        return False

    def string(
        self,
        value: object,
        where: str,
        *,
        ident: bool = False,
        query_id: str | None = None,
    ) -> str | None:
        if not isinstance(value, str):
            hint = f' (write "{value}")' if _is_int(value) and abs(value) <= _MAX_INT else ""
            self.add(where, f"must be a string, got {_describe(value)}{hint}", "type", query_id)
            return None
        bad = _bad_chars(value)
        if bad is None and not value.strip():
            bad = "must not be empty"
        if bad is None and ident:
            bad = _ident_problem(value)
        if bad is not None:
            self.add(where, bad, "value", query_id)
            return None
        return value

    def optional_string(
        self, obj: Mapping[str, Any], key: str, where: str, query_id: str | None = None
    ) -> str | None:
        value = obj.get(key)
        return None if value is None else self.string(value, _join(where, key), query_id=query_id)

    def integer(self, value: object, where: str, query_id: str | None = None) -> int | None:
        if _is_int(value):
            if abs(value) > _MAX_INT:
                self.add(where, f"must be an integer between {-_MAX_INT} and {_MAX_INT}", "range", query_id)
                return None
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            message = f"must be an integer, got {value!r} (a number with a decimal point: write {int(value)})"
        else:
            message = f"must be an integer, got {_describe(value)}"
        self.add(where, message, "type", query_id)
        return None

    def boolean(self, value: object, where: str, query_id: str | None = None) -> bool | None:
        if isinstance(value, bool):
            return value
        self.add(where, f"must be true or false, got {_describe(value)}", "type", query_id)
        return None

    # ------------------------------------------------------------------ file level

    def header(
        self, obj: Mapping[str, Any], where: str
    ) -> tuple[str | None, int | None, Scale | None, int | None, str | None]:
        """The file-level fields (JSON document or JSONL header); None for a field that is invalid."""
        version = (
            self.string(obj["version"], _join(where, "version"), ident=True)
            if self.required(obj, "version", where)
            else None
        )

        k: int | None = DEFAULT_K
        if "k" in obj:
            k = self.integer(obj["k"], _join(where, "k"))
            if k is not None and k < 1:
                self.add(_join(where, "k"), f"must be at least 1, got {k}", "range")
                k = None

        scale: Scale | None = Scale()
        if "scale" in obj:
            scale = self.scale(obj["scale"], _join(where, "scale"))

        rmg: int | None = None
        if "relevant_min_grade" in obj:
            rmg = self.integer(obj["relevant_min_grade"], _join(where, "relevant_min_grade"))
            if rmg is not None and scale is not None and not scale.min < rmg <= scale.max:
                self.add(
                    _join(where, "relevant_min_grade"),
                    f"{rmg} must be above the scale minimum and at most its maximum "
                    f"({scale.min + 1}..{scale.max} on the scale {scale})",
                    "range",
                )
                rmg = None
        elif scale is not None:
            rmg = default_relevant_min_grade(scale)

        rubric = self.optional_string(obj, "rubric", where)
        return version, k, scale, rmg, rubric

    def scale(self, value: object, where: str) -> Scale | None:
        obj = self.obj(value, where, SCALE_FIELDS, what="the scale")
        if obj is None:
            return None
        bounds: list[int | None] = []
        for key in SCALE_FIELDS:
            bounds.append(
                self.integer(obj[key], _join(where, key)) if self.required(obj, key, where) else None
            )
        low, high = bounds
        if low is None or high is None:
            return None
        if low < 0:
            self.add(
                _join(where, "min"), f"must be at least 0, got {low} (grades are gains: 2^grade - 1)", "range"
            )
            return None
        if low >= high:
            self.add(where, f"min must be below max, got {low}..{high}", "range")
            return None
        return Scale(low, high)

    # ------------------------------------------------------------------ query level

    def query(self, value: object, where: str, scale: Scale | None) -> GoldenQuery | None:
        before = len(self.problems)
        named = value.get("id") if isinstance(value, Mapping) else None
        ctx = named if isinstance(named, str) else None  # names the query in messages, even if invalid
        obj = self.obj(value, where, QUERY_FIELDS, what="a query", hint=_query_field_hint, query_id=ctx)
        if obj is None:
            return None

        def place(key: str) -> str:
            return _join(where, key)

        qid = self.string(obj["id"], place("id"), ident=True) if self.required(obj, "id", where) else None
        if qid is not None:
            self.once(self.query_places, qid, where.removesuffix(": "), place("id"), "query id", None)
        text = (
            self.string(obj["text"], place("text"), query_id=ctx)
            if self.required(obj, "text", where, ctx)
            else None
        )
        locale = self.optional_string(obj, "locale", where, ctx)
        stratum = self.optional_string(obj, "stratum", where, ctx)
        filters = self.filters(obj["filters"], place("filters"), ctx) if "filters" in obj else {}
        weight = self.weight(obj["weight"], place("weight"), ctx) if "weight" in obj else 1.0
        tier = self.tier(obj["tier"], place("tier"), ctx) if "tier" in obj else "core"
        expect_empty = (
            self.boolean(obj["expect_empty"], place("expect_empty"), ctx) if "expect_empty" in obj else False
        )
        critical = self.boolean(obj["critical"], place("critical"), ctx) if "critical" in obj else False
        tags = self.tags(obj["tags"], place("tags"), ctx) if "tags" in obj else ()
        judgments, grades_ok = self.judgments(obj.get("judgments", []), place("judgments"), scale, ctx)

        if critical and expect_empty:
            self.add(
                where,
                "critical and expect_empty cannot both be true: a critical query must find its best "
                "document, an expect_empty query must find nothing",
                "conflict",
                ctx,
            )
        elif critical and grades_ok and not any(j.grade >= 1 for j in judgments):
            self.add(
                place("critical"),
                "a critical query needs a judgment at grade >= 1 "
                "(the gate checks where its best document ranks)",
                "critical_without_positive",
                ctx,
            )

        if len(self.problems) > before:
            return None
        assert qid is not None and text is not None and tier is not None
        assert weight is not None and filters is not None and tags is not None
        assert expect_empty is not None and critical is not None
        return GoldenQuery(
            id=qid,
            text=text,
            judgments=judgments,
            locale=locale,
            filters=filters,
            stratum=stratum,
            weight=weight,
            tier=tier,
            expect_empty=expect_empty,
            critical=critical,
            tags=tags,
        )

    def tier(self, value: object, where: str, qid: str | None) -> str | None:
        tier = self.string(value, where, query_id=qid)
        if tier is not None and tier not in TIERS:
            self.add(where, f"{_quote(tier)} is not a tier: use one of {', '.join(TIERS)}", "enum", qid)
            return None
        return tier

    def weight(self, value: object, where: str, qid: str | None) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.add(where, f"must be a number, got {_describe(value)}", "type", qid)
            return None
        try:
            weight = float(value)
        except OverflowError:
            weight = math.inf
        if not math.isfinite(weight):
            self.add(where, f"must be a finite number, got {_describe(value)}", "range", qid)
            return None
        if weight <= 0:
            self.add(where, f"must be greater than 0, got {value!r}", "range", qid)
            return None
        return weight

    def filters(self, value: object, where: str, qid: str | None) -> dict[str, Any] | None:
        before = len(self.problems)
        obj = self.obj(value, where, None, what="filters", query_id=qid)
        if obj is None:
            return None
        out: dict[str, Any] = {}
        for key, item in obj.items():
            if not isinstance(key, str) or self.string(key, f"{where}[{_quote(key)}]", query_id=qid) is None:
                continue
            place = _join(where, key)
            if isinstance(item, list | tuple):
                for i, element in enumerate(item):
                    self.filter_scalar(element, f"{place}[{i}]", qid, in_list=True)
                out[key] = list(item)
            else:
                self.filter_scalar(item, place, qid, in_list=False)
                out[key] = item
        if len(self.problems) > before:
            return None
        return {key: out[key] for key in sorted(out)}

    def filter_scalar(self, value: object, where: str, qid: str | None, *, in_list: bool) -> None:
        if value is None or isinstance(value, bool | int):
            return
        if isinstance(value, str):
            bad = _bad_chars(value)
            if bad:
                self.add(where, bad, "value", qid)
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                self.add(where, f"must be a finite number, got {value!r}", "range", qid)
            return
        allowed = (
            "a string, number, boolean or null"
            if in_list
            else "a string, number, boolean, null or a list of those"
        )
        self.add(where, f"a filter value must be {allowed}, got {_describe(value)}", "type", qid)

    def tags(self, value: object, where: str, qid: str | None) -> tuple[str, ...] | None:
        if not isinstance(value, list | tuple):
            self.add(where, f"tags must be an array of strings, got {_describe(value)}", "type", qid)
            return None
        before = len(self.problems)
        seen: dict[str, str] = {}
        for i, item in enumerate(value):
            tag = self.string(item, f"{where}[{i}]", query_id=qid)
            if tag is not None:
                self.once(seen, tag, f"{where}[{i}]", f"{where}[{i}]", "tag", qid)
        if len(self.problems) > before:
            return None
        return tuple(sorted(seen))

    def judgments(
        self, value: object, where: str, scale: Scale | None, qid: str | None
    ) -> tuple[tuple[Judgment, ...], bool]:
        """The valid judgments (sorted by doc id) and whether every grade was valid."""
        if not isinstance(value, list | tuple):
            self.add(where, f"judgments must be an array, got {_describe(value)}", "type", qid)
            return (), False
        out: list[Judgment] = []
        grades_ok = True
        docs: dict[str, str] = {}
        keys: dict[str, str] = {}
        for i, item in enumerate(value):
            place = f"{where}[{i}]"
            obj = self.obj(item, place, JUDGMENT_FIELDS, what="a judgment", query_id=qid)
            if obj is None:
                grades_ok = False
                continue
            doc_id = (
                self.string(obj["doc_id"], _join(place, "doc_id"), ident=True, query_id=qid)
                if self.required(obj, "doc_id", place, qid)
                else None
            )
            grade = (
                self.integer(obj["grade"], _join(place, "grade"), qid)
                if self.required(obj, "grade", place, qid)
                else None
            )
            if grade is not None and scale is not None and grade not in scale:
                self.add(_join(place, "grade"), f"{grade} is outside the scale {scale}", "off_scale", qid)
                grade = None
            grades_ok = grades_ok and grade is not None
            key = self.optional_string(obj, "key", place, qid)
            if doc_id is not None:
                self.once(docs, doc_id, place, _join(place, "doc_id"), "judgment for document", qid)
            if key is not None:
                self.once(keys, key, place, _join(place, "key"), "key", qid)
            if doc_id is not None and grade is not None:
                out.append(Judgment(doc_id=doc_id, grade=grade, key=key))
        return tuple(sorted(out, key=lambda j: natural_key(j.doc_id))), grades_ok

    def once(
        self, seen: dict[str, str], value: str, here: str, where: str, what: str, qid: str | None
    ) -> None:
        """Report `value` if `seen` has it already (naming where it was first), else remember it."""
        if value in seen:
            code = "duplicate_" + what.split()[0]
            self.add(where, f"duplicate {what} {_quote(value)} (also {seen[value]})", code, qid)
        else:
            seen[value] = here


def _join(where: str, key: str) -> str:
    if not where:
        return key
    return f"{where}{key}" if where.endswith(": ") else f"{where}.{key}"


def _unknown_field(key: str, allowed: Sequence[str]) -> str:
    match = difflib.get_close_matches(key.lower(), allowed, n=1, cutoff=0.6)
    if match:
        return f"unknown field {_quote(key)} (did you mean {_quote(match[0])}?)"
    return f"unknown field {_quote(key)} (allowed: {', '.join(allowed)})"


def _query_field_hint(key: str) -> str | None:
    if key in HEADER_FIELDS:
        return f"unknown field {_quote(key)}: {key} is a file-level field, not a query field"
    return None


def _query_field_hint_top(key: str) -> str | None:
    if key in QUERY_FIELDS:
        return f'unknown field {_quote(key)}: {key} is a query field; queries go in the "queries" array'
    return None


def _header_field_hint(key: str) -> str | None:
    if key == "queries":
        return '"queries" does not belong in a JSONL header: write one query object per line after it'
    if key in QUERY_FIELDS:
        return f"unknown field {_quote(key)}: {key} is a query field, not a header field"
    return None


def _file(
    checker: _Checker,
    version: str | None,
    k: int | None,
    scale: Scale | None,
    rmg: int | None,
    rubric: str | None,
    queries: list[GoldenQuery],
) -> GoldenFile:
    if checker.problems:
        raise GoldenFormatError(checker.problems)
    assert version is not None and k is not None and scale is not None and rmg is not None
    return GoldenFile(
        version=version,
        queries=tuple(sorted(queries, key=lambda q: natural_key(q.id))),
        k=k,
        relevant_min_grade=rmg,
        scale=scale,
        rubric=rubric,
    )


# --------------------------------------------------------------------------------------------- parsing


def from_dict(data: object) -> GoldenFile:
    """Validate an already-decoded golden file (the JSON form as Python objects) into a `GoldenFile`.

    Arrays may be lists or tuples, objects any Mapping. Raises `GoldenFormatError` with every problem.
    """
    checker = _Checker()
    obj = checker.obj(data, "", FILE_FIELDS, what="the golden file", hint=_query_field_hint_top)
    if obj is None:
        raise GoldenFormatError(checker.problems)
    version, k, scale, rmg, rubric = checker.header(obj, "")
    queries: list[GoldenQuery] = []
    if "queries" not in obj:
        checker.add(
            "queries",
            "missing required field: the list of queries (in JSONL, one query per line after the header)",
            "missing",
        )
    elif not isinstance(obj["queries"], list | tuple):
        checker.add("queries", f"must be an array of queries, got {_describe(obj['queries'])}", "type")
    elif not obj["queries"]:
        checker.add("queries", "no queries: a golden file needs at least one", "empty")
    else:
        for i, item in enumerate(obj["queries"]):
            query = checker.query(item, f"queries[{i}]", scale)
            if query is not None:
                queries.append(query)
    return _file(checker, version, k, scale, rmg, rubric, queries)


def _decode_document(text: str) -> tuple[Any, Problem | None]:
    if not text.strip(_JSON_SPACE):
        return None, Problem("", "the file is empty", "empty")
    return _decode_json(text, line=None)


def parse_json(data: str | bytes) -> GoldenFile:
    """Parse the JSON form (one document)."""
    value, problem = _decode_document(_to_text(data))
    if problem is not None:
        raise GoldenFormatError([problem])
    return from_dict(value)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    # Split on "\n" only: str.splitlines would also split inside a line at U+2028, \x0c, \x85 ...
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip(_JSON_SPACE):
            yield number, line.removesuffix("\r")


def parse_jsonl(data: str | bytes) -> GoldenFile:
    """Parse the JSONL form: a header line with the file-level fields, then one query object per line."""
    text = _to_text(data)
    lines = list(_lines(text))
    if not lines:
        raise GoldenFormatError([Problem("", "the file is empty", "empty")])
    checker = _Checker()
    (header_line, header_text), *rest = lines
    header_value, problem = _decode_json(header_text, line=header_line)
    version = rubric = None
    k = rmg = None
    scale: Scale | None = None
    if problem is not None:
        checker.problems.append(problem)
    elif isinstance(header_value, Mapping) and "version" not in header_value and "id" in header_value:
        checker.add(
            f"line {header_line}",
            "the first line must be the header with the file-level fields (version, k, ...); "
            "this line looks like a query",
            "missing",
        )
    else:
        where = f"line {header_line}: "
        header = checker.obj(
            header_value, where, HEADER_FIELDS, what="the header line", hint=_header_field_hint
        )
        if header is not None:
            version, k, scale, rmg, rubric = checker.header(header, where)

    queries: list[GoldenQuery] = []
    for number, line in rest:
        value, problem = _decode_json(line, line=number)
        if problem is not None:
            checker.problems.append(problem)
            continue
        query = checker.query(value, f"line {number}: ", scale)
        if query is not None:
            queries.append(query)
    if not rest:
        checker.add("queries", "no queries: write one query object per line after the header", "empty")
    return _file(checker, version, k, scale, rmg, rubric, queries)


def _looks_like_jsonl(text: str) -> bool:
    """A header line and at least one more line, the first an object on its own line."""
    lines = _lines(text)
    first = next(lines, (0, ""))[1].strip(_JSON_SPACE)
    return first.startswith("{") and first.endswith("}") and next(lines, None) is not None


def parse(data: str | bytes, *, fmt: Format | None = None) -> GoldenFile:
    """Parse a golden file in either form.

    `fmt=None` detects it: one JSON document is the JSON form; text that is not one JSON document but
    whose first non-blank line is a JSON object is JSONL; anything else is reported as invalid JSON.
    """
    if fmt == "json":
        return parse_json(data)
    if fmt == "jsonl":
        return parse_jsonl(data)
    if fmt is not None:
        raise ValueError(f"unknown golden file format {fmt!r}: use 'json' or 'jsonl'")
    text = _to_text(data)
    value, problem = _decode_document(text)
    if problem is None:
        return from_dict(value)
    if problem.code == "json" and _looks_like_jsonl(text):
        return parse_jsonl(text)
    raise GoldenFormatError([problem])


def load(path: str | os.PathLike[str]) -> GoldenFile:
    """Read a golden file: `.jsonl` is the JSONL form, anything else is detected. OSError if unreadable."""
    p = Path(path)
    return parse(p.read_bytes(), fmt="jsonl" if p.suffix.lower() == ".jsonl" else None)


# --------------------------------------------------------------------------------------------- warnings


def golden_warnings(golden: GoldenFile) -> list[Problem]:
    """Problems that do not stop an import but should be shown (docs/metrics.md: `no_positive_judgments`)."""
    return [
        Problem(
            f"query {_quote(q.id)}",
            "no judgment at grade >= 1, so it cannot score above 0 (no_positive_judgments)",
            "no_positive_judgments",
            q.id,
        )
        for q in golden.queries
        if not q.expect_empty and not q.has_positive_judgment
    ]


# --------------------------------------------------------------------------------------------- dumping


def canonical_weight(value: float) -> int | float:
    """A weight as the canonical dump writes it: 2.0 as 2, 0.5 as 0.5."""
    if float(value).is_integer() and abs(value) < _MAX_INT_WEIGHT:
        return int(value)
    return float(value)


def _query_dict(q: GoldenQuery) -> dict[str, Any]:
    out: dict[str, Any] = {"id": q.id, "text": q.text}
    if q.locale is not None:
        out["locale"] = q.locale
    if q.filters:
        out["filters"] = {key: q.filters[key] for key in sorted(q.filters)}
    if q.stratum is not None:
        out["stratum"] = q.stratum
    if q.weight != 1:
        out["weight"] = canonical_weight(q.weight)
    if q.tier != "core":
        out["tier"] = q.tier
    if q.expect_empty:
        out["expect_empty"] = True
    if q.critical:
        out["critical"] = True
    if q.tags:
        out["tags"] = sorted(q.tags)
    out["judgments"] = [
        {"doc_id": j.doc_id, "grade": j.grade} | ({"key": j.key} if j.key is not None else {})
        for j in sorted(q.judgments, key=lambda j: natural_key(j.doc_id))
    ]
    return out


def _header_dict(golden: GoldenFile) -> dict[str, Any]:
    out: dict[str, Any] = {"version": golden.version, "k": golden.k}
    if golden.relevant_min_grade != default_relevant_min_grade(golden.scale):
        out["relevant_min_grade"] = golden.relevant_min_grade
    if golden.scale != Scale():
        out["scale"] = {"min": golden.scale.min, "max": golden.scale.max}
    if golden.rubric is not None:
        out["rubric"] = golden.rubric
    return out


def to_dict(golden: GoldenFile) -> dict[str, Any]:
    """The canonical JSON form as Python objects: fixed key order, defaults omitted, sorted queries.

    It does not validate (`dump_*` do): use `from_dict(to_dict(g))` to check a hand-built GoldenFile.
    """
    out = _header_dict(golden)
    out["queries"] = [_query_dict(q) for q in sorted(golden.queries, key=lambda q: natural_key(q.id))]
    return out


def _checked(golden: GoldenFile) -> dict[str, Any]:
    data = to_dict(golden)
    from_dict(data)  # refuses to write what could not be read back
    return data


_one_line = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False
).encode  # one instance: dumps() makes one a call


def _pretty(value: Any, level: int, *, inline_items: bool = False) -> str:
    """json.dumps(indent=2), except that an array of scalars (tags, a filter's values) stays on one line,
    and so does each item of an `inline_items` array (a judgment: a regrade is then a one-line diff)."""
    pad = "  " * (level + 1)
    end = "  " * level
    if isinstance(value, dict) and value:
        body = ",\n".join(
            f"{pad}{_one_line(key)}: {_pretty(item, level + 1, inline_items=key == 'judgments')}"
            for key, item in value.items()
        )
        return f"{{\n{body}\n{end}}}"
    if isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
        render = _one_line if inline_items else (lambda item: _pretty(item, level + 1))
        body = ",\n".join(f"{pad}{render(item)}" for item in value)
        return f"[\n{body}\n{end}]"
    return _one_line(value)


def dump_json(golden: GoldenFile) -> bytes:
    """The canonical JSON form: 2-space indent, UTF-8, one line per judgment, trailing newline."""
    return (_pretty(_checked(golden), 0) + "\n").encode("utf-8")


def dump_jsonl(golden: GoldenFile) -> bytes:
    """The canonical JSONL form: the header line, then one query per line in id order."""
    data = _checked(golden)
    queries = data.pop("queries")
    lines = [_one_line(data), *(_one_line(q) for q in queries)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def dump(golden: GoldenFile, fmt: Format = "json") -> bytes:
    if fmt == "json":
        return dump_json(golden)
    if fmt == "jsonl":
        return dump_jsonl(golden)
    raise ValueError(f"unknown golden file format {fmt!r}: use 'json' or 'jsonl'")
