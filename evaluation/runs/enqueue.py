"""Queueing evaluation's Celery tasks from the services, by the tasks' stable names.

A service queues work (a new run's start) but never imports `evaluation.runs.tasks`: the tasks import the
services (inside each task function), and pyproject.toml's import contract forbids a cycle between
evaluation's modules. The task is found in the Celery app's registry by name instead;
`EvaluationConfig.ready` (evaluation/apps.py) imports `evaluation.runs.tasks`, so every process that runs
the services (web, worker, shell, tests) has it registered, and an eager test app still runs it in-process.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction

RUN_START = "evaluation.run_start"
RUN_NOTIFY = "evaluation.run_notify"


def run_start_on_commit(run_id: int) -> None:
    """Start the run once the transaction that created it commits (a worker must find the row)."""
    transaction.on_commit(lambda: _task(RUN_START).delay(run_id))


def run_notify_on_commit(run_id: int) -> None:
    """Tell people the run's verdict once the transaction that wrote it commits (docs/runs.md,
    "Notifications"); the task itself decides whether the verdict is one to tell."""
    transaction.on_commit(lambda: _task(RUN_NOTIFY).delay(run_id))


def task_on_commit(name: str, *args: Any) -> None:
    """Queue the task registered as `name` with `args` once the current transaction commits (an
    experiment's start: evaluation/experiments/enqueue.py)."""
    transaction.on_commit(lambda: _task(name).delay(*args))


def _task(name: str) -> Any:
    # A KeyError here means evaluation.runs.tasks was never imported: loud, rather than a message no one
    # sends.
    return current_app.tasks[name]
