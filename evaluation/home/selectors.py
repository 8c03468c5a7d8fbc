"""What waits for a reviewer, for the home page (docs/runs.md, "What waits for you"): studies still
waiting for answers, experiments finished since the last visit, studies waiting for their runs, and
runs that failed lately. Each list holds only what the user may open (the sets they review, through
`evaluation.runs.access` and `evaluation.studies.access`; an admin every set), newest first, at most `SHOWN`
rows with the count of the rest.

Reads only: the visit itself is written by `evaluation.home.services.home_visit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from evaluation.experiments.access import experiments_for
from evaluation.experiments.models import Experiment
from evaluation.runs import access
from evaluation.runs.models import EvaluationRun
from evaluation.studies.access import pending_for, studies_for
from evaluation.studies.models import PendingStudy
from labeling.roles import is_reviewer

SHOWN = 10  # rows per list; the rest are counted
RECENT = timedelta(days=7)  # a failed run this recent is listed; so is a finished experiment on a first visit
GOLDEN_FILE = ("golden_version__content", "golden_version__documents")
RUN_BLOBS = ("report", "gate", "key_map", "keys")  # a run's label reads its target and snapshot only


@dataclass(frozen=True, slots=True)
class Listed:
    """The first `SHOWN` rows of a list, and how many more there are."""

    rows: list[Any] = field(default_factory=list)
    more: int = 0

    @classmethod
    def of(cls, rows: QuerySet[Any]) -> Listed:
        first = list(rows[: SHOWN + 1])
        if len(first) <= SHOWN:
            return cls(first, 0)
        return cls(first[:SHOWN], rows.count() - SHOWN)

    def __bool__(self) -> bool:
        return bool(self.rows)


@dataclass(frozen=True, slots=True)
class HomeWaiting:
    """The reviewer's home lists. `since`: where "finished since your last visit" begins (None on a first
    visit: then the last `RECENT`); `recent_since`: where "failed lately" begins."""

    since: datetime | None
    recent_since: datetime
    studies: Listed  # SxsStudy rows with n_done and n_tasks: answered / needed
    finished: Listed  # Experiment rows, settled after `since`
    pending: Listed  # PendingStudy rows still waiting for a run
    failed: Listed  # EvaluationRun rows failed after `recent_since`

    @property
    def anything(self) -> bool:
        return bool(self.studies or self.finished or self.pending or self.failed)


def home_waiting(*, user: Any, since: datetime | None, now: datetime | None = None) -> HomeWaiting | None:
    """The home lists of `user`, or None for someone without the reviewer role (raters see none of it)."""
    if not is_reviewer(user):
        return None
    now = now or timezone.now()
    recent = now - RECENT
    # Only the rows each list shows (the set's name, the runs' labels): the access helpers' every related
    # row made PostgreSQL plan joins of a dozen tables on each view (35 ms for the studies alone).
    studies = (
        studies_for(user)
        .select_related(None)
        .select_related("golden_set")
        .defer("analysis")
        .annotate(n_tasks=Count("tasks"), n_done=Count("tasks", filter=Q(tasks__answered_at__isnull=False)))
        .filter(n_done__lt=F("n_tasks"))
        .order_by("-created", "-id")
    )
    finished = (
        experiments_for(user)
        .filter(status__in=Experiment.FINAL, finished_at__gt=since or recent)
        .defer(*GOLDEN_FILE, "result", "tuning", "split", "grid", "configs", "target_snapshot")
        .order_by("-finished_at", "-id")
    )
    pending = (
        pending_for(user)
        .select_related(None)
        .select_related("golden_set", "run_a__target", "run_b__target")
        .filter(status=PendingStudy.Status.WAITING)
        .defer(*(f"{run}__{blob}" for run in ("run_a", "run_b") for blob in RUN_BLOBS))
        .order_by("-created", "-id")
    )
    failed = (
        access.runs_for(user)
        .filter(status=EvaluationRun.Status.FAILED, finished_at__gt=recent)
        .select_related("golden_version__golden_set", "target")
        .defer(*GOLDEN_FILE, *RUN_BLOBS)
        .order_by("-finished_at", "-id")
    )
    return HomeWaiting(
        since=since,
        recent_since=recent,
        studies=Listed.of(studies),
        finished=Listed.of(finished),
        pending=Listed.of(pending),
        failed=Listed.of(failed),
    )
