"""The gate of a finished run as a pull-request comment (what `assay remote run --summary` writes)."""

from __future__ import annotations

from typing import Any

from django.utils.text import capfirst

from assay.display import params_text
from assay.drift import Finding, GateResult, load_budgets, render_markdown
from assay.metric_table import METRICS
from evaluation.runs.models import EvaluationRun


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
        left_out=gate.get("left_out") or {},
        rebaseline=bool(gate["rebaseline"]),
        budgets=load_budgets(gate["budgets"]),
        current=gate["current"],
        baseline=gate["baseline"],
        overlap=gate.get("overlap"),
    )


def core_means(report: dict[str, Any] | None) -> dict[str, dict[str, float | None]]:
    """A report's core means side by side: metric -> {"mean", "weighted"} (weighted None without a twin)."""
    core = ((report or {}).get("tiers") or {}).get("core") or {}
    weighted = core.get("weighted") or {}
    return {
        m.key: {
            "mean": (core.get(m.key) or {}).get("value"),
            "weighted": (weighted.get(m.key) or {}).get("value") if m.weighted else None,
        }
        for m in METRICS
    }


def _run_line(run: EvaluationRun, page_url: str) -> str:
    version = run.golden_version
    return (
        f"{capfirst(run.label)} on `{version.golden_set.slug}@{version.name}`, params "
        f"`{params_text(run.effective_params)}`. [Full report]({page_url})"
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
    means = core_means(run.report)
    lines += ["", "| metric | current | traffic-weighted |", "|---|---:|---:|"]
    for metric in METRICS:
        mean, weighted = (metric.format(means[metric.key][side]) for side in ("mean", "weighted"))
        lines.append(f"| {metric.label} | {mean} | {weighted} |")
    lines += ["", _run_line(run, page_url)]
    return "\n".join(lines) + "\n"
