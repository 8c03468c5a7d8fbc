"""A run planned as one chunk is searched and finalized by the task that starts it, without a chord; one
query more and it is fanned out. Real `celery worker` processes, Redis and PostgreSQL, a loopback stub
engine. The one-chunk run keeps what a fanned-out run promises: exactly one result per query, its
chunk's lease (a worker SIGKILLed in the middle: the sweeper sends the chunk again and a second worker
finishes the run); cancel is tests/integration/test_runs_workers.py's.

Which path a run took is read from the worker's log, where Celery names each task it receives: the
direct path receives `evaluation.run_start` and no `evaluation.run_chunk` nor `evaluation.run_finalize`.
"""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from evaluation.models import ChunkLease, EvaluationRun, QueryRunResult
from evaluation.runs.services import run_create
from evaluation.runs.services.chunks import PROGRESS_EVERY_S, TOUCH_EVERY_S
from labeling.models import GoldenSet
from tests.support.runs import (
    golden_file,
    make_target,
    make_version,
    one_result_per_query,
    run_finished,
)
from tests.support.stub_server import StubServer, hits_reply
from tests.support.workers import StartWorker, Worker, swept, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    ),
]

Status = EvaluationRun.Status
CONCURRENCY = 2
ONE_CHUNK = CONCURRENCY * settings.ASSAY_RUN_ONE_CHUNK_ROUNDS  # the largest run planned as one chunk


def _received(*workers: Worker) -> dict[str, int]:
    """How many of each task the workers received (their logs at INFO)."""
    counts: dict[str, int] = {}
    for worker in workers:
        for name in re.findall(r"Task (evaluation\.\w+)\[[^\]]+\] received", worker.log.read_text()):
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_a_one_chunk_run_is_searched_and_finalized_by_its_start_task(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    version = make_version(golden_set, golden_file(ONE_CHUNK))
    target = make_target(f"{stub.url}/search", golden_set, concurrency=CONCURRENCY)
    worker = start_worker("w1")

    run = run_create(golden_version=version, target=target, triggered_by=rita)
    wait_for(lambda: run_finished(run), "the run to finish")

    assert run.status == Status.SUCCEEDED, run.error_message
    assert one_result_per_query(run) == [f"q-{i}" for i in range(1, ONE_CHUNK + 1)]
    assert (run.total, run.done, run.errors) == (ONE_CHUNK, ONE_CHUNK, 0)
    assert run.report is not None and run.report["n"] == ONE_CHUNK
    # One lease, claimed and finished by the start task on the worker.
    (lease,) = ChunkLease.objects.filter(run=run)
    assert lease.finished_at is not None and lease.worker.startswith("w1@")
    assert len(lease.query_ids) == ONE_CHUNK
    received = _received(worker)
    assert received.get("evaluation.run_start") == 1
    assert "evaluation.run_chunk" not in received and "evaluation.run_finalize" not in received
    assert len(stub.requests) == ONE_CHUNK


def test_a_one_chunk_runs_progress_moves_before_its_count(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    """One query answers after a heartbeat but before the chunk's first count of the run's rows: the
    heartbeat has already put the other queries on the run's progress (what its bar shows)."""
    version = make_version(golden_set, golden_file(ONE_CHUNK))
    target = make_target(f"{stub.url}/search", golden_set, concurrency=CONCURRENCY)
    stub.on("query 3", hits_reply(["d1"], delay=(TOUCH_EVERY_S + PROGRESS_EVERY_S) / 2))
    start_worker("w1")

    run = run_create(golden_version=version, target=target, triggered_by=rita)
    seen: set[int] = set()

    def mid_run() -> bool:
        finished = run_finished(run)
        if not finished:
            seen.add(run.done)
        return finished

    wait_for(mid_run, "the run to finish")
    assert run.status == Status.SUCCEEDED, run.error_message
    assert ONE_CHUNK - 1 in seen, seen  # every query but the slow one, counted before the run finished
    assert run.done == ONE_CHUNK


def test_one_query_over_a_chunk_keeps_the_chord(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    n = ONE_CHUNK + 1
    version = make_version(golden_set, golden_file(n))
    target = make_target(f"{stub.url}/search", golden_set, concurrency=CONCURRENCY)
    worker = start_worker("w1")

    run = run_create(golden_version=version, target=target, triggered_by=rita)
    wait_for(lambda: run_finished(run), "the run to finish")

    assert run.status == Status.SUCCEEDED, run.error_message
    assert one_result_per_query(run) == [f"q-{i}" for i in range(1, n + 1)]
    assert (run.total, run.done, run.errors) == (n, n, 0)
    leases = ChunkLease.objects.filter(run=run)
    assert leases.count() > 1 and all(lease.finished_at is not None for lease in leases)
    wait_for(lambda: "evaluation.run_finalize" in _received(worker), "the worker's log of finalize")
    received = _received(worker)
    assert received["evaluation.run_chunk"] == leases.count()
    assert received["evaluation.run_finalize"] >= 1


def test_a_one_chunk_runs_killed_worker_is_noticed_by_its_lease_and_a_second_worker_finishes(
    start_worker: StartWorker,
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
) -> None:
    stub.default = hits_reply(["d1", "d2", "d3"], delay=0.25)
    version = make_version(golden_set, golden_file(ONE_CHUNK))  # about 4 s of searching, one chunk
    target = make_target(f"{stub.url}/search", golden_set, concurrency=CONCURRENCY)
    first = start_worker("w1")

    run = run_create(golden_version=version, target=target, triggered_by=rita)
    wait_for(lambda: QueryRunResult.objects.filter(run=run).count() >= 3, "the first results")
    first.kill()
    at_kill = set(QueryRunResult.objects.filter(run=run).values_list("query_id", flat=True))
    assert len(at_kill) < ONE_CHUNK, "the first worker finished before it could be killed"
    second = start_worker("w2", beat=True)
    # The lease runs out 15-20 s after its last renewal and the sweeper sends the chunk (beat's every 15 s;
    # here every second, tests/support/workers.py's `swept`).
    wait_for(swept(lambda: run_finished(run)), "the second worker to finish the run", 60)

    assert run.status == Status.SUCCEEDED, run.error_message
    (lease,) = ChunkLease.objects.filter(run=run)
    assert lease.losses == 1 and lease.finished_at is not None and lease.worker.startswith("w2@")
    assert one_result_per_query(run) == [f"q-{i}" for i in range(1, ONE_CHUNK + 1)]
    assert run.report is not None and run.report["n"] == ONE_CHUNK
    # The second worker searched only what the first had not written, as a chunk task.
    texts = [r.key for r in stub.requests]
    assert all(texts.count(f"query {qid.split('-')[1]}") == 1 for qid in at_kill)
    assert _received(second).get("evaluation.run_chunk", 0) >= 1
