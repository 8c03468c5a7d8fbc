"""How side-by-side studies listen to runs (`evaluation.runs.hooks`): runs never import studies, so the
studies connect here, once, from `EvaluationConfig.ready` (evaluation/apps.py).

- A run finished: the pending studies waiting for it are made or failed (docs/sxs.md, "Creating a study").
- A run proposed as a baseline: refused unless it passed a study, when its set requires one; promoted:
  the passed studies it rested on are closed with their verdict (docs/sxs.md, "Closing a study").
- A run's page: the studies it is in, with their verdicts (docs/sxs.md, "The verdict on the run pages").
"""

from __future__ import annotations

from typing import Any

from evaluation.runs.hooks import Panel, baseline_checks, baseline_promoted, run_finished, run_page_panels
from evaluation.runs.models import Baseline, EvaluationRun
from evaluation.studies.services.analysis import run_studies
from evaluation.studies.services.close import baseline_studies_close, baseline_study_problems
from evaluation.studies.services.pending import pending_studies_resolve


def _run_finished(sender: Any, *, run_id: int, **kwargs: Any) -> None:
    pending_studies_resolve(run_id=run_id)


def _baseline_checks(sender: Any, *, run: EvaluationRun, lock: bool, **kwargs: Any) -> list[str]:
    return baseline_study_problems(run, lock=lock)


def _baseline_promoted(sender: Any, *, baseline: Baseline, by: Any, **kwargs: Any) -> None:
    baseline_studies_close(baseline=baseline, by=by)


def _run_page_panels(sender: Any, *, run: EvaluationRun, **kwargs: Any) -> list[Panel]:
    studies = run_studies(run)
    return [Panel("after_verdict", "evaluation/studies/_run_studies.html", {"run_studies": studies})]


def connect() -> None:
    """Listen to the runs' announcements (each receiver once, however often this is called)."""
    run_finished.connect(_run_finished, weak=False, dispatch_uid="studies.run_finished")
    baseline_checks.connect(_baseline_checks, weak=False, dispatch_uid="studies.baseline_checks")
    baseline_promoted.connect(_baseline_promoted, weak=False, dispatch_uid="studies.baseline_promoted")
    run_page_panels.connect(_run_page_panels, weak=False, dispatch_uid="studies.run_page_panels")
