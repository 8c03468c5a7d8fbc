"""The finalize task's step: once every query has a result, the report, the gate against the baseline
in force and the verdict, written unless the run was cancelled meanwhile."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from assay.drift import Budgets, compare
from assay.golden.keys import resolve_keys
from assay.memory import gc_paused
from assay.report import BOOTSTRAP_SEED, build_report
from assay.run_meta import run_meta
from assay.targets import TargetSpec, harness_config
from evaluation.fields import large_json_write
from evaluation.runs.enqueue import run_notify_on_commit
from evaluation.runs.hooks import run_finished_send
from evaluation.runs.models import Baseline, BaselineRescore, EvaluationRun, QueryRunResult
from evaluation.runs.selectors import baseline_get, budgets_get, golden_of, noise_measure, run_results
from evaluation.runs.services.rescore import baseline_rescore_auto

Status = EvaluationRun.Status


# How long a claimed finalize may take before another finalize may take over (its worker died).
FINALIZE_LEASE = timedelta(minutes=10)


def run_report_build(*, run: EvaluationRun) -> dict[str, Any]:
    """The run's report artifact from its result rows (docs/metrics.md), with the keys left unresolved."""
    golden = golden_of(run.golden_version)
    results = run_results(run=run)
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
    # A seed per run: its intervals and every change against it are reproducible from the run's id.
    report = build_report(resolved.golden, results, run=meta, bootstrap_seed=BOOTSTRAP_SEED + run.pk)
    # Every report that scores resolved judgments lists the keys that did not resolve (docs/runs.md).
    report["keys"] = resolved.to_dict()
    return report


def run_gate(
    *,
    report: dict[str, Any],
    baseline: Baseline | None,
    budgets: Budgets,
    rebaseline: bool,
    rescore: BaselineRescore | None = None,
) -> tuple[str, dict[str, Any]]:
    """(verdict, gate JSON) for a report. Without a baseline the means cannot be compared, but errors and
    critical queries still fail the run (fail closed); otherwise its verdict is "none". With `rescore`
    the baseline run's lists re-scored on the report's golden version stand for its own report."""
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
    against = rescore.report if rescore is not None else baseline.run.report
    gate = compare(
        report, against, budgets, rebaseline=rebaseline, noise_floor=noise_measure(baseline=baseline).floor
    )
    data = gate.to_dict()
    data["baseline_run"] = baseline.run_id
    data["baseline_id"] = baseline.pk
    data["baseline_rescore"] = rescore.pk if rescore is not None else None
    return gate.verdict, data


def run_outcome(*, report: dict[str, Any], gate: dict[str, Any]) -> tuple[str, str]:
    """(status, status line) of a finished run. A run whose every query errored saw nothing of the engine:
    it is `failed`, saying how its queries failed (the commonest error first). A run over its error budget
    succeeds (its report is complete) with the budget's finding as its status line."""
    errors = [row["error"] for row in report["per_query"] if row["error"] is not None]
    if errors and len(errors) == len(report["per_query"]):
        common = Counter(errors).most_common(2)
        shown = "; ".join(f"{text[:200]!r} ({count}x)" for text, count in common)
        more = len(set(errors)) - len(common)
        return Status.FAILED, (
            f"every one of the {len(errors)} queries errored, so nothing was measured: {shown}"
            + (f" and {more} other error{'s' if more > 1 else ''}" if more > 0 else "")
            + " (the per-query errors are listed below; check the target's URL, adapter and response format)"
        )
    over = [f["message"] for f in gate.get("failures", []) if f.get("kind") == "errors"]
    return Status.SUCCEEDED, "; ".join(over)


# A 100,000-query report and its gate are millions of small objects without cycles: the collector is paused
# until they are written, not only while they are built (a pass of it over them while they were written
# took 0.3-1 s of a 2.7 s finalize).
@gc_paused()
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
    # A nightly schedule may opt in to gating a new golden version against the baseline re-scored on it.
    rescore, not_rescored = baseline_rescore_auto(run=run, baseline=baseline)
    verdict, gate = run_gate(
        report=report,
        baseline=baseline,
        budgets=budgets_get(golden_set=golden_set),
        rebaseline=run.rebaseline,
        rescore=rescore,
    )
    gate["notes"] += not_rescored
    with transaction.atomic():
        locked = EvaluationRun.objects.select_for_update().get(pk=run_id)
        if locked.status != Status.FINALIZING:
            return "skipped"  # cancelled meanwhile: a cancel wins over a late report
        locked.report = report
        locked.gate = gate
        locked.verdict = verdict
        locked.baseline = baseline
        locked.baseline_rescore = rescore
        locked.errors = sum(1 for row in report["per_query"] if row["error"] is not None)
        locked.status, locked.error_message = run_outcome(report=report, gate=gate)
        locked.finished_at = timezone.now()
        # The report and gate (tens of megabytes at 100,000 queries) as parameters (evaluation/fields.py).
        large_json_write(locked, ["report", "gate"])
        locked.save(
            update_fields=[
                "verdict",
                "baseline",
                "baseline_rescore",
                "errors",
                "status",
                "error_message",
                "finished_at",
            ]
        )
        run_notify_on_commit(run_id)  # a fail or warn verdict is told to people (docs/runs.md)
    # Announced once the final status is committed (a study asked for on two targets is made or failed).
    run_finished_send(run_id=run_id)
    return "finalized"
