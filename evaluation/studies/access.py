"""Who sees which side-by-side study, for the pages and the API alike (a token acts as its user): those
who review the study's golden set (`labeling.roles`); everyone else gets 404, as for runs
(evaluation.runs.access). Raters reach their own tasks only, by token (evaluation.studies.rater_views)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import Http404

from evaluation.studies.models import PendingStudy, StudyTask, SxsStudy
from labeling.roles import raters_of, reviewed_filter


def studies_for(user: Any) -> QuerySet[SxsStudy]:
    """The studies of the sets `user` reviews (`labeling.roles`)."""
    return SxsStudy.objects.filter(reviewed_filter(user)).select_related(
        "golden_set", "golden_version", "run_a__target", "run_b__target", "instructions", "created_by"
    )


def get_study(user: Any, pk: int) -> SxsStudy:
    study = (
        studies_for(user).defer("golden_version__content", "golden_version__documents").filter(pk=pk).first()
    )
    if study is None:
        raise Http404("no such study")
    return study


def study_progress(study: SxsStudy) -> dict[str, Any]:
    """Answers so far: per rater (answered of assigned; `removed` when they no longer rate the study's set,
    `labeling.roles.raters_of`: their answers stay and count) and in all."""
    rating = raters_of(study.golden_set).values("pk")
    raters = list(
        StudyTask.objects.filter(study=study)
        .values("rater__username")
        .annotate(removed=~Exists(rating.filter(pk=OuterRef("rater_id"))))
        .annotate(total=Count("id"), done=Count("id", filter=Q(answered_at__isnull=False)))
        .order_by("rater__username")
    )
    total = sum(r["total"] for r in raters)
    done = sum(r["done"] for r in raters)
    return {"raters": raters, "total": total, "done": done}


def pending_for(user: Any) -> QuerySet[PendingStudy]:
    """The pending studies (on two targets, waiting for their runs) of the sets `user` reviews."""
    return PendingStudy.objects.filter(reviewed_filter(user)).select_related(
        "golden_set", "golden_version", "run_a__target", "run_b__target", "study", "created_by"
    )


def get_pending(user: Any, pk: int) -> PendingStudy:
    pending = (
        pending_for(user).defer("golden_version__content", "golden_version__documents").filter(pk=pk).first()
    )
    if pending is None:
        raise Http404("no such study")
    return pending
