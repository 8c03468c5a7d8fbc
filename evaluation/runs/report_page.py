"""What the report page shows of a run, built from its stored report and gate JSON (display only): the
core tier against the baseline, slices and tiers, top losers with rank moves, capped lists, the target as
called (the side-by-side of two runs is `evaluation.runs.compare_page`; each number as shown,
`evaluation.runs.numbers_page`).

Which metrics, their labels, direction and display format are the metric table's
(`assay.metric_table`); every number is the core's `format_number` (4 decimals, never NaN), and an
undefined one is UNDEFINED ("—") with the reason it is undefined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.budgets import SLICE_KEYS, BudgetsError, load_budgets
from assay.changes import LeftOut, pair_scope, report_seed
from assay.golden.format import natural_key
from assay.metric_table import (
    LABELS,
    METRICS,
    SLICED_METRICS,
    UNDEFINED,
    format_budget,
    format_p_value,
)
from assay.noise import NOT_ENOUGH_RUNS, NoiseError, NoiseFloor, below_floor_named
from assay.report import judge_label_effect
from assay.run_meta import redact_url
from assay.targets import TargetError, TargetSpec, shown_headers
from evaluation.runs import selectors
from evaluation.runs.models import EvaluationRun, QueryRunResult
from evaluation.runs.numbers_page import Num, delta_css, interval_text, num


def _aggregate_value(aggregate: Mapping[str, Any] | None, metric: str) -> tuple[float | None, str]:
    """(value, why it is undefined) of one metric of a report aggregate ({"value", "n"})."""
    entry = (aggregate or {}).get(metric) or {}
    value = entry.get("value")
    if value is None:
        return None, "no query counted here (every one errored, or was expected empty)"
    return float(value), ""


@dataclass(frozen=True, slots=True)
class ChangeCells:
    """One change of the gate (`assay.changes`, stored in the run's gate JSON): the two sides' means over
    the same pairs, the change, its interval and p-value, and how many pairs."""

    baseline: Num
    current: Num
    delta: Num
    interval: Num
    p_value: str
    n: int | None


def change_cells(metric: str, row: Mapping[str, Any] | None, why: str) -> ChangeCells:
    if not row or "n" not in row:
        missing = Num(UNDEFINED, why)
        return ChangeCells(missing, missing, missing, missing, UNDEFINED, None)
    delta = row.get("delta")
    no_pair = "no query counted in both runs"
    p_value = row.get("p_value")
    return ChangeCells(
        baseline=num(row.get("baseline"), why=no_pair, metric=metric),
        current=num(row.get("current"), why=no_pair, metric=metric),
        delta=num(delta, signed=True, why=no_pair, css=delta_css(metric, delta), metric=metric),
        interval=interval_text(row.get("interval"), no_pair),
        p_value=format_p_value(p_value),
        n=row.get("n"),
    )


@dataclass
class MetricRow:
    metric: str
    label: str
    current: Num  # this run's own mean (all its counted core queries)
    weighted: Num  # this run's traffic-weighted mean; UNDEFINED for a metric without a weighted twin
    change: ChangeCells  # against the baseline, over the pairs
    weighted_change: ChangeCells
    budget: str
    status: str
    noise: str = ""  # which of this budget's thresholds the gate found below the noise floor


def metric_rows(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[MetricRow]:
    """The core tier against the baseline: this run's macro and traffic-weighted means, and each change as
    the gate computed it (over the queries both runs counted), with its interval, p-value, budget, status."""
    report = run.report or {}
    gate = run.gate or {}
    core = (report.get("tiers") or {}).get("core") or {}
    comparison = gate.get("comparison") or {}
    compared, compared_weighted = comparison.get("core") or {}, comparison.get("core_weighted") or {}
    has_baseline = baseline_report is not None and gate.get("baseline_run") is not None
    why = "no baseline for this golden set and target" if not has_baseline else "not compared"
    rows = []
    for shown in METRICS:
        metric = shown.key
        value, value_why = _aggregate_value(core, metric)
        weighted, weighted_why = _aggregate_value(core.get("weighted"), metric)
        row = compared.get(metric) or {}
        rows.append(
            MetricRow(
                metric=metric,
                label=shown.label,
                current=num(value, why=value_why, metric=metric),
                weighted=num(
                    weighted, why=weighted_why if shown.weighted else "no weighted twin", metric=metric
                ),
                change=change_cells(metric, row if has_baseline else None, why),
                weighted_change=change_cells(
                    metric,
                    compared_weighted.get(metric) if has_baseline else None,
                    why if shown.weighted else "no weighted twin",
                ),
                budget=format_budget(row.get("warn"), row.get("fail")),
                status=row.get("status", "") if has_baseline else "",
            )
        )
    return rows


# The report's slice kinds (`report["slices"]`), in the page's order.
SLICE_TITLES = {
    "stratum": "Stratum",
    "traffic_band": "Traffic band",
    "failure_mode": "Failure mode",
    "locale": "Locale",
    "filters": "Filter presence",
}


@dataclass
class SliceCell:
    value: Num
    delta: Num
    status: str = ""  # the gate's status for a gated stratum metric: pass, warn, fail


@dataclass
class SliceRow:
    name: str
    n_queries: int
    cells: list[SliceCell]
    tripped: bool = False
    noise: str = ""  # a stratum's: which of its budgets the gate found below the noise floor


@dataclass
class SliceTable:
    kind: str
    title: str
    rows: list[SliceRow]


def _slice_row(
    name: str,
    aggregate: Mapping[str, Any],
    deltas: Mapping[str, float | None] | None,
    gated: Mapping[str, Any],
) -> SliceRow:
    """One slice: its own values, and each change against the baseline over the pairs (None: no baseline)."""
    cells = []
    for metric in SLICED_METRICS:
        value, why = _aggregate_value(aggregate, metric)
        if deltas is None:
            delta = Num(UNDEFINED, "no baseline, or this slice was not in it")
        else:
            change = deltas.get(metric)
            delta = num(
                change,
                signed=True,
                why="no query of this slice counted in both runs",
                css=delta_css(metric, change),
                metric=metric,
            )
        cells.append(
            SliceCell(num(value, why=why, metric=metric), delta, (gated.get(metric) or {}).get("status", ""))
        )
    return SliceRow(
        name=name,
        n_queries=int(aggregate.get("n_queries", 0)),
        cells=cells,
        tripped=any(c.status in ("fail", "warn") for c in cells),
    )


def _slice_deltas(
    report: Mapping[str, Any],
    baseline_report: Mapping[str, Any] | None,
    gated: Mapping[str, Any],
    in_scope: Callable[[Mapping[str, Any]], bool],
) -> dict[str, float | None] | None:
    """Each sliced metric's change over the slice's pairs: the gate's rows where it compared the slice,
    else the same computation (`assay.changes`) without an interval; None without a baseline."""
    if baseline_report is None:
        return None
    if all("n" in (gated.get(metric) or {}) for metric in SLICED_METRICS):
        return {metric: gated[metric]["delta"] for metric in SLICED_METRICS}
    pairs = pair_scope(
        report.get("per_query", []), baseline_report.get("per_query", []), in_scope, SLICED_METRICS
    )
    return {metric: pairs.change(metric, seed=0, with_interval=False).delta for metric in SLICED_METRICS}


def _in_slice(kind: str, name: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a per-query row is in a core slice of the report (docs/metrics.md, "Aggregates")."""
    if kind == "filters":
        with_filters = name == "with_filters"
        return lambda row: row.get("tier", "core") == "core" and bool(row.get("has_filters")) == with_filters
    return lambda row: row.get("tier", "core") == "core" and row.get(kind) == name


def slice_tables(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[SliceTable]:
    """Core-tier slices by stratum (vertical), traffic band, failure mode, locale and filter presence, each
    against the baseline over the slice's pairs; the slices the gate compared carry its status per metric."""
    report = run.report or {}
    slices = report.get("slices") or {}
    comparison = (run.gate or {}).get("comparison") or {}
    # The gate's rows of each slice kind, which it files under the budgets file's key (strata, ...).
    gated = {kind: comparison.get(key) or {} for key, kind in SLICE_KEYS.items()}
    tables = []
    for kind in SLICE_TITLES:
        groups = slices.get(kind) or {}
        rows = []
        # In the report's order: a JSON column (PostgreSQL jsonb) does not keep the keys' order.
        for name, aggregate in sorted(groups.items(), key=lambda item: natural_key(item[0])):
            rows_gated = gated.get(kind, {}).get(name, {})
            deltas = _slice_deltas(report, baseline_report, rows_gated, _in_slice(kind, name))
            rows.append(_slice_row(name.replace("_", " "), aggregate, deltas, rows_gated))
        tables.append(SliceTable(kind, SLICE_TITLES[kind], rows))
    return tables


def tier_rows(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[SliceRow]:
    """Every tier (core gates; shadow and challenge are measured), against the baseline over its pairs."""
    report = run.report or {}
    shadow_gate = ((run.gate or {}).get("comparison") or {}).get("shadow") or {}
    rows = []
    for tier, aggregate in (report.get("tiers") or {}).items():
        gated = shadow_gate if tier == "shadow" else {}

        def in_tier(row: Mapping[str, Any], tier: str = tier) -> bool:
            return row.get("tier", "core") == tier

        deltas = _slice_deltas(report, baseline_report, gated, in_tier)
        rows.append(_slice_row(tier, aggregate, deltas, gated))
    return rows


@dataclass
class LoserDoc:
    doc_id: str
    grade: int | None
    before: str
    after: str
    moved: str  # "up 2", "down 7", "gone", "new", ""
    css: str


@dataclass
class Loser:
    id: str
    text: str
    stratum: str
    baseline_ndcg: Num
    current_ndcg: Num
    drop: Num
    documents: list[LoserDoc] = field(default_factory=list)
    absent: int = 0  # graded documents in neither top k


def movement(before: int | None, after: int | None) -> tuple[str, str]:
    """How a document's rank changed, as words and a css class ("up 2", "better")."""
    if before == after:
        return ("" if before is not None else "not in either top k"), ""
    if before is None:
        return "new in top k", "better"
    if after is None:
        return "out of top k", "worse"
    return (f"up {before - after}", "better") if after < before else (f"down {after - before}", "worse")


def top_losers(gate: Mapping[str, Any]) -> list[Loser]:
    losers = []
    for row in gate.get("top_losers") or []:
        docs = []
        absent = 0
        for d in row.get("documents", []):
            if d.get("baseline_rank") is None and d.get("current_rank") is None:
                absent += 1
                continue
            moved, css = movement(d.get("baseline_rank"), d.get("current_rank"))
            docs.append(
                LoserDoc(
                    d["doc_id"],
                    d.get("grade"),
                    str(d["baseline_rank"]) if d.get("baseline_rank") is not None else UNDEFINED,
                    str(d["current_rank"]) if d.get("current_rank") is not None else UNDEFINED,
                    moved,
                    css,
                )
            )
        losers.append(
            Loser(
                id=row["id"],
                text=row.get("text") or "",
                stratum=row.get("stratum") or "",
                baseline_ndcg=num(row.get("baseline_ndcg"), metric="ndcg"),
                current_ndcg=num(row.get("current_ndcg"), metric="ndcg"),
                drop=num(row.get("drop"), metric="ndcg"),
                documents=docs,
                absent=absent,
            )
        )
    return losers


def no_losers_why(gate: Mapping[str, Any], baseline_run: EvaluationRun | None) -> str:
    """Why the top losers list is empty, in words that hold: a refused comparison measured no query's
    loss (while the slices still show the two reports' numbers side by side), so it must not read as
    "nothing was lost"."""
    if baseline_run is None:
        return "—: top losers need a baseline to compare with."
    if any(finding.get("kind") == "refusal" for finding in gate.get("failures") or []):
        return (
            f"None listed: the gate refused to compare this run with the baseline (run {baseline_run.pk}; "
            "the verdict above says why), so no query's change was measured. The slices and tiers below "
            "set the two reports' numbers side by side all the same; rebaseline, or re-score the "
            "baseline on this run's golden version, to compare."
        )
    return "No query's nDCG fell against the baseline: every query scored on both sides kept or raised it."


LIST_LIMIT = 50


@dataclass
class Capped:
    """A long list shown in part: the first LIST_LIMIT rows unless the page asks for all (`?all=name`)."""

    name: str
    rows: list[Any]
    total: int

    @property
    def hidden(self) -> int:
        return self.total - len(self.rows)


def capped(name: str, rows: Sequence[Any], show_all: str) -> Capped:
    shown = list(rows) if show_all == name else list(rows[:LIST_LIMIT])
    return Capped(name, shown, len(rows))


def baseline_report(run: EvaluationRun) -> tuple[EvaluationRun | None, dict[str, Any] | None]:
    """The run the gate compared with and the report it compared (None when it had no baseline): the
    baseline run's own, or its lists re-scored on this run's golden version."""
    baseline_run_id = (run.gate or {}).get("baseline_run")
    if baseline_run_id is None:
        return None, None
    base = (
        EvaluationRun.objects.filter(pk=baseline_run_id)
        .select_related("target")
        .only("report", "golden_version", *EvaluationRun.LABEL_FIELDS)  # and what its label reads
    )
    found = base.first()
    if found is not None and run.baseline_rescore is not None:
        return found, run.baseline_rescore.report
    return found, (found.report if found is not None else None)


def run_snapshot(run: EvaluationRun) -> dict[str, Any]:
    """The target as called (the run's snapshot): URL without credentials, headers as names or $VAR."""
    data = dict(run.target_snapshot or {})
    if not data:
        return {}
    try:
        spec = TargetSpec.from_dict(data)
    except TargetError:
        return {"name": data.get("name", ""), "problem": "the snapshot is from an older format"}
    return {
        "name": spec.name,
        "adapter": spec.adapter,
        "url": redact_url(spec.url),
        "headers": shown_headers(spec),
        "timeout": spec.timeout,
        "concurrency": spec.concurrency,
        "retries": spec.retries,
        "rate_limit": spec.rate_limit,
    }


def report_context(run: EvaluationRun, *, show_all: str = "") -> dict[str, Any]:
    """Everything the report page shows of a finished run, from its stored report and gate JSON."""
    report = run.report or {}
    gate = run.gate or {}
    baseline_run, base_report = baseline_report(run)
    errors = list(
        QueryRunResult.objects.filter(run=run, error__isnull=False)
        .only("query_id", "error", "http_status", "attempts", "latency_ms")
        .order_by("id")
    )
    texts = {row["id"]: row.get("text", "") for row in report.get("per_query", [])}
    per_query = [
        {
            "id": row["id"],
            "text": row.get("text", ""),
            "stratum": row.get("stratum") or "",
            "tier": row.get("tier") or "",
            "ndcg_value": row.get("ndcg"),
            "mrr_value": row.get("mrr"),
            "n": row.get("n"),
            "error": row.get("error"),
        }
        for row in report.get("per_query", [])
    ]
    meta = report.get("run") or {}
    unjudged = selectors.unjudged_in_top_k(run=run)
    return {
        "report": report,
        "gate": gate,
        "baseline_run": baseline_run,
        "metrics": _noise_marked(metric_rows(run, base_report), gate),
        "ci": interval_text((report.get("ci") or {}).get("ndcg"), "no core query scored", signed=False),
        "left_out": _left_out_rows(gate),
        "tiers": tier_rows(run, base_report),
        "slices": _noise_marked_strata(slice_tables(run, base_report), gate),
        "noise_advice": _noise_advice(gate),
        "slice_labels": [LABELS[m] for m in SLICED_METRICS],
        "losers": top_losers(gate),
        "no_losers": no_losers_why(gate, baseline_run),
        "duplicates": capped("duplicates", _near_duplicates(run, report), show_all),
        "errors": capped("errors", [(row, texts.get(row.query_id, "")) for row in errors], show_all),
        "unresolved": capped("unresolved", (report.get("keys") or {}).get("unresolved", []), show_all),
        "unjudged": capped("unjudged", unjudged, show_all),
        "unjudged_rows": unjudged,  # all of them, for the judge's offer (`unjudged` shows the first few)
        "judge_effect": judge_effect_get(run),
        "critical": report.get("critical", []),
        "flags": report.get("flags", {}),
        "per_query_rows": per_query,  # the page lists them (evaluation.runs.list_specs.per_query_spec)
        "meta": meta,
    }


def _near_duplicates(run: EvaluationRun, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The near-duplicate titles the report holds (found at finalize from the same result rows,
    `assay.report.build_report`); found again from the rows only for a report written before it held
    them."""
    stored = report.get("near_duplicates")
    if stored is None:
        return selectors.near_duplicate_titles(run=run)
    return [{"query_id": row["id"], "groups": row["groups"]} for row in stored]


def judge_effect_get(run: EvaluationRun) -> dict[str, Any] | None:
    """The core metrics with and without the golden version's judge labels (`assay.report.judge_label_effect`,
    docs/runs.md "Judge labels in the report"), each row labeled, and the judges the version names; None
    when the version holds no judge label (read from its counts, so other runs pay nothing)."""
    counts = run.golden_version.counts or {}
    if not counts.get("judge_labels"):
        return None
    effect = judge_label_effect(
        selectors.resolved_golden(run).golden,
        selectors.run_results(run=run),
        bootstrap_seed=report_seed(run.report or {}),
    )
    if effect is None:
        return None
    for row in effect["rows"]:
        row["label"] = LABELS[row["key"]]
    return effect | {"judges": counts.get("judges") or []}


def _below_floor(gate: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """scope -> metric -> its thresholds below the noise floor the gate held the budgets to, in words
    (docs/metrics.md, "Noise floor"): the gate's one warning per scope names them, the rows are marked."""
    data, floor_data = gate.get("budgets"), gate.get("noise_floor")
    if not isinstance(data, Mapping) or not isinstance(floor_data, Mapping):
        return {}
    try:
        return below_floor_named(load_budgets(data), NoiseFloor.from_dict(floor_data))
    except (BudgetsError, NoiseError):  # a gate stored in a form this code no longer reads: no marks
        return {}


def _noise_marked(rows: list[MetricRow], gate: Mapping[str, Any]) -> list[MetricRow]:
    core = _below_floor(gate).get("core", {})
    for row in rows:
        row.noise = core.get(row.metric, "")
    return rows


def _noise_marked_strata(tables: list[SliceTable], gate: Mapping[str, Any]) -> list[SliceTable]:
    # Slice rows show a stratum's name with spaces for underscores; the gate names its scope as is.
    strata = {
        scope.removeprefix("stratum ").replace("_", " "): ", ".join(named.values())
        for scope, named in _below_floor(gate).items()
        if scope.startswith("stratum ")
    }
    for table in tables:
        for row in table.rows if table.kind == "stratum" else []:
            row.noise = strata.get(row.name, "")
    return tables


def _noise_advice(gate: Mapping[str, Any]) -> str:
    """What to do when the gate had a baseline but no noise floor to hold the budgets to."""
    if gate.get("baseline_run") is None or "noise_floor" not in gate or gate["noise_floor"] is not None:
        return ""
    return f"The budgets were not checked against a noise floor: {NOT_ENOUGH_RUNS}."


def _left_out_rows(gate: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(why, query ids) for each reason the gate left core queries out of every change."""
    left_out = gate.get("left_out") or {}
    return [(words, left_out[reason]) for reason, words in LeftOut.REASONS.items() if left_out.get(reason)]


def per_query_shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row of the report's query list with its nDCG and RR as shown (only the rows a page shows)."""
    return {
        **row,
        "ndcg": num(row["ndcg_value"], why="errored: no value", metric="ndcg"),
        "mrr": num(row["mrr_value"], why="errored: no value", metric="mrr"),
    }


def rescore_context(run: EvaluationRun) -> dict[str, Any]:
    """The verdict card's re-score line: the baseline re-scored on this run's version (which, when, by
    whom, and who gated the run again), or `rescore_offer` when the baseline the run was gated against is
    on another golden version and was not re-scored (the button; reviewers only, the template checks)."""
    from datetime import datetime

    rescore = run.baseline_rescore
    baseline_run = run.baseline.run if run.baseline is not None else None
    regated = (run.gate or {}).get("regated")
    return {
        "rescore": rescore,
        "rescore_from": rescore.source_run.golden_version.name if rescore is not None else "",
        "regated": {"by": regated["by"], "at": datetime.fromisoformat(regated["at"])} if regated else None,
        "rescore_offer": rescore is None
        and run.status == EvaluationRun.Status.SUCCEEDED
        and baseline_run is not None
        and baseline_run.golden_version_id != run.golden_version_id,
    }
