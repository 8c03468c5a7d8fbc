"""Chunk leases (evaluation/runs/services/leases.py) and the sweeper's use of them
(evaluation/runs/services/sweep.py): a chunk task claims its chunk and renews the claim while it works, a
lease that ran out is sent again at once (its worker was lost), a delivery of a finished or held chunk does
nothing, and a run whose start was lost is started again within a minute. Eager Celery, loopback stub engine;
times are moved by passing `now`, never by sleeping. The same story on real workers:
tests/integration/test_runs_workers.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from evaluation.models import ChunkLease, EvaluationRun, QueryRunResult, SearchTarget
from evaluation.runs import tasks
from evaluation.runs.services import (
    CHUNK_LEASE,
    MAX_LEASE_LOSSES,
    ChunkHold,
    RunPlan,
    chunk_lease_claim,
    run_begin,
    run_chunk_process,
    run_create,
    runs_sweep,
)
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.runs import (
    eager_celery,
    golden_file,
    make_target,
    make_version,
)
from tests.support.stub_server import StubServer, hits_reply

pytestmark = pytest.mark.django_db

Status = EvaluationRun.Status


@pytest.fixture(autouse=True)
def fanned_out(settings: Any) -> None:
    """These runs are small (12 queries) and fanned out all the same: the chunks' leases are the subject
    (a run of one chunk, searched by its start task, is tests/integration/test_runs_direct.py's)."""
    settings.ASSAY_RUN_ONE_CHUNK_ROUNDS = 0


@pytest.fixture(name="twelve")
def twelve_fixture(golden_set: GoldenSet) -> GoldenVersion:
    return make_version(golden_set, golden_file(12, version="2026-08-02"))


def _begun(version: GoldenVersion, target: SearchTarget, user: User) -> tuple[EvaluationRun, RunPlan]:
    """A started run of 12 queries in three chunks of four (concurrency 1), none of them sent."""
    run = run_create(golden_version=version, target=target, triggered_by=user)
    plan = run_begin(run_id=run.pk)
    assert plan is not None
    return run, plan


def _held(run: EvaluationRun, index: int, worker: str) -> ChunkHold:
    """The chunk claimed by a delivery on `worker` (which may then be lost: nothing renews it)."""
    hold = chunk_lease_claim(run_id=run.pk, index=index, worker=worker)
    assert hold is not None
    return hold


def _lease(run: EvaluationRun, index: int) -> ChunkLease:
    return ChunkLease.objects.get(run=run, index=index)


def _later(seconds: float) -> datetime:
    return timezone.now() + timedelta(seconds=seconds)


@pytest.fixture(name="slow")
def slow_fixture(stub: StubServer, golden_set: GoldenSet) -> SearchTarget:
    return make_target(f"{stub.url}/search", golden_set, name="slow", concurrency=1)


# ----------------------------------------------------------------------------------------- leases


def test_a_started_run_has_a_waiting_lease_per_chunk(
    twelve: GoldenVersion, slow: SearchTarget, rita: User
) -> None:
    run, plan = _begun(twelve, slow, rita)

    leases = list(ChunkLease.objects.filter(run=run))
    assert plan.indices == (0, 1, 2)
    assert (
        [lease.query_ids for lease in leases]
        == plan.chunks
        == [
            ["q-1", "q-2", "q-3", "q-4"],
            ["q-5", "q-6", "q-7", "q-8"],
            ["q-9", "q-10", "q-11", "q-12"],
        ]
    )
    assert all(lease.expires_at is None and lease.finished_at is None for lease in leases)


def test_one_delivery_holds_a_chunk_until_its_lease_runs_out(
    twelve: GoldenVersion, slow: SearchTarget, rita: User
) -> None:
    run, _ = _begun(twelve, slow, rita)

    first = _held(run, 0, "w1@host")
    assert chunk_lease_claim(run_id=run.pk, index=0, worker="w2@host") is None  # held by a live delivery
    assert first.renew(now=_later(10))  # renewing moves the expiry on
    assert chunk_lease_claim(run_id=run.pk, index=0, worker="w2@host", now=_later(25)) is None

    taken = chunk_lease_claim(run_id=run.pk, index=0, worker="w2@host", now=_later(31))

    assert taken is not None and taken.holder != first.holder
    assert not first.renew()  # the first delivery learns it lost the chunk
    first.finish()  # and cannot finish it for the new holder
    lease = _lease(run, 0)
    assert (lease.worker, lease.finished_at) == ("w2@host", None)
    taken.finish()
    assert chunk_lease_claim(run_id=run.pk, index=0, worker="w3@host", now=_later(3600)) is None


def test_a_chunk_holds_its_lease_while_it_works_and_a_later_delivery_does_nothing(
    twelve: GoldenVersion, slow: SearchTarget, rita: User, stub: StubServer
) -> None:
    run, plan = _begun(twelve, slow, rita)

    outcome = run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w1@host")
    again = run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w2@host")

    assert (outcome.written, outcome.duplicate) == (4, False)
    lease = _lease(run, 0)
    assert lease.finished_at is not None and lease.expires_at is None and lease.worker == "w1@host"
    assert lease.claimed_at is not None
    assert (again.written, again.skipped, again.duplicate, again.complete) == (0, 0, True, False)
    assert len(stub.requests) == 4


def test_a_chunk_renews_its_lease_and_stops_when_another_delivery_took_it(
    twelve: GoldenVersion,
    slow: SearchTarget,
    rita: User,
    stub: StubServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, plan = _begun(twelve, slow, rita)
    stub.default = hits_reply(["d1"], delay=0.2)
    renewals: list[bool] = []
    renew = ChunkHold.renew

    def renew_then_lose(self: ChunkHold, **kwargs: Any) -> bool:
        if len(renewals) == 2:  # another delivery claims the chunk after two renewals
            ChunkLease.objects.filter(run_id=self.owner_id, index=self.index).update(holder="other")
        renewals.append(renew(self, **kwargs))
        return renewals[-1]

    monkeypatch.setattr("evaluation.runs.services.chunks.LEASE_RENEW_EVERY_S", 0.0)
    monkeypatch.setattr(ChunkHold, "renew", renew_then_lose)
    outcome = run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w1@host")

    assert renewals[:3] == [True, True, False]
    assert outcome.stopped and not outcome.complete
    assert QueryRunResult.objects.filter(run=run).count() < 4  # the rest is the other delivery's
    assert not QueryRunResult.objects.filter(run=run, error__isnull=False).exists()
    assert _lease(run, 0).finished_at is None  # not finished for the other holder


def test_a_chunk_that_fails_gives_its_lease_back_for_the_next_sweep(
    twelve: GoldenVersion, slow: SearchTarget, rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, plan = _begun(twelve, slow, rita)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr("evaluation.runs.services.chunks._chunk_search", broken)
    with pytest.raises(RuntimeError):
        run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w1@host")

    actions = runs_sweep(now=_later(0.001))
    assert list(actions.resend) == [run.pk] and actions.resend[run.pk].indices == (0,)


# ----------------------------------------------------------------------------------------- sweeper


def test_the_sweeper_sends_a_lost_workers_chunk_again_and_the_run_completes(
    twelve: GoldenVersion, slow: SearchTarget, rita: User, stub: StubServer
) -> None:
    run, plan = _begun(twelve, slow, rita)
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w1@host")
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[2], chunk=2, worker="w2@host")
    # Chunk 1's worker claimed it and was killed after searching two of its queries.
    _held(run, 1, "w1@host")
    QueryRunResult.objects.bulk_create([QueryRunResult(run=run, query_id=q) for q in ("q-5", "q-6")])

    assert runs_sweep(now=_later(CHUNK_LEASE.total_seconds() - 1)).resend == {}  # still within its lease
    with eager_celery():
        # The sweeper as beat runs it once the lease ran out; the task's own clock is moved with it.
        actions = runs_sweep(now=_later(CHUNK_LEASE.total_seconds() + 1))
        assert actions.resend == {run.pk: RunPlan(run.pk, [["q-5", "q-6", "q-7", "q-8"]], False, (1,))}
        assert _lease(run, 1).losses == 1 and _lease(run, 1).expires_at is None  # waiting again
        assert runs_sweep(now=_later(300)).resend == {}  # sent once: a waiting lease never runs out
        tasks.dispatch(actions.resend[run.pk])

    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED and run.done == 12
    searched = [r.key for r in stub.requests]
    # q-5 and q-6, written before the loss, were not searched again.
    assert sorted(searched, key=str) == sorted(f"query {i}" for i in (1, 2, 3, 4, 7, 8, 9, 10, 11, 12))
    assert _lease(run, 1).finished_at is not None


def test_two_sweepers_send_a_lost_chunk_once_and_a_renewing_holder_keeps_it(
    twelve: GoldenVersion, slow: SearchTarget, rita: User
) -> None:
    run, _ = _begun(twelve, slow, rita)
    _held(run, 0, "w1@host")
    alive = _held(run, 1, "w2@host")
    stale = ChunkLease.objects.get(run=run, index=0)
    # Chunk 1's holder renews just before the sweeper looks; chunk 0's stopped renewing.
    assert alive.renew(now=_later(CHUNK_LEASE.total_seconds()))

    first = runs_sweep(now=_later(CHUNK_LEASE.total_seconds() + 1))
    # A second sweeper that read chunk 0 before the first one's claim finds it changed.
    requeued_again = ChunkLease.objects.filter(pk=stale.pk, holder=stale.holder, expires_at=stale.expires_at)

    assert first.resend[run.pk].indices == (0,)
    assert not requeued_again.exists()
    assert runs_sweep(now=_later(CHUNK_LEASE.total_seconds() + 2)).resend == {}


def test_the_sweeper_fails_a_run_whose_chunk_keeps_losing_its_worker(
    twelve: GoldenVersion, slow: SearchTarget, rita: User
) -> None:
    run, _ = _begun(twelve, slow, rita)
    _held(run, 2, "w3@host")
    ChunkLease.objects.filter(run=run, index=2).update(losses=MAX_LEASE_LOSSES)

    actions = runs_sweep(now=_later(CHUNK_LEASE.total_seconds() + 1))

    assert actions.failed == [run.pk] and actions.resend == {} and actions.redispatch == {}
    run.refresh_from_db()
    assert run.status == Status.FAILED
    assert run.error_message == "stalled: chunk 2 (4 queries) lost its worker 4 times (last w3@host)"


def test_a_rate_limited_runs_lost_chunk_goes_again_with_the_chunks_after_it(
    twelve: GoldenVersion, golden_set: GoldenSet, stub: StubServer, rita: User
) -> None:
    limited = make_target(f"{stub.url}/search", golden_set, name="limited", concurrency=1, rate_limit=500.0)
    run, plan = _begun(twelve, limited, rita)
    assert plan.sequential
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w1@host")
    # The chain's second chunk was lost with its worker: the third was never sent.
    _held(run, 1, "w1@host")

    with eager_celery():
        actions = runs_sweep(now=_later(CHUNK_LEASE.total_seconds() + 1))
        tasks.dispatch(actions.resend[run.pk])

    assert actions.resend[run.pk].sequential and actions.resend[run.pk].indices == (1, 2)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED and run.done == 12
    assert stub.max_in_flight == 1


def test_a_run_a_live_lease_shows_working_is_not_stalled_however_quiet(
    twelve: GoldenVersion, slow: SearchTarget, rita: User
) -> None:
    run, _ = _begun(twelve, slow, rita)
    hold = _held(run, 0, "w1@host")
    EvaluationRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=11))

    assert runs_sweep(now=timezone.now()).redispatch == {}
    # Once nothing holds a live lease, the long silence is a stall: the old chunks are closed and the
    # missing queries go out as new chunks.
    hold.finish()
    actions = runs_sweep(now=timezone.now())
    assert actions.redispatch[run.pk].indices == (3, 4, 5)
    assert ChunkLease.objects.filter(run=run, finished_at__isnull=True).count() == 3


def test_a_run_whose_chunks_all_finished_is_finalized_a_lease_after_its_last_progress(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run, plan = _begun(version, target, rita)
    # The last chunk finished and its worker was lost before it could send finalize.
    run_chunk_process(run_id=run.pk, query_ids=plan.chunks[0], chunk=0, worker="w1@host")

    assert runs_sweep(now=timezone.now()).finalize == []
    with eager_celery():
        result = tasks.runs_sweep.apply().get()  # nothing to do yet: the heartbeat is fresh
        EvaluationRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - CHUNK_LEASE)
        later = tasks.runs_sweep.apply().get()

    assert result["finalize"] == [] and later["finalize"] == [run.pk]
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED


def test_a_queued_run_whose_start_was_lost_is_started_once_a_minute(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)

    assert runs_sweep(now=_later(59)).start == []
    assert runs_sweep(now=_later(61)).start == [run.pk]
    assert runs_sweep(now=_later(75)).start == []  # sent: the next one only a minute later
    assert runs_sweep(now=_later(122)).start == [run.pk]
