"""What runs announce to the capabilities built on them. Runs know neither side-by-side studies nor
experiments (pyproject.toml's import contracts): where a run's end, a baseline's promotion or a run's
page must reach another capability, runs send one of these signals and that capability connects its
receivers (`EvaluationConfig.ready`, evaluation/apps.py: `evaluation.studies.receivers`,
`evaluation.experiments.receivers`). A signal nobody listens to does nothing, and a receiver's error is
the sender's, as a direct call's would be.

- `run_finished` (`run_id`): finalize has committed a run's final status and verdict (a study on two
  targets waiting for its runs is made or failed then: docs/sxs.md, "Creating a study").
- `baseline_checks` (`run`, `lock`): each receiver returns the problems that keep `run` from becoming its
  set's baseline (a set that requires a passed study first: docs/sxs.md); `lock` inside the promotion's
  transaction, where what the answer rests on stays locked until it commits.
- `baseline_promoted` (`baseline`, `by`): inside the promotion's transaction, after the checks (the
  studies the promotion rested on are closed with it: docs/sxs.md, "Closing a study").
- `run_page_panels` (`run`): each receiver returns the `Panel`s it draws on the run's page (the studies of
  the run, the experiment whose adoption started it), each in its place and with what it adds to the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from django.dispatch import Signal

from evaluation.runs.models import Baseline, EvaluationRun

run_finished = Signal()
baseline_checks = Signal()
baseline_promoted = Signal()
run_page_panels = Signal()

# Where a panel goes on the run's page (templates/evaluation/runs/run_detail.html).
PANEL_PLACES = ("top", "after_verdict")


@dataclass(frozen=True, slots=True)
class Panel:
    """A part of a run's page that a capability built on runs draws: its place (`PANEL_PLACES`), its
    template (included with the page's context) and the names it adds to that context."""

    place: str
    template: str
    context: dict[str, Any] = field(default_factory=dict)


def run_finished_send(*, run_id: int) -> None:
    run_finished.send(sender=EvaluationRun, run_id=run_id)


def baseline_problems(run: EvaluationRun, *, lock: bool = False) -> list[str]:
    """Every problem the capabilities listening to `baseline_checks` find with `run` as a baseline."""
    answers = baseline_checks.send(sender=EvaluationRun, run=run, lock=lock)
    return [problem for _, found in answers for problem in cast(list[str], found)]


def baseline_promoted_send(*, baseline: Baseline, by: Any) -> None:
    baseline_promoted.send(sender=Baseline, baseline=baseline, by=by)


def run_page_panels_of(run: EvaluationRun) -> list[Panel]:
    """Every panel the listening capabilities draw on `run`'s page, in the order they were connected."""
    answers = run_page_panels.send(sender=EvaluationRun, run=run)
    return [panel for _, found in answers for panel in cast(list[Panel], found)]
