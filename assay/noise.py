"""The noise floor of a budget: how far a gated metric moves when nothing changed (pure, no Django).

Measured on reports of one configuration run more than once (an A/A pair at least: the same system, golden
version and parameters), per scope (the core tier, and each stratum of it) and per gated metric of the
metric table (`assay.metric_table`); docs/metrics.md, "Noise floor":

- run-to-run: the range of the scope's aggregate over the runs (largest minus smallest), the largest
  change the gate would have seen between two of them; with two runs, their absolute difference;
- the bootstrap half-width: half the width of the 95% percentile bootstrap interval of the scope's mean
  (`assay.report.bootstrap_interval` with the report's seed), resampling the queries the mean counts; the
  largest over the runs;
- the floor: the larger of the two. A budget below it gates changes that noise alone can make.

`suggest_budgets` puts warn at 1.5 times and fail at 3 times the floor, rounded up to a readable step and
never below the metric table's defaults; `below_floor` lists the thresholds under the floor and
`noise_warnings` words them for the gate (`assay.gate.compare(noise_floor=...)`). A floor is stored as
JSON (`NoiseFloor.to_dict`, read back by `NoiseFloor.from_dict`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any, NamedTuple

from assay.budgets import Budget, Budgets
from assay.changes import IDENTITY_FIELDS, TOLERANCE, per_query_value, report_seed
from assay.golden.fields import natural_key
from assay.metric_table import BY_KEY, GATED_METRICS, format_budget, format_number
from assay.report import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, bootstrap_interval

NOISE_SPEC = "1"
MIN_RUNS = 2
# The suggestion: warn a margin above the floor (two runs see less than the worst of the noise), fail at
# twice the warn, the ratio of the metric table's own defaults (0.01 / 0.025, 0.005 / 0.015).
WARN_FACTOR = 1.5
FAIL_FACTOR = 3.0
# Every gated metric lies in [0, 1]: a budget above 1 could never trip, so such a suggestion is "off".
MAX_CHANGE = 1.0
LEVELS = ("warn", "fail")
# The report fields two runs must share to be runs of one configuration: the gate's identity fields, and,
# where every run block records them, the system called and the parameters it was sent.
SAME_REPORT = IDENTITY_FIELDS
SAME_RUN = ("target", "url", "adapter", "params")
NOT_ENOUGH_RUNS = "run the baseline's configuration once more to measure the noise"


class NoiseError(ValueError):
    """Reports a floor cannot be measured from, or a floor file that cannot be read; `problems` names
    each reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class MetricNoise:
    """One metric's noise in one scope; None: not measured (no value, or no query counted)."""

    run_to_run: float | None = None
    half_width: float | None = None

    @property
    def floor(self) -> float | None:
        known = [v for v in (self.run_to_run, self.half_width) if v is not None]
        return max(known) if known else None

    def to_dict(self) -> dict[str, float | None]:
        return {"run_to_run": self.run_to_run, "half_width": self.half_width, "floor": self.floor}


class BelowFloor(NamedTuple):
    """A budget threshold under the noise floor of its scope and metric."""

    scope: str  # as the gate names it: "core", "stratum billing"
    metric: str
    level: str  # "warn" or "fail"
    threshold: float
    floor: float


@dataclass(frozen=True)
class NoiseFloor:
    """The noise of every gated metric, on the core tier and on each stratum, and what it came from."""

    golden_version: str
    runs: tuple[str, ...]  # how the caller names the runs measured: file names, run ids
    core: Mapping[str, MetricNoise]
    strata: Mapping[str, Mapping[str, MetricNoise]] = field(default_factory=dict)

    def scopes(self) -> list[tuple[str, str | None, Mapping[str, MetricNoise]]]:
        """(scope as the gate names it, stratum name or None for the core, metric -> noise)."""
        return [
            ("core", None, self.core),
            *((f"stratum {name}", name, noise) for name, noise in self.strata.items()),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "noise_spec": NOISE_SPEC,
            "golden_version": self.golden_version,
            "runs": list(self.runs),
            "bootstrap": {"level": BOOTSTRAP_LEVEL, "resamples": BOOTSTRAP_RESAMPLES},
            "core": _scope_dict(self.core),
            "strata": {name: _scope_dict(noise) for name, noise in self.strata.items()},
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "noise floor") -> NoiseFloor:
        """A floor from its `to_dict` form; raises NoiseError naming every bad key or value."""
        if not isinstance(data, Mapping):
            raise NoiseError([f"{where}: expected a JSON object, got {_kind(data)}"])
        if "noise_spec" not in data:
            hint = "write one with `assay gate --suggest-budgets REPORT ... --noise-out FILE`"
            raise NoiseError([f"{where}: not a noise floor (it has no noise_spec); {hint}"])
        problems: list[str] = []
        allowed = ("noise_spec", "golden_version", "runs", "bootstrap", "core", "strata")
        problems += [f"{where}: {key}: unknown key" for key in data if key not in allowed]
        if data.get("noise_spec") != NOISE_SPEC:
            problems.append(
                f"{where}: noise_spec: expected {NOISE_SPEC!r}, got {_shown(data.get('noise_spec'))}"
            )
        version = data.get("golden_version")
        if not isinstance(version, str):
            problems.append(f"{where}: golden_version: expected a string, got {_shown(version)}")
        runs = data.get("runs")
        if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
            problems.append(f"{where}: runs: expected a list of run names, got {_kind(runs)}")
            runs = []
        core = _read_scope(data.get("core"), f"{where}: core", problems)
        raw_strata = data.get("strata", {})
        strata: dict[str, dict[str, MetricNoise]] = {}
        if not isinstance(raw_strata, Mapping):
            problems.append(
                f"{where}: strata: expected an object of stratum -> metrics, got {_kind(raw_strata)}"
            )
        else:
            for name, noise in raw_strata.items():
                strata[str(name)] = _read_scope(noise, f"{where}: strata.{name}", problems)
        if problems:
            raise NoiseError(problems)
        return cls(golden_version=str(version), runs=tuple(runs), core=core, strata=strata)


def _scope_dict(noise: Mapping[str, MetricNoise]) -> dict[str, dict[str, float | None]]:
    return {metric: noise[metric].to_dict() for metric in GATED_METRICS if metric in noise}


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _shown(value: object) -> str:
    """A value in a message: as JSON when short (a run's parameters), else its kind."""
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return _kind(value)
    return text if len(text) < 60 else _kind(value)


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _read_scope(data: object, where: str, problems: list[str]) -> dict[str, MetricNoise]:
    if not isinstance(data, Mapping):
        problems.append(f"{where}: expected an object of metric -> noise, got {_kind(data)}")
        return {}
    scope: dict[str, MetricNoise] = {}
    for metric, entry in data.items():
        if metric not in GATED_METRICS:
            problems.append(f"{where}.{metric}: unknown metric; expected one of {', '.join(GATED_METRICS)}")
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"{where}.{metric}: expected an object with run_to_run and half_width")
            continue
        values: dict[str, float | None] = {}
        for key in ("run_to_run", "half_width"):
            value = entry.get(key)
            if value is not None and not (_is_number(value) and value >= 0):
                problems.append(f"{where}.{metric}.{key}: {_shown(value)} is not a number >= 0 or null")
                value = None
            values[key] = None if value is None else float(value)
        noise = MetricNoise(values["run_to_run"], values["half_width"])
        for key in entry:
            if key not in ("run_to_run", "half_width", "floor"):
                problems.append(f"{where}.{metric}.{key}: unknown key")
        if "floor" in entry and entry["floor"] != noise.floor:
            problems.append(
                f"{where}.{metric}.floor: {_shown(entry['floor'])} is not the larger of run_to_run and "
                "half_width: edit those, the floor follows"
            )
        scope[metric] = noise
    return scope


# ---------------------------------------------------------------------------------------------------------
# Measuring


def _report_problems(report: object, name: str) -> list[str]:
    """What `noise_floor` reads of a report, checked: every problem with its place."""
    if not isinstance(report, Mapping):
        return [f"{name}: expected a report object, got {_kind(report)}"]
    problems = [f"{name}: {key}: missing" for key in SAME_REPORT if key not in report]
    tiers, slices = report.get("tiers"), report.get("slices")
    aggregates: list[tuple[str, object]] = []
    if not isinstance(tiers, Mapping):
        problems.append(f"{name}: tiers: expected an object, got {_kind(tiers)}")
    elif "core" in tiers:
        aggregates.append(("tiers.core", tiers["core"]))
    strata = slices.get("stratum") if isinstance(slices, Mapping) else None
    if not isinstance(slices, Mapping) or "stratum" not in slices:
        problems.append(f"{name}: slices.stratum: missing")
    elif not isinstance(strata, Mapping):
        problems.append(f"{name}: slices.stratum: expected an object, got {_kind(strata)}")
    else:
        aggregates += [(f"slices.stratum.{stratum}", agg) for stratum, agg in strata.items()]
    for path, agg in aggregates:
        if not isinstance(agg, Mapping):
            problems.append(f"{name}: {path}: expected an object, got {_kind(agg)}")
            continue
        for metric in GATED_METRICS:
            entry = agg.get(metric)
            if entry is not None and not (isinstance(entry, Mapping) and _value_ok(entry.get("value"))):
                problems.append(f'{name}: {path}.{metric}: expected {{"value": a number or null}}')
    rows = report.get("per_query")
    if not isinstance(rows, list):
        return [*problems, f"{name}: per_query: expected a list, got {_kind(rows)}"]
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("id"), str):
            problems.append(f"{name}: per_query[{i}]: expected an object with a string id")
            continue
        for metric in GATED_METRICS:
            key = BY_KEY[metric].per_query
            if not (_value_ok(row.get(key)) or isinstance(row.get(key), bool)):
                problems.append(f"{name}: per_query[{i}].{key}: expected a number, true or false, or null")
        for key in ("tier", "stratum"):
            if row.get(key) is not None and not isinstance(row[key], str):
                problems.append(f"{name}: per_query[{i}].{key}: expected a string or null")
    return problems


def _value_ok(value: object) -> bool:
    return value is None or _is_number(value)


def configuration_differences(reports: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """Why `reports` are not runs of one configuration (empty: they are): a field of `SAME_REPORT` that
    differs, or one of `SAME_RUN` that every run block records and that differs."""
    problems = []
    runs: list[Mapping[str, Any]] = [r["run"] if isinstance(r.get("run"), Mapping) else {} for r in reports]
    fields = [(key, [r.get(key) for r in reports]) for key in SAME_REPORT]
    fields += [
        (f"run.{key}", [run.get(key) for run in runs]) for key in SAME_RUN if all(key in run for run in runs)
    ]
    for key, values in fields:
        if any(value != values[0] for value in values):
            shown = ", ".join(f"{name} {_shown(value)}" for name, value in zip(names, values, strict=True))
            problems.append(
                f"{key} differs ({shown}): the noise floor is measured on runs of one configuration "
                "(the same system, golden version and parameters)"
            )
    return problems


Figures = dict[str, tuple[float | None, float | None]]  # metric -> (aggregate, bootstrap half-width)


def _aggregate(agg: object, metric: str) -> float | None:
    entry = agg.get(metric) if isinstance(agg, Mapping) else None
    value = entry.get("value") if isinstance(entry, Mapping) else None
    return None if value is None else float(value)


def _figures(agg: object, rows: Sequence[Mapping[str, Any]], seed: int) -> Figures:
    figures: Figures = {}
    for key in GATED_METRICS:
        metric = BY_KEY[key]
        values = [v for row in rows if (v := per_query_value(row, metric)) is not None]
        half: float | None = None
        if values and min(values) == max(values):
            half = 0.0  # every resample is the same multiset of one value (an empty rate with no empty)
        elif values:
            # One call per scope and metric: its resamples are drawn as index matrices, not one by one.
            interval = bootstrap_interval(values, seed=seed)
            half = (interval["high"] - interval["low"]) / 2.0
        figures[key] = (_aggregate(agg, key), half)
    return figures


def _run_figures(report: Mapping[str, Any], strata: Sequence[str]) -> dict[str | None, Figures]:
    """One report's figures per scope (None: the core tier; else a stratum of it)."""
    core_rows = [row for row in report["per_query"] if (row.get("tier") or "core") == "core"]
    by_stratum: dict[str, list[Mapping[str, Any]]] = {}
    for row in core_rows:
        if row.get("stratum") is not None:
            by_stratum.setdefault(row["stratum"], []).append(row)
    seed = report_seed(report)
    slices = report["slices"]["stratum"]
    figures: dict[str | None, Figures] = {None: _figures(report["tiers"].get("core"), core_rows, seed)}
    for name in strata:
        figures[name] = _figures(slices.get(name), by_stratum.get(name, []), seed)
    return figures


def _combine(figures: Sequence[tuple[float | None, float | None]]) -> MetricNoise:
    values = [value for value, _ in figures if value is not None]
    halves = [half for _, half in figures if half is not None]
    return MetricNoise(
        run_to_run=max(values) - min(values) if len(values) >= MIN_RUNS else None,
        half_width=max(halves) if halves else None,
    )


def noise_floor(reports: Sequence[object], names: Sequence[str] | None = None) -> NoiseFloor:
    """The noise floor of `reports`, runs of one configuration (`names`: how to call them in messages
    and in the floor; default "report 1", ...). Raises NoiseError: fewer than `MIN_RUNS` reports, a
    report that is not one, or reports of different configurations."""
    labels = list(names) if names is not None else [f"report {i}" for i in range(1, len(reports) + 1)]
    if len(labels) != len(reports):
        raise ValueError("one name per report")
    if len(reports) < MIN_RUNS:
        raise NoiseError(
            [
                f"{len(reports)} run{'s' if len(reports) != 1 else ''}: the noise floor needs at least "
                f"{MIN_RUNS} runs of one configuration (an A/A pair); {NOT_ENOUGH_RUNS}"
            ]
        )
    problems = [
        p for report, name in zip(reports, labels, strict=True) for p in _report_problems(report, name)
    ]
    if problems:
        raise NoiseError(problems)
    checked: list[Mapping[str, Any]] = [report for report in reports if isinstance(report, Mapping)]
    problems = configuration_differences(checked, labels)
    if problems:
        raise NoiseError(problems)
    strata = sorted({str(name) for r in checked for name in r["slices"]["stratum"]}, key=natural_key)
    per_run = [_run_figures(report, strata) for report in checked]

    def scope(key: str | None) -> dict[str, MetricNoise]:
        return {metric: _combine([run[key][metric] for run in per_run]) for metric in GATED_METRICS}

    return NoiseFloor(
        golden_version=str(checked[0]["golden_version"]),
        runs=tuple(labels),
        core=scope(None),
        strata={name: scope(name) for name in strata},
    )


# ---------------------------------------------------------------------------------------------------------
# Budgets against the floor


def readable_ceiling(value: float, factor: float = 1.0) -> float:
    """The smallest multiple of a readable step at or above `value` x `factor`: half a unit of its second
    significant digit (0.0123 -> 0.015, 0.041 -> 0.045, 0.26 -> 0.3, 0.01 -> 0.01); 0 for 0."""
    # In decimal, from the numbers as written: 1.5 x 0.4 is 0.6, not the float 0.6000000000000001 (-> 0.65).
    exact = Decimal(repr(float(value))) * Decimal(repr(float(factor)))
    if exact <= 0:
        return 0.0
    step = Decimal(5).scaleb(exact.adjusted() - 1)
    return float((exact / step).to_integral_value(rounding=ROUND_CEILING) * step)


def _suggest_level(
    current: float | None, noise_floor: float, factor: float, default: float | None
) -> float | None:
    if current is None:
        return None  # a level that is off stays off: the suggestion moves thresholds, not what is gated
    value = max(default or 0.0, readable_ceiling(noise_floor, factor))
    if value <= 0:
        return current  # no noise and no default to go by
    return None if value > MAX_CHANGE else value


def _suggest_scope(current: Mapping[str, Budget], noise: Mapping[str, MetricNoise]) -> dict[str, Budget]:
    suggested = dict(current)
    for key in GATED_METRICS:
        floor = noise[key].floor if key in noise else None
        if floor is None:
            continue
        metric = BY_KEY[key]
        suggested[key] = Budget(
            warn=_suggest_level(current[key].warn, floor, WARN_FACTOR, metric.default_warn),
            fail=_suggest_level(current[key].fail, floor, FAIL_FACTOR, metric.default_fail),
        )
    return suggested


def suggest_budgets(floor: NoiseFloor, budgets: Budgets | None = None) -> Budgets:
    """`budgets` (default: the defaults) with each gated threshold moved to the rule of docs/metrics.md,
    "Noise floor": warn = 1.5 x floor and fail = 3 x floor, each rounded up by `readable_ceiling` and never
    below the metric table's default; a level that is off stays off; a metric the floor did not measure
    keeps its budgets. Every stratum the floor measured gets budgets (its own floor, the core's levels
    when the budgets do not name it); the rest of `budgets` is kept as it is."""
    base = budgets if budgets is not None else Budgets()
    strata = dict(base.strata)
    for name, noise in floor.strata.items():
        strata[name] = _suggest_scope(base.strata.get(name, base.core), noise)
    return dataclasses.replace(base, core=_suggest_scope(base.core, floor.core), strata=strata)


def below_floor(budgets: Budgets, floor: NoiseFloor) -> list[BelowFloor]:
    """Every threshold of `budgets` below the floor of its scope and metric: the core's, and those of the
    strata the budgets name (a stratum they do not name is not gated). In scope, metric, level order."""
    found = []
    for scope, name, noise in floor.scopes():
        scoped = budgets.core if name is None else budgets.strata.get(name)
        if scoped is None:
            continue
        for metric in GATED_METRICS:
            value = noise[metric].floor if metric in noise else None
            if value is None:
                continue
            for level in LEVELS:
                threshold = getattr(scoped[metric], level)
                if threshold is not None and threshold < value - TOLERANCE:
                    found.append(BelowFloor(scope, metric, level, threshold, value))
    return found


def noise_warnings(budgets: Budgets, floor: NoiseFloor | None) -> list[tuple[str, str, str]]:
    """(scope, metric, message) for each threshold below the floor, in the gate's words; none without a
    floor."""
    if floor is None:
        return []
    noise = {scope: metrics for scope, _, metrics in floor.scopes()}
    warnings = []
    for found in below_floor(budgets, floor):
        shown, measured = BY_KEY[found.metric], noise[found.scope][found.metric]
        warnings.append(
            (
                found.scope,
                found.metric,
                f"{found.scope} {shown.label} {found.level} budget {found.threshold} is below the noise "
                f"floor {shown.format(found.floor)} (run-to-run {shown.format(measured.run_to_run)}, "
                f"bootstrap half-width {shown.format(measured.half_width)}): a change this small can be "
                "noise",
            )
        )
    return warnings


def render_floor(floor: NoiseFloor, budgets: Budgets, suggested: Budgets) -> str:
    """The floor as a plain-text table beside the budgets and the suggestion; "*" marks a budget below it."""
    below = {(b.scope, b.metric) for b in below_floor(budgets, floor)}
    rows = [("scope", "metric", "run-to-run", "half-width", "floor", "budget warn / fail", "suggested")]
    for scope, name, noise in floor.scopes():
        current = budgets.core if name is None else budgets.strata.get(name)
        proposed = suggested.core if name is None else suggested.strata.get(name)
        for metric in GATED_METRICS:
            measured = noise.get(metric, MetricNoise())
            budget = "not gated"
            if current is not None:
                budget = format_budget(current[metric].warn, current[metric].fail) or "off"
            if (scope, metric) in below:
                budget += " *"
            suggestion = ""
            if proposed is not None:
                suggestion = format_budget(proposed[metric].warn, proposed[metric].fail) or "off"
            rows.append(
                (
                    scope,
                    BY_KEY[metric].label,
                    format_number(measured.run_to_run),
                    format_number(measured.half_width),
                    format_number(measured.floor),
                    budget,
                    suggestion,
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        f"noise floor of {len(floor.runs)} runs ({', '.join(floor.runs)}) on golden version "
        f"{floor.golden_version}: the larger of the run-to-run range and the {BOOTSTRAP_LEVEL:.0%} bootstrap "
        'half-width (docs/metrics.md, "Noise floor")',
        *(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ),
    ]
    if below:
        lines.append("* below the noise floor: a change this small can be noise")
    return "\n".join(lines) + "\n"
