"""What the report page shows of a run, built from its stored report and gate JSON (display only): the
core tier against the baseline, slices and tiers, top losers with rank moves, capped lists, the target as
called, and the side-by-side of two runs.

Which metrics, their labels, direction and display format are the metric table's
(`assay.metric_table`); every number is the core's `format_number` (4 decimals, never NaN), and an
undefined one is UNDEFINED ("—") with the reason it is undefined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import format_html

from assay.drift import paired_intervals
from assay.harness import redact_url
from assay.metric_table import (
    BY_KEY,
    LABELS,
    METRICS,
    SLICED_METRICS,
    UNDEFINED,
    format_budget,
    format_number,
)
from assay.targets import TargetError, TargetSpec, shown_headers
from evaluation import selectors
from evaluation.models import EvaluationRun, QueryRunResult


@dataclass(frozen=True, slots=True)
class Num:
    """One number as shown: `format_number`'s text, or UNDEFINED with the reason it is undefined."""

    text: str
    why: str = ""
    css: str = ""

    @property
    def undefined(self) -> bool:
        return self.text == UNDEFINED

    def __html__(self) -> str:
        """`{{ n }}` in a template: the value, or a dash whose title says why (no include per cell:
        a 2,000-query report has thousands of cells)."""
        if self.undefined:
            return format_html('<span title="{}">{}</span>', self.why, UNDEFINED)
        return format_html('<span class="{}">{}</span>', self.css, self.text) if self.css else self.text

    def __str__(self) -> str:
        return self.text


def num(
    value: object, *, signed: bool = False, why: str = "no value", css: str = "", metric: str = ""
) -> Num:
    """`value` as the core's `format_number` shows it (with `metric`'s display format from the metric
    table), or UNDEFINED with `why`."""
    shown = BY_KEY.get(metric)
    text = shown.format(value, signed=signed) if shown is not None else format_number(value, signed=signed)
    if text == UNDEFINED:
        return Num(UNDEFINED, why)
    return Num(text, css=css)


def delta_css(metric: str, delta: float | None) -> str:
    """The css class of a change: better or worse by the metric table's direction, none when it rounds
    to no change."""
    if delta is None or abs(delta) < 5e-5:
        return ""
    better = delta > 0 if BY_KEY[metric].higher_is_better else delta < 0
    return "better" if better else "worse"


def _aggregate_value(aggregate: Mapping[str, Any] | None, metric: str) -> tuple[float | None, str]:
    """(value, why it is undefined) of one metric of a report aggregate ({"value", "n"})."""
    entry = (aggregate or {}).get(metric) or {}
    value = entry.get("value")
    if value is None:
        return None, "no query counted here (every one errored, or was expected empty)"
    return float(value), ""


def _interval_text(interval: Mapping[str, Any] | None, why: str) -> Num:
    if not interval or interval.get("low") is None:
        return Num(UNDEFINED, why)
    return Num(
        f"[{format_number(interval['low'], signed=True)}, {format_number(interval['high'], signed=True)}]",
        why=f"{interval['level']:.0%} paired bootstrap over {interval['n']} core queries "
        f"({interval['resamples']} resamples)",
    )


@dataclass
class MetricRow:
    metric: str
    label: str
    current: Num
    baseline: Num
    delta: Num
    interval: Num
    budget: str
    status: str


def metric_rows(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[MetricRow]:
    """The core tier against the baseline: value, baseline, change, its interval, budget and status."""
    report = run.report or {}
    gate = run.gate or {}
    core = (report.get("tiers") or {}).get("core")
    compared = (gate.get("comparison") or {}).get("core") or {}
    has_baseline = baseline_report is not None and gate.get("baseline_run") is not None
    intervals = (
        paired_intervals(report.get("per_query", []), baseline_report.get("per_query", []))
        if has_baseline and baseline_report is not None
        else {}
    )
    base_core = ((baseline_report or {}).get("tiers") or {}).get("core")
    rows = []
    for shown in METRICS:
        metric = shown.key
        value, why = _aggregate_value(core, metric)
        row = compared.get(metric) or {}
        if has_baseline:
            base, base_why = _aggregate_value(base_core, metric)
            delta = value - base if value is not None and base is not None else None
            baseline_num = num(base, why=base_why, metric=metric)
            delta_num = num(
                delta, signed=True, why="undefined on one side", css=delta_css(metric, delta), metric=metric
            )
            interval = _interval_text(
                intervals.get(metric),
                "not gated: no interval" if shown.interval_field is None else "no common scored query",
            )
        else:
            no_base = "no baseline for this golden set and target"
            baseline_num = delta_num = interval = Num(UNDEFINED, no_base)
        rows.append(
            MetricRow(
                metric=metric,
                label=shown.label,
                current=num(value, why=why, metric=metric),
                baseline=baseline_num,
                delta=delta_num,
                interval=interval,
                budget=format_budget(row.get("warn"), row.get("fail")),
                status=row.get("status", "") if has_baseline else "",
            )
        )
    return rows


SLICE_TITLES = {"stratum": "Stratum", "locale": "Locale", "filters": "Filter presence"}


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


@dataclass
class SliceTable:
    kind: str
    title: str
    rows: list[SliceRow]


def _slice_row(
    name: str,
    aggregate: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    gated: Mapping[str, Any],
) -> SliceRow:
    cells = []
    for metric in SLICED_METRICS:
        value, why = _aggregate_value(aggregate, metric)
        if baseline is None:
            delta = Num(UNDEFINED, "no baseline, or this slice was not in it")
        else:
            base, _ = _aggregate_value(baseline, metric)
            change = value - base if value is not None and base is not None else None
            delta = num(
                change, signed=True, why="undefined on one side", css=delta_css(metric, change), metric=metric
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


def slice_tables(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[SliceTable]:
    """Core-tier slices by stratum, locale and filter presence, each against the baseline's same slice;
    the strata the budgets gate carry the gate's status per metric."""
    slices = (run.report or {}).get("slices") or {}
    base_slices = (baseline_report or {}).get("slices") or {}
    strata_gate = ((run.gate or {}).get("comparison") or {}).get("strata") or {}
    tables = []
    for kind in ("stratum", "locale", "filters"):
        groups = slices.get(kind) or {}
        base_groups = base_slices.get(kind) or {}
        rows = [
            _slice_row(
                name.replace("_", " "),
                aggregate,
                base_groups.get(name) if baseline_report is not None else None,
                strata_gate.get(name, {}) if kind == "stratum" else {},
            )
            for name, aggregate in groups.items()
        ]
        tables.append(SliceTable(kind, SLICE_TITLES[kind], rows))
    return tables


def tier_rows(run: EvaluationRun, baseline_report: Mapping[str, Any] | None) -> list[SliceRow]:
    """Every tier (core gates; shadow and challenge are measured), against the baseline's tiers."""
    tiers = (run.report or {}).get("tiers") or {}
    base_tiers = (baseline_report or {}).get("tiers") or {}
    shadow_gate = ((run.gate or {}).get("comparison") or {}).get("shadow") or {}
    return [
        _slice_row(
            tier,
            aggregate,
            base_tiers.get(tier) if baseline_report is not None else None,
            shadow_gate if tier == "shadow" else {},
        )
        for tier, aggregate in tiers.items()
    ]


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


def _baseline_report(run: EvaluationRun) -> tuple[EvaluationRun | None, dict[str, Any] | None]:
    """The run the gate compared with (None when it had no baseline)."""
    baseline_run_id = (run.gate or {}).get("baseline_run")
    if baseline_run_id is None:
        return None, None
    base = EvaluationRun.objects.filter(pk=baseline_run_id).only("id", "report", "target", "golden_version")
    found = base.first()
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
    baseline_run, baseline_report = _baseline_report(run)
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
            "ndcg": num(row.get("ndcg"), why="errored: no value", metric="ndcg"),
            "mrr": num(row.get("mrr"), why="errored: no value", metric="mrr"),
            "n": row.get("n"),
            "error": row.get("error"),
        }
        for row in report.get("per_query", [])
    ]
    meta = report.get("run") or {}
    return {
        "report": report,
        "gate": gate,
        "baseline_run": baseline_run,
        "metrics": metric_rows(run, baseline_report),
        "ci": _interval_text((report.get("ci") or {}).get("ndcg"), "no core query scored"),
        "tiers": tier_rows(run, baseline_report),
        "slices": slice_tables(run, baseline_report),
        "slice_labels": [LABELS[m] for m in SLICED_METRICS],
        "losers": top_losers(gate),
        "duplicates": capped("duplicates", selectors.near_duplicate_titles(run=run), show_all),
        "errors": capped("errors", [(row, texts.get(row.query_id, "")) for row in errors], show_all),
        "unresolved": capped("unresolved", (report.get("keys") or {}).get("unresolved", []), show_all),
        "unjudged": capped("unjudged", selectors.unjudged_in_top_k(run=run), show_all),
        "critical": report.get("critical", []),
        "flags": report.get("flags", {}),
        "per_query": capped("per-query", per_query, show_all),
        "meta": meta,
    }


def compare_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rank by rank, each run's document with its title and grade."""
    a_hits, b_hits = data["a"]["hits"], data["b"]["hits"]
    moves = {d["doc_id"]: d for d in data["documents"]}
    rows = []
    for i in range(max(len(a_hits), len(b_hits))):
        row: dict[str, Any] = {"rank": i + 1}
        for side, hits in (("a", a_hits), ("b", b_hits)):
            hit = hits[i] if i < len(hits) else None
            if hit is not None:
                move = moves.get(hit["doc_id"], {})
                other = move.get("rank_b" if side == "a" else "rank_a")
                hit = {**hit, "other_rank": other}
            row[side] = hit
        rows.append(row)
    return rows


def query_values(row: Mapping[str, Any] | None) -> dict[str, Num]:
    """One query's nDCG, RR and P@k in one run (its per-query row of the report), for the side-by-side."""
    row = row or {}
    fields = {"ndcg": "ndcg", "mrr": "mrr", "p_at_k": "precision_at_k"}  # per-query field -> metric
    return {
        name: num(row.get(name), why="errored: no value", metric=metric) for name, metric in fields.items()
    }


def compare_choices(run_a: EvaluationRun, run_b: EvaluationRun) -> list[dict[str, Any]]:
    """The queries of run B with their nDCG in both runs, biggest loss first (the side-by-side's menu)."""
    before = {row["id"]: row for row in (run_a.report or {}).get("per_query", [])}
    choices = []
    for row in (run_b.report or {}).get("per_query", []):
        then = before.get(row["id"], {})
        a, b = then.get("ndcg"), row.get("ndcg")
        change = b - a if a is not None and b is not None else None
        choices.append(
            {
                "id": row["id"],
                "text": row.get("text", ""),
                "stratum": row.get("stratum") or "",
                "a": num(a, why="errored or not in run A", metric="ndcg"),
                "b": num(b, why="errored", metric="ndcg"),
                "change": num(
                    change,
                    signed=True,
                    why="undefined on one side",
                    css=delta_css("ndcg", change),
                    metric="ndcg",
                ),
                "sort": change if change is not None else 0.0,
            }
        )
    choices.sort(key=lambda c: (c["sort"], c["id"]))
    return choices
