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

The code is in three modules, each of a size a reader takes in at once; this one imports their names,
as callers use them (as `assay.drift` does the gate's):

- `assay.noise_format`: what a floor holds (`NoiseFloor`, `MetricNoise`, `CriticalReach`) and its JSON;
- `assay.noise_measure`: the floor measured on reports of one configuration (`noise_floor`);
- `assay.noise_budgets`: budgets held to it (`suggest_budgets`, `below_floor`, `noise_warnings`) and its
  table (`render_floor`).
"""

from __future__ import annotations

from assay.noise_budgets import (
    FAIL_FACTOR,
    LEVELS,
    MAX_CHANGE,
    WARN_FACTOR,
    BelowFloor,
    below_floor,
    below_floor_named,
    noise_warnings,
    readable_ceiling,
    render_floor,
    suggest_budgets,
)
from assay.noise_format import (
    NOISE_SPEC,
    OLDER_SPECS,
    RANGE_SPECS,
    CriticalReach,
    MetricNoise,
    NoiseError,
    NoiseFloor,
)
from assay.noise_measure import (
    FLOOR_QUANTILE,
    MIN_RUNS,
    NOT_ENOUGH_RUNS,
    SAME_REPORT,
    SAME_RUN,
    configuration_differences,
    noise_floor,
)

__all__ = [
    "FAIL_FACTOR",
    "FLOOR_QUANTILE",
    "LEVELS",
    "MAX_CHANGE",
    "MIN_RUNS",
    "NOISE_SPEC",
    "NOT_ENOUGH_RUNS",
    "OLDER_SPECS",
    "RANGE_SPECS",
    "SAME_REPORT",
    "SAME_RUN",
    "WARN_FACTOR",
    "BelowFloor",
    "CriticalReach",
    "MetricNoise",
    "NoiseError",
    "NoiseFloor",
    "below_floor",
    "below_floor_named",
    "configuration_differences",
    "noise_floor",
    "noise_warnings",
    "readable_ceiling",
    "render_floor",
    "suggest_budgets",
]
