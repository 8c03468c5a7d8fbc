"""What a noise floor holds, and its stored form (pure, no Django): `NoiseFloor` (per scope and gated
metric, `MetricNoise`: the floor, the per-query noise and the queries counted; each critical query's
ranks in the runs and the deepest rank any list changed, from which `NoiseFloor.critical_reach` says how
low the unchanged configuration was seen putting a critical query, `CriticalReach`), written as JSON by
`NoiseFloor.to_dict` and read back by `NoiseFloor.from_dict`, which names every bad key or value
(`NoiseError`) and reads the older specs' files. How it is measured is `assay.noise_measure`; the budgets
held to it, `assay.noise_budgets`; `assay.noise` is the one import of all three.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from assay.metric_table import GATED_METRICS

NOISE_SPEC = "4"
# Spec "2" floors were the range of the runs' aggregate values, spec "1" ones also counted the bootstrap
# half-width of each run's mean: read as their run-to-run figures (a floor without a per-query noise).
RANGE_SPECS = ("1", "2")
# Spec "3" floors have the per-query noise but not the critical queries' ranks nor the deepest change: read
# without them (the gate holds every critical query to its top ranks, as it did).
OLDER_SPECS = (*RANGE_SPECS, "3")


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
            problems.append(f"{where}: noise_spec: expected {NOISE_SPEC!r}, got {in_words(spec)}")
        version = data.get("golden_version")
        if not isinstance(version, str):
            problems.append(f"{where}: golden_version: expected a string, got {in_words(version)}")
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
            problems.append(f"{where}: deepest_change: {in_words(deepest)} is not an integer >= 0 or null")
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


def in_words(value: object) -> str:
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
                f"{in_words(ranks)}"
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
                problems.append(f"{where}.{metric}.{key}: {in_words(value)} is not a number >= 0 or null")
                value = None
            figures[key] = None if value is None else float(value)
        if older:
            scope[metric] = MetricNoise(figures["run_to_run"])
            continue
        n = entry.get("n")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            problems.append(f"{where}.{metric}.n: {in_words(n)} is not an integer >= 1 or null")
            n = None
        scope[metric] = MetricNoise(figures["floor"], figures["query_sd"], n)
    return scope
