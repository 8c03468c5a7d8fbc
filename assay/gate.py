"""The drift gate: a current report against a baseline report under budgets, and the verdict (pure).

Rules (docs/metrics.md, "The drift gate"): refuse to compare reports made under different rules unless
rebaselining; the worsening of each gated metric of the metric table (`assay.metric_table`: a drop of
nDCG, MRR, P@k, a rise of empty_rate, lt3_rate) on the core tier's unweighted means, and on each stratum
the budgets name, against warn / fail budgets (`assay.budgets`); a budget trips AT its threshold; the
shadow tier gates only on its empty_rate rise; errors above `max_error_rate` and critical queries out of
their top ranks fail whatever the means say. Verdict: fail > warn > pass. The renderings of a result
(CI log, PR comment, annotations) are `assay.gate_render`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from assay.budgets import Budget, Budgets
from assay.golden.format import natural_key
from assay.metric_table import BY_KEY, GATED_METRICS, METRIC_KEYS, METRICS
from assay.report import paired_bootstrap

# A difference this close to a threshold counts as reaching it: 0.5 - 0.475 may come out as 0.02499999...
TOLERANCE = 1e-12
# Fields that must be equal for two reports to be comparable at all.
IDENTITY_FIELDS = ("metrics_spec", "golden_version", "k", "relevant_min_grade", "scale")

Verdict = Literal["pass", "warn", "fail"]


class ArtifactError(ValueError):
    """A file given as a report that is not one (missing fields, wrong types)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# ---------------------------------------------------------------------------------------------------------
# Artifact validation


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


_EXPECTED = {
    "a string": lambda v: isinstance(v, str),
    "an integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "an integer or null": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "a number or null": lambda v: v is None or _is_number(v),
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


def validate_artifact(data: object, role: str = "report") -> None:
    """Raise ArtifactError listing every reason `data` cannot be used as a report by the gate."""
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
    strata = check.field(slices, "stratum", "slices.", "an object") if slices is not None else None
    for name in strata or {}:
        check.aggregate(slices["stratum"], name, "slices.stratum.")
    flags = check.field(data, "flags", "", "an object", required=False)
    if flags is not None:
        check.field(flags, "errors", "flags.", "a list", required=False)
    for path, entry in check.rows(data, "critical"):
        check.field(entry, "rank", path, "an integer or null")
        check.field(entry, "best_docs", path, "a list", required=False)
    for path, row in check.rows(data, "per_query"):
        check.field(row, "ndcg", path, "a number or null")
        # The paired intervals read these too; older or hand-made artifacts may leave them out.
        for key in ("mrr", "p_at_k"):
            check.field(row, key, path, "a number or null", required=False)
        for key in ("empty", "lt3", "expect_empty"):
            check.field(row, key, path, "true or false", required=False)
        for key, each in (("ranks", "an integer or null"), ("grades", "an integer")):
            for doc_id in check.field(row, key, path, "an object", required=False) or {}:
                check.field(row[key], doc_id, f"{path}{key}.", each)
    if check.problems:
        raise ArtifactError(check.problems)


# ---------------------------------------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True, slots=True)
class Finding:
    """One failure or warning: what kind, where (scope, metric) and a sentence for humans."""

    kind: Literal["refusal", "budget", "errors", "critical", "coverage"]
    message: str
    scope: str | None = None
    metric: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "scope": self.scope, "metric": self.metric, "message": self.message}


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    failures: list[Finding]
    warnings: list[Finding]
    notes: list[str]
    # scope ("core", "shadow", "strata") -> metric (or stratum -> metric) -> row
    comparison: dict[str, Any]
    top_losers: list[dict[str, Any]]
    delta_interval: dict[str, Any] | None
    rebaseline: bool
    budgets: Budgets
    current: dict[str, Any]  # identity of each report: golden_version, k, ...
    baseline: dict[str, Any]

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
            "budgets": self.budgets.to_dict(),
        }


def _value(agg: Mapping[str, Any] | None, metric: str) -> float | None:
    if not agg or not isinstance(agg.get(metric), Mapping):
        return None
    value = agg[metric].get("value")
    return float(value) if value is not None else None


def _trips(change: float, threshold: float | None) -> bool:
    return threshold is not None and change >= threshold - TOLERANCE


class _Gate:
    def __init__(self, rebaseline: bool) -> None:
        self.rebaseline = rebaseline
        self.failures: list[Finding] = []
        self.warnings: list[Finding] = []
        self.notes: list[str] = []

    def row(
        self,
        scope: str,
        metric: str,
        baseline: Mapping[str, Any] | None,
        current: Mapping[str, Any] | None,
        budget: Budget | None,
    ) -> dict[str, Any]:
        """One comparison row, recording a failure or warning when its budget trips."""
        shown = BY_KEY[metric]
        before, after = _value(baseline, metric), _value(current, metric)
        row: dict[str, Any] = {
            "baseline": before,
            "current": after,
            "delta": None,
            "change": None,  # how much worse (`Metric.worsening`): a drop for nDCG/MRR/P, a rise for rates
            "warn": budget.warn if budget else None,
            "fail": budget.fail if budget else None,
            "status": "not gated",
        }
        if before is None or after is None:
            if (
                budget
                and (budget.warn is not None or budget.fail is not None)
                and (before, after) != (None, None)
            ):
                self.notes.append(
                    f"{scope} {shown.label}: no value in the {'current' if after is None else 'baseline'} "
                    "report, not compared"
                )
            return row
        row["delta"] = after - before
        row["change"] = shown.worsening(before, after)
        if budget is None or (budget.warn is None and budget.fail is None):
            return row
        detail = f"(baseline {shown.format(before)} -> current {shown.format(after)})"
        for level in ("fail", "warn"):
            threshold = getattr(budget, level)
            if not _trips(row["change"], threshold):
                continue
            row["status"] = level
            message = (
                f"{scope} {shown.label} {shown.worse_word} {shown.format(row['change'])} >= {level} budget "
                f"{threshold} {detail}"
            )
            if level == "fail" and not self.rebaseline:
                self.failures.append(Finding("budget", message, scope, metric))
            else:
                suffix = "; accepted by rebaseline" if level == "fail" else ""
                self.warnings.append(Finding("budget", message + suffix, scope, metric))
            break
        else:
            row["status"] = "pass"
        return row


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
) -> GateResult:
    """Gate `current` against `baseline` (both report artifacts). Raises ArtifactError for non-reports."""
    problems: list[str] = []
    for role, report in (("current", current), ("baseline", baseline)):
        try:
            validate_artifact(report, role)
        except ArtifactError as error:
            problems.extend(error.problems)
    if problems:
        raise ArtifactError(problems)
    gate = _Gate(rebaseline)

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

    comparison: dict[str, Any] = {"core": {}, "strata": {}, "shadow": {}}
    top_losers: list[dict[str, Any]] = []
    interval: dict[str, Any] | None = None
    if not refused:
        core_now, core_before = current["tiers"].get("core"), baseline["tiers"].get("core")
        for metric in METRIC_KEYS:
            budget = budgets.core[metric] if metric in GATED_METRICS else None
            comparison["core"][metric] = gate.row("core", metric, core_before, core_now, budget)
        strata_now, strata_before = current["slices"]["stratum"], baseline["slices"]["stratum"]
        for name in budgets.strata:
            if name not in strata_now or name not in strata_before:
                where = " and ".join(
                    r for r, s in (("current", strata_now), ("baseline", strata_before)) if name not in s
                )
                gate.warnings.append(
                    Finding(
                        "coverage",
                        f"stratum {name} has budgets but is not in the {where} report",
                        f"stratum {name}",
                    )
                )
        for name in sorted(set(strata_now) | set(strata_before), key=natural_key):
            stratum_budgets = budgets.strata.get(name)
            comparison["strata"][name] = {
                metric: gate.row(
                    f"stratum {name}",
                    metric,
                    strata_before.get(name),
                    strata_now.get(name),
                    stratum_budgets[metric] if stratum_budgets and metric in GATED_METRICS else None,
                )
                for metric in METRIC_KEYS
            }
        shadow_now, shadow_before = current["tiers"].get("shadow"), baseline["tiers"].get("shadow")
        if shadow_now or shadow_before:
            comparison["shadow"]["empty_rate"] = gate.row(
                "shadow", "empty_rate", shadow_before, shadow_now, budgets.shadow_empty_rate
            )
        top_losers = _top_losers(current["per_query"], baseline["per_query"], top_n)
        interval = paired_intervals(current["per_query"], baseline["per_query"])["ndcg"]

    _check_errors(gate, current, budgets)
    _check_critical(gate, current, budgets)

    verdict: Verdict = "fail" if gate.failures else "warn" if gate.warnings else "pass"
    return GateResult(
        verdict=verdict,
        failures=gate.failures,
        warnings=gate.warnings,
        notes=gate.notes,
        comparison=comparison,
        top_losers=top_losers,
        delta_interval=interval,
        rebaseline=rebaseline,
        budgets=budgets,
        current=_identity(current),
        baseline=_identity(baseline),
    )


def _check_errors(gate: _Gate, current: Mapping[str, Any], budgets: Budgets) -> None:
    # Over every query of the run, whatever its tier: an errored query means the run did not see the
    # engine's answer, so the gate fails closed (even on a rebaseline).
    rate = _value(current["all"], "error_rate")
    if rate is None or rate <= budgets.max_error_rate + TOLERANCE:
        return
    errors = current.get("flags", {}).get("errors", [])
    ids = [e.get("id") for e in errors if isinstance(e, Mapping)]
    shown = ", ".join(str(i) for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    gate.failures.append(
        Finding(
            "errors",
            f"error rate {BY_KEY['error_rate'].format(rate)} over all "
            f"{current['all'].get('n_queries', '?')} queries (every tier) is above max_error_rate "
            f"{budgets.max_error_rate}" + (f"; failed: {shown}" if ids else ""),
            "all",
            "error_rate",
        )
    )


def _check_critical(gate: _Gate, current: Mapping[str, Any], budgets: Budgets) -> None:
    # Judged on the rank the report recorded, against the budgets' critical_rank; a rebaseline does not
    # excuse a critical query (the rule holds "whatever the means say").
    for entry in current["critical"]:
        rank = entry.get("rank")
        if rank is not None and rank <= budgets.critical_rank:
            continue
        docs = ", ".join(str(d) for d in entry.get("best_docs") or []) or "no positively graded document"
        where = f"at rank {rank}" if rank is not None else "not returned"
        gate.failures.append(
            Finding(
                "critical",
                f"critical query {entry['id']}: best document ({docs}, grade {entry.get('best_grade')}) "
                f"{where}, must be within the top {budgets.critical_rank}",
                f"query {entry['id']}",
            )
        )


def _by_id(rows: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {row["id"]: row for row in rows}


def _top_losers(
    current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]], top_n: int
) -> list[dict[str, Any]]:
    before = _by_id(baseline)
    losers: list[dict[str, Any]] = []
    for now in current:
        then = before.get(now["id"])
        if then is None or now.get("ndcg") is None or then.get("ndcg") is None:
            continue
        drop = then["ndcg"] - now["ndcg"]
        if drop <= 0:
            continue
        ranks_now, ranks_then = now.get("ranks") or {}, then.get("ranks") or {}
        grades = {**(then.get("grades") or {}), **(now.get("grades") or {})}
        docs = sorted(set(ranks_now) | set(ranks_then), key=lambda d: (-(grades.get(d) or 0), natural_key(d)))
        losers.append(
            {
                "id": now["id"],
                "text": now.get("text", then.get("text")),
                "stratum": now.get("stratum"),
                "tier": now.get("tier"),
                "baseline_ndcg": then["ndcg"],
                "current_ndcg": now["ndcg"],
                "drop": drop,
                "documents": [
                    {
                        "doc_id": d,
                        "grade": grades.get(d),
                        "baseline_rank": ranks_then.get(d),
                        "current_rank": ranks_now.get(d),
                    }
                    for d in docs
                ],
            }
        )
    losers.sort(key=lambda loser: (-loser["drop"], loser["id"]))
    return losers[:top_n]


def paired_intervals(
    current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per metric with an `interval_field` in the metric table, the paired bootstrap interval of the mean
    change (current - baseline) over the core queries both runs scored, counted as docs/metrics.md counts
    them: errored queries nowhere, expected empties only in the means taken over answered queries (the <3
    rate), not in those over scored ones (nDCG, RR, P, the empty rate)."""
    paired = [(m, m.interval_field) for m in METRICS if m.interval_field is not None]
    before = _by_id(baseline)
    deltas: dict[str, list[float]] = {m.key: [] for m, _ in paired}
    for now in current:
        then = before.get(now["id"])
        if then is None or now.get("tier", "core") != "core" or then.get("tier", "core") != "core":
            continue
        if now.get("error") is not None or then.get("error") is not None:
            continue
        expected_empty = now.get("expect_empty") or then.get("expect_empty")
        for metric, key in paired:
            if metric.over == "scored" and expected_empty:
                continue
            a, b = now.get(key), then.get(key)
            if a is None or b is None:
                continue
            deltas[metric.key].append(float(a) - float(b))
    return {metric: paired_bootstrap(values) for metric, values in deltas.items()}
