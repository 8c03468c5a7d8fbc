"""Who sees and changes what in evaluation, for the pages and the API alike (a token acts as its user).

The pages and `evaluation.api` both look objects up here, so the API package is never a page's import.

- Runs: admins all; reviewers the runs of their golden sets; a user the runs they triggered
  (`evaluation.selectors.runs_visible`). Never raters: run pages name systems and rank documents, and
  grading is blind, so a user who is a rater and not a reviewer sees no run, target or golden set here.
- Golden sets: admins all; reviewers (the group) the sets they review, as on the golden version pages.
- Targets: admins all; a reviewer the targets that list one of their sets, and the targets they own.
- Changing a target: admins, its owner, or a reviewer of every set it lists.

Everything not visible is a 404 (its existence is not confirmed).
"""

from __future__ import annotations

from typing import Any

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet, Subquery
from django.http import Http404

from evaluation import selectors
from evaluation.models import Baseline, EvaluationRun, SearchTarget
from evaluation.services import can_review
from labeling.models import GoldenSet
from labeling.roles import is_admin, is_rater, is_reviewer


def blind(user: Any) -> bool:
    """Anonymous users and raters who are not reviewers see nothing of evaluation."""
    if not getattr(user, "is_authenticated", False):
        return True
    return is_rater(user) and not is_reviewer(user)


def runs_for(user: Any) -> QuerySet[EvaluationRun]:
    if blind(user):
        return EvaluationRun.objects.none()
    return selectors.runs_visible(user=user)


def run_rows(runs: QuerySet[EvaluationRun]) -> QuerySet[EvaluationRun]:
    """Runs for a list: newest first, related rows in the same query, the JSON blobs left behind; each
    says whether it is its (golden set, target)'s baseline in force (`is_baseline`: the newest promotion)
    or was one before (`was_baseline`)."""
    in_force = (
        Baseline.objects.filter(
            golden_set_id=OuterRef("golden_version__golden_set_id"), target_id=OuterRef("target_id")
        )
        .order_by("-approved_at", "-id")
        .values("run_id")[:1]
    )
    return (
        runs.select_related("golden_version__golden_set", "target", "triggered_by", "baseline")
        # The golden version's file (megabytes on a large set) would be read once per row, and the page
        # needs its name only.
        .defer(
            "report",
            "gate",
            "key_map",
            "keys",
            "target_snapshot",
            "golden_version__content",
            "golden_version__documents",
        )
        .annotate(
            is_baseline=ExpressionWrapper(Q(pk=Subquery(in_force)), output_field=BooleanField()),
            was_baseline=Exists(Baseline.objects.filter(run_id=OuterRef("pk"))),
        )
        .order_by("-created", "-id")
    )


def run_for(user: Any, run_id: int) -> EvaluationRun | None:
    if blind(user):
        return None
    return selectors.run_get(user=user, run_id=run_id)


def golden_sets_for(user: Any) -> QuerySet[GoldenSet]:
    sets = GoldenSet.objects.select_related("rubric")
    if blind(user) or not is_reviewer(user):
        return sets.none()
    if is_admin(user):
        return sets.order_by("slug")
    return sets.filter(reviewers=user).order_by("slug")


def golden_set_for(user: Any, slug: str) -> GoldenSet | None:
    return golden_sets_for(user).filter(slug=slug).first()


def targets_for(user: Any) -> QuerySet[SearchTarget]:
    targets = SearchTarget.objects.all()
    if blind(user):
        return targets.none()
    if not is_admin(user):
        visible = SearchTarget.objects.filter(Q(golden_sets__reviewers=user) | Q(owner=user))
        targets = targets.filter(pk__in=visible.values("pk"))
    return targets.select_related("owner").prefetch_related("golden_sets").order_by("name")


def target_for(user: Any, pk: int) -> SearchTarget | None:
    return targets_for(user).filter(pk=pk).first()


def may_trigger(user: Any, golden_set: GoldenSet) -> bool:
    """Reviewers of the set and admins start runs on it."""
    return not blind(user) and can_review(user, golden_set)


def may_manage_run(user: Any, run: EvaluationRun) -> bool:
    """Cancel: whoever started the run, the set's reviewers and admins."""
    if blind(user):
        return False
    return run.triggered_by_id == user.pk or can_review(user, run.golden_version.golden_set)


def may_create_target(user: Any) -> bool:
    return not blind(user) and is_reviewer(user)


def may_edit_target(user: Any, target: SearchTarget) -> bool:
    if blind(user):
        return False
    if is_admin(user) or (target.owner_id is not None and target.owner_id == user.pk):
        return True
    listed = list(target.golden_sets.all())
    return bool(listed) and all(can_review(user, s) for s in listed)


# --- the object or a 404 (pages and API alike)


def get_run(user: Any, run_id: int) -> EvaluationRun:
    run = run_for(user, run_id)
    if run is None:
        raise Http404("no such run")
    return run


def get_golden_set(user: Any, slug: str) -> GoldenSet:
    golden_set = golden_set_for(user, slug)
    if golden_set is None:
        raise Http404("no such golden set")
    return golden_set


def get_target(user: Any, pk: int) -> SearchTarget:
    target = target_for(user, pk)
    if target is None:
        raise Http404("no such target")
    return target
