"""Budgets held to the noise floor (pure, no Django; docs/metrics.md, "Noise floor"): `suggest_budgets`
puts warn at the floor and fail at 1.5 times it, rounded up to a readable step (`readable_ceiling`) and
never below the metric table's defaults; `below_floor` lists the thresholds under the floor (grouped and
worded by `below_floor_named`), and `noise_warnings` words them for the gate, one warning per scope
(`assay.gate.compare(noise_floor=...)`); `render_floor` is the floor as a table beside the budgets and
the suggestion (`assay gate --suggest-budgets`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import NamedTuple

from assay.budgets import Budget, Budgets
from assay.changes import TOLERANCE
from assay.golden.fields import natural_key
from assay.metric_table import BY_KEY, GATED_METRICS, format_budget, format_number
from assay.noise_format import MetricNoise, NoiseFloor
from assay.noise_measure import FLOOR_QUANTILE

# The suggestion: warn at the floor, fail at 1.5 times it (2.9 standard errors: a re-run reaches it about
# 0.2% of the time per scope and metric; the gate's paired evidence keeps what still does from failing).
WARN_FACTOR = 1.0
FAIL_FACTOR = 1.5
# Every gated metric lies in [0, 1]: a budget above 1 could never trip, so such a suggestion is "off".
MAX_CHANGE = 1.0
LEVELS = ("warn", "fail")


class BelowFloor(NamedTuple):
    """A budget threshold under the noise floor of its scope and metric."""

    scope: str  # as the gate names it: "core", "stratum billing"
    metric: str
    level: str  # "warn" or "fail"
    threshold: float
    floor: float


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
