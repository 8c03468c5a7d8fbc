"""Celery tasks of evaluation runs: thin interfaces over `evaluation.runs.services`.

Explicit stable names, JSON arguments (ids), services imported inside each task function (the services
never import this module: they queue `run_start` by its name, `evaluation.runs.enqueue`). Idempotency lives
in the database (conditional status updates, unique (run, query) results), so every task here is safe
to run twice; `run_chunk` and `run_finalize` are `acks_late` with `reject_on_worker_lost`: a chunk whose
worker is killed goes back to the broker and another worker finishes it without duplicating a result.

A run's verdict is told by `evaluation.run_notify` (queued by finalize when the verdict is written),
which creates the run's deliveries and sends each with `evaluation.notification_send` (retried with
backoff on transient failures; docs/runs.md, "Notifications").

A run planned as one chunk is not fanned out: `run_start` searches it and finalizes it itself (the same
chunk step and lease), saving the broker's hops (docs/runs.md, "How a run moves").

Each chunk task holds its chunk's lease (`evaluation.runs.services.leases`) while it works; a lease that runs
out means the worker was lost, and the sweeper sends the chunk again within seconds rather than when the
broker redelivers it (docs/runs.md, "Worker loss").

Periodic tasks for celery beat: `evaluation.runs_nightly` (every few minutes: starts the due nightly
schedules) and `evaluation.runs_sweep` (every 15 s, and once as each worker starts: moves runs that
stopped moving). docs/runs.md gives the CELERY_BEAT_SCHEDULE lines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

from celery import Task, chain, chord, group, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from evaluation.runs.enqueue import RUN_NOTIFY, RUN_START

if TYPE_CHECKING:
    from evaluation.runs.services import ChunkOutcome, RunPlan

logger = logging.getLogger(__name__)
# httpx logs every request at INFO: a worker running at INFO would write a line per notification webhook
# call (evaluation/runs/services/notifications.py). Runs call the engines through aiohttp (assay.harness),
# which logs no line per request.
logging.getLogger("httpx").setLevel(logging.WARNING)

F = TypeVar("F", bound=Callable[..., Any])

# A chunk of MAX_CHUNK queries at a slow engine's worst case (every query timing out with retries)
# stays well inside these; the soft limit turns the rest of a chunk into per-query errors.
CHUNK_SOFT_LIMIT_S = 50 * 60
CHUNK_HARD_LIMIT_S = 55 * 60
FINALIZE_SOFT_LIMIT_S = 10 * 60
FINALIZE_HARD_LIMIT_S = 11 * 60
# One delivery attempt: a webhook call or an SMTP conversation, each with its own timeout well inside.
NOTIFY_SOFT_LIMIT_S = 2 * 60
NOTIFY_HARD_LIMIT_S = 3 * 60


def _final_status_on_error(func: F) -> F:
    """The wrapper that always leaves a run with a final status: an unexpected error fails the run (with
    the error as its message) instead of leaving it RUNNING for ever."""

    @wraps(func)
    def wrapper(run_id: int, *args: Any, **kwargs: Any) -> Any:
        try:
            return func(run_id, *args, **kwargs)
        except Exception as exc:
            from evaluation.runs.services import run_fail

            logger.exception("run %s: %s failed", run_id, func.__name__)
            run_fail(run_id=run_id, message=f"{func.__name__}: {type(exc).__name__}: {exc}")
            raise

    return wrapper  # type: ignore[return-value]


def dispatch(plan: RunPlan) -> None:
    """Fan a run's chunks out over the workers with finalize as the chord's callback (or, for a
    sequential plan, chain them and finalize last). Each chunk task names its lease."""
    run_id = plan.run_id
    indices: list[int | None] = list(plan.indices) or [None] * len(plan.chunks)
    chunks = [run_chunk.si(run_id, list(c), chunk=i) for c, i in zip(plan.chunks, indices, strict=True)]
    if not chunks:
        run_finalize.delay(run_id)
    elif plan.sequential:
        chain(*chunks, run_finalize.si(run_id)).delay()
    else:
        chord(group(chunks))(run_finalize.si(run_id))


# run_start searches a run planned as one chunk itself: the chunk's limits (its finalize is a small one).
@shared_task(
    name=RUN_START, ignore_result=True, soft_time_limit=CHUNK_SOFT_LIMIT_S, time_limit=CHUNK_HARD_LIMIT_S
)
@_final_status_on_error
def run_start(run_id: int) -> None:
    """Claim a queued run (QUEUED -> RUNNING), resolve its durable keys, fan out its chunks; a run planned
    as one chunk is searched here and finalized at once, without the hops of a fan-out (docs/runs.md, "How
    a run moves"). Its chunk holds its lease as a chunk task's does, so a worker lost meanwhile is
    noticed the same way and the sweeper sends the chunk again as a chunk task."""
    from evaluation.runs.services import run_begin

    plan = run_begin(run_id=run_id)
    if plan is None:
        logger.info("run %s: not queued any more (claimed elsewhere or cancelled)", run_id)
        return
    single = plan.single
    if single is None:
        dispatch(plan)
        return
    query_ids, index = single
    try:
        outcome = _chunk(run_id, query_ids, index, run_start.request.hostname or "")
    except Exception:
        # As a failed chunk task: its lease is given back and the sweeper's next tick sends the chunk again;
        # the run is not failed for what another try may do.
        logger.exception("run %s: its one chunk failed; the sweeper sends it again", run_id)
        return
    if outcome.complete:
        run_finalize(run_id)  # in this process: the run's last hop saved too


def _chunk(run_id: int, query_ids: list[str], chunk: int | None, worker: str) -> ChunkOutcome:
    """A chunk's step in the task that runs it (a chunk task, or the start task of a one-chunk run)."""
    from evaluation.runs.services import ChunkOutcome, run_chunk_process

    try:
        outcome = run_chunk_process(run_id=run_id, query_ids=query_ids, chunk=chunk, worker=worker)
    except SoftTimeLimitExceeded:  # raised outside the per-query handling (e.g. while loading the run)
        logger.error("run %s: chunk hit its soft time limit before searching", run_id)
        return ChunkOutcome(0, 0, stopped=True, complete=False)
    if outcome.duplicate:
        logger.info("run %s: chunk %s is finished or held by another delivery; nothing to do", run_id, chunk)
    return outcome


@shared_task(
    bind=True,
    name="evaluation.run_chunk",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=CHUNK_SOFT_LIMIT_S,
    time_limit=CHUNK_HARD_LIMIT_S,
)
def run_chunk(self: Task, run_id: int, query_ids: list[str], chunk: int | None = None) -> dict[str, Any]:
    """Search the chunk's queries that have no result yet, holding the chunk's lease (`chunk`; None in a
    message sent before leases existed). Per-query failures are recorded, never raised, so the chord's
    callback always runs; the chunk that completes the run also triggers finalize (a chord can fire early
    or not at all when a chunk was sent again). A delivery whose chunk is finished or held by another
    live delivery does nothing."""
    outcome = _chunk(run_id, query_ids, chunk, self.request.hostname or "")
    if outcome.complete:
        run_finalize.delay(run_id)
    return {
        "written": outcome.written,
        "skipped": outcome.skipped,
        "stopped": outcome.stopped,
        "duplicate": outcome.duplicate,
    }


@shared_task(
    name="evaluation.run_finalize",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=FINALIZE_SOFT_LIMIT_S,
    time_limit=FINALIZE_HARD_LIMIT_S,
    ignore_result=True,
)
@_final_status_on_error
def run_finalize(run_id: int) -> str:
    """Report and verdict against the baseline, once every query has a result (else it waits)."""
    from evaluation.runs.services import run_finalize_process

    return run_finalize_process(run_id=run_id)


@shared_task(name=RUN_NOTIFY, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_notify(run_id: int) -> list[int]:
    """When the run's verdict is fail or warn: its deliveries, created once per channel, each sent by its
    own task. Run twice, it creates and sends nothing new (the rows are the claim)."""
    from evaluation.runs.services import notifications_prepare

    waiting = notifications_prepare(run_id=run_id)
    for notification_id in waiting:
        notification_send.delay(notification_id)
    return waiting


# Not acks_late: an attempt cut off after the far end took the message would be made again on
# redelivery, and a verdict is told at most once. A killed attempt leaves its row pending (on the page).
@shared_task(
    bind=True,
    name="evaluation.notification_send",
    soft_time_limit=NOTIFY_SOFT_LIMIT_S,
    time_limit=NOTIFY_HARD_LIMIT_S,
    ignore_result=True,
)
def notification_send(self: Task, notification_id: int) -> str:
    """One attempt at one delivery; attempt n is the task's n-th try (`request.retries` + 1)."""
    from evaluation.runs.services import NOTIFY_ATTEMPTS, NotificationRetry, notification_deliver

    try:
        return notification_deliver(notification_id=notification_id, attempt=self.request.retries + 1)
    except NotificationRetry as exc:
        # Only transient failures (an HTTP 5xx or 429, a timeout, a connection error) with attempts left
        # come here. The service gives the exponential backoff's delay and bounds the attempts on the row,
        # so the retry is explicit rather than autoretry_for; max_retries is the same bound.
        raise self.retry(exc=exc, countdown=exc.countdown, max_retries=NOTIFY_ATTEMPTS - 1) from None


@shared_task(name="evaluation.runs_sweep", ignore_result=True)
def runs_sweep() -> dict[str, Any]:
    """Periodic, and once as each worker starts: start, finalize or re-send the work of runs that stopped
    moving, and send again the chunks whose lease ran out (see services)."""
    from evaluation.runs.services import runs_sweep as sweep

    actions = sweep()
    for run_id in actions.start:
        run_start.delay(run_id)
    for run_id in actions.finalize:
        run_finalize.delay(run_id)
    for run_id, plan in actions.resend.items():
        logger.warning(
            "run %s: chunk(s) %s lost their worker, sending them again", run_id, list(plan.indices)
        )
        dispatch(plan)
    for run_id, plan in actions.redispatch.items():
        logger.warning("run %s: no progress, re-sending %s chunk(s)", run_id, len(plan.chunks))
        dispatch(plan)
    return {
        "start": actions.start,
        "finalize": actions.finalize,
        "resend": sorted(actions.resend),
        "redispatch": sorted(actions.redispatch),
        "failed": actions.failed,
    }


@shared_task(name="evaluation.runs_nightly", ignore_result=True)
def runs_nightly() -> list[int]:
    """Periodic: start the runs of the nightly schedules that are due (each at most once a day)."""
    from evaluation.runs.services import runs_nightly as start_due

    return [run.pk for run in start_due()]
