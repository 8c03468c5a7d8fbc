"""What runs announce to the capabilities built on them. Runs know neither side-by-side studies nor
experiments (pyproject.toml's import contracts): where a run's end or a baseline's promotion must reach
another capability, runs send one of these signals and that capability connects its receivers
(`EvaluationConfig.ready`, evaluation/apps.py; the studies' are `evaluation.studies.receivers`). A signal
nobody listens to does nothing, and a receiver's error is the sender's, as a direct call's would be.

- `run_finished` (`run_id`): finalize has committed a run's final status and verdict (a study on two
  targets waiting for its runs is made or failed then: docs/sxs.md, "Creating a study").
- `baseline_checks` (`run`, `lock`): each receiver returns the problems that keep `run` from becoming its
  set's baseline (a set that requires a passed study first: docs/sxs.md); `lock` inside the promotion's
  transaction, where what the answer rests on stays locked until it commits.
- `baseline_promoted` (`baseline`, `by`): inside the promotion's transaction, after the checks (the
  studies the promotion rested on are closed with it: docs/sxs.md, "Closing a study").
"""

from __future__ import annotations

from typing import Any, cast

from django.dispatch import Signal

from evaluation.runs.models import Baseline, EvaluationRun

run_finished = Signal()
baseline_checks = Signal()
baseline_promoted = Signal()


def run_finished_send(*, run_id: int) -> None:
    run_finished.send(sender=EvaluationRun, run_id=run_id)


def baseline_problems(run: EvaluationRun, *, lock: bool = False) -> list[str]:
    """Every problem the capabilities listening to `baseline_checks` find with `run` as a baseline."""
    answers = baseline_checks.send(sender=EvaluationRun, run=run, lock=lock)
    return [problem for _, found in answers for problem in cast(list[str], found)]


def baseline_promoted_send(*, baseline: Baseline, by: Any) -> None:
    baseline_promoted.send(sender=Baseline, baseline=baseline, by=by)
