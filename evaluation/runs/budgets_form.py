"""The budgets page's form: one row per scope (the core tier, its traffic-weighted means, the shadow tier,
each stratum, traffic band and failure mode of the set), one column per gated metric and level (warn,
fail), each cell a number, `off`, or empty for its default; the error budget and the critical rank below.
The budgets file (`assay.budgets`) is what it reads and writes: `budgets_grid` shows a `Budgets`, and
`budgets_from_post` turns the posted form back into the nested budgets document, every mistake worded
with the cell it is in. The JSON stays the file to download and upload (evaluation.runs.views.budgets_edit).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay import display
from assay.budgets import (
    DEFAULT_BUDGETS,
    DEFAULT_CRITICAL_RANK,
    DEFAULT_MAX_ERROR_RATE,
    SLICE_KEYS,
    WEIGHTED_GATED,
    Budget,
    Budgets,
)
from assay.inputs import whole_number
from assay.metric_table import BY_KEY, GATED_METRICS

OFF = "off"
LEVELS = ("warn", "fail")
# How each slice kind is named on the page (the budgets file's key -> a row's label).
SLICE_LABELS = {"strata": "stratum", "traffic_bands": "traffic band", "failure_modes": "failure mode"}
SLICE_HEADINGS = {"strata": "Strata", "traffic_bands": "Traffic bands", "failure_modes": "Failure modes"}


@dataclass(frozen=True, slots=True)
class Column:
    """A gated metric: its label, what its budget measures, its default levels."""

    metric: str
    label: str
    unit: str
    default: Budget

    @property
    def default_text(self) -> str:
        return " / ".join(display.threshold(getattr(self.default, level)) for level in LEVELS)


def _unit(metric: str) -> str:
    m = BY_KEY[metric]
    if m.higher_is_better:
        return f"{m.worse_word}, on its 0 to 1 scale"
    return f"{m.worse_word}, a share of the queries (0.01 = 1 point)"


COLUMNS = tuple(Column(m, BY_KEY[m].label, _unit(m), DEFAULT_BUDGETS[m]) for m in GATED_METRICS)


@dataclass
class Cell:
    """One threshold's input: its form field, what it holds, what an empty cell means."""

    name: str
    value: str
    placeholder: str
    label: str  # for screen readers: "stratum billing, nDCG@k warn"
    heading: str  # its column's, shown beside it on a phone (the grid's rows as cards): "nDCG@k warn"
    error: str = ""


@dataclass
class Row:
    key: str  # "core", "weighted", "shadow", "strata:billing", ...
    label: str
    note: str  # what an empty cell means in this row
    cells: list[Cell | None]  # per COLUMNS x LEVELS; None where the row has no such budget
    gate_field: str = ""  # a slice row's "gated" checkbox
    gated: bool = True
    error: str = ""


@dataclass
class BudgetsGrid:
    rows: list[Row]
    max_error_rate: str
    critical_rank: str
    errors: list[str] = field(default_factory=list)  # every problem, worded with its cell
    anchors: dict[str, str] = field(default_factory=dict)  # a problem -> the id of its input on the page

    @property
    def columns(self) -> tuple[Column, ...]:
        return COLUMNS

    @property
    def width(self) -> int:
        """The table's columns: the scope, then warn and fail per metric."""
        return 1 + len(LEVELS) * len(COLUMNS)

    @property
    def groups(self) -> list[tuple[str, list[Row]]]:
        """The rows by heading: the tiers, then each kind of slice the set has."""
        out: list[tuple[str, list[Row]]] = [("Tiers", [r for r in self.rows if ":" not in r.key])]
        for key, heading in SLICE_HEADINGS.items():
            rows = [r for r in self.rows if r.key.startswith(f"{key}:")]
            if rows:
                out.append(
                    (f"{heading}: ticked ones gate, with the core's budgets where a cell is empty", rows)
                )
        return out


def _text(value: float | None) -> str:
    return OFF if value is None else display.threshold(value)


def _field(row: str, metric: str, level: str) -> str:
    return f"b.{row}.{metric}.{level}"


def _row_label(key: str) -> str:
    if ":" not in key:
        return {"core": "core tier", "weighted": "core tier, traffic-weighted", "shadow": "shadow tier"}[key]
    kind, name = key.split(":", 1)
    return f"{SLICE_LABELS[kind]} {name}"


def _cells(
    key: str, metrics: Iterable[str], shown: Mapping[str, Budget | None], empty: Mapping[str, str]
) -> list[Cell | None]:
    """The row's cells: `shown[metric]` is what a cell holds (None: empty), `empty[metric]` what an
    empty cell means (the placeholder)."""
    wanted = set(metrics)
    cells: list[Cell | None] = []
    for column in COLUMNS:
        for level in LEVELS:
            if column.metric not in wanted:
                cells.append(None)
                continue
            budget = shown.get(column.metric)
            cells.append(
                Cell(
                    name=_field(key, column.metric, level),
                    value="" if budget is None else _text(getattr(budget, level)),
                    placeholder=empty[column.metric].split(" / ")[LEVELS.index(level)],
                    label=f"{_row_label(key)}, {column.label} {level}",
                    heading=f"{column.label} {level}",
                )
            )
    return cells


def slice_names(budgets: Budgets, found: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Each slice kind's names: those the set's queries have (`found`) and those the budgets name."""
    return {
        key: sorted({*found.get(key, ()), *budgets.slices(key)} - {""}, key=str.casefold)
        for key in SLICE_KEYS
    }


def budgets_grid(budgets: Budgets, names: Mapping[str, list[str]]) -> BudgetsGrid:
    """The form showing `budgets`: core cells hold their thresholds; a slice cell is empty where it equals
    the core's (it follows the core), and a slice the budgets do not name is not gated."""
    core_text = {
        m: f"{_text(DEFAULT_BUDGETS[m].warn)} / {_text(DEFAULT_BUDGETS[m].fail)}" for m in GATED_METRICS
    }
    rows = [
        Row(
            "core", "core tier", "empty: the default", _cells("core", GATED_METRICS, budgets.core, core_text)
        ),
        Row(
            "weighted",
            "core tier, traffic-weighted",
            "empty: off",
            _cells(
                "weighted",
                WEIGHTED_GATED,
                {m: b if b != Budget() else None for m, b in budgets.weighted.items()},
                dict.fromkeys(WEIGHTED_GATED, f"{OFF} / {OFF}"),
            ),
        ),
        Row(
            "shadow",
            "shadow tier",
            "empty: the default",
            _cells("shadow", ["empty_rate"], {"empty_rate": budgets.shadow_empty_rate}, core_text),
        ),
    ]
    follow = {m: f"{_text(budgets.core[m].warn)} / {_text(budgets.core[m].fail)}" for m in GATED_METRICS}
    for key in SLICE_KEYS:
        named = budgets.slices(key)
        for name in names.get(key, []):
            own = named.get(name, {})
            shown = {m: b if b != budgets.core[m] else None for m, b in own.items()}
            row_key = f"{key}:{name}"
            rows.append(
                Row(
                    row_key,
                    _row_label(row_key),
                    "empty: the core's",
                    _cells(row_key, GATED_METRICS, shown, follow),
                    gate_field=f"gate.{row_key}",
                    gated=name in named,
                )
            )
    return BudgetsGrid(
        rows=rows,
        max_error_rate=f"{budgets.max_error_rate:g}",
        critical_rank=str(budgets.critical_rank),
    )


def _threshold(
    raw: str, cell: Cell, problems: list[str], anchors: dict[str, str]
) -> tuple[bool, float | None]:
    """(given, value): not given when empty; None when `off`; else a positive finite number."""
    text = raw.strip()
    if not text:
        return False, None
    if text.lower() == OFF:
        return True, None
    try:
        value = float(text)
    except ValueError:
        cell.error = f"{text!r} is not a number: give a number above 0, {OFF}, or leave it empty"
    else:
        if math.isfinite(value) and value > 0:
            return True, value
        cell.error = (
            f"{text} is not above 0: a budget of 0 trips on an unchanged metric (type {OFF} to turn it off)"
        )
    problems.append(f"{cell.label}: {cell.error}")
    anchors[problems[-1]] = cell.name  # the page's cell inputs have their names as ids
    return False, None


def budgets_from_post(
    post: Mapping[str, str], names: Mapping[str, list[str]]
) -> tuple[BudgetsGrid, dict[str, Any] | None]:
    """The posted form as the nested budgets document (None when a cell is wrong) and the grid to show
    again with what was typed and each mistake in its cell."""
    grid = budgets_grid(Budgets(), names)
    problems: list[str] = []
    anchors = grid.anchors
    data: dict[str, Any] = {}
    slices: dict[str, dict[str, Any]] = {key: {} for key in SLICE_KEYS}
    for row in grid.rows:
        if row.gate_field:
            row.gated = post.get(row.gate_field) == "on"
        levels: dict[str, dict[str, float | None]] = {}
        for cell in row.cells:
            if cell is None:
                continue
            cell.value = post.get(cell.name, "")
            _, metric, level = cell.name.rsplit(".", 2)
            given, value = _threshold(cell.value, cell, problems, anchors)
            if given:
                levels.setdefault(metric, {})[level] = value
        for metric, pair in levels.items():
            warn, fail = pair.get("warn"), pair.get("fail")
            if warn is not None and fail is not None and warn > fail:
                row.error = (
                    f"{BY_KEY[metric].label}: warn {display.threshold(warn)} is above fail"
                    f" {display.threshold(fail)}: the fail level would trip first"
                )
                problems.append(f"{row.label}, {row.error}")
                anchors[problems[-1]] = _field(row.key, metric, "warn")
        if row.key == "core":
            data.update(levels)
        elif row.key == "weighted":
            data["weighted"] = levels
        elif row.key == "shadow":
            data["shadow"] = levels
        elif row.gated:
            kind, name = row.key.split(":", 1)
            slices[kind][name] = levels
    grid.max_error_rate = post.get("max_error_rate", "").strip()
    grid.critical_rank = post.get("critical_rank", "").strip()
    if grid.max_error_rate:
        try:
            rate = float(grid.max_error_rate)
            if not 0 <= rate <= 1:
                raise ValueError
            data["max_error_rate"] = rate
        except ValueError:
            problems.append(
                f"error budget: {grid.max_error_rate!r} is not a share of the queries from 0 to 1 (0.02 = 2%)"
            )
            anchors[problems[-1]] = "max_error_rate"
    if grid.critical_rank:
        rank = whole_number(grid.critical_rank, low=1)
        if rank is not None:
            data["critical_rank"] = rank
        else:
            problems.append(f"critical rank: {grid.critical_rank!r} is not a whole number from 1 up")
            anchors[problems[-1]] = "critical_rank"
    data.update({key: value for key, value in slices.items() if value})
    grid.errors = problems
    return grid, (None if problems else data)


DEFAULTS_NOTE = (
    f"Defaults: error budget {DEFAULT_MAX_ERROR_RATE:g} (any error fails), critical rank"
    f" {DEFAULT_CRITICAL_RANK}."
)
