"""Budgets for the drift gate: the budgets file's two forms, validated and normalized (pure, no Django).

How much each gated metric of the metric table (`assay.metric_table`) may worsen before the gate warns or
fails: its unweighted mean on the core tier, its traffic-weighted mean (`weighted`, off unless a file says),
per stratum (the product vertical), per traffic band and per failure mode too; the shadow tier's
empty-rate budget, the error budget and the critical rank (docs/metrics.md, "Budgets file").
`load_budgets` names every bad key or value at once (`BudgetsError`);
`Budgets.to_dict` is the nested form it reads back. The gate itself is `assay.gate`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.metric_table import GATED_METRICS, METRICS, WEIGHTED_METRICS

# The older flat form's keys: each is the fail budget of one metric.
FLAT_KEYS = {
    "ndcg_max_drop": "ndcg",
    "mrr_max_drop": "mrr",
    "precision_max_drop": "precision_at_k",
    "empty_rate_max_rise": "empty_rate",
}


class BudgetsError(ValueError):
    """A budgets document that cannot be used; `problems` names every bad key or value."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid budgets:\n" + "\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class Budget:
    """Thresholds for one metric's worsening; None = that level is not gated."""

    warn: float | None = None
    fail: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"warn": self.warn, "fail": self.fail}


# docs/metrics.md's defaults, from the metric table (lt3_rate has none: not gated unless a file says so).
DEFAULT_BUDGETS: Mapping[str, Budget] = {
    m.key: Budget(warn=m.default_warn, fail=m.default_fail) for m in METRICS if m.gated
}
DEFAULT_MAX_ERROR_RATE = 0.0
DEFAULT_CRITICAL_RANK = 3
# Budgets of the traffic-weighted means: off unless a file sets them (the unweighted means gate by default).
WEIGHTED_GATED = tuple(m for m in GATED_METRICS if m in WEIGHTED_METRICS)
OFF = Budget()
# The budgets file's keys for the report's slices (`report["slices"][field]`) other than the core tier: a
# named slice's effective budgets are the core's with its overrides.
SLICE_KEYS = {"strata": "stratum", "traffic_bands": "traffic_band", "failure_modes": "failure_mode"}


@dataclass(frozen=True)
class Budgets:
    """Budgets for the gate; `strata` holds each named stratum's effective budgets (global + overrides)."""

    core: Mapping[str, Budget] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    critical_rank: int = DEFAULT_CRITICAL_RANK
    shadow_empty_rate: Budget = DEFAULT_BUDGETS["empty_rate"]
    strata: Mapping[str, Mapping[str, Budget]] = field(default_factory=dict)
    weighted: Mapping[str, Budget] = field(default_factory=lambda: dict.fromkeys(WEIGHTED_GATED, OFF))
    traffic_bands: Mapping[str, Mapping[str, Budget]] = field(default_factory=dict)
    failure_modes: Mapping[str, Mapping[str, Budget]] = field(default_factory=dict)

    def slices(self, key: str) -> Mapping[str, Mapping[str, Budget]]:
        """The named slices' budgets under a budgets-file key of `SLICE_KEYS` ("strata", ...)."""
        slices: Mapping[str, Mapping[str, Budget]] = getattr(self, key)
        return slices

    def to_dict(self) -> dict[str, Any]:
        """The nested budgets form; `load_budgets(b.to_dict()) == b`."""
        data: dict[str, Any] = {metric: self.core[metric].to_dict() for metric in GATED_METRICS}
        data["weighted"] = {metric: self.weighted[metric].to_dict() for metric in WEIGHTED_GATED}
        data["max_error_rate"] = self.max_error_rate
        data["critical_rank"] = self.critical_rank
        data["shadow"] = {"empty_rate": self.shadow_empty_rate.to_dict()}
        for key in SLICE_KEYS:
            data[key] = {
                name: {metric: budgets[metric].to_dict() for metric in GATED_METRICS}
                for name, budgets in self.slices(key).items()
            }
        return data


def _unknown(where: str, key: object, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{where}{key}: unknown key{hint}; expected one of {', '.join(allowed)}"


def _threshold(value: object, where: str, problems: list[str]) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        # 0 would trip on an unchanged metric (budgets trip at >=): null is the way to turn a budget off.
        problems.append(f"{where}: {value!r} is not a positive finite number (use null to turn it off)")
        return None
    return float(value)


def _budget(data: object, base: Budget, where: str, problems: list[str]) -> Budget:
    if not isinstance(data, Mapping):
        problems.append(f'{where}: expected an object like {{"warn": 0.01, "fail": 0.025}}, got {data!r}')
        return base
    for key in data:
        if key not in ("warn", "fail"):
            problems.append(_unknown(f"{where}.", key, ("warn", "fail")))
    warn = _threshold(data["warn"], f"{where}.warn", problems) if "warn" in data else base.warn
    fail = _threshold(data["fail"], f"{where}.fail", problems) if "fail" in data else base.fail
    return Budget(warn=warn, fail=fail)


def load_budgets(data: Mapping[str, Any] | None) -> Budgets:
    """Budgets from a decoded budgets file (None: the defaults of docs/metrics.md). Raises BudgetsError.

    Accepts the nested form (see `Budgets.to_dict`) and the older flat form (`ndcg_max_drop`, ...: fail
    budgets; warn budgets stay at their defaults); unknown keys are errors.
    """
    if data is None:
        return Budgets()
    if not isinstance(data, Mapping):
        raise BudgetsError([f"budgets: expected a JSON object, got {type(data).__name__}"])
    problems: list[str] = []
    allowed = (*GATED_METRICS, *FLAT_KEYS, "weighted", "max_error_rate", "critical_rank", "shadow")
    allowed += tuple(SLICE_KEYS)
    core = dict(DEFAULT_BUDGETS)
    for key in data:
        if key not in allowed:
            problems.append(_unknown("", key, allowed))
    for metric in GATED_METRICS:
        if metric in data:
            core[metric] = _budget(data[metric], core[metric], metric, problems)
    for flat, metric in FLAT_KEYS.items():
        if flat in data:
            if isinstance(data.get(metric), Mapping) and "fail" in data[metric]:
                problems.append(f"{flat}: {metric}.fail is given too; say the fail budget once")
            core[metric] = Budget(warn=core[metric].warn, fail=_threshold(data[flat], flat, problems))

    weighted = dict.fromkeys(WEIGHTED_GATED, OFF)
    raw_weighted = data.get("weighted", {})
    if not isinstance(raw_weighted, Mapping):
        problems.append(f"weighted: expected an object of metric -> {{warn, fail}}, got {raw_weighted!r}")
    else:
        for key in raw_weighted:
            if key not in WEIGHTED_GATED:
                problems.append(_unknown("weighted.", key, WEIGHTED_GATED))
        for metric in WEIGHTED_GATED:
            if metric in raw_weighted:
                weighted[metric] = _budget(raw_weighted[metric], OFF, f"weighted.{metric}", problems)

    max_error_rate = data.get("max_error_rate", DEFAULT_MAX_ERROR_RATE)
    if (
        isinstance(max_error_rate, bool)
        or not isinstance(max_error_rate, int | float)
        or not 0 <= max_error_rate <= 1
    ):
        problems.append(f"max_error_rate: {max_error_rate!r} is not a number between 0 and 1")
        max_error_rate = DEFAULT_MAX_ERROR_RATE
    critical_rank = data.get("critical_rank", DEFAULT_CRITICAL_RANK)
    if isinstance(critical_rank, bool) or not isinstance(critical_rank, int) or critical_rank < 1:
        problems.append(f"critical_rank: {critical_rank!r} is not a positive integer")
        critical_rank = DEFAULT_CRITICAL_RANK

    shadow_empty_rate = DEFAULT_BUDGETS["empty_rate"]
    shadow = data.get("shadow", {})
    if not isinstance(shadow, Mapping):
        problems.append(f'shadow: expected an object like {{"empty_rate": {{...}}}}, got {shadow!r}')
    else:
        for key in shadow:
            if key != "empty_rate":
                problems.append(
                    _unknown("shadow.", key, ("empty_rate",)) + " (the shadow tier gates only on empty_rate)"
                )
        if "empty_rate" in shadow:
            shadow_empty_rate = _budget(
                shadow["empty_rate"], shadow_empty_rate, "shadow.empty_rate", problems
            )

    slices = {key: _slice_budgets(data, key, core, problems) for key in SLICE_KEYS}
    if problems:
        raise BudgetsError(problems)
    return Budgets(
        core=core,
        max_error_rate=float(max_error_rate),
        critical_rank=critical_rank,
        shadow_empty_rate=shadow_empty_rate,
        strata=slices["strata"],
        weighted=weighted,
        traffic_bands=slices["traffic_bands"],
        failure_modes=slices["failure_modes"],
    )


def _slice_budgets(
    data: Mapping[str, Any], key: str, core: Mapping[str, Budget], problems: list[str]
) -> dict[str, dict[str, Budget]]:
    """Each named slice's effective budgets under `data[key]` ("strata", ...): the core's, with overrides."""
    slices: dict[str, dict[str, Budget]] = {}
    raw = data.get(key, {})
    if not isinstance(raw, Mapping):
        problems.append(f"{key}: expected an object of {SLICE_KEYS[key]} name -> budgets, got {raw!r}")
        return slices
    for name, overrides in raw.items():
        where = f"{key}.{name}"
        if not isinstance(overrides, Mapping):
            problems.append(f"{where}: expected an object of metric -> {{warn, fail}}, got {overrides!r}")
            continue
        for metric in overrides:
            if metric not in GATED_METRICS:
                problems.append(_unknown(f"{where}.", metric, GATED_METRICS))
        slices[str(name)] = {
            metric: _budget(overrides[metric], core[metric], f"{where}.{metric}", problems)
            if metric in overrides
            else core[metric]
            for metric in GATED_METRICS
        }
    return slices
