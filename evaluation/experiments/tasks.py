"""Celery tasks of experiments (docs/experiments.md, "In the app"): thin interfaces over
`evaluation.experiments.services.experiments` and `evaluation.experiments.services.chunks`, as
`evaluation.runs.tasks` is for runs, with the same guarantees: every task is safe to run twice (conditional
updates on the experiment's status and phase, answers unique per (experiment, slot, query)), chunk tasks hold
their chunk's lease, and the sweeper (`evaluation.experiments_sweep`, every 15 s on beat and as each worker
starts) sends again the chunks whose lease ran out.

    experiment_create ─on commit─> experiment_start: QUEUED -> RUNNING, tuning chunks
      ─> experiment_chunk x N (each: its slots x queries, answers written as they come)
      ─> the chunk that completes the phase sends experiment_advance: rank, held-out chunks
      ─> experiment_chunk x M ─> experiment_advance: confirm, conclude, SUCCEEDED

Imported by `evaluation.runs.tasks` (which Celery's autodiscovery and the app's `ready` load).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import Task, group, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from evaluation.experiments.enqueue import EXPERIMENT_START

if TYPE_CHECKING:
    from evaluation.experiments.services.experiments import ExperimentPlan

logger = logging.getLogger(__name__)

CHUNK_SOFT_LIMIT_S = 50 * 60
CHUNK_HARD_LIMIT_S = 55 * 60
ADVANCE_SOFT_LIMIT_S = 10 * 60
ADVANCE_HARD_LIMIT_S = 11 * 60


def _failing(name: str, experiment_id: int, exc: BaseException) -> None:
    from evaluation.experiments.services.experiments import experiment_fail

    logger.exception("experiment %s: %s failed", experiment_id, name)
    experiment_fail(experiment_id=experiment_id, message=f"{name}: {type(exc).__name__}: {exc}")


def send(plan: ExperimentPlan | None) -> None:
    """Fan the plan's chunks out over the workers (each names its lease)."""
    if plan is not None and plan.indices:
        group(experiment_chunk.si(plan.experiment_id, index) for index in plan.indices).delay()


@shared_task(name=EXPERIMENT_START, ignore_result=True)
def experiment_start(experiment_id: int) -> None:
    """Claim a queued experiment and send its tuning chunks."""
    from evaluation.experiments.services.experiments import experiment_begin

    try:
        send(experiment_begin(experiment_id=experiment_id))
    except Exception as exc:
        _failing("experiment_start", experiment_id, exc)
        raise


@shared_task(
    bind=True,
    name="evaluation.experiment_chunk",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=CHUNK_SOFT_LIMIT_S,
    time_limit=CHUNK_HARD_LIMIT_S,
    ignore_result=True,
)
def experiment_chunk(self: Task, experiment_id: int, chunk: int) -> dict[str, Any]:
    """Search the chunk's (configurations x queries) without an answer, holding its lease; the chunk
    that completes its phase sends the advance."""
    from evaluation.experiments.services.chunks import experiment_chunk_process

    try:
        outcome = experiment_chunk_process(
            experiment_id=experiment_id, chunk=chunk, worker=self.request.hostname or ""
        )
    except SoftTimeLimitExceeded:
        logger.error("experiment %s: chunk %s hit its soft time limit before searching", experiment_id, chunk)
        return {"stopped": True}
    if outcome.complete:
        experiment_advance.delay(experiment_id)
    return {"written": outcome.written, "stopped": outcome.stopped, "duplicate": outcome.duplicate}


@shared_task(
    name="evaluation.experiment_advance",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=ADVANCE_SOFT_LIMIT_S,
    time_limit=ADVANCE_HARD_LIMIT_S,
    ignore_result=True,
)
def experiment_advance(experiment_id: int) -> None:
    """Once a phase has every answer: rank and send the held-out chunks, or conclude."""
    from evaluation.experiments.services.experiments import experiment_advance as advance

    try:
        send(advance(experiment_id=experiment_id))
    except Exception as exc:
        _failing("experiment_advance", experiment_id, exc)
        raise


@shared_task(name="evaluation.experiments_sweep", ignore_result=True)
def experiments_sweep() -> dict[str, Any]:
    """Periodic, and once as each worker starts: start, re-send or advance experiments that stopped."""
    from evaluation.experiments.services.experiments import experiment_resume
    from evaluation.experiments.services.experiments import experiments_sweep as sweep

    actions = sweep()
    for experiment_id in actions.start:
        experiment_start.delay(experiment_id)
    for experiment_id, plan in actions.resend.items():
        logger.warning(
            "experiment %s: chunk(s) %s lost their worker, sending them again",
            experiment_id,
            list(plan.indices),
        )
        send(plan)
    for experiment_id in actions.advance:
        again = experiment_resume(experiment_id=experiment_id)
        if again is not None:
            logger.warning(
                "experiment %s: no progress, re-sending %s chunk(s)", experiment_id, len(again.indices)
            )
            send(again)
        else:
            experiment_advance.delay(experiment_id)
    return {
        "start": actions.start,
        "resend": sorted(actions.resend),
        "advance": actions.advance,
        "failed": actions.failed,
    }
