"""How experiments listen to runs (`evaluation.runs.hooks`): runs never import experiments, so the
experiments connect here, once, from `EvaluationConfig.ready` (evaluation/apps.py).

- A run's page: the experiment it confirms, when an adoption started it (docs/experiments.md, "Use this
  configuration").
"""

from __future__ import annotations

from typing import Any

from evaluation.experiments.models import ExperimentAdoption
from evaluation.runs.hooks import Panel, run_page_panels
from evaluation.runs.models import EvaluationRun


def _run_page_panels(sender: Any, *, run: EvaluationRun, **kwargs: Any) -> list[Panel]:
    adoptions = ExperimentAdoption.objects.filter(run=run).select_related(
        "adopted_by", "reverted_by", "target"
    )
    return [Panel("top", "evaluation/experiments/_run_adoption.html", {"adopted_from": list(adoptions)})]


def connect() -> None:
    """Listen to the runs' announcements (each receiver once, however often this is called)."""
    run_page_panels.connect(_run_page_panels, weak=False, dispatch_uid="experiments.run_page_panels")
