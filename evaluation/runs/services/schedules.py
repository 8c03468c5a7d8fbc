"""Nightly runs: set, delete and check a (golden set, target)'s schedule, and start the due ones
(docs/runs.md, "Nightly runs")."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.runs.models import EvaluationRun, RunSchedule, SearchTarget
from evaluation.runs.services.runs import RunError, params_problems, run_create
from labeling.models import GoldenSet

logger = logging.getLogger(__name__)


def schedule_problems(
    *, golden_set: GoldenSet, target: SearchTarget, hour: object, minute: object, params: object
) -> list[str]:
    """Every reason a nightly schedule could not start its run (the service and the admin form)."""
    problems = []
    if not (isinstance(hour, int) and 0 <= hour <= 23):
        problems.append(f"hour: {hour!r} is not 0..23 (UTC)")
    if not (isinstance(minute, int) and 0 <= minute <= 59):
        problems.append(f"minute: {minute!r} is not 0..59")
    problems += params_problems({} if params is None else params)
    if not target.golden_sets.filter(pk=golden_set.pk).exists():
        problems.append(f"target {target.name} is not set up for golden set {golden_set.slug}")
    return problems


@transaction.atomic
def schedule_set(
    *,
    golden_set: GoldenSet,
    target: SearchTarget,
    hour: int = 2,
    minute: int = 0,
    enabled: bool = True,
    params: Mapping[str, Any] | None = None,
    rescore_baseline: bool = False,
    by: Any = None,
) -> RunSchedule:
    """Create or change the nightly run of (golden set, target) at hour:minute UTC. `rescore_baseline`:
    on a new golden version, gate against the baseline re-scored on it instead of refusing to compare."""
    problems = schedule_problems(
        golden_set=golden_set, target=target, hour=hour, minute=minute, params=params
    )
    if problems:
        raise RunError(problems)
    schedule, _ = RunSchedule.objects.select_for_update().get_or_create(
        golden_set=golden_set, target=target, defaults={"created_by": by}
    )
    schedule.hour, schedule.minute, schedule.enabled = hour, minute, enabled
    schedule.params = dict(params or {})
    schedule.rescore_baseline = rescore_baseline
    schedule.save()
    return schedule


def schedule_delete(*, golden_set: GoldenSet, target: SearchTarget) -> bool:
    """Remove the nightly run of (golden set, target); False when there was none. Its runs stay."""
    deleted, _ = RunSchedule.objects.filter(golden_set=golden_set, target=target).delete()
    return deleted > 0


def _today_at(now: datetime, hour: int, minute: int) -> datetime:
    utc = now.astimezone(UTC)
    return utc.replace(hour=hour, minute=minute, second=0, microsecond=0)


def schedules_due(*, now: datetime | None = None) -> list[RunSchedule]:
    """Enabled schedules whose time (UTC) has come today and that have not started a run today."""
    now = now or timezone.now()
    today: date = now.astimezone(UTC).date()
    candidates = RunSchedule.objects.filter(enabled=True).filter(
        Q(last_run_on__isnull=True) | Q(last_run_on__lt=today)
    )
    return [
        s
        for s in candidates.select_related("golden_set", "target")
        if _today_at(now, s.hour, s.minute) <= now
    ]


def runs_nightly(*, now: datetime | None = None) -> list[EvaluationRun]:
    """Start the due schedules' runs on each set's newest golden version (at most one a day each, even
    with two beat processes: the day is claimed with a conditional update first). A refused run (no
    golden version, run_create's problems) is recorded in the schedule's `last_error`/`last_error_at`;
    a started run clears them."""
    from golden_io.selectors import version_latest

    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    runs = []
    for schedule in schedules_due(now=now):
        claimed = RunSchedule.objects.filter(pk=schedule.pk, last_run_on=schedule.last_run_on).update(
            last_run_on=today
        )
        if claimed != 1:
            continue
        # The day stays claimed when the run is refused: the reason is kept on the schedule (the target
        # page shows it) and the next attempt is tomorrow's.
        mine = RunSchedule.objects.filter(pk=schedule.pk)
        version = version_latest(golden_set=schedule.golden_set)
        if version is None:
            logger.warning("nightly %s: golden set has no version yet, nothing to run", schedule)
            mine.update(
                last_error=f"golden set {schedule.golden_set.slug} has no golden version yet: nothing to run",
                last_error_at=now,
            )
            continue
        try:
            run = run_create(
                golden_version=version,
                target=schedule.target,
                trigger=EvaluationRun.Trigger.SCHEDULE,
                params=schedule.params,
                schedule=schedule,
            )
        except (RunError, IntegrityError) as exc:
            logger.error("nightly %s: run not created: %s", schedule, exc)
            mine.update(last_error=f"run not created: {exc}", last_error_at=now)
        except Exception as exc:  # one schedule's bug must not cost the other schedules their night
            logger.exception("nightly %s: run not created", schedule)
            mine.update(last_error=f"run not created: {type(exc).__name__}: {exc}", last_error_at=now)
        else:
            mine.update(last_error="", last_error_at=None)
            runs.append(run)
    return runs
