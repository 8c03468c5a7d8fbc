"""Celery tasks of machine judges (docs/judge.md): their jobs (thin interfaces over
`labeling.services.judges`) and the drift watch (`labeling.services.judge_qualification`).

As evaluation's tasks (evaluation/runs/tasks.py): explicit stable names, ids as arguments, services imported
inside each task, idempotency in the database. A small job (at most DIRECT_CHUNKS chunks) is judged by
the start task itself and finished there: no hop between tasks. A larger job's chunks run one after
another (a chain: the judge's concurrency limit is per endpoint, and two chunks at once would double it),
then `labeling.judge_job_finish`. The chunk task is `acks_late` with `reject_on_worker_lost`: a chunk whose
worker is killed goes back to the broker (after its visibility timeout) and the next delivery judges only
its items not done yet, reading the answer cache before calling, so nothing answered is paid for twice.

A chunk at work holds its job and renews a heartbeat; `labeling.judge_jobs_sweep` (on celery beat every
15 s, config/settings.py) sends again the unfinished chunks of a running job whose heartbeat stopped (a
lost worker), within a minute rather than when the broker redelivers (its visibility timeout, an hour).
The hold keeps a redelivered chunk and a re-sent one from working at once (docs/judge.md, "Jobs").
"""

from __future__ import annotations

import logging

from celery import chain, shared_task

logger = logging.getLogger(__name__)

# A chunk of 20 pairs at a slow endpoint's worst case (every call retried after long Retry-Afters).
CHUNK_SOFT_LIMIT_S = 30 * 60
CHUNK_HARD_LIMIT_S = 35 * 60
# A job of at most this many chunks is judged whole by the task that claims it and finished there, without
# the hops of a chain (on `make run`'s filesystem broker each hop waits for a poll): docs/judge.md, "Jobs".
DIRECT_CHUNKS = 8


# judge_job_start judges a small job itself (at most DIRECT_CHUNKS chunks): the limits of its chunks.
@shared_task(
    name="labeling.judge_job_start",
    ignore_result=True,
    soft_time_limit=DIRECT_CHUNKS * CHUNK_SOFT_LIMIT_S,
    time_limit=DIRECT_CHUNKS * CHUNK_HARD_LIMIT_S,
)
def judge_job_start(job_id: int) -> None:
    """Claim a queued job; judge a small one here and finish it (no hops between tasks), or chain a large
    one's chunks, then finish."""
    from labeling.services.judges import judge_job_begin, judge_job_direct

    starts = judge_job_begin(job_id=job_id)
    if starts is None:
        logger.info("judge job %s: not queued any more (claimed elsewhere or cancelled)", job_id)
        return
    if len(starts) > DIRECT_CHUNKS:
        _dispatch(job_id, starts)
        return
    try:
        judge_job_direct(job_id=job_id)
    except Exception:
        # As a failed chunk task: the heartbeat stops and the sweeper sends the unfinished chunks again.
        logger.exception(
            "judge job %s: judging it directly failed; the sweeper sends its chunks again", job_id
        )


def _dispatch(job_id: int, starts: list[int]) -> None:
    """The job's chunks one after another, then finish."""
    chain(*(judge_chunk.si(job_id, start) for start in starts), judge_job_finish.si(job_id)).delay()


@shared_task(
    name="labeling.judge_chunk",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=CHUNK_SOFT_LIMIT_S,
    time_limit=CHUNK_HARD_LIMIT_S,
    ignore_result=True,
)
def judge_chunk(job_id: int, start: int) -> bool:
    """Judge the items of the chunk starting at `start` that are not done; safe to run twice."""
    from labeling.services.judges import judge_chunk_process

    return judge_chunk_process(job_id=job_id, start=start)


@shared_task(name="labeling.judge_job_finish", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def judge_job_finish(job_id: int) -> str:
    from labeling.services.judges import judge_job_finish as finish

    return finish(job_id=job_id)


@shared_task(name="labeling.judge_drift_check", ignore_result=True)
def judge_drift_check(golden_set_id: int) -> None:
    """The drift watch of a set's qualified judges, queued after a human label lands
    (`labeling.services.judge_qualification.drift_check_schedule`)."""
    from labeling.services.judge_qualification import drift_check_safely

    drift_check_safely(golden_set_id=golden_set_id)


@shared_task(name="labeling.judge_jobs_sweep", ignore_result=True)
def judge_jobs_sweep() -> dict[int, list[int]]:
    """Periodic: send again the unfinished chunks of running jobs whose heartbeat stopped."""
    from labeling.services.judges import judge_jobs_sweep as sweep

    plans = sweep()
    for job_id, starts in plans.items():
        logger.warning(
            "judge job %s: no heartbeat, sending its %s unfinished chunk(s) again", job_id, len(starts)
        )
        _dispatch(job_id, starts)
    return plans
