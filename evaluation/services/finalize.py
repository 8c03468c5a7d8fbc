"""The finalize task's step: once every query has a result, the report, the gate against the baseline
in force and the verdict, written unless the run was cancelled meanwhile."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from assay.drift import Budgets, compare
from assay.golden.keys import resolve_keys
from assay.harness import run_meta
from assay.report import build_report
from assay.results import QueryResult
from assay.targets import TargetSpec, harness_config
from evaluation.models import Baseline, EvaluationRun, QueryRunResult
from evaluation.selectors import baseline_get, budgets_get, golden_of

Status = EvaluationRun.Status


# How long a claimed finalize may take before another finalize may take over (its worker died).
FINALIZE_LEASE = timedelta(minutes=10)


def _results_of(run: EvaluationRun) -> dict[str, QueryResult]:
    return {
        row.query_id: QueryResult(
            query_id=row.query_id,
            ids=tuple(row.ids),
            error=row.error,
            status=row.http_status,
            latency_ms=row.latency_ms,
            attempts=row.attempts,
            index_generation=row.index_generation or None,
            model_id=row.model_id or None,
            titles=tuple(row.titles),
        )
        for row in QueryRunResult.objects.filter(run=run).order_by("id")
    }


def run_report_build(*, run: EvaluationRun) -> dict[str, Any]:
    """The run's report artifact from its result rows (docs/metrics.md), with the keys left unresolved."""
    golden = golden_of(run.golden_version)
    results = _results_of(run)
    resolved = resolve_keys(golden, run.key_map or {})
    spec = TargetSpec.from_dict(run.target_snapshot)
    config = harness_config(spec, size=golden.k, params=run.params, redact=True)
    started = run.started_at or run.created
    ordered = [results[q.id] for q in golden.queries if q.id in results]
    meta = run_meta(config, ordered, started_at=started, duration=(timezone.now() - started).total_seconds())
    meta.update(
        {
            "run_id": run.pk,
            "target": spec.name,
            "golden_set": run.golden_version.golden_set.slug,
            "trigger": run.trigger,
            "triggered_by": run.triggered_by.get_username() if run.triggered_by else None,
        }
    )
    report = build_report(resolved.golden, results, run=meta)
    # Every report that scores resolved judgments lists the keys that did not resolve (docs/runs.md).
    report["keys"] = resolved.to_dict()
    return report


def run_gate(
    *, report: dict[str, Any], baseline: Baseline | None, budgets: Budgets, rebaseline: bool
) -> tuple[str, dict[str, Any]]:
    """(verdict, gate JSON) for a report. Without a baseline the means cannot be compared, but errors and
    critical queries still fail the run (fail closed); otherwise its verdict is "none"."""
    if baseline is None or baseline.run.report is None:
        gate = compare(report, report, budgets)
        data = gate.to_dict()
        data["baseline_run"] = None
        data["notes"] = [
            "no baseline for this golden set and target: only errors and critical queries were checked",
            *data["notes"],
        ]
        verdict = "fail" if gate.verdict == "fail" else EvaluationRun.Verdict.NONE
        data["verdict"] = verdict
        return verdict, data
    gate = compare(report, baseline.run.report, budgets, rebaseline=rebaseline)
    data = gate.to_dict()
    data["baseline_run"] = baseline.run_id
    data["baseline_id"] = baseline.pk
    return gate.verdict, data


def run_finalize_process(*, run_id: int) -> str:
    """Build the report and verdict once every query has a result. Returns "finalized", "waiting" (results
    missing: a chunk is still running or will be re-sent) or "skipped" (finished, cancelled, or another
    finalize holds the lease)."""
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None or run.status not in (Status.RUNNING, Status.FINALIZING):
        return "skipped"
    count = QueryRunResult.objects.filter(run_id=run_id).count()
    if count < run.total:
        return "waiting"
    now = timezone.now()
    claimed = (
        EvaluationRun.objects.filter(pk=run_id)
        .filter(
            Q(status=Status.RUNNING) | Q(status=Status.FINALIZING, finalizing_at__lt=now - FINALIZE_LEASE)
        )
        .update(status=Status.FINALIZING, finalizing_at=now, done=count)
    )
    if claimed != 1:
        return "skipped"
    run = EvaluationRun.objects.select_related("golden_version__golden_set", "target", "triggered_by").get(
        pk=run_id
    )
    golden_set = run.golden_version.golden_set
    report = run_report_build(run=run)
    baseline = baseline_get(golden_set=golden_set, target=run.target)
    verdict, gate = run_gate(
        report=report,
        baseline=baseline,
        budgets=budgets_get(golden_set=golden_set),
        rebaseline=run.rebaseline,
    )
    with transaction.atomic():
        locked = EvaluationRun.objects.select_for_update().get(pk=run_id)
        if locked.status != Status.FINALIZING:
            return "skipped"  # cancelled meanwhile: a cancel wins over a late report
        locked.report = report
        locked.gate = gate
        locked.verdict = verdict
        locked.baseline = baseline
        locked.errors = sum(1 for row in report["per_query"] if row["error"] is not None)
        locked.status = Status.SUCCEEDED
        locked.finished_at = timezone.now()
        locked.save(
            update_fields=["report", "gate", "verdict", "baseline", "errors", "status", "finished_at"]
        )
    return "finalized"
