from __future__ import annotations

import os
import sys
from typing import Any

from celery import Celery
from celery.signals import beat_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("assay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@beat_init.connect
def one_beat(sender: Any = None, **kwargs: Any) -> None:
    """A second `celery beat` exits at once instead of sending every periodic task twice."""
    from config.beat_lock import beat_lock_take, beat_lock_where

    if not beat_lock_take():
        sys.stderr.write(
            f"celery beat: another beat holds the scheduler lock ({beat_lock_where()}); exactly one may run, "
            "so this one exits\n"
        )
        sys.stderr.flush()
        raise SystemExit(1)


@worker_ready.connect
def sweep_at_start(sender: Any = None, **kwargs: Any) -> None:
    """A worker that starts asks for the sweeps at once (docs/runs.md, "Worker loss"; docs/judge.md): the
    work of a worker lost before it, whose leases or job heartbeats ran out meanwhile, and runs whose start
    was lost move without waiting for beat's next tick (or for beat at all)."""
    app.send_task("evaluation.runs_sweep")
    app.send_task("evaluation.experiments_sweep")
    app.send_task("labeling.judge_jobs_sweep")
