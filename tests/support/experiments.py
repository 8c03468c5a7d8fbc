"""An experiment driven to its end in the test's own process, step by step as the tasks would drive it
(start, each chunk, advance, each held-out chunk, advance), without Celery or its on-commit hooks: for
tests that need a finished experiment to exist (pages, permissions), not the workers."""

from __future__ import annotations

from typing import Any

from evaluation.models import Experiment, SearchTarget
from evaluation.services.experiment_chunks import experiment_chunk_process
from evaluation.services.experiments import experiment_advance, experiment_begin, experiment_create
from golden_io.models import GoldenVersion

GRID = {"params": {"w": [1, 2], "mode": ["a", "b"]}}


def finished_experiment(
    version: GoldenVersion, target: SearchTarget, by: Any, grid: Any = None, **options: Any
) -> Experiment:
    experiment = experiment_create(
        golden_version=version, target=target, grid=grid or GRID, created_by=by, **options
    )
    plan = experiment_begin(experiment_id=experiment.pk)
    while plan is not None:
        for index in plan.indices:
            experiment_chunk_process(experiment_id=experiment.pk, chunk=index)
        plan = experiment_advance(experiment_id=experiment.pk)
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.SUCCEEDED, experiment.error_message
    return experiment
