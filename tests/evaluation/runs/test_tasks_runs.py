"""The periodic tasks: the sweeper that moves runs which stopped moving, and nightly schedules; plus the
tasks' wrapper that always leaves a final status. Eager Celery, loopback stub engine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from evaluation.models import EvaluationRun, QueryRunResult, RunSchedule, SearchTarget
from evaluation.runs import tasks
from evaluation.runs.services import (
    FINALIZE_LEASE,
    RunError,
    plan_chunks,
    run_begin,
    run_chunk_process,
    run_create,
    runs_nightly,
    runs_sweep,
    schedule_set,
    schedules_due,
)
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.runs import (
    eager_celery,
    golden_file,
    make_target,
    make_version,
)
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db

Status = EvaluationRun.Status


def _started(version: GoldenVersion, target: SearchTarget, user: User, done: int = 0) -> EvaluationRun:
    run = run_create(golden_version=version, target=target, triggered_by=user)
    plan = run_begin(run_id=run.pk)
    assert plan is not None
    if done:
        run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0][:done])
    run.refresh_from_db()
    return run


def _age(run: EvaluationRun, **fields: Any) -> None:
    EvaluationRun.objects.filter(pk=run.pk).update(**fields)


# ----------------------------------------------------------------------------------------- chunking


def test_chunks_spread_a_run_over_the_workers() -> None:
    ids = [f"q-{i}" for i in range(2000)]

    chunks = plan_chunks(ids, concurrency=8)

    assert len(chunks) == 16 and {len(c) for c in chunks} == {125}
    assert [q for c in chunks for q in c] == ids
    assert plan_chunks(ids[:10], concurrency=8) == [ids[:10]]  # >= 4 rounds of 8 in flight
    assert {len(c) for c in plan_chunks(ids * 5, concurrency=8)} == {500}  # capped
    assert plan_chunks([], concurrency=8) == []


def test_a_rate_limited_target_runs_its_chunks_one_after_another(
    golden_set: GoldenSet,
    stub: StubServer,
    rita: User,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
) -> None:
    settings.ASSAY_RUN_ONE_CHUNK_ROUNDS = 0  # 12 queries fanned out all the same: the chain is the subject
    limited = make_target(f"{stub.url}/search", golden_set, name="limited", concurrency=1, rate_limit=500.0)
    version = make_version(golden_set, golden_file(12, version="2026-08-03"))
    run = run_create(golden_version=version, target=limited, triggered_by=rita)
    plan = run_begin(run_id=run.pk)
    assert plan is not None
    assert plan.sequential and [len(c) for c in plan.chunks] == [4, 4, 4]

    with eager_celery():
        tasks.dispatch(plan)

    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED and run.done == 12
    assert stub.max_in_flight == 1


# ----------------------------------------------------------------------------------------- sweeper


def test_the_sweeper_resends_the_missing_queries_of_a_stalled_run_which_then_completes(
    version: GoldenVersion, target: SearchTarget, rita: User, stub: StubServer
) -> None:
    run = _started(version, target, rita, done=2)
    fresh = runs_sweep()
    assert fresh.redispatch == {} and fresh.finalize == []  # still within its heartbeat
    _age(run, heartbeat_at=timezone.now() - timedelta(minutes=11))

    with eager_celery():
        result = tasks.runs_sweep.apply().get()

    assert result["redispatch"] == [run.pk]
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED and run.redispatches == 1
    assert QueryRunResult.objects.filter(run=run).count() == 6
    assert len(stub.requests) == 6  # the two answered before were not searched again


def test_two_sweepers_resend_a_stalled_run_once(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run = _started(version, target, rita, done=1)
    _age(run, heartbeat_at=timezone.now() - timedelta(minutes=11))
    stale = EvaluationRun.objects.get(pk=run.pk)

    first = runs_sweep()
    # A second sweeper that read the run before the first one's claim finds the heartbeat moved.
    claimed = EvaluationRun.objects.filter(pk=run.pk, heartbeat_at=stale.heartbeat_at).exists()

    assert list(first.redispatch) == [run.pk]
    assert first.redispatch[run.pk].chunks == [["q-2", "q-3", "q-4", "q-5", "q-6"]]
    assert not claimed
    assert runs_sweep().redispatch == {}


def test_the_sweeper_fails_a_run_that_keeps_stalling(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run = _started(version, target, rita, done=1)
    _age(run, heartbeat_at=timezone.now() - timedelta(minutes=11), redispatches=3)

    actions = runs_sweep()

    assert actions.failed == [run.pk] and actions.redispatch == {}
    run.refresh_from_db()
    assert run.status == Status.FAILED
    assert run.error_message == "stalled: 5 queries still without a result after 3 re-sends"


def test_the_sweeper_starts_lost_queued_runs_and_finalizes_abandoned_ones(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    queued = run_create(golden_version=version, target=target, triggered_by=rita)
    _age(queued, created=timezone.now() - timedelta(minutes=11))
    complete = _started(version, target, rita, done=6)
    _age(complete, heartbeat_at=timezone.now() - timedelta(minutes=11))
    finalizing = _started(version, target, rita, done=6)
    _age(
        finalizing,
        status=Status.FINALIZING,
        finalizing_at=timezone.now() - FINALIZE_LEASE - timedelta(seconds=1),
    )

    with eager_celery():
        result = tasks.runs_sweep.apply().get()

    assert result["start"] == [queued.pk]
    assert sorted(result["finalize"]) == sorted([complete.pk, finalizing.pk])
    for run in (queued, complete, finalizing):
        run.refresh_from_db()
        assert run.status == Status.SUCCEEDED
        assert run.report is not None and run.report["n"] == 6


def test_an_unexpected_error_in_a_task_leaves_a_final_status(
    version: GoldenVersion, target: SearchTarget, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr("evaluation.runs.services.run_begin", broken)
    with eager_celery(), pytest.raises(RuntimeError):
        tasks.run_start.apply(args=(run.pk,)).get()

    run.refresh_from_db()
    assert run.status == Status.FAILED
    assert run.error_message == "run_start: RuntimeError: database went away"


def test_a_chunks_unexpected_error_becomes_each_remaining_querys_error(
    version: GoldenVersion, target: SearchTarget, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _started(version, target, rita)

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("harness bug")

    monkeypatch.setattr("evaluation.runs.services.chunks.search_all", broken)
    outcome = run_chunk_process(run_id=run.pk, query_ids=[f"q-{i}" for i in range(1, 7)])

    assert outcome.complete
    errors = set(QueryRunResult.objects.filter(run=run).values_list("error", flat=True))
    assert errors == {"chunk stopped: RuntimeError: harness bug"}


# ----------------------------------------------------------------------------------------- schedules


def _at(hour: int, minute: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 9, day, hour, minute, tzinfo=UTC)


def test_a_schedule_is_due_once_a_day_after_its_time(
    golden_set: GoldenSet, target: SearchTarget, rita: User
) -> None:
    schedule = schedule_set(golden_set=golden_set, target=target, hour=2, minute=30, by=rita)

    assert schedules_due(now=_at(2, 29)) == []
    assert schedules_due(now=_at(2, 30)) == [schedule]
    RunSchedule.objects.filter(pk=schedule.pk).update(last_run_on=_at(3).date())
    assert schedules_due(now=_at(23, 59)) == []
    assert schedules_due(now=_at(2, 30, day=2)) == [schedule]
    schedule_set(golden_set=golden_set, target=target, hour=2, minute=30, enabled=False)
    assert schedules_due(now=_at(2, 30, day=2)) == []


def test_nightly_starts_one_run_a_day_on_the_newest_version(
    golden_set: GoldenSet,
    target: SearchTarget,
    rita: User,
    django_capture_on_commit_callbacks: Any,
    stub: StubServer,
) -> None:
    make_version(golden_set)
    newest = make_version(golden_set, golden_file(version="2026-09-01"))
    schedule_set(golden_set=golden_set, target=target, hour=1, params={"rewrite": True}, by=rita)

    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        runs = runs_nightly(now=_at(4))
    again = runs_nightly(now=_at(23))

    assert len(runs) == 1 and again == []
    run = EvaluationRun.objects.get()
    assert run.golden_version == newest
    assert (run.trigger, run.triggered_by, run.triggered_by_label) == ("schedule", None, "schedule")
    assert run.params == {"rewrite": True}
    assert run.status == Status.SUCCEEDED
    assert {r.json["rewrite"] for r in stub.requests} == {True}


def test_nightly_skips_a_set_without_versions(golden_set: GoldenSet, target: SearchTarget) -> None:
    schedule_set(golden_set=golden_set, target=target, hour=1)

    assert runs_nightly(now=_at(4)) == []
    assert not EvaluationRun.objects.exists()


def test_a_schedule_names_each_bad_setting(golden_set: GoldenSet, stub: StubServer) -> None:
    other = SearchTarget.objects.create(name="other", url=f"{stub.url}/search")

    with pytest.raises(RunError) as error:
        schedule_set(golden_set=golden_set, target=other, hour=24, minute=-1, params={"x": object()})

    assert error.value.problems == [
        "hour: 24 is not 0..23 (UTC)",
        "minute: -1 is not 0..59",
        "params.x: expected a JSON value, got object",
        "target other is not set up for golden set help-center",
    ]
    assert not RunSchedule.objects.exists()
