"""The drift gate: a current report against a baseline report under budgets, and the verdict (pure).

Rules (docs/metrics.md, "The drift gate"): refuse to compare reports made under different rules unless
rebaselining; the worsening of each gated metric of the metric table (`assay.metric_table`: a drop of
nDCG, MRR, P@k, a rise of empty_rate, lt3_rate) on the core tier's unweighted and traffic-weighted means,
and on each stratum, traffic band and failure mode the budgets name, against warn / fail budgets
(`assay.budgets`); a budget trips AT its threshold; the shadow tier gates only on its empty_rate rise;
errors on either side above `max_error_rate` (below it: a warning) and critical queries out of their top
ranks fail whatever the means say (a warning at a rank the noise floor's A/A runs reached by moving alone:
`NoiseFloor.critical_reach`); a hit on an expected-empty query warns (fails when it is critical).
Every change is `assay.changes`' one computation over the queries both reports counted, with its interval
and p-value. On a metric the noise floor says the engine moves between runs (`NoiseFloor.moves`), a change
past its fail budget fails only on evidence: its one-sided p-value, Holm-adjusted over every change the
gate holds to a fail budget on such a metric, below `ALPHA`, and its interval wholly on the worse side of
0; otherwise it is a `within_noise` warning naming n (docs/metrics.md, "The drift gate", item 7).
Verdict: fail > warn > pass. Beside the verdict, never in it, the two reports' lists' overlap
(`assay.overlap`: Jaccard@k and rank-biased overlap over the queries both answered). The renderings of a
result (CI log, PR comment, annotations) are `assay.gate_render`.

The parts: the findings and each row's budget and evidence, `assay.gate_findings`; the rules on errors,
critical and expected-empty queries, `assay.gate_queries`; the top losers, `assay.gate_losers`; here, the
comparison that runs them (`compare`) and its result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from assay import gate_losers
from assay.budgets import SLICE_KEYS, Budgets
from assay.changes import (
    IDENTITY_FIELDS,
    LeftOut,
    QueryColumns,
    ReportPairs,
    report_seed,
)
from assay.gate_check import ArtifactError, validated
from assay.gate_check import validate_artifact as validate_artifact  # re-exported: callers name it here
from assay.gate_findings import Finding, Findings
from assay.gate_queries import check_critical, check_errors, check_unexpected_hits
from assay.golden.format import natural_key
from assay.metric_table import GATED_METRICS, METRIC_KEYS, WEIGHTED_METRICS
from assay.noise_budgets import noise_warnings
from assay.noise_format import NoiseFloor
from assay.overlap import report_overlap

Verdict = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    failures: list[Finding]
    warnings: list[Finding]
    notes: list[str]
    # scope ("core", "core_weighted", "shadow") -> metric -> row; slice key ("strata", "traffic_bands",
    # "failure_modes") -> name -> metric -> row
    comparison: dict[str, Any]
    top_losers: list[dict[str, Any]]
    delta_interval: dict[str, Any] | None
    # The core tier's queries no change counts, by reason (`assay.changes.LeftOut.to_dict`).
    left_out: dict[str, list[str]]
    rebaseline: bool
    budgets: Budgets
    current: dict[str, Any]  # identity of each report: golden_version, k, ...
    baseline: dict[str, Any]
    noise_floor: NoiseFloor | None = None  # the floor the budgets were held to (`assay.noise`)
    # How much the two reports' lists overlap (`assay.overlap`, its summary); None against itself.
    overlap: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        """The gate command's exit code: 0 pass or warn, 1 fail (2, unusable input, is raised before this)."""
        return 1 if self.verdict == "fail" else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "rebaseline": self.rebaseline,
            "failures": [f.to_dict() for f in self.failures],
            "warnings": [w.to_dict() for w in self.warnings],
            "notes": list(self.notes),
            "current": self.current,
            "baseline": self.baseline,
            "comparison": self.comparison,
            "top_losers": self.top_losers,
            "delta_interval": self.delta_interval,
            "left_out": self.left_out,
            "budgets": self.budgets.to_dict(),
            "noise_floor": self.noise_floor.to_dict() if self.noise_floor is not None else None,
            "overlap": self.overlap,
        }


def _identity(report: Mapping[str, Any]) -> dict[str, Any]:
    return {key: report[key] for key in IDENTITY_FIELDS}


def _shown(value: object) -> str:
    if isinstance(value, Mapping) and set(value) == {"min", "max"}:
        return f"{value['min']}..{value['max']}"
    return str(value)


def compare(
    current: dict[str, Any],
    baseline: dict[str, Any],
    budgets: Budgets,
    *,
    rebaseline: bool = False,
    top_n: int = 10,
    noise_floor: NoiseFloor | None = None,
) -> GateResult:
    """Gate `current` against `baseline` (both report artifacts). Raises ArtifactError for non-reports."""
    problems: list[str] = []
    columns: dict[str, QueryColumns] = {}
    for role, report in (("current", current), ("baseline", baseline)):
        if report is current and role == "baseline":
            # A report gated against itself: its problems again, as the baseline's (one read of its rows).
            problems.extend(f"baseline{p.removeprefix('current')}" for p in list(problems))
            if "current" in columns:
                columns[role] = columns["current"]
            continue
        try:
            columns[role] = validated(report, role)
        except ArtifactError as error:
            problems.extend(error.problems)
    if problems:
        raise ArtifactError(problems)
    pairs = ReportPairs(columns["current"], columns["baseline"])
    gate = Findings(rebaseline, report_seed(current), noise_floor)

    refused = False
    for key in IDENTITY_FIELDS:
        if current[key] != baseline[key]:
            message = f"{key} differs: current {_shown(current[key])}, baseline {_shown(baseline[key])}"
            if rebaseline:
                gate.notes.append(message + " (rebaseline)")
            else:
                refused = True
                gate.failures.append(
                    Finding("refusal", message + "; refusing to compare (rebaseline to accept)")
                )

    comparison: dict[str, Any] = {
        "core": {},
        "core_weighted": {},
        "shadow": {},
        **{k: {} for k in SLICE_KEYS},
    }
    top_losers: list[dict[str, Any]] = []
    interval: dict[str, Any] | None = None
    left_out = LeftOut()
    overlap: dict[str, Any] | None = None
    if not refused:
        if baseline is not current:  # a report checked alone has nothing to overlap with
            found = report_overlap(current, baseline, seed=gate.seed)
            overlap = found.to_dict() if found is not None else None
        left_out = _compare_scopes(gate, comparison, current, baseline, budgets, pairs)
        gate.judge()
        if gate.untested_fail:
            gate.notes.append(
                "no noise floor given: a change past its fail budget fails as it is, the engine taken to "
                "return the same results on every run; measure the floor (assay gate --suggest-budgets "
                "REPORT REPORT ... --noise-out FILE, then --noise FILE) to gate an engine that moves between "
                "runs on evidence"
            )
        top_losers = gate_losers.top_losers(pairs, top_n)
        ndcg = comparison["core"]["ndcg"]
        interval = {
            "mean": ndcg["delta"],
            "n": ndcg["n"],
            "p_value": ndcg["p_value"],
            **(ndcg["interval"] or {"low": None, "high": None}),
        }

    rescored = baseline.get("rescored")
    if isinstance(rescored, Mapping):
        gate.notes.append(
            f"baseline re-scored from version {rescored.get('from_version')} on version "
            f"{rescored.get('golden_version')}"
            + (f" at {rescored['at']}" if rescored.get("at") else "")
            + (f" by {rescored['by']}" if rescored.get("by") else "")
            + ": its stored result lists, this version's labels"
        )
    check_errors(gate, current, "current", budgets)
    if baseline is not current:  # a report checked alone (no baseline yet) is gated against itself
        check_errors(gate, baseline, "baseline", budgets)
    check_critical(gate, current, pairs.current, budgets)
    check_unexpected_hits(gate, current, pairs.current)
    # One warning per scope, naming each of its budgets below the floor (docs/metrics.md, "Noise floor").
    gate.warnings.extend(
        Finding("noise", message, scope) for scope, message in noise_warnings(budgets, noise_floor)
    )

    verdict: Verdict = "fail" if gate.failures else "warn" if gate.warnings else "pass"
    return GateResult(
        verdict=verdict,
        failures=gate.failures,
        warnings=gate.warnings,
        notes=gate.notes,
        comparison=comparison,
        top_losers=top_losers,
        delta_interval=interval,
        left_out=left_out.to_dict(),
        rebaseline=rebaseline,
        budgets=budgets,
        current=_identity(current),
        baseline=_identity(baseline),
        noise_floor=noise_floor,
        overlap=overlap,
    )


def _compare_scopes(
    gate: Findings,
    comparison: dict[str, Any],
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    budgets: Budgets,
    pairs: ReportPairs,
) -> LeftOut:
    """Fill `comparison` with every scope's rows; return what the core tier left out (and note it). A
    query is in a tier by its `tier` (core when it has none), in a slice by its core tier and the slice's
    field, in a scope by its current row (by its baseline row when it was retired)."""
    now, then = pairs.current, pairs.baseline
    core_now, core_then = now.where("tier", "core", "core"), then.where("tier", "core", "core")
    core = pairs.scope(core_now, core_then, METRIC_KEYS)
    # A scope's changes are resampled together: those over as many pairs share their draws.
    changes = core.changes(
        [(metric, False) for metric in METRIC_KEYS] + [(metric, True) for metric in WEIGHTED_METRICS],
        seed=gate.seed,
    )
    for metric in METRIC_KEYS:
        budget = budgets.core[metric] if metric in GATED_METRICS else None
        comparison["core"][metric] = gate.row("core", metric, changes[metric, False], budget)
    for metric in WEIGHTED_METRICS:
        comparison["core_weighted"][metric] = gate.row(
            "core", metric, changes[metric, True], budgets.weighted.get(metric), weighted=True
        )
    counted = comparison["core"]["ndcg"]["n"]
    if core.left_out.total:
        gate.notes.append(
            f"core: changes are over the queries both reports counted ({counted} for nDCG); left out: "
            + core.left_out.describe()
        )

    for key, field in SLICE_KEYS.items():
        named = budgets.slices(key)
        slices_now, slices_then = current["slices"].get(field) or {}, baseline["slices"].get(field) or {}
        for name in named:
            if name not in slices_now or name not in slices_then:
                where = " and ".join(
                    r for r, sl in (("current", slices_now), ("baseline", slices_then)) if name not in sl
                )
                gate.warnings.append(
                    Finding(
                        "coverage",
                        f"{field.replace('_', ' ')} {name} has budgets but is not in the {where} report",
                        f"{field.replace('_', ' ')} {name}",
                    )
                )
        for name in sorted(set(slices_now) | set(slices_then), key=natural_key):
            in_slice = pairs.scope(
                core_now & now.where(field, name), core_then & then.where(field, name), METRIC_KEYS
            )
            slice_budgets = named.get(name)
            scope = f"{field.replace('_', ' ')} {name}"
            changes = in_slice.changes(
                [(metric, False) for metric in METRIC_KEYS],
                seed=gate.seed,
                with_interval=slice_budgets is not None,
            )
            comparison[key][name] = {
                metric: gate.row(
                    scope,
                    metric,
                    changes[metric, False],
                    slice_budgets[metric] if slice_budgets and metric in GATED_METRICS else None,
                )
                for metric in METRIC_KEYS
            }

    shadow_now, shadow_then = now.where("tier", "shadow", "core"), then.where("tier", "shadow", "core")
    if shadow_now.any() or shadow_then.any():
        shadow = pairs.scope(shadow_now, shadow_then, ("empty_rate",))
        comparison["shadow"]["empty_rate"] = gate.row(
            "shadow", "empty_rate", shadow.change("empty_rate", seed=gate.seed), budgets.shadow_empty_rate
        )
    return core.left_out
