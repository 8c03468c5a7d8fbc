"""Who sees and changes what in evaluation, for the pages and the API alike (a token acts as its user).

The pages and `evaluation.api` both look objects up here, so the API package is never a page's import.
Everything here reads the one rule of `labeling.roles`: a user **reviews** a golden set when they are an
admin, or hold the reviewer role (the `reviewers` group) and are on the set's reviewers list; both are
read from the database at every request, so a reviewer whose group is removed (and every API token they
made) loses all of this at once. Evaluation is reviewers' work: run pages name systems and rank documents,
and grading is blind, so nobody without the role (raters, users with no group, a name left on a list
without the role) sees a run, target or golden set here.

- Golden sets: the sets the user reviews (`labeling.roles.reviewed_sets`; admins all).
- Runs: the runs of those sets (`evaluation.runs.selectors.runs_visible`). Who started a run gives no access
  of its own: a run's ranks and grades are its set's, so a reviewer taken off the set, or who lost the
  role, no longer sees the runs they started.
- Starting a run, cancelling one, promoting a baseline, re-scoring, queueing unjudged documents, asking
  a judge, budgets and schedules: those who review the set.
- Targets: admins all; a reviewer (the role) the targets that list a set they review, and the targets
  they own.
- Creating a target: the reviewer role. Changing one: admins, its owner while they hold the role, or
  whoever reviews every set it lists.

Everything not visible is a 404 (its existence is not confirmed).
"""

from __future__ import annotations

from typing import Any

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet, Subquery
from django.http import Http404

from evaluation.runs import selectors
from evaluation.runs.models import Baseline, EvaluationRun, SearchTarget
from labeling.models import GoldenSet
from labeling.roles import is_admin, is_reviewer, reviewed_filter, reviewed_sets, reviews


def runs_for(user: Any) -> QuerySet[EvaluationRun]:
    return selectors.runs_visible(user=user)


def run_rows(runs: QuerySet[EvaluationRun]) -> QuerySet[EvaluationRun]:
    """Runs for a list: newest first, related rows in the same query, the JSON blobs left behind (not the
    target's snapshot, which each run's label reads); each
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
    return selectors.run_get(user=user, run_id=run_id)


def golden_sets_for(user: Any) -> QuerySet[GoldenSet]:
    return reviewed_sets(user).select_related("rubric").order_by("slug")


def golden_set_for(user: Any, slug: str) -> GoldenSet | None:
    return golden_sets_for(user).filter(slug=slug).first()


def targets_for(user: Any) -> QuerySet[SearchTarget]:
    targets = SearchTarget.objects.all()
    if not is_reviewer(user):
        return targets.none()
    if not is_admin(user):
        visible = SearchTarget.objects.filter(reviewed_filter(user, "golden_sets") | Q(owner=user.pk))
        targets = targets.filter(pk__in=visible.values("pk"))
    return targets.select_related("owner").prefetch_related("golden_sets").order_by("name")


def target_for(user: Any, pk: int) -> SearchTarget | None:
    return targets_for(user).filter(pk=pk).first()


def may_trigger(user: Any, golden_set: GoldenSet) -> bool:
    """Those who review the set start runs on it."""
    return reviews(user, golden_set)


def may_manage_run(user: Any, run: EvaluationRun) -> bool:
    """Cancel, promote, re-score, queue or ask a judge about a run: those who review its set."""
    return reviews(user, run.golden_version.golden_set)


def may_create_target(user: Any) -> bool:
    return is_reviewer(user)


def may_edit_target(user: Any, target: SearchTarget) -> bool:
    if not is_reviewer(user):
        return False
    if is_admin(user) or (target.owner_id is not None and target.owner_id == user.pk):
        return True
    listed = list(target.golden_sets.all())
    return bool(listed) and all(reviews(user, s) for s in listed)


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
