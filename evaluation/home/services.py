"""What a visit to the home page writes (docs/runs.md, "What waits for you"): the visit itself, so the
page can say what finished since the last one (`evaluation.home.models.HomeSeen`), and the visitor's
studies on two targets brought up to date, as their set's study list does when it is read (a run may
have ended, or been cancelled outside finalize, meanwhile)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluation.home.models import HomeSeen
from evaluation.studies.access import pending_for
from evaluation.studies.models import PendingStudy
from evaluation.studies.services.pending import pending_resolve


@transaction.atomic
def home_visit(*, user: Any, now: datetime | None = None) -> datetime | None:
    """Record a view of the home page by `user` at `now` (default: now) and return where what is new for
    this visit begins: the end of the visit before (`HomeSeen.view`), or None on the first visit."""
    now = now or timezone.now()
    seen, made = HomeSeen.objects.select_for_update().get_or_create(
        user_id=user.pk, defaults={"seen_at": now}
    )
    if not made:
        seen.view(now)
        seen.save(update_fields=["seen_at", "since"])
    return seen.since


def home_pending_settle(*, user: Any) -> int:
    """Resolve the waiting studies on two targets of the sets `user` reviews (`pending_resolve`: the
    study made, or failed in words, once its runs have settled); how many are still waiting."""
    # Their ids and status only: `pending_resolve` reads each again under its lock.
    waiting = pending_for(user).filter(status=PendingStudy.Status.WAITING).select_related(None).only("status")
    return sum(pending_resolve(p).status == PendingStudy.Status.WAITING for p in waiting)
