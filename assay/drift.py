"""The drift gate: budgets, current report vs baseline report, the verdict and its renderings (pure).

Rules (METRICS.md, "Comparing with a baseline"): refuse to compare reports made under different rules
unless rebaselining; drops (nDCG, MRR, P@k) and rises (empty_rate, lt3_rate) of the core tier's unweighted
means, and of each stratum the budgets name, against warn / fail budgets; a budget trips AT its threshold;
the shadow tier gates only on its empty_rate rise; errors above `max_error_rate` and critical queries out of
their top ranks fail whatever the means say. Verdict: fail > warn > pass.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.golden.format import natural_key
from assay.report import paired_bootstrap

DROP_METRICS = ("ndcg", "mrr", "precision_at_k")  # worse when lower: gated on baseline - current
RISE_METRICS = ("empty_rate", "lt3_rate")  # worse when higher: gated on current - baseline
GATED_METRICS = DROP_METRICS + RISE_METRICS
WORSE_WHEN_LOWER = (*DROP_METRICS, "judged_at_k")
SHOWN_METRICS = (*GATED_METRICS, "error_rate", "judged_at_k")  # the comparison table's rows
LABELS = {
    "ndcg": "nDCG@k",
    "mrr": "MRR",
    "precision_at_k": "P@k",
    "empty_rate": "empty rate",
    "lt3_rate": "<3 results rate",
    "error_rate": "error rate",
    "judged_at_k": "judged@k",
}
# A difference this close to a threshold counts as reaching it: 0.5 - 0.475 may come out as 0.02499999...
TOLERANCE = 1e-12
# Fields that must be equal for two reports to be comparable at all.
IDENTITY_FIELDS = ("metrics_spec", "golden_version", "k", "relevant_min_grade", "scale")
FLAT_KEYS = {
    "ndcg_max_drop": "ndcg",
    "mrr_max_drop": "mrr",
    "precision_max_drop": "precision_at_k",
    "empty_rate_max_rise": "empty_rate",
}

Verdict = Literal["pass", "warn", "fail"]


class BudgetsError(ValueError):
    """A budgets document that cannot be used; `problems` names every bad key or value."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid budgets:\n" + "\n".join(self.problems))


class ArtifactError(ValueError):
    """A file given as a report that is not one (missing fields, wrong types)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class Budget:
    """Thresholds for one metric's worsening; None = that level is not gated."""

    warn: float | None = None
    fail: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"warn": self.warn, "fail": self.fail}


DEFAULT_BUDGETS: Mapping[str, Budget] = {
    "ndcg": Budget(warn=0.01, fail=0.025),
    "mrr": Budget(warn=0.01, fail=0.03),
    "precision_at_k": Budget(warn=0.02, fail=0.04),
    "empty_rate": Budget(warn=0.005, fail=0.015),
    "lt3_rate": Budget(),  # not gated unless a budgets file says so
}
DEFAULT_MAX_ERROR_RATE = 0.0
DEFAULT_CRITICAL_RANK = 3


@dataclass(frozen=True)
class Budgets:
    """Budgets for the gate; `strata` holds each named stratum's effective budgets (global + overrides)."""

    core: Mapping[str, Budget] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    critical_rank: int = DEFAULT_CRITICAL_RANK
    shadow_empty_rate: Budget = DEFAULT_BUDGETS["empty_rate"]
    strata: Mapping[str, Mapping[str, Budget]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The nested budgets form; `load_budgets(b.to_dict()) == b`."""
        data: dict[str, Any] = {metric: self.core[metric].to_dict() for metric in GATED_METRICS}
        data["max_error_rate"] = self.max_error_rate
        data["critical_rank"] = self.critical_rank
        data["shadow"] = {"empty_rate": self.shadow_empty_rate.to_dict()}
        data["strata"] = {
            name: {metric: budgets[metric].to_dict() for metric in GATED_METRICS}
            for name, budgets in self.strata.items()
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
    """Budgets from a decoded budgets file (None: the defaults of METRICS.md). Raises BudgetsError.

    Accepts the nested form (see `Budgets.to_dict`) and the seed's flat form (`ndcg_max_drop`, ...: fail
    budgets; warn budgets stay at their defaults); unknown keys are errors.
    """
    if data is None:
        return Budgets()
    if not isinstance(data, Mapping):
        raise BudgetsError([f"budgets: expected a JSON object, got {type(data).__name__}"])
    problems: list[str] = []
    allowed = (*GATED_METRICS, *FLAT_KEYS, "max_error_rate", "critical_rank", "shadow", "strata")
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

    strata: dict[str, dict[str, Budget]] = {}
    raw_strata = data.get("strata", {})
    if not isinstance(raw_strata, Mapping):
        problems.append(f"strata: expected an object of stratum name -> budgets, got {raw_strata!r}")
    else:
        for name, overrides in raw_strata.items():
            where = f"strata.{name}"
            if not isinstance(overrides, Mapping):
                problems.append(f"{where}: expected an object of metric -> {{warn, fail}}, got {overrides!r}")
                continue
            for key in overrides:
                if key not in GATED_METRICS:
                    problems.append(_unknown(f"{where}.", key, GATED_METRICS))
            strata[str(name)] = {
                metric: _budget(overrides[metric], core[metric], f"{where}.{metric}", problems)
                if metric in overrides
                else core[metric]
                for metric in GATED_METRICS
            }
    if problems:
        raise BudgetsError(problems)
    return Budgets(
        core=core,
        max_error_rate=float(max_error_rate),
        critical_rank=critical_rank,
        shadow_empty_rate=shadow_empty_rate,
        strata=strata,
    )


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
        for metric in SHOWN_METRICS if agg is not None else ():
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
        before, after = _value(baseline, metric), _value(current, metric)
        row: dict[str, Any] = {
            "baseline": before,
            "current": after,
            "delta": None,
            "change": None,  # how much worse: a drop for nDCG/MRR/P, a rise for the rates
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
                    f"{scope} {LABELS[metric]}: no value in the {'current' if after is None else 'baseline'} "
                    "report, not compared"
                )
            return row
        row["delta"] = after - before
        row["change"] = before - after if metric in WORSE_WHEN_LOWER else after - before
        if budget is None or (budget.warn is None and budget.fail is None):
            return row
        word = "drop" if metric in DROP_METRICS else "rise"
        detail = f"(baseline {before:.4f} -> current {after:.4f})"
        for level in ("fail", "warn"):
            threshold = getattr(budget, level)
            if not _trips(row["change"], threshold):
                continue
            row["status"] = level
            message = (
                f"{scope} {LABELS[metric]} {word} {row['change']:.4f} >= {level} budget {threshold} {detail}"
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
        for metric in SHOWN_METRICS:
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
                for metric in SHOWN_METRICS
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
            f"error rate {rate:.4f} over all {current['all'].get('n_queries', '?')} queries (every tier) is "
            f"above max_error_rate {budgets.max_error_rate}" + (f"; failed: {shown}" if ids else ""),
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


# Per-query fields of the report behind each core metric, for the paired intervals of the deltas.
PER_QUERY_FIELD = {
    "ndcg": "ndcg",
    "mrr": "mrr",
    "precision_at_k": "p_at_k",
    "empty_rate": "empty",
    "lt3_rate": "lt3",
}


def paired_intervals(
    current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per core metric, the paired bootstrap interval of the mean change (current - baseline) over the
    core queries both runs scored, counted as METRICS.md counts them: errored queries nowhere, expected
    empties out of the nDCG/RR/P means and the empty rate (but in the <3 rate)."""
    before = _by_id(baseline)
    deltas: dict[str, list[float]] = {metric: [] for metric in PER_QUERY_FIELD}
    for now in current:
        then = before.get(now["id"])
        if then is None or now.get("tier", "core") != "core" or then.get("tier", "core") != "core":
            continue
        if now.get("error") is not None or then.get("error") is not None:
            continue
        for metric, key in PER_QUERY_FIELD.items():
            if metric != "lt3_rate" and (now.get("expect_empty") or then.get("expect_empty")):
                continue
            a, b = now.get(key), then.get(key)
            if a is None or b is None:
                continue
            deltas[metric].append(float(a) - float(b))
    return {metric: paired_bootstrap(values) for metric, values in deltas.items()}


# ---------------------------------------------------------------------------------------------------------
# Rendering (displays round to 4 decimals; the artifacts are never rounded)


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    if not signed:
        return f"{value:.4f}"
    text = f"{value:+.4f}"
    # A float-noise difference such as -3e-17 is no change: never show it as "-0.0000".
    return "+0.0000" if text == "-0.0000" else text


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _interval_text(interval: Mapping[str, Any] | None) -> str | None:
    if not interval or interval.get("low") is None:
        return None
    return (
        f"nDCG change {_num(interval['mean'], True)}, {interval['level']:.0%} paired bootstrap interval "
        f"[{_num(interval['low'], True)}, {_num(interval['high'], True)}] over {interval['n']} core queries"
    )


def _moved(loser: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [d for d in loser["documents"] if d["baseline_rank"] != d["current_rank"]]


def _doc_text(doc: Mapping[str, Any]) -> str:
    grade = f" (grade {doc['grade']})" if doc["grade"] is not None else ""
    return f"{doc['doc_id']}{grade}: rank {_rank(doc['baseline_rank'])} -> {_rank(doc['current_rank'])}"


def render_text(result: GateResult) -> str:
    """Plain text for the CI log: verdict, failures, warnings, notes, the interval, top losers."""
    ident = result.current
    lines = [
        f"Relevance gate: {result.verdict.upper()}"
        + (" (rebaseline)" if result.rebaseline else "")
        + f" — {len(result.failures)} failure(s), {len(result.warnings)} warning(s)",
        f"golden {ident['golden_version']}, k={ident['k']}, "
        f"relevant_min_grade={ident['relevant_min_grade']}, metrics_spec {ident['metrics_spec']}",
    ]
    lines += [f"FAIL  {f.message}" for f in result.failures]
    lines += [f"WARN  {w.message}" for w in result.warnings]
    lines += [f"note  {n}" for n in result.notes]
    core = result.comparison.get("core", {})
    if core:
        lines.append("Core tier (baseline -> current, change):")
        for metric, row in core.items():
            lines.append(
                f"  {LABELS[metric]:<16} {_num(row['baseline'])} -> {_num(row['current'])} "
                f"({_num(row['delta'], True)}) {row['status']}"
            )
    interval = _interval_text(result.delta_interval)
    if interval:
        lines.append(interval)
    if result.top_losers:
        lines.append(f"Top losers ({len(result.top_losers)}):")
        for i, loser in enumerate(result.top_losers, start=1):
            where = ", ".join(str(x) for x in (loser["stratum"], loser["tier"]) if x)
            lines.append(
                f"  {i}. {loser['id']} {loser['text']!r} ({where}): nDCG {_num(loser['baseline_ndcg'])} -> "
                f"{_num(loser['current_ndcg'])} (-{loser['drop']:.4f})"
            )
            lines += [f"       {_doc_text(doc)}" for doc in _moved(loser)]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _status_cell(status: str) -> str:
    return {"fail": "**fail**", "warn": "warn", "pass": "ok"}.get(status, "")


def _budget_cell(row: Mapping[str, Any]) -> str:
    if row["warn"] is None and row["fail"] is None:
        return ""
    return " / ".join("-" if row[level] is None else str(row[level]) for level in ("warn", "fail"))


def render_markdown(result: GateResult) -> str:
    """A PR comment: verdict line, core metric table with deltas, strata, shadow, top losers."""
    verdict = {"pass": "pass", "warn": "warn", "fail": "FAIL"}[result.verdict]
    ident = result.current
    out = [
        f"### Relevance gate: **{verdict}**" + (" (rebaseline)" if result.rebaseline else ""),
        "",
        f"Golden `{_cell(ident['golden_version'])}`, k={ident['k']}, relevant grade >= "
        f"{ident['relevant_min_grade']}; {len(result.failures)} failure(s), "
        f"{len(result.warnings)} warning(s).",
        "",
    ]
    out += [f"- :x: {_cell(f.message)}" for f in result.failures]
    out += [f"- :warning: {_cell(w.message)}" for w in result.warnings]
    out += [f"- {_cell(n)}" for n in result.notes]
    if result.failures or result.warnings or result.notes:
        out.append("")
    header = [
        "| metric | baseline | current | delta | budget warn / fail | status |",
        "|---|---:|---:|---:|---|---|",
    ]

    def table(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
        return [
            f"| {LABELS[m]} | {_num(r['baseline'])} | {_num(r['current'])} | {_num(r['delta'], True)} | "
            f"{_budget_cell(r)} | {_status_cell(r['status'])} |"
            for m, r in rows.items()
        ]

    if result.comparison.get("core"):
        out += ["#### Core tier", "", *header, *table(result.comparison["core"]), ""]
    interval = _interval_text(result.delta_interval)
    if interval:
        out += [interval + ".", ""]
    strata = result.comparison.get("strata", {})
    if strata:
        out += [
            "#### Strata (core tier)",
            "",
            "| stratum | " + " | ".join(LABELS[m] for m in GATED_METRICS) + " |",
        ]
        out.append("|---|" + "---:|" * len(GATED_METRICS))
        for name, rows in strata.items():
            cells = []
            for metric in GATED_METRICS:
                row = rows[metric]
                mark = {"fail": " **fail**", "warn": " warn"}.get(row["status"], "")
                cells.append(f"{_num(row['current'])} ({_num(row['delta'], True)}){mark}")
            out.append(f"| {_cell(name)} | " + " | ".join(cells) + " |")
        out.append("")
    if result.comparison.get("shadow"):
        out += [
            "#### Shadow tier (gated on empty rate only)",
            "",
            *header,
            *table(result.comparison["shadow"]),
            "",
        ]
    if result.top_losers:
        out += [
            "#### Top losers",
            "",
            "| query | text | stratum | nDCG baseline | nDCG current | drop | rank changes |",
        ]
        out.append("|---|---|---|---:|---:|---:|---|")
        for loser in result.top_losers:
            moves = "; ".join(_doc_text(d) for d in _moved(loser)) or "-"
            out.append(
                f"| {_cell(loser['id'])} | {_cell(loser['text'])} | {_cell(loser['stratum'] or '')} | "
                f"{_num(loser['baseline_ndcg'])} | {_num(loser['current_ndcg'])} | {loser['drop']:.4f} | "
                f"{_cell(moves)} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _escape_data(text: str) -> str:
    # GitHub workflow commands: these three would end or corrupt the command.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: GateResult) -> list[str]:
    """`::error title=...::message` for each failure and `::warning ...` for each warning."""
    lines = []
    for command, findings in (("error", result.failures), ("warning", result.warnings)):
        for finding in findings:
            what = " ".join(x for x in (finding.scope, LABELS.get(finding.metric or "")) if x) or finding.kind
            title = f"Relevance gate — {what}"
            lines.append(f"::{command} title={_escape_property(title)}::{_escape_data(finding.message)}")
    return lines
