"""Queueing the experiments' Celery tasks from their services, by the tasks' stable names, as the runs'
are (`evaluation.runs.enqueue`): the services never import `evaluation.experiments.tasks`."""

from __future__ import annotations

from evaluation.runs.enqueue import task_on_commit

EXPERIMENT_START = "evaluation.experiment_start"


def experiment_start_on_commit(experiment_id: int) -> None:
    """Start the experiment once the transaction that created it commits (docs/experiments.md)."""
    task_on_commit(EXPERIMENT_START, experiment_id)
