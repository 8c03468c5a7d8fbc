"""The sweeper: runs that stopped moving (a lost start message, a worker killed before the broker
redelivers, a killed finalize) and how to move them again; the periodic task sends what it finds."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import F
from django.utils import timezone

from evaluation.models import EvaluationRun
from evaluation.services.finalize import FINALIZE_LEASE
from evaluation.services.runs import RunPlan, plan_run, run_fail, run_missing_queries

Status = EvaluationRun.Status


# A RUNNING run without progress for this long has lost work (a chunk's worker died and the broker has
# not redelivered it yet): the sweeper re-sends the queries that have no result.
STALL_AFTER = timedelta(minutes=10)
QUEUED_GRACE = timedelta(minutes=10)
MAX_REDISPATCHES = 3


@dataclass
class SweepActions:
    """What `runs_sweep` found; the task sends these (services never talk to the broker themselves)."""

    start: list[int] = field(default_factory=list)
    finalize: list[int] = field(default_factory=list)
    redispatch: dict[int, RunPlan] = field(default_factory=dict)
    failed: list[int] = field(default_factory=list)


def runs_sweep(
    *,
    now: datetime | None = None,
    stall_after: timedelta = STALL_AFTER,
    queued_grace: timedelta = QUEUED_GRACE,
    max_redispatches: int = MAX_REDISPATCHES,
) -> SweepActions:
    """Find runs that stopped moving and say how to move them again (all of it is safe to repeat):
    queued too long (the start message was lost) -> start; running with every result in but no finalize
    -> finalize; running without progress for `stall_after` -> re-send the queries without a result (a
    chunk's worker died and the broker has not redelivered it) or, after `max_redispatches`, fail the run;
    finalizing past its lease -> finalize again."""
    now = now or timezone.now()
    actions = SweepActions()
    actions.start = list(
        EvaluationRun.objects.filter(status=Status.QUEUED, created__lt=now - queued_grace).values_list(
            "pk", flat=True
        )
    )
    actions.finalize = list(
        EvaluationRun.objects.filter(
            status=Status.FINALIZING, finalizing_at__lt=now - FINALIZE_LEASE
        ).values_list("pk", flat=True)
    )
    stalled = EvaluationRun.objects.filter(status=Status.RUNNING, heartbeat_at__lt=now - stall_after)
    for run in stalled.select_related("golden_version"):
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
            actions.redispatch[run.pk] = plan_run(run, missing)
    return actions
