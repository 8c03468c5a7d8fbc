"""The noise floor measured (pure, no Django): on reports of one configuration run more than once (an A/A
pair at least: the same system, golden version and parameters, `configuration_differences`), per scope
(the core tier, and each stratum of it) and per gated metric of the metric table; docs/metrics.md, "Noise
floor": every query's change between every pair of the runs (paired as the gate pairs them,
`assay.changes`), their root mean square the per-query noise, and the floor 1.96 x that noise / sqrt(n)
(a stratum's per-query noise never taken below the core's). It also records each critical query's best
document's rank in every run and the deepest rank at which two runs' lists of any query differed. The
result is an `assay.noise_format.NoiseFloor`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from itertools import compress
from operator import ne
from typing import Any

import numpy as np
from numpy.typing import NDArray

from assay.changes import IDENTITY_FIELDS, QueryColumns, ReportPairs
from assay.gate_check import ArtifactError, validated
from assay.golden.fields import natural_key
from assay.metric_table import GATED_METRICS
from assay.noise_format import MetricNoise, NoiseError, NoiseFloor, in_words

MIN_RUNS = 2
# The floor: this many standard errors of an A/A change of a scope's mean, its two-sided 95% bound under
# the normal approximation (a re-run exceeds it in the worse direction about 2.5% of the time).
FLOOR_QUANTILE = 1.96
# The report fields two runs must share to be runs of one configuration: the gate's identity fields, and,
# where every run block records them, the system called and the parameters it was sent.
SAME_REPORT = IDENTITY_FIELDS
SAME_RUN = ("target", "url", "adapter", "params")
NOT_ENOUGH_RUNS = "run the baseline's configuration once more to measure the noise"


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
            shown = ", ".join(f"{name} {in_words(value)}" for name, value in zip(names, values, strict=True))
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
