"""The golden file's validation (pure): every rule of docs/golden-format.md, checked on decoded JSON,
every problem reported at once with its place. `assay.golden.format` decodes, calls these and builds the
GoldenFile; the checks never raise for bad input.

The fast path (`assay.golden.fast`) takes its character rules (`NOT_IN_ID`, `bad_chars`; the others are
assay/storable.py's) and its `Checker` from here, and leaves every file it does not recognise to this
walk. A rule added here needs its case in tests/assay/golden/test_fast_rules.py, which holds the fast
path to it.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from assay.golden.fields import (
    HEADER_FIELDS,
    JUDGMENT_FIELDS,
    MAX_INT,
    MAX_LENGTH,
    QUERY_FIELDS,
    SCALE_FIELDS,
    GoldenFormatError,
    Problem,
    _NonFinite,
    natural_key,
)
from assay.golden.model import (
    DEFAULT_K,
    JUDGMENT_SOURCES,
    TIERS,
    TRAFFIC_BANDS,
    GoldenFile,
    GoldenQuery,
    Judgment,
    Scale,
    default_relevant_min_grade,
)
from assay.storable import text_problem

# Integers must fit in 64 bits: what the database stores, and small enough to print in a message.
_MAX_INT = MAX_INT


# --------------------------------------------------------------------------------------------- messages


def quote(value: str, limit: int = 60) -> str:
    """A user string for a message: JSON-quoted, shortened, lone surrogates escaped so it can be printed."""
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def describe(value: object) -> str:
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
        return f"string {quote(value, 40)}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a Python {type(value).__name__}"


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# str.isspace() and the Cc category, the same sets as re's \s (str patterns) and \x00-\x1f, \x7f-\x9f.
NOT_IN_ID = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def bad_chars(value: str) -> str | None:
    """A lone surrogate or a control character other than tab, LF and CR, in what a database says of it."""
    return text_problem(value)


def _too_long(value: str, field: str | None) -> str | None:
    limit = MAX_LENGTH.get(field) if field else None
    if limit is not None and len(value) > limit:
        return f"is {len(value):,} characters long; at most {limit:,} can be stored"
    return None


# What git refuses in a tag name (git check-ref-format), beyond whitespace and control characters.
_NOT_IN_TAG = re.compile(r"[~^:?*\[\\]|\.\.|@\{|//")


def _tag_problem(version: str) -> str | None:
    """A version is exported as the git tag golden@<version>: a name git cannot use is refused here, not
    at export."""
    found = _NOT_IN_TAG.search(version)
    parts = version.split("/")
    if (
        found
        or version.endswith((".", "/", ".lock"))
        or any(part.startswith(".") or part.endswith(".lock") for part in parts)
    ):
        shown = f" ({found.group()!r})" if found else ""
        return (
            f"{quote(version)} cannot be a git tag name (golden@<version>){shown}: use letters, digits, "
            "- _ . and /"
        )
    return None


def _ident_problem(value: str) -> str | None:
    """Ids, doc ids and versions travel through TREC files (whitespace separated) and git tags."""
    found = NOT_IN_ID.search(value)
    if found:
        return (
            f"{quote(value)} contains whitespace or a control character ({found.group()!r}), "
            "not allowed in an id"
        )
    return None


# --------------------------------------------------------------------------------------------- validation


class Checker:
    """Collects problems while building the dataclasses; a built value is only used if none were found."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.query_places: dict[str, str] = {}  # query id -> where it first appeared

    def add(self, where: str, message: str, code: str, query_id: str | None = None) -> None:
        if query_id is not None:
            message = f"{message} (query {quote(query_id)})"
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
            self.add(where, f"{what} must be an object, got {describe(value)}", "type", query_id)
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
                self.add(where, f"field names must be strings, got {describe(key)}", "type", query_id)
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
        field: str | None = None,
    ) -> str | None:
        """A non-blank string without bad characters, an id when `ident`, at most MAX_LENGTH[field] long."""
        if not isinstance(value, str):
            hint = f' (write "{value}")' if _is_int(value) and abs(value) <= _MAX_INT else ""
            self.add(where, f"must be a string, got {describe(value)}{hint}", "type", query_id)
            return None
        bad = bad_chars(value)
        if bad is None and not value.strip():
            bad = "must not be empty"
        if bad is None and ident:
            bad = _ident_problem(value)
        if bad is None:
            bad = _too_long(value, field)
        if bad is not None:
            self.add(where, bad, "value", query_id)
            return None
        return value

    def optional_string(
        self, obj: Mapping[str, Any], key: str, where: str, query_id: str | None = None
    ) -> str | None:
        value = obj.get(key)
        if value is None:
            return None
        return self.string(value, _join(where, key), query_id=query_id, field=key)

    def integer(self, value: object, where: str, query_id: str | None = None) -> int | None:
        if _is_int(value):
            if abs(value) > _MAX_INT:
                self.add(where, f"must be an integer between {-_MAX_INT} and {_MAX_INT}", "range", query_id)
                return None
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            message = f"must be an integer, got {value!r} (a number with a decimal point: write {int(value)})"
        else:
            message = f"must be an integer, got {describe(value)}"
        self.add(where, message, "type", query_id)
        return None

    def boolean(self, value: object, where: str, query_id: str | None = None) -> bool | None:
        if isinstance(value, bool):
            return value
        self.add(where, f"must be true or false, got {describe(value)}", "type", query_id)
        return None

    # ------------------------------------------------------------------ file level

    def header(
        self, obj: Mapping[str, Any], where: str
    ) -> tuple[str | None, int | None, Scale | None, int | None, str | None]:
        """The file-level fields (JSON document or JSONL header); None for a field that is invalid."""
        version = (
            self.string(obj["version"], _join(where, "version"), ident=True, field="version")
            if self.required(obj, "version", where)
            else None
        )
        if version is not None and (tag := _tag_problem(version)) is not None:
            self.add(_join(where, "version"), tag, "value")
            version = None

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

        qid = (
            self.string(obj["id"], place("id"), ident=True, field="id")
            if self.required(obj, "id", where)
            else None
        )
        if qid is not None:
            self.once(self.query_places, qid, where.removesuffix(": "), place("id"), "query id", None)
        text = (
            self.string(obj["text"], place("text"), query_id=ctx, field="text")
            if self.required(obj, "text", where, ctx)
            else None
        )
        locale = self.optional_string(obj, "locale", where, ctx)
        stratum = self.optional_string(obj, "stratum", where, ctx)
        band = self.traffic_band(obj.get("traffic_band"), place("traffic_band"), ctx)
        failure_mode = self.optional_string(obj, "failure_mode", where, ctx)
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
            traffic_band=band,
            failure_mode=failure_mode,
            weight=weight,
            tier=tier,
            expect_empty=expect_empty,
            critical=critical,
            tags=tags,
        )

    def tier(self, value: object, where: str, qid: str | None) -> str | None:
        tier = self.string(value, where, query_id=qid)
        if tier is not None and tier not in TIERS:
            self.add(where, f"{quote(tier)} is not a tier: use one of {', '.join(TIERS)}", "enum", qid)
            return None
        return tier

    def traffic_band(self, value: object, where: str, qid: str | None) -> str | None:
        """A band or None (null, or the field left out); anything else names the bands."""
        ok = self.optional_choice(value, where, TRAFFIC_BANDS, "a traffic band: use one of", "", qid)
        return value if ok and isinstance(value, str) else None

    def optional_choice(
        self, value: object, where: str, choices: Sequence[str], what: str, after: str, qid: str | None
    ) -> bool:
        """Whether `value` is None (null, or the field left out) or one of `choices`; else the problem,
        "<value> is not <what> <choices>, or leave it out<after>"."""
        if value is None or (isinstance(value, str) and value in choices):
            return True
        shown = quote(value) if isinstance(value, str) else describe(value)
        self.add(
            where,
            f"{shown} is not {what} {', '.join(choices)}, or leave it out{after}",
            "enum" if isinstance(value, str) else "type",
            qid,
        )
        return False

    def weight(self, value: object, where: str, qid: str | None) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.add(where, f"must be a number, got {describe(value)}", "type", qid)
            return None
        try:
            weight = float(value)
        except OverflowError:
            weight = math.inf
        if not math.isfinite(weight):
            self.add(where, f"must be a finite number, got {describe(value)}", "range", qid)
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
            if not isinstance(key, str) or self.string(key, f"{where}[{quote(key)}]", query_id=qid) is None:
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
            bad = bad_chars(value)
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
        self.add(where, f"a filter value must be {allowed}, got {describe(value)}", "type", qid)

    def tags(self, value: object, where: str, qid: str | None) -> tuple[str, ...] | None:
        if not isinstance(value, list | tuple):
            self.add(where, f"tags must be an array of strings, got {describe(value)}", "type", qid)
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
            self.add(where, f"judgments must be an array, got {describe(value)}", "type", qid)
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
                self.string(obj["doc_id"], _join(place, "doc_id"), ident=True, query_id=qid, field="doc_id")
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
            source, source_ok = self.source(obj.get("source"), _join(place, "source"), qid)
            grades_ok = grades_ok and source_ok
            if doc_id is not None:
                self.once(docs, doc_id, place, _join(place, "doc_id"), "judgment for document", qid)
            if key is not None:
                self.once(keys, key, place, _join(place, "key"), "key", qid)
            if doc_id is not None and grade is not None and source_ok:
                out.append(Judgment(doc_id=doc_id, grade=grade, key=key, source=source))
        return tuple(sorted(out, key=lambda j: natural_key(j.doc_id))), grades_ok

    def source(self, value: object, where: str, qid: str | None) -> tuple[str | None, bool]:
        """A judgment's source: absent or null (humans), else one of JUDGMENT_SOURCES; and whether valid."""
        ok = self.optional_choice(value, where, JUDGMENT_SOURCES, "a judgment source: use", " (humans)", qid)
        return (value if ok and isinstance(value, str) else None), ok

    def once(
        self, seen: dict[str, str], value: str, here: str, where: str, what: str, qid: str | None
    ) -> None:
        """Report `value` if `seen` has it already (naming where it was first), else remember it."""
        if value in seen:
            code = "duplicate_" + what.split()[0]
            self.add(where, f"duplicate {what} {quote(value)} (also {seen[value]})", code, qid)
        else:
            seen[value] = here


def _join(where: str, key: str) -> str:
    if not where:
        return key
    return f"{where}{key}" if where.endswith(": ") else f"{where}.{key}"


def _unknown_field(key: str, allowed: Sequence[str]) -> str:
    match = difflib.get_close_matches(key.lower(), allowed, n=1, cutoff=0.6)
    if match:
        return f"unknown field {quote(key)} (did you mean {quote(match[0])}?)"
    return f"unknown field {quote(key)} (allowed: {', '.join(allowed)})"


def _query_field_hint(key: str) -> str | None:
    if key in HEADER_FIELDS:
        return f"unknown field {quote(key)}: {key} is a file-level field, not a query field"
    return None


def query_field_hint_top(key: str) -> str | None:
    if key in QUERY_FIELDS:
        return f'unknown field {quote(key)}: {key} is a query field; queries go in the "queries" array'
    return None


def header_field_hint(key: str) -> str | None:
    if key == "queries":
        return '"queries" does not belong in a JSONL header: write one query object per line after it'
    if key in QUERY_FIELDS:
        return f"unknown field {quote(key)}: {key} is a query field, not a header field"
    return None


def golden_file_built(
    checker: Checker,
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
