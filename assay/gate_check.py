"""The gate's checks of a report artifact: every reason a document cannot be used as a report, each with
its JSON path (pure). `assay.gate.compare` refuses a report they find anything in; `assay gate
--suggest-budgets` runs them on each report it reads (`validate_artifact`, re-exported by `assay.gate` and
`assay.drift`).

A report's per-query rows (100,000 of them in a large run) are read once, as columns
(`assay.changes.QueryColumns`), which the comparison then pairs: each field's types are checked over its
column, and only rows that may be wrong go through the field-by-field checks that word the problems.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

from assay.budgets import SLICE_KEYS
from assay.changes import QueryColumns
from assay.metric_table import METRIC_KEYS


class ArtifactError(ValueError):
    """A file given as a report that is not one (missing fields, wrong types)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _is_number(value: object) -> bool:
    # An integer is finite however large (math.isfinite cannot take one too large for a float).
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


_EXPECTED = {
    "a string": lambda v: isinstance(v, str),
    "an integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "an integer or null": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "a number or null": lambda v: v is None or _is_number(v),
    "a non-negative number": lambda v: _is_number(v) and v >= 0,
    "a string or null": lambda v: v is None or isinstance(v, str),
    "an object": lambda v: isinstance(v, Mapping),
    "a list": lambda v: isinstance(v, list),
    "true or false": lambda v: isinstance(v, bool),
}


class _Checker:
    """Collects every problem of one artifact, each with its JSON path."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.problems: list[str] = []

    def field(
        self, data: Mapping[str, Any], key: str, path: str, expected: str, required: bool = True
    ) -> Any:
        """data[key] when it has the expected type, else None (and the problem is recorded)."""
        if key not in data:
            if required:
                self.problems.append(f"{self.role}: {path}{key}: missing")
            return None
        value = data[key]
        if not _EXPECTED[expected](value):
            shown = repr(value) if len(repr(value)) < 60 else type(value).__name__
            self.problems.append(f"{self.role}: {path}{key}: expected {expected}, got {shown}")
            return None
        return value

    def aggregate(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        agg = self.field(parent, key, path, "an object")
        for metric in METRIC_KEYS if agg is not None else ():
            entry = self.field(agg, metric, f"{path}{key}.", "an object")
            if entry is not None:
                self.field(entry, "value", f"{path}{key}.{metric}.", "a number or null")

    def rows(self, data: Mapping[str, Any], key: str) -> list[tuple[str, Mapping[str, Any]]]:
        """(path, object) for the objects of the list data[key] with a string id (others are problems)."""
        good = []
        for i, row in enumerate(self.field(data, key, "", "a list") or []):
            if isinstance(row, Mapping) and isinstance(row.get("id"), str):
                good.append((f"{key}[{i}].", row))
            else:
                self.problems.append(f"{self.role}: {key}[{i}]: expected an object with a string id")
        return good


# The per-query fields `_check_row` checks: the types a present value may have (exactly: a subclass goes
# through the checks), and whether null is one of its valid values (else a null is valid only as a missing
# field). Numbers must also be finite, the weight not negative, nDCG present, ranks and grades integers.
_ROW_FIELDS: tuple[tuple[str, frozenset[type], bool], ...] = (
    *((key, frozenset({int, float}), True) for key in ("ndcg", "mrr", "p_at_k", "judged_at_k")),
    *((key, frozenset({bool}), False) for key in ("empty", "lt3", "expect_empty", "critical")),
    *((key, frozenset({str}), True) for key in ("error", "stratum", "traffic_band", "failure_mode")),
    ("tier", frozenset({str}), False),
    ("weight", frozenset({int, float}), False),
    ("n", frozenset({int}), False),
    ("ids", frozenset({list}), False),
    ("ranks", frozenset({dict}), False),
    ("grades", frozenset({dict}), False),
)
_RANKS = {"ranks": frozenset({int, type(None)}), "grades": frozenset({int})}


def _suspect_rows(columns: QueryColumns) -> set[int]:
    """The rows in which `_check_row` may find a problem: each with a field of another type than
    `_ROW_FIELDS` names, a null where only a missing field is valid (a missing nDCG), a number not finite,
    a negative weight, a rank or grade of another type. A superset is harmless (a valid row's checks find
    nothing); the point is to read each field of 100,000 rows once, a column at a time, and check the
    field by field (building a path for each) only the rows that may be wrong."""
    rows = columns.rows
    suspects: set[int] = set()
    for key, kinds, nullable in _ROW_FIELDS:
        values = columns.field(key)
        found = set(map(type, values))
        if not found <= kinds | {type(None)}:
            suspects.update(i for i, v in enumerate(values) if v is not None and type(v) not in kinds)
        if float in kinds:  # the nulls and the numbers not finite (or negative weights) are the NaNs' rows
            suspects.update(_number_suspects(columns, key, nullable, found))
        elif type(None) in found and not nullable:
            suspects.update(i for i, v in enumerate(values) if v is None and key in rows[i])
        if key in _RANKS and dict in found:
            inner = _RANKS[key]
            dicts = values if found == {dict} else [v for v in values if type(v) is dict]
            if not set(map(type, chain.from_iterable(map(dict.values, dicts)))) <= inner:
                suspects.update(
                    i
                    for i, v in enumerate(values)
                    if type(v) is dict and not set(map(type, v.values())) <= inner
                )
    return suspects


def _number_suspects(columns: QueryColumns, key: str, nullable: bool, found: set[type]) -> list[int]:
    """The rows whose number field `key` is null where that is wrong (or, for nDCG, missing), or not
    finite, or (a weight) negative. The numbers are the ones the comparison reads (`QueryColumns.numbers`)."""
    values, rows = columns.field(key), columns.rows
    try:
        if found <= {int, float, type(None)}:
            numbers, present = columns.numbers(key)
        else:  # other types are suspects already
            plain = [v if type(v) in (int, float) else None for v in values]
            numbers = np.array(plain, dtype=np.float64)
            present = ~np.isnan(numbers)
        gaps = ~np.isfinite(numbers) | ~present
        if key == "weight":
            gaps |= numbers < 0
        at = np.flatnonzero(gaps).tolist()
    except OverflowError:  # an integer too large for a float (finite, valid): the plain checks
        at = [
            i
            for i, v in enumerate(values)
            if type(v) not in (int, float)
            or (type(v) is float and not math.isfinite(v))
            or (key == "weight" and v < 0)
        ]
    if key == "ndcg":
        return [i for i in at if values[i] is not None or key not in rows[i]]
    return [i for i in at if values[i] is not None or (not nullable and key in rows[i])]


def _check_row(check: _Checker, row: Mapping[str, Any], path: str) -> None:
    """`validate_artifact`'s checks of one per-query row."""
    check.field(row, "ndcg", path, "a number or null")
    # Every change is computed from these (`assay.changes`); older or hand-made artifacts may leave them out.
    for key in ("mrr", "p_at_k", "judged_at_k"):
        check.field(row, key, path, "a number or null", required=False)
    for key in ("empty", "lt3", "expect_empty", "critical"):
        check.field(row, key, path, "true or false", required=False)
    for key in ("error", "stratum", "traffic_band", "failure_mode"):
        check.field(row, key, path, "a string or null", required=False)
    check.field(row, "tier", path, "a string", required=False)
    check.field(row, "weight", path, "a non-negative number", required=False)
    check.field(row, "n", path, "an integer", required=False)
    check.field(row, "ids", path, "a list", required=False)
    for key, each in (("ranks", "an integer or null"), ("grades", "an integer")):
        for doc_id in check.field(row, key, path, "an object", required=False) or {}:
            check.field(row[key], doc_id, f"{path}{key}.", each)


def _check_per_query(check: _Checker, data: Mapping[str, Any]) -> QueryColumns:
    """Check the report's per-query rows; they are returned as columns, for the comparison."""
    rows = data.get("per_query")
    plain = type(rows) is list and set(map(type, rows)) <= {dict}
    columns = QueryColumns(rows if plain else [])  # type: ignore[arg-type]
    if plain:
        columns.read(["id", *(key for key, _, _ in _ROW_FIELDS)])
    paths: list[str] | None = None
    if not plain or not set(map(type, columns.field("id"))) <= {str}:
        # Not a list, or rows that are not objects with a string id: those are problems already.
        good = check.rows(data, "per_query")
        columns = QueryColumns([row for _, row in good])
        paths = [path for path, _ in good]
    for i in sorted(_suspect_rows(columns)):
        _check_row(check, columns.rows[i], f"per_query[{i}]." if paths is None else paths[i])
    return columns


def validate_artifact(data: object, role: str = "report") -> None:
    """Raise ArtifactError listing every reason `data` cannot be used as a report by the gate."""
    validated(data, role)


def validated(data: object, role: str) -> QueryColumns:
    """`validate_artifact`, giving the report's per-query rows as columns (`assay.changes.QueryColumns`)."""
    if not isinstance(data, Mapping):
        raise ArtifactError([f"{role}: expected a report object, got {type(data).__name__}"])
    check = _Checker(role)
    for key in ("metrics_spec", "golden_version"):
        check.field(data, key, "", "a string")
    for key in ("k", "relevant_min_grade"):
        check.field(data, key, "", "an integer")
    scale = check.field(data, "scale", "", "an object")
    for key in ("min", "max") if scale is not None else ():
        check.field(scale, key, "scale.", "an integer")
    for tier in check.field(data, "tiers", "", "an object") or {}:
        check.aggregate(data["tiers"], tier, "tiers.")
    check.aggregate(data, "all", "")
    slices = check.field(data, "slices", "", "an object")
    for field in SLICE_KEYS.values():
        # The stratum slices are in every report; the traffic band and failure mode ones in newer ones.
        named = (
            check.field(slices, field, "slices.", "an object", required=field == "stratum")
            if slices is not None
            else None
        )
        for name in named or {}:
            check.aggregate(slices[field], name, f"slices.{field}.")
    flags = check.field(data, "flags", "", "an object", required=False)
    if flags is not None:
        check.field(flags, "errors", "flags.", "a list", required=False)
        for i, hit in enumerate(
            check.field(flags, "unexpected_hits", "flags.", "a list", required=False) or []
        ):
            if not isinstance(hit, str):
                check.problems.append(f"{role}: flags.unexpected_hits[{i}]: expected a query id (a string)")
    for path, entry in check.rows(data, "critical"):
        check.field(entry, "rank", path, "an integer or null")
        check.field(entry, "best_docs", path, "a list", required=False)
    columns = _check_per_query(check, data)
    if check.problems:
        raise ArtifactError(check.problems)
    return columns
