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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from assay.budgets import SLICE_KEYS, Budget, Budgets
from assay.changes import (
    IDENTITY_FIELDS,
    TOLERANCE,
    Change,
    LeftOut,
    QueryColumns,
    ReportPairs,
    report_seed,
)
from assay.display import counted
from assay.gate_check import ArtifactError, validated
from assay.gate_check import validate_artifact as validate_artifact  # re-exported: callers name it here
from assay.golden.format import natural_key
from assay.metric_table import BY_KEY, GATED_METRICS, METRIC_KEYS, WEIGHTED_METRICS, format_p_value
from assay.noise import CriticalReach, NoiseFloor, noise_warnings
from assay.overlap import report_overlap
from assay.resampling import LEVEL, holm

Verdict = Literal["pass", "warn", "fail"]
# The chance of a false FAIL the gate allows over its family of changes on metrics that move between runs.
ALPHA = 0.05


# ---------------------------------------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True, slots=True)
class Finding:
    """One failure or warning: what kind, where (scope, metric) and a sentence for humans."""

    kind: Literal[
        "refusal", "budget", "errors", "critical", "coverage", "unexpected_hit", "noise", "within_noise"
    ]
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


def _value(agg: Mapping[str, Any] | None, metric: str) -> float | None:
    if not agg or not isinstance(agg.get(metric), Mapping):
        return None
    value = agg[metric].get("value")
    return float(value) if value is not None else None


def _trips(change: float, threshold: float | None) -> bool:
    return threshold is not None and change >= threshold - TOLERANCE


def _p_text(p_value: float | None) -> str:
    return "" if p_value is None else f", p={format_p_value(p_value)}"


@dataclass(slots=True)
class _Judged:
    """A change held to a fail budget on a metric that moves between runs: one of the gate's family, and,
    when it reached its budget, the finding its evidence decides."""

    row: dict[str, Any]
    scope: str
    metric: str
    worsening: float
    low: float
    high: float
    p_value: float  # two-sided
    n: int
    message: str | None = None  # the trip's message; None: within its budget
    at: tuple[int, int] = (0, 0)  # where its finding goes among the failures and the warnings, in row order


def _one_sided(judged: _Judged) -> float:
    # The sign-flip distribution of a mean change is symmetric around 0: the share of flips at least as
    # bad as a worsening is half the two-sided share (docs/metrics.md, "The drift gate", item 7).
    half = judged.p_value / 2
    return half if judged.worsening > 0 else 1.0 - half


def _where(scope: str) -> str:
    """Where to add queries, in the within-noise warning's words."""
    if scope.startswith("stratum "):
        return "this stratum"
    if scope in ("core", "shadow"):
        return f"the {scope} tier"
    return f"this {scope.rsplit(' ', 1)[0]}"  # "traffic band head" -> "this traffic band"


class _Gate:
    def __init__(self, rebaseline: bool, seed: int, noise_floor: NoiseFloor | None) -> None:
        self.rebaseline = rebaseline
        self.seed = seed
        self.noise_floor = noise_floor
        self.failures: list[Finding] = []
        self.warnings: list[Finding] = []
        self.notes: list[str] = []
        self.family: list[_Judged] = []
        self.untested_fail = False  # a fail budget reached with no floor to test it against

    def judge(self) -> None:
        """Decide each fail-budget trip of the family on its evidence (Holm over the whole family), each
        finding put where its row's would have gone."""
        adjusted = holm([_one_sided(judged) for judged in self.family])
        size = len(self.family)
        decided: list[tuple[tuple[int, int], Finding]] = []
        for judged, p_holm in zip(self.family, adjusted, strict=True):
            assert p_holm is not None
            worse = BY_KEY[judged.metric].worsening
            worse_side = min(worse(0.0, judged.low), worse(0.0, judged.high)) > TOLERANCE
            beyond = p_holm < ALPHA and worse_side
            judged.row["evidence"] = {
                "p_one_sided": _one_sided(judged),
                "p_holm": p_holm,
                "family": size,
                "alpha": ALPHA,
                "interval_worse": worse_side,
                "beyond_noise": beyond,
            }
            if judged.message is None:
                continue
            p_text = (
                f"one-sided p={format_p_value(p_holm)} Holm-adjusted over {counted(size, 'gated change')}"
            )
            if beyond:
                message = f"{judged.message}; beyond run-to-run noise: {p_text}"
                decided.append((judged.at, Finding("budget", message, judged.scope, judged.metric)))
                continue
            judged.row["status"] = "warn"
            why = [f"{p_text}, not below {ALPHA}"] if p_holm >= ALPHA else []
            if not worse_side:
                why.append(f"the {LEVEL:.0%} interval reaches 0")
            message = (
                f"{judged.message}; past the budget but within noise ({'; '.join(why)}): re-run, or add "
                f"queries to {_where(judged.scope)} (n={judged.n})"
            )
            decided.append((judged.at, Finding("within_noise", message, judged.scope, judged.metric)))
        # From the last: an insertion leaves the places of the findings before it as they were.
        for (failures_at, warnings_at), finding in reversed(decided):
            if finding.kind == "budget":
                self.failures.insert(failures_at, finding)
            else:
                self.warnings.insert(warnings_at, finding)

    def row(
        self,
        scope: str,
        metric: str,
        change: Change,
        budget: Budget | None,
        *,
        weighted: bool = False,
    ) -> dict[str, Any]:
        """One comparison row from the scope's change of `metric` (`assay.changes`), recording a failure or
        warning when its budget trips."""
        shown = BY_KEY[metric]
        label = f"{shown.label} (weighted)" if weighted else shown.label
        gated = budget is not None and (budget.warn is not None or budget.fail is not None)
        row: dict[str, Any] = {
            **change.to_dict(),
            "change": None,  # how much worse (`Metric.worsening`): a drop for nDCG/MRR/P, a rise for rates
            "warn": budget.warn if budget else None,
            "fail": budget.fail if budget else None,
            "status": "not gated",
        }
        if change.baseline is None or change.current is None:
            if gated:
                self.notes.append(f"{scope} {label}: no query counted in both reports, not compared")
            return row
        row["change"] = shown.worsening(change.baseline, change.current)
        if not gated or budget is None:
            return row
        interval = (
            f"; {change.level:.0%} interval [{shown.format(change.low, signed=True)}, "
            f"{shown.format(change.high, signed=True)}]"
            if change.low is not None
            else ""
        )
        detail = (
            f"(baseline {shown.format(change.baseline)} -> current {shown.format(change.current)} over "
            f"{change.n} paired quer{'y' if change.n == 1 else 'ies'}{interval}{_p_text(change.p_value)})"
        )
        judged = None
        moves = self.noise_floor is not None and self.noise_floor.moves(metric)
        if moves and budget.fail is not None and change.p_value is not None and change.low is not None:
            assert change.high is not None
            judged = _Judged(
                row, scope, metric, row["change"], change.low, change.high, change.p_value, change.n
            )
            self.family.append(judged)
        for level in ("fail", "warn"):
            threshold = getattr(budget, level)
            if not _trips(row["change"], threshold):
                continue
            row["status"] = level
            message = (
                f"{scope} {label} {shown.worse_word} {shown.format(row['change'])} >= {level} budget "
                f"{threshold} {detail}"
            )
            if level == "fail" and not self.rebaseline and judged is not None:
                judged.message = message  # failure or within-noise warning: `judge` decides on the family
                judged.at = (len(self.failures), len(self.warnings))
            elif level == "fail" and not self.rebaseline:
                self.untested_fail = self.untested_fail or self.noise_floor is None
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
    gate = _Gate(rebaseline, report_seed(current), noise_floor)

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
    if baseline is not current:  # a report checked alone has nothing to overlap with
        found = report_overlap(current, baseline, seed=gate.seed)
        overlap = found.to_dict() if found is not None else None
    if not refused:
        left_out = _compare_scopes(gate, comparison, current, baseline, budgets, pairs)
        gate.judge()
        if gate.untested_fail:
            gate.notes.append(
                "no noise floor given: a change past its fail budget fails as it is, the engine taken to "
                "return the same results on every run; measure the floor (assay gate --suggest-budgets "
                "REPORT REPORT ... --noise-out FILE, then --noise FILE) to gate an engine that moves between "
                "runs on evidence"
            )
        top_losers = _top_losers(pairs, top_n)
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
    _check_errors(gate, current, "current", budgets)
    if baseline is not current:  # a report checked alone (no baseline yet) is gated against itself
        _check_errors(gate, baseline, "baseline", budgets)
    _check_critical(gate, current, pairs.current, budgets)
    _check_unexpected_hits(gate, current, pairs.current)
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
    gate: _Gate,
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


def _check_errors(gate: _Gate, report: Mapping[str, Any], role: str, budgets: Budgets) -> None:
    # Over every query of the report, whatever its tier, on both sides: an errored query means that run did
    # not see the engine's answer, so its change is unknown. Above max_error_rate the gate fails closed
    # (even on a rebaseline); any error at all is a warning naming the queries.
    rate = _value(report["all"], "error_rate")
    if rate is None or rate <= TOLERANCE:
        return
    errors = report.get("flags", {}).get("errors", [])
    ids = [e.get("id") for e in errors if isinstance(e, Mapping)]
    shown = ", ".join(str(i) for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    over = rate > budgets.max_error_rate + TOLERANCE
    message = (
        f"{role} error rate {BY_KEY['error_rate'].format(rate)} over all "
        f"{report['all'].get('n_queries', '?')} queries (every tier) is "
        + (
            f"above max_error_rate {budgets.max_error_rate}"
            if over
            else f"within max_error_rate {budgets.max_error_rate}"
        )
        + (f"; failed: {shown}" if ids else "")
        + ("" if role == "current" else "; these queries are left out of every change")
    )
    finding = Finding("errors", message, "all" if role == "current" else "baseline", "error_rate")
    (gate.failures if over else gate.warnings).append(finding)


def _check_unexpected_hits(gate: _Gate, current: Mapping[str, Any], columns: QueryColumns) -> None:
    # A query expected to return nothing that returned something (the report's flags.unexpected_hits): a
    # warning, a failure when the query is critical.
    hits = current.get("flags", {}).get("unexpected_hits", [])
    rows = dict(zip(columns.ids, columns.rows, strict=True)) if hits else {}
    for query_id in hits if isinstance(hits, list) else []:
        row = rows.get(query_id, {})
        critical = bool(row.get("critical"))
        n = row.get("n")
        returned = counted(n, "result") if type(n) is int else "? results"
        finding = Finding(
            "unexpected_hit",
            f"expected-empty query {query_id} returned {returned}"
            + (" and is critical" if critical else "")
            + (f": {', '.join(str(i) for i in (row.get('ids') or [])[:3])}" if row.get("ids") else ""),
            f"query {query_id}",
            "empty_rate",
        )
        (gate.failures if critical else gate.warnings).append(finding)


def _check_critical(gate: _Gate, current: Mapping[str, Any], columns: QueryColumns, budgets: Budgets) -> None:
    # Judged on the rank the report recorded, against the budgets' critical_rank; a rebaseline does not
    # excuse a critical query (the rule holds "whatever the means say"). A critical expected-empty query
    # must return nothing instead: that is `_check_unexpected_hits`. Out of its top ranks at a rank the
    # noise floor's A/A runs reached by moving alone, it is a warning (docs/metrics.md, "The drift gate",
    # item 6).
    expect_empty = {columns.ids[i] for i in np.flatnonzero(columns.expect_empty).tolist()}
    top = budgets.critical_rank
    for entry in current["critical"]:
        if entry["id"] in expect_empty:
            continue
        rank = entry.get("rank")
        if rank is not None and rank <= top:
            continue
        docs = ", ".join(str(d) for d in entry.get("best_docs") or []) or "no positively graded document"
        where = f"at rank {rank}" if rank is not None else "not returned"
        head = (
            f"critical query {entry['id']}: best document ({docs}, grade {entry.get('best_grade')}) {where}"
        )
        scope = f"query {entry['id']}"
        reach = gate.noise_floor.critical_reach(entry["id"], top) if gate.noise_floor is not None else None
        if reach is not None and reach.reaches(rank):
            gate.warnings.append(
                Finding(
                    "critical",
                    f"{head}, outside the top {top} within the A/A runs' reach ({_seen(reach)}): the engine "
                    "is not deterministic for it; re-run, or make it deterministic",
                    scope,
                )
            )
            continue
        past = f"; past the A/A runs' reach ({_seen(reach)})" if reach is not None else ""
        gate.failures.append(Finding("critical", f"{head}, must be within the top {top}{past}", scope))


def _seen(reach: CriticalReach) -> str:
    """The A/A runs' ranks of a critical query and how deep they changed any list, in a finding's words."""
    ranks = ", ".join("not returned" if rank is None else str(rank) for rank in reach.ranks)
    deepest = reach.deepest_change
    return f"its ranks there {ranks}" + (f"; lists changed down to rank {deepest}" if deepest else "")


def _top_losers(pairs: ReportPairs, top_n: int) -> list[dict[str, Any]]:
    """The `top_n` queries whose nDCG dropped most (ties by id), each row paired as every scope pairs it.
    The drops are taken over numpy's arrays and only the few that may be shown sorted, by the very key
    (and figures) the rows' own numbers give: a drop of two floats is the same IEEE subtraction either way;
    integer nDCGs (hand-made reports) go the plain way, their drop staying an integer."""
    now, then = pairs.current, pairs.baseline
    at = np.flatnonzero(pairs.match >= 0)
    if top_n <= 0 or int in set(map(type, now.field("ndcg"))) | set(map(type, then.field("ndcg"))):
        return _plain_top_losers(pairs, at.tolist(), top_n)
    now_ndcg, now_has = now.numbers("ndcg")
    then_ndcg, then_has = then.numbers("ndcg")
    match = pairs.match[at]
    scored = now_has[at] & then_has[match]
    at, match = at[scored], match[scored]
    drops = then_ndcg[match] - now_ndcg[at]
    losing = drops > 0
    if losing.sum() > top_n:  # only drops at least the top_n-th largest (with its ties) can be shown
        found = drops[losing]
        losing &= drops >= np.partition(found, found.size - top_n)[found.size - top_n]
    shown = at[losing].tolist()
    losers = sorted(
        zip(
            (-drops[losing]).tolist(), [now.ids[i] for i in shown], shown, match[losing].tolist(), strict=True
        ),
        key=lambda loser: (loser[0], loser[1]),
    )
    return [_loser(now.rows[i], then.rows[j], -drop) for drop, _, i, j in losers[:top_n]]


def _plain_top_losers(pairs: ReportPairs, paired: list[int], top_n: int) -> list[dict[str, Any]]:
    losers: list[tuple[float, str, Mapping[str, Any], Mapping[str, Any]]] = []
    match = pairs.match.tolist()
    for i in paired:
        now, then = pairs.current.rows[i], pairs.baseline.rows[match[i]]
        if now.get("ndcg") is None or then.get("ndcg") is None:
            continue
        drop = then["ndcg"] - now["ndcg"]
        if drop > 0:
            losers.append((-drop, now["id"], now, then))
    # Only the shown losers get their documents listed (sorting every loser's documents is the slow part).
    losers.sort(key=lambda loser: (loser[0], loser[1]))
    return [_loser(now, then, -drop) for drop, _, now, then in losers[:top_n]]


def _loser(now: Mapping[str, Any], then: Mapping[str, Any], drop: float) -> dict[str, Any]:
    """One of the top losers: its nDCG drop and its documents, the best graded first."""
    ranks_now, ranks_then = now.get("ranks") or {}, then.get("ranks") or {}
    grades = {**(then.get("grades") or {}), **(now.get("grades") or {})}
    docs = sorted(set(ranks_now) | set(ranks_then), key=lambda d: (-(grades.get(d) or 0), natural_key(d)))
    return {
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
