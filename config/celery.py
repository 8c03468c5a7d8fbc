from __future__ import annotations

import logging
import os
import sys
from typing import Any

from celery import Celery, bootsteps
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


class Heartbeat(bootsteps.StartStopStep):
    """Every ASSAY_WORKER_HEARTBEAT_S the worker writes its heartbeat to the broker (config/broker_state.py),
    on the worker's own timer, so /metrics can tell which workers are up whatever else they are doing; a
    worker stopping removes its own. A broker that cannot be written costs a line in the log, never the
    worker."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.tref: Any = None

    def _call(self, worker: Any, what: str) -> None:
        from config.broker_state import broker

        try:
            found = broker()
            if found is not None:
                getattr(found, what)(worker.hostname)
        except Exception as exc:  # the broker down or unwritable: the worker goes on
            logging.getLogger(__name__).warning("worker heartbeat (%s) not written: %s", what, exc)

    def start(self, worker: Any) -> None:
        from django.conf import settings

        self._call(worker, "beat")
        every = float(settings.ASSAY_WORKER_HEARTBEAT_S)
        self.tref = worker.timer.call_repeatedly(every, self._call, (worker, "beat"), priority=10)

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
            self._call(worker, "gone")

    def terminate(self, worker: Any) -> None:
        self.stop(worker)


app.steps["worker"].add(Heartbeat)
