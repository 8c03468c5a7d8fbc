"""The sweeper: runs that stopped moving (a lost worker, a lost start message, a killed finalize) and how
to move them again; the periodic task sends what it finds (docs/runs.md, "Worker loss")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import F, Model, Q
from django.utils import timezone

from assay.targets import TargetSpec
from evaluation.runs.models import ChunkLease, EvaluationRun
from evaluation.runs.services.finalize import FINALIZE_LEASE
from evaluation.runs.services.leases import MAX_LEASE_LOSSES, leases_close, leases_expired, leases_quiet
from evaluation.runs.services.runs import RunPlan, plan_run, run_fail, run_missing_queries

Status = EvaluationRun.Status


# A RUNNING run with no chunk holding a live lease and without progress for this long has lost work that
# no lease shows (a chunk message lost in the broker, or held unstarted by a worker that died): the
# sweeper re-sends the queries that have no result.
STALL_AFTER = timedelta(minutes=10)
# A QUEUED run this old may have lost its start message: the start is sent again, at most this often
# (a second start of a run does nothing).
QUEUED_GRACE = timedelta(minutes=1)
MAX_REDISPATCHES = 3


@dataclass
class SweepActions:
    """What `runs_sweep` found; the task sends these (services never talk to the broker themselves)."""

    start: list[int] = field(default_factory=list)
    finalize: list[int] = field(default_factory=list)
    # Chunks whose lease ran out (their worker was lost), per run: the same chunks, sent again.
    resend: dict[int, RunPlan] = field(default_factory=dict)
    # Stalled runs: their queries without a result, as new chunks.
    redispatch: dict[int, RunPlan] = field(default_factory=dict)
    failed: list[int] = field(default_factory=list)


def runs_sweep(
    *,
    now: datetime | None = None,
    stall_after: timedelta = STALL_AFTER,
    queued_grace: timedelta = QUEUED_GRACE,
    max_redispatches: int = MAX_REDISPATCHES,
    max_lease_losses: int = MAX_LEASE_LOSSES,
) -> SweepActions:
    """Find runs that stopped moving and say how to move them again (all of it is safe to repeat):
    queued for `queued_grace` (the start message was lost) -> start; a chunk whose lease ran out (its
    worker was lost) -> send it again, or after `max_lease_losses` fail the run; running with no live lease
    and without progress for `stall_after` (or for a lease, when every chunk finished) -> finalize when
    every result is in, else re-send the queries without a result or, after `max_redispatches`, fail the
    run; finalizing past its lease -> finalize again."""
    now = now or timezone.now()
    actions = SweepActions()
    actions.start = queued_claim(EvaluationRun, now=now, grace=queued_grace)
    actions.finalize = list(
        EvaluationRun.objects.filter(
            status=Status.FINALIZING, finalizing_at__lt=now - FINALIZE_LEASE
        ).values_list("pk", flat=True)
    )
    _leases_expired(actions, now=now, max_losses=max_lease_losses)
    _runs_stalled(actions, now=now, stall_after=stall_after, max_redispatches=max_redispatches)
    return actions


def queued_claim(model: type[Model], *, now: datetime, grace: timedelta) -> list[int]:
    """Queued rows of `model` (runs, experiments) older than `grace` whose start was not re-sent within
    `grace`, claimed with a conditional update (two sweepers send one start)."""
    rows = model._default_manager
    due = rows.filter(status=Status.QUEUED, created__lt=now - grace).filter(
        Q(start_resent_at__isnull=True) | Q(start_resent_at__lt=now - grace)
    )
    claimed = []
    for pk, seen in due.values_list("pk", "start_resent_at"):
        if rows.filter(pk=pk, status=Status.QUEUED, start_resent_at=seen).update(start_resent_at=now):
            claimed.append(pk)
    return claimed


def _leases_expired(actions: SweepActions, *, now: datetime, max_losses: int) -> None:
    """Each chunk of a RUNNING run whose lease ran out goes back to waiting and is sent again (or, lost
    too often, fails its run: `evaluation.runs.services.leases`)."""
    lost = leases_expired(
        ChunkLease,
        running=Q(run__status=Status.RUNNING),
        fail=lambda run_id, message: run_fail(run_id=run_id, message=message),
        now=now,
        max_losses=max_losses,
    )
    actions.failed += lost.failed
    runs = EvaluationRun.objects.in_bulk(list(lost.resend))
    for run_id, leases in lost.resend.items():
        actions.resend[run_id] = _resend_plan(runs[run_id], leases)


def _resend_plan(run: EvaluationRun, lost: list[ChunkLease]) -> RunPlan:
    sequential = TargetSpec.from_dict(run.target_snapshot).rate_limited
    leases = lost
    if sequential:
        # A chain sends each chunk when the one before it finishes, so the chunks after a lost one were
        # never sent: every waiting chunk goes, in order.
        waiting = ChunkLease.objects.filter(run=run, finished_at__isnull=True, expires_at__isnull=True)
        leases = list(waiting.order_by("index"))
    return RunPlan(
        run.pk,
        [list(lease.query_ids) for lease in leases],
        sequential=sequential,
        indices=tuple(lease.index for lease in leases),
    )


def _runs_stalled(
    actions: SweepActions, *, now: datetime, stall_after: timedelta, max_redispatches: int
) -> None:
    """RUNNING runs that no live lease shows working on and that stopped making progress."""
    quiet = leases_quiet(ChunkLease, now=now, stall_after=stall_after)
    stalled = (
        EvaluationRun.objects.filter(quiet, status=Status.RUNNING)
        .exclude(pk__in=[*actions.resend, *actions.failed])
        .select_related("golden_version")
    )
    for run in stalled:
        missing = run_missing_queries(run=run)
        if not missing:
            actions.finalize.append(run.pk)
            continue
        if run.redispatches >= max_redispatches:
            if run_fail(
                run_id=run.pk,
                message=f"stalled: {len(missing)} queries still without a result after "
                f"{run.redispatches} re-sends",
            ):
                actions.failed.append(run.pk)
            continue
        # Conditional on the heartbeat seen: two sweepers at once re-send the work once.
        claimed = EvaluationRun.objects.filter(
            pk=run.pk, status=Status.RUNNING, heartbeat_at=run.heartbeat_at
        ).update(redispatches=F("redispatches") + 1, heartbeat_at=now)
        if claimed == 1:
            # The old chunks' queries go out as new chunks: a late delivery of an old one does nothing.
            leases_close(ChunkLease, run.pk, now=now)
            actions.redispatch[run.pk] = plan_run(run, missing)
