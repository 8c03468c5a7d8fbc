"""Baseline re-scores: a baseline run's stored result lists scored against a newer golden version's labels
(`assay.rescore`), so that a run on that version is gated like with like without calling the old system
again (docs/runs.md, "A new golden version: re-scoring the baseline").

One `BaselineRescore` row per (baseline run, golden version), reused by every run that needs it. The new
version's durable keys are resolved through the baseline run's own key map: its lists hold the document
ids of its day. Who asks is recorded (None: a nightly schedule that opted in).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from assay.golden.keys import resolve_keys
from assay.rescore import RescoreError, rescore_results, rescored_at
from evaluation.runs.models import Baseline, BaselineRescore, EvaluationRun
from evaluation.runs.selectors import golden_of, run_results
from evaluation.runs.services.runs import RunError
from golden_io.models import GoldenVersion


class BaselineRescoreError(RunError):
    """A baseline run whose lists cannot be re-scored on a golden version (every reason)."""


def baseline_rescore_get_or_create(
    *, baseline_run: EvaluationRun, golden_version: GoldenVersion, by: Any = None
) -> BaselineRescore:
    """The re-score of `baseline_run` on `golden_version`: the one made before, else a new one made by
    `by`. Raises BaselineRescoreError (nothing to re-score, a k other than the baseline's)."""
    existing = BaselineRescore.objects.filter(source_run=baseline_run, golden_version=golden_version).first()
    if existing is not None:
        return existing
    if baseline_run.report is None:
        raise BaselineRescoreError([f"{baseline_run.label} has no report: there is nothing to re-score"])
    if baseline_run.golden_version_id == golden_version.pk:
        raise BaselineRescoreError(
            [f"{baseline_run.label} is already on version {golden_version.name}: nothing to re-score"]
        )
    resolved = resolve_keys(golden_of(golden_version), baseline_run.key_map or {})
    try:
        report = rescore_results(
            run_results(run=baseline_run),
            resolved.golden,
            baseline=baseline_run.report,
            by=by.get_username() if by is not None else None,
            at=rescored_at(timezone.now()),
            source=f"run {baseline_run.pk}",
        )
    except RescoreError as exc:
        raise BaselineRescoreError(exc.problems) from exc
    report["keys"] = resolved.to_dict()  # as every report that scores resolved judgments (docs/runs.md)
    # Two finalizes (or a finalize and a click) may make it at once: the unique pair keeps one row.
    rescore, _ = BaselineRescore.objects.get_or_create(
        source_run=baseline_run, golden_version=golden_version, defaults={"report": report, "created_by": by}
    )
    return rescore


def baseline_rescore_auto(
    *, run: EvaluationRun, baseline: Baseline | None
) -> tuple[BaselineRescore | None, list[str]]:
    """Finalize's hook: the re-score `run` is gated against without a click, when the run asked for it
    (`rescore_baseline`: the reviewer confirmed it on the Start-a-run form or the API, or its nightly
    schedule opted in) and `baseline` is on another golden version; else None. When the re-score is
    refused, the reasons come back as gate notes and the run is gated as without the opt-in."""
    if baseline is None or not run.rescore_baseline:
        return None, []
    source = baseline.run
    if source.golden_version_id == run.golden_version_id:
        return None, []
    try:
        return baseline_rescore_get_or_create(baseline_run=source, golden_version=run.golden_version), []
    except BaselineRescoreError as exc:
        return None, [
            f"baseline not re-scored on version {run.golden_version.name}: {p}" for p in exc.problems
        ]
