"""The gate of a finished run as a pull-request comment (what `assay remote run --summary` writes)."""

from __future__ import annotations

from typing import Any

from assay.drift import Finding, GateResult, load_budgets, render_markdown
from assay.metric_table import METRICS
from evaluation.models import EvaluationRun


def gate_result(gate: dict[str, Any]) -> GateResult:
    """The stored gate JSON (GateResult.to_dict()) as a GateResult again, for the drift renderers."""
    return GateResult(
        verdict=gate["verdict"],
        failures=[Finding(**f) for f in gate["failures"]],
        warnings=[Finding(**w) for w in gate["warnings"]],
        notes=list(gate["notes"]),
        comparison=gate["comparison"],
        top_losers=gate["top_losers"],
        delta_interval=gate["delta_interval"],
        rebaseline=bool(gate["rebaseline"]),
        budgets=load_budgets(gate["budgets"]),
        current=gate["current"],
        baseline=gate["baseline"],
    )


def _run_line(run: EvaluationRun, page_url: str) -> str:
    version = run.golden_version
    return (
        f"Run {run.pk}: `{version.golden_set.slug}@{version.name}` on `{run.target.name}`, "
        f"params `{run.effective_params}`. [Full report]({page_url})"
    )


def gate_markdown(run: EvaluationRun, *, page_url: str) -> str:
    """Markdown for the run's outcome: the drift gate's comment when it was compared with a baseline;
    without a baseline, its checks and core values; for a run that did not finish, why."""
    if run.status != EvaluationRun.Status.SUCCEEDED or run.gate is None:
        why = f": {run.error_message}" if run.error_message else ""
        return f"### Relevance gate: **run {run.status}**\n\nNo verdict{why}.\n\n{_run_line(run, page_url)}\n"
    gate = run.gate
    if gate["verdict"] in ("pass", "warn", "fail"):
        return render_markdown(gate_result(gate)) + "\n" + _run_line(run, page_url) + "\n"
    lines = ["### Relevance gate: **no baseline**", ""]
    lines += [f"- {note}" for note in gate["notes"]]
    core = ((run.report or {}).get("tiers") or {}).get("core") or {}
    lines += ["", "| metric | current |", "|---|---:|"]
    for metric in METRICS:
        lines.append(f"| {metric.label} | {metric.format((core.get(metric.key) or {}).get('value'))} |")
    lines += ["", _run_line(run, page_url)]
    return "\n".join(lines) + "\n"
