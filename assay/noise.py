"""The noise floor of a budget: how far a gated metric moves between runs when nothing changed (pure, no
Django).

Measured on reports of one configuration run more than once (an A/A pair at least: the same system, golden
version and parameters), per scope (the core tier, and each stratum of it) and per gated metric of the
metric table (`assay.metric_table`); docs/metrics.md, "Noise floor": every query's change between every
pair of the runs (paired as the gate pairs them, `assay.changes`), their root mean square the per-query
noise, and the floor 1.96 x that noise / sqrt(n), the change of the scope's mean a re-run exceeds about 5%
of the time, so a small stratum gets the wide floor it has (a stratum's per-query noise is never taken
below the core's). A deterministic engine has a floor of 0. How far a mean would move on another sample of
queries is not part of it: the gate compares runs of the same queries, paired, and prints that change's own
interval and p-value, which decide a FAIL on a metric that moves (`moves`).

`suggest_budgets` puts warn at the floor and fail at 1.5 times it, rounded up to a readable step and
never below the metric table's defaults; `below_floor` lists the thresholds under the floor and
`noise_warnings` words them for the gate, one warning per scope (`assay.gate.compare(noise_floor=...)`).
The floor also records how the runs moved the critical queries: each one's best document's rank in every
run, and the deepest rank at which two runs' lists of any query differed; `NoiseFloor.critical_reach` says
how low the unchanged configuration was seen putting a critical query (docs/metrics.md, "The drift gate",
item 6). A floor is stored as JSON (`NoiseFloor.to_dict`, read back by `NoiseFloor.from_dict`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from itertools import compress
from operator import ne
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from assay.budgets import Budget, Budgets
from assay.changes import IDENTITY_FIELDS, TOLERANCE, QueryColumns, ReportPairs
from assay.gate_check import ArtifactError, validated
from assay.golden.fields import natural_key
from assay.metric_table import BY_KEY, GATED_METRICS, format_budget, format_number

NOISE_SPEC = "4"
# Spec "2" floors were the range of the runs' aggregate values, spec "1" ones also counted the bootstrap
# half-width of each run's mean: read as their run-to-run figures (a floor without a per-query noise).
RANGE_SPECS = ("1", "2")
# Spec "3" floors have the per-query noise but not the critical queries' ranks nor the deepest change: read
# without them (the gate holds every critical query to its top ranks, as it did).
OLDER_SPECS = (*RANGE_SPECS, "3")
MIN_RUNS = 2
# The floor: this many standard errors of an A/A change of a scope's mean, its two-sided 95% bound under
# the normal approximation (a re-run exceeds it in the worse direction about 2.5% of the time).
FLOOR_QUANTILE = 1.96
# The suggestion: warn at the floor, fail at 1.5 times it (2.9 standard errors: a re-run reaches it about
# 0.2% of the time per scope and metric; the gate's paired evidence keeps what still does from failing).
WARN_FACTOR = 1.0
FAIL_FACTOR = 1.5
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
    """One metric's noise in one scope: the floor of the scope's mean change, the scope's own per-query
    noise (the root mean square of every query's change between two of the runs) and its queries counted;
    None: not measured (no query counted in any pair of runs; an older floor file has no per-query noise)."""

    floor: float | None = None
    query_sd: float | None = None
    n: int | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"query_sd": self.query_sd, "n": self.n, "floor": self.floor}


class CriticalReach(NamedTuple):
    """How low the A/A runs were seen putting a critical query's best document, when they could put it out
    of its top ranks at all: its `ranks` in the runs that answered it (None: not returned), and the `reach`
    of their movement, the larger of its worst rank there and the floor's deepest change (None: beyond
    every rank, an A/A run did not return it)."""

    ranks: tuple[int | None, ...]
    reach: int | None
    deepest_change: int | None

    def reaches(self, rank: int | None) -> bool:
        """Whether `rank` (None: not returned) is within the reach."""
        return self.reach is None or (rank is not None and rank <= self.reach)


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
    # Each critical query's best document's rank in each run that answered it (None: not returned).
    critical: Mapping[str, tuple[int | None, ...]] = field(default_factory=dict)
    # The deepest rank at which two of the runs returned different lists for a query (0: every list the same
    # in every run); None: not measured (no query's list in two runs, or an older floor file).
    deepest_change: int | None = None

    def moves(self, metric: str) -> bool:
        """Whether the engine moved `metric` between the runs: the core's per-query noise (the floor, for an
        older file without it) is above 0. A stratum's noise is never below the core's, so this is whether
        any scope moved; the gate asks its paired evidence of a FAIL on such a metric only."""
        noise = self.core.get(metric)
        if noise is None:
            return False
        figure = noise.query_sd if noise.query_sd is not None else noise.floor
        return figure is not None and figure > 0

    def critical_reach(self, query_id: str, critical_rank: int) -> CriticalReach | None:
        """How low the unchanged configuration was seen putting critical query `query_id`, when the runs show
        it can be out of its top `critical_rank` by run-to-run movement alone: they had it within those
        ranks at least once and the engine moved between them (its ranks differ, or the deepest change is
        above 0). None otherwise: no record of it, a deterministic engine, or never within its top ranks
        (docs/metrics.md, "The drift gate", item 6)."""
        ranks = self.critical.get(query_id)
        if not ranks or not any(rank is not None and rank <= critical_rank for rank in ranks):
            return None
        if len(set(ranks)) == 1 and not self.deepest_change:
            return None
        worst = None if None in ranks else max(rank for rank in ranks if rank is not None)
        reach = None if worst is None else max(worst, self.deepest_change or 0)
        return CriticalReach(tuple(ranks), reach, self.deepest_change)

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
            "core": _scope_dict(self.core),
            "strata": {name: _scope_dict(noise) for name, noise in self.strata.items()},
            "critical": {query_id: list(ranks) for query_id, ranks in self.critical.items()},
            "deepest_change": self.deepest_change,
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
        spec = data.get("noise_spec")
        older = spec in RANGE_SPECS
        allowed = (
            "noise_spec",
            "golden_version",
            "runs",
            "core",
            "strata",
            *(("bootstrap",) if older else ()),
            *(("critical", "deepest_change") if spec not in OLDER_SPECS else ()),
        )
        problems += [f"{where}: {key}: unknown key" for key in data if key not in allowed]
        if spec != NOISE_SPEC and spec not in OLDER_SPECS:
            problems.append(f"{where}: noise_spec: expected {NOISE_SPEC!r}, got {_shown(spec)}")
        version = data.get("golden_version")
        if not isinstance(version, str):
            problems.append(f"{where}: golden_version: expected a string, got {_shown(version)}")
        runs = data.get("runs")
        if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
            problems.append(f"{where}: runs: expected a list of run names, got {_kind(runs)}")
            runs = []
        core = _read_scope(data.get("core"), f"{where}: core", problems, older=older)
        raw_strata = data.get("strata", {})
        strata: dict[str, dict[str, MetricNoise]] = {}
        if not isinstance(raw_strata, Mapping):
            problems.append(
                f"{where}: strata: expected an object of stratum -> metrics, got {_kind(raw_strata)}"
            )
        else:
            for name, noise in raw_strata.items():
                strata[str(name)] = _read_scope(noise, f"{where}: strata.{name}", problems, older=older)
        critical = _read_critical(data.get("critical", {}), f"{where}: critical", problems)
        deepest = data.get("deepest_change")
        if deepest is not None and (isinstance(deepest, bool) or not isinstance(deepest, int) or deepest < 0):
            problems.append(f"{where}: deepest_change: {_shown(deepest)} is not an integer >= 0 or null")
            deepest = None
        if problems:
            raise NoiseError(problems)
        return cls(
            golden_version=str(version),
            runs=tuple(runs),
            core=core,
            strata=strata,
            critical=critical,
            deepest_change=deepest,
        )


def _scope_dict(noise: Mapping[str, MetricNoise]) -> dict[str, dict[str, float | int | None]]:
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


def _is_rank(value: object) -> bool:
    return value is None or (not isinstance(value, bool) and isinstance(value, int) and value >= 1)


def _read_critical(data: object, where: str, problems: list[str]) -> dict[str, tuple[int | None, ...]]:
    if not isinstance(data, Mapping):
        problems.append(f"{where}: expected an object of query id -> ranks, got {_kind(data)}")
        return {}
    critical = {}
    for query_id, ranks in data.items():
        if not isinstance(ranks, list) or not all(map(_is_rank, ranks)):
            problems.append(
                f"{where}.{query_id}: expected a list of ranks (integers >= 1, null: not returned), got "
                f"{_shown(ranks)}"
            )
            continue
        critical[str(query_id)] = tuple(ranks)
    return critical


def _read_scope(data: object, where: str, problems: list[str], *, older: bool) -> dict[str, MetricNoise]:
    if not isinstance(data, Mapping):
        problems.append(f"{where}: expected an object of metric -> noise, got {_kind(data)}")
        return {}
    # An older floor's run-to-run range is read as the floor; its other figures are read past.
    known = ("run_to_run", "half_width", "floor") if older else ("query_sd", "n", "floor")
    scope: dict[str, MetricNoise] = {}
    for metric, entry in data.items():
        if metric not in GATED_METRICS:
            problems.append(f"{where}.{metric}: unknown metric; expected one of {', '.join(GATED_METRICS)}")
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"{where}.{metric}: expected an object with {' and '.join(known[-2:])}")
            continue
        problems += [f"{where}.{metric}.{key}: unknown key" for key in entry if key not in known]
        figures: dict[str, float | None] = {}
        for key in ("run_to_run",) if older else ("query_sd", "floor"):
            value = entry.get(key)
            if value is not None and not (_is_number(value) and value >= 0):
                problems.append(f"{where}.{metric}.{key}: {_shown(value)} is not a number >= 0 or null")
                value = None
            figures[key] = None if value is None else float(value)
        if older:
            scope[metric] = MetricNoise(figures["run_to_run"])
            continue
        n = entry.get("n")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            problems.append(f"{where}.{metric}.n: {_shown(n)} is not an integer >= 1 or null")
            n = None
        scope[metric] = MetricNoise(figures["floor"], figures["query_sd"], n)
    return scope


# ---------------------------------------------------------------------------------------------------------
# Measuring


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


class _Movement:
    """Every query's change of one metric in one scope, over the pairs of runs, as the floor needs it."""

    def __init__(self) -> None:
        self.squares = 0.0
        self.changes = 0
        self.n = 0  # the most queries one pair of runs counted

    def add(self, pairs: NDArray[np.float64]) -> None:
        deltas = pairs[:, 1] - pairs[:, 0]
        self.squares += float(np.dot(deltas, deltas))
        self.changes += deltas.size
        self.n = max(self.n, deltas.size)

    @property
    def query_sd(self) -> float | None:
        return math.sqrt(self.squares / self.changes) if self.changes else None


def _deepest_difference(one: Sequence[object], other: Sequence[object]) -> int:
    """The deepest rank (1-based) at which two returned lists differ; 0 when they are the same."""
    if one == other:
        return 0
    if len(one) != len(other):
        return max(len(one), len(other))
    return next((at + 1 for at in range(len(one) - 1, -1, -1) if one[at] != other[at]), 0)


def _answered(rows: QueryColumns) -> list[list[Any] | None]:
    """Each row's returned list (`ids`); None where the query errored or the row has no list."""
    lists, errors = rows.field("ids"), rows.field("error")
    if errors.count(None) == len(errors) and set(map(type, lists)) <= {list}:
        return list(lists)
    return [
        ids if error is None and type(ids) is list else None for ids, error in zip(lists, errors, strict=True)
    ]


def _deepest_change(columns: Sequence[QueryColumns]) -> int | None:
    """The deepest rank at which two runs' lists of a query answered in both differ (0: none differs;
    None: no query's list is in two runs). Two runs' lists differ that deep exactly when one of them
    differs that deep from the first run that answered the query, so each list is compared with that one
    only, a run at a time (in the first run's query order, which runs of one golden version share)."""
    order = columns[0].ids
    reference = _answered(columns[0])
    deepest: int | None = None
    for rows in columns[1:]:
        lists = _answered(rows)
        if rows.ids != order:  # other queries, or another order: each list put at its query's place
            placed = dict(zip(rows.ids, lists, strict=True))
            lists = [placed.get(query_id) for query_id in order]
        if deepest is None and any(map(_both, lists, reference)):
            deepest = 0
        for at in compress(range(len(order)), map(ne, lists, reference)):  # the lists that differ
            ids, seen = lists[at], reference[at]
            if seen is None:
                reference[at] = ids  # the first run that answered the query
            elif ids is not None:
                deepest = max(deepest or 0, _deepest_difference(ids, seen))
    return deepest


def _both(one: object, other: object) -> bool:
    return one is not None and other is not None


def _critical_ranks(
    reports: Sequence[Mapping[str, Any]], columns: Sequence[QueryColumns]
) -> dict[str, tuple[int | None, ...]]:
    """Each critical query's best document's rank in every run that answered it (None: not returned)."""
    critical: dict[str, list[int | None]] = {}
    for report, rows in zip(reports, columns, strict=True):
        errors = rows.field("error")
        errored = {rows.ids[at] for at, error in enumerate(errors) if error is not None}
        for entry in report["critical"]:
            if entry["id"] not in errored:  # an errored query was not answered: its rank says nothing
                critical.setdefault(entry["id"], []).append(entry["rank"])
    return {query_id: tuple(ranks) for query_id, ranks in critical.items()}


def _floor(sd: float | None, n: int) -> float | None:
    return None if sd is None or not n else FLOOR_QUANTILE * sd / math.sqrt(n)


def noise_floor(reports: Sequence[object], names: Sequence[str] | None = None) -> NoiseFloor:
    """The noise floor of `reports`, runs of one configuration (`names`: how to call them in messages
    and in the floor; default "report 1", ...). Raises NoiseError: fewer than `MIN_RUNS` reports, a
    report that is not one (every problem `assay.gate_check` finds), or reports of different
    configurations."""
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
    problems: list[str] = []
    columns: list[QueryColumns] = []
    for report, name in zip(reports, labels, strict=True):
        try:
            columns.append(validated(report, name))
        except ArtifactError as error:
            problems += error.problems
    if problems:
        raise NoiseError(problems)
    checked: list[Mapping[str, Any]] = [report for report in reports if isinstance(report, Mapping)]
    problems = configuration_differences(checked, labels)
    if problems:
        raise NoiseError(problems)
    strata = sorted({str(name) for r in checked for name in r["slices"]["stratum"]}, key=natural_key)

    # Every pair of runs, each query paired as the gate pairs it (`assay.changes`): the core tier, and each
    # stratum of it.
    moved = {scope: {m: _Movement() for m in GATED_METRICS} for scope in (None, *strata)}
    for later, earlier in itertools.combinations(reversed(columns), 2):
        pairs = ReportPairs(later, earlier)
        core_now, core_then = later.where("tier", "core", "core"), earlier.where("tier", "core", "core")
        for scope in (None, *strata):
            now, then = core_now, core_then
            if scope is not None:
                now, then = now & later.where("stratum", scope), then & earlier.where("stratum", scope)
            paired = pairs.scope(now, then, GATED_METRICS).pairs
            for metric in GATED_METRICS:
                moved[scope][metric].add(np.asarray(paired[metric], dtype=np.float64).reshape(-1, 3))

    core_sd = {metric: moved[None][metric].query_sd for metric in GATED_METRICS}

    def measured(name: str | None) -> dict[str, MetricNoise]:
        noise = {}
        for metric in GATED_METRICS:
            movement = moved[name][metric]
            own = movement.query_sd
            # A stratum's few queries that happened not to move are no proof that it is steady.
            used = own if name is None or own is None else max(own, core_sd[metric] or 0.0)
            noise[metric] = MetricNoise(_floor(used, movement.n), own, movement.n or None)
        return noise

    return NoiseFloor(
        golden_version=str(checked[0]["golden_version"]),
        runs=tuple(labels),
        core=measured(None),
        strata={name: measured(name) for name in strata},
        critical=_critical_ranks(checked, columns),
        deepest_change=_deepest_change(columns),
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
    # The lower bound says which change matters to the product: the metric table's default, or, for a
    # metric without one, the budget the user chose. Only the measured movement raises it.
    value = max(default if default is not None else current, readable_ceiling(noise_floor, factor))
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
    "Noise floor": warn = the floor and fail = 1.5 x floor, each rounded up by `readable_ceiling` and never
    below the metric table's default (the budget given, for a metric without one), so a floor of 0 suggests
    the defaults; a level that is off stays off; a level above 1 is turned off (it could never trip); a
    metric the floor did not measure keeps its budgets. Every stratum the floor measured gets budgets (its
    own floor, the core's levels when the budgets do not name it); the rest of `budgets` is kept as it is."""
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


def below_floor_named(budgets: Budgets, floor: NoiseFloor) -> dict[str, dict[str, str]]:
    """`below_floor` grouped: scope -> metric -> its thresholds below the floor in words ("nDCG@k warn
    0.01 and fail 0.025 (floor 0.0312)"), in scope and metric order."""
    grouped: dict[str, dict[str, list[BelowFloor]]] = {}
    for found in below_floor(budgets, floor):
        grouped.setdefault(found.scope, {}).setdefault(found.metric, []).append(found)
    return {
        scope: {
            metric: f"{BY_KEY[metric].label} {' and '.join(f'{b.level} {b.threshold}' for b in levels)} "
            f"(floor {BY_KEY[metric].format(levels[0].floor)})"
            for metric, levels in by_metric.items()
        }
        for scope, by_metric in grouped.items()
    }


def noise_warnings(budgets: Budgets, floor: NoiseFloor | None) -> list[tuple[str, str]]:
    """(scope, message): one warning per scope with a threshold below its floor, in the gate's words,
    naming each such threshold and the floor of its metric; none without a floor."""
    if floor is None:
        return []
    return [
        (
            scope,
            f"{scope} budgets below the noise floor: {', '.join(named.values())}: a change this small "
            "happens between runs of one unchanged configuration; raise them to the suggested budgets",
        )
        for scope, named in below_floor_named(budgets, floor).items()
    ]


def render_floor(floor: NoiseFloor, budgets: Budgets, suggested: Budgets) -> str:
    """The floor as a plain-text table beside the budgets and the suggestion; "*" marks a budget below it."""
    below = {(b.scope, b.metric) for b in below_floor(budgets, floor)}
    rows = [("scope", "metric", "n", "per-query sd", "floor", "budget warn / fail", "suggested")]
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
                    str(measured.n) if measured.n is not None else "—",
                    format_number(measured.query_sd),
                    format_number(measured.floor),
                    budget,
                    suggestion,
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        f"noise floor of {len(floor.runs)} runs ({', '.join(floor.runs)}) on golden version "
        f"{floor.golden_version}: {FLOOR_QUANTILE} x the per-query noise (every query's change between two "
        "of the runs; a stratum's at least the core's) / sqrt(n) (docs/metrics.md, \"Noise floor\")",
        *(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ),
    ]
    if below:
        lines.append("* below the noise floor: a change this small happens between runs of one configuration")
    floors = [m.floor for _, _, noise in floor.scopes() for m in noise.values() if m.floor is not None]
    if floors and max(floors) == 0:
        lines.append("no query moved between the runs: no budget is below the floor")
    if floor.critical:
        ranks = "; ".join(
            f"{query_id} {', '.join('not returned' if r is None else str(r) for r in seen)}"
            for query_id, seen in sorted(floor.critical.items(), key=lambda item: natural_key(item[0]))
        )
        deepest = {
            None: "no query's list was in two runs",
            0: "no query's list changed between the runs",
        }.get(floor.deepest_change, f"lists changed down to rank {floor.deepest_change}")
        lines.append(
            f"critical queries' best documents ranked, run by run: {ranks}; {deepest} "
            '(docs/metrics.md, "The drift gate", item 6)'
        )
    return "\n".join(lines) + "\n"
