"""Judge jobs on real Celery worker processes, Redis and PostgreSQL, against the loopback
OpenAI-compatible stub (tests/support/judge_stub.py), as tests/integration/test_runs_workers.py runs
evaluation runs.

Covered: the drift watch a rater's done queues runs on a worker; a small job is judged by the task that
claims it (no chunk task), a large one runs through its chain of chunks on a worker, each with exactly one
answer per pair; a worker SIGKILLed mid-job loses nothing,
under the default settings: the job's heartbeat stops, the sweeper on beat (every 15 s; embedded in the
second worker here) sends its unfinished chunks again, and the second worker judges only the pairs not
answered yet: a stored answer is never asked for again, only the request in flight when the worker died.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from labeling.models import GoldenSet, JudgeAnswer, JudgeJob, JudgeJobItem, JudgeLabel, JudgeQualification
from labeling.services import judges
from labeling.services.done import assignment_done
from tests import factories
from tests.support.judge_stub import graded, judge_key, judge_settings, judge_stub, user_message
from tests.support.stub_server import StubServer
from tests.support.workers import WAIT_S, StartWorker, swept

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]

Status = JudgeJob.Status


def _wait(predicate: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def _status(job: JudgeJob) -> str:
    job.refresh_from_db()
    return job.status


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with judge_stub(graded(2, delay=0.25)) as server:
        yield server


def _pairs_asked(stub: StubServer) -> Counter[str]:
    """How often each (query, document title) pair was sent."""
    return Counter(
        f"{judge_key(r)}|{user_message(r).split('Document title: ')[1].splitlines()[0]}"
        for r in stub.requests
    )


def test_a_killed_worker_loses_no_pair_and_asks_for_no_stored_answer_again(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
) -> None:
    queries = [factories.pooled_query(golden_set, 6, text=f"question {i}") for i in range(4)]
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings(stub.url, concurrency=1), by=None
    )
    first = start_worker("w1")
    # Chunks of 4 pairs at one in flight, 0.25 s each: six chunks of about a second, one after another.
    job = judges.judge_job_create(judge=judge, queries=queries, by=None, chunk_size=4)
    _wait(lambda: JudgeJobItem.objects.filter(job=job, done=True).count() >= 6, "the first answers")
    first.kill()
    answered = {
        f"{query}|{title}"
        for query, title in JudgeJobItem.objects.filter(job=job, done=True).values_list(
            "query__text", "document__title"
        )
    }
    assert len(answered) < 24, "the first worker finished before it could be killed"
    assert _status(job) == Status.RUNNING

    killed_at = time.monotonic()
    start_worker("w2", beat=True)
    # Within a minute of the kill: the stall is seen 30 s after the last heartbeat, at the sweeper's next
    # tick (beat's every 15 s; here every second, tests/support/workers.py's `swept`).
    _wait(
        swept(lambda: _status(job) in JudgeJob.FINAL),
        "the second worker to finish the job",
        60 - (time.monotonic() - killed_at),
    )

    assert job.status == Status.SUCCEEDED, job.message
    assert (job.total, job.done, job.errors, job.cached) == (24, 24, 0, 0)
    assert JudgeLabel.objects.filter(judge=judge).count() == 24
    assert JudgeAnswer.objects.count() == 24
    asked = _pairs_asked(stub)
    assert len(asked) == 24
    # What the killed worker had stored was not asked again; only the request in flight when it died
    # (at most the judge's concurrency, 1), whose answer never reached the database, was sent once more.
    assert all(asked[pair] == 1 for pair in answered)
    assert sum(n - 1 for n in asked.values()) <= 1
    assert job.prompt_tokens == 24 * 100 and job.elapsed_ms > 0


def test_a_worker_runs_the_drift_watch_a_rater_marking_done_queues(
    start_worker: StartWorker,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    """The request only queues the check (after its commit); a worker suspends the qualification once the
    human grades landing since it (the default watch: 50 pairs at least) disagree with the judge."""
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings("http://127.0.0.1:9"), by=None
    )
    qualification = JudgeQualification.objects.create(
        judge=judge, by=rita, rationale="agreed on billing", bar=0.7, strata=["billing"]
    )
    rater = golden_set.raters.first()
    assert rater is not None
    assignments = []
    for _ in range(13):  # 52 pairs, the judge's grade the reverse of the rater's
        query = factories.pooled_query(golden_set, 4, stratum="billing")
        assignment = factories.AssignmentFactory.create(query=query, rater=rater)
        for candidate, grade in zip(query.candidates.order_by("best_rank"), range(4), strict=True):
            JudgeLabel.objects.create(
                judge=judge,
                query=query,
                document=candidate.document,
                grade=3 - grade,
                content_hash=candidate.document.content_hash,
            )
            factories.grade(assignment, candidate.document, grade)
        assignments.append(assignment)
    start_worker("w1")
    for assignment in assignments:
        assignment_done(assignment_id=assignment.pk, rater=rater)
    _wait(
        lambda: JudgeQualification.objects.filter(
            pk=qualification.pk, status=JudgeQualification.Status.SUSPENDED
        ).exists(),
        "the worker to suspend the qualification",
    )
    qualification.refresh_from_db()
    assert qualification.ended_reason.startswith("the drift watch: the running kappa over the latest 200")
    assert "at pair 50" in qualification.ended_reason


def _job_on_a_worker(worker_log: Path, stub: StubServer, golden_set: GoldenSet, chunk_size: int) -> str:
    """A job of 24 pairs (4 queries of 6) queued as the page queues it, waited for on the worker; what the
    worker's log says of its chunk tasks."""
    queries = [factories.pooled_query(golden_set, 6, text=f"pair set {i}") for i in range(4)]
    judge, _ = judges.judge_save(
        golden_set=golden_set, settings=judge_settings(stub.url, concurrency=4), by=None
    )
    job = judges.judge_job_create(judge=judge, queries=queries, by=None, chunk_size=chunk_size)
    _wait(lambda: _status(job) in JudgeJob.FINAL, "the job to finish")
    assert job.status == Status.SUCCEEDED, job.message
    assert (job.total, job.done, job.errors, job.cached) == (24, 24, 0, 0)
    # Exactly one answer per pair: one label each, one request each.
    assert JudgeJobItem.objects.filter(job=job, answer__isnull=False).count() == 24
    assert JudgeAnswer.objects.filter(job=job).count() == 24
    assert JudgeLabel.objects.filter(judge=judge).count() == 24
    asked = _pairs_asked(stub)
    assert len(asked) == 24 and set(asked.values()) == {1}
    return worker_log.read_text(errors="replace")


def test_a_small_job_is_judged_by_the_task_that_claims_it(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
) -> None:
    """Two chunks of 20 (at most tasks.DIRECT_CHUNKS): no chunk task, no finish task, no hop between them."""
    worker = start_worker("w1")
    log = _job_on_a_worker(worker.log, stub, golden_set, chunk_size=20)
    assert "Task labeling.judge_job_start[" in log  # its "received" line (the task list names all)
    assert "Task labeling.judge_chunk[" not in log and "Task labeling.judge_job_finish[" not in log


def test_a_large_job_keeps_its_chain_of_chunks(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
) -> None:
    """Twelve chunks of 2 (more than tasks.DIRECT_CHUNKS): chunk tasks one after another, then finish."""
    worker = start_worker("w1")
    log = _job_on_a_worker(worker.log, stub, golden_set, chunk_size=2)
    assert log.count("Task labeling.judge_chunk[") >= 2 * 12  # each received and succeeded
    assert "Task labeling.judge_job_finish[" in log
