"""Target pages: the list, the detail with its nightly schedules, the form, the trend charts.

Part of `evaluation.runs.views` (docs/architecture.md).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.adapters import ADAPTER_CHOICES
from assay.budgets import Budgets
from assay.charts import TREND_CHART, trend_charts
from assay.display import params_text
from assay.metric_table import WEIGHTED_PREFIX, series_label
from assay.run_meta import redact_url
from assay.targets import TargetError, shown_headers
from evaluation.runs import access, selectors, services
from evaluation.runs.forms import TARGET_PROBLEM_FIELDS, ScheduleForm, TargetForm
from evaluation.runs.list_specs import targets_spec
from evaluation.runs.models import SearchTarget
from evaluation.runs.numbers_page import num
from evaluation.runs.views.access_helpers import get_set, get_target, require_evaluation_user
from labeling.forms import problems_to_form
from labeling.lists import list_page
from labeling.models import GoldenSet


@require_GET
def target_list(request: HttpRequest) -> HttpResponse:
    require_evaluation_user(request)
    spec = targets_spec(sets=list(access.golden_sets_for(request.user)), adapters=ADAPTER_CHOICES)
    targets = list_page(request, access.targets_for(request.user).distinct(), spec)
    return render(
        request,
        "evaluation/runs/target_list.html",
        {
            "targets": targets,
            "rows": [(t, redact_url(t.url), access.may_edit_target(request.user, t)) for t in targets.items],
            "may_create": access.may_create_target(request.user),
        },
    )


def _schedulable_sets(request: HttpRequest, target: SearchTarget) -> list[GoldenSet]:
    """The target's sets this user reviews (admins: all): the ones they may schedule."""
    mine = access.golden_sets_for(request.user).values("pk")
    return list(target.golden_sets.filter(pk__in=mine).order_by("slug"))


def _target_page(
    request: HttpRequest, target: SearchTarget, schedule_form: ScheduleForm | None = None, status: int = 200
) -> HttpResponse:
    # The sets this user reviews (admins: all): theirs to see baselines of and to schedule.
    visible_sets = set(access.golden_sets_for(request.user).values_list("pk", flat=True))
    listed = list(target.golden_sets.order_by("slug"))
    sets = [
        {
            "set": s,
            "visible": s.pk in visible_sets,
            "baseline": selectors.baseline_get(golden_set=s, target=target) if s.pk in visible_sets else None,
        }
        for s in listed
    ]
    runs = access.run_rows(access.runs_for(request.user).filter(target=target))[:20]
    schedules = list(target.schedules.filter(golden_set_id__in=visible_sets).select_related("golden_set"))
    schedulable = [s for s in listed if s.pk in visible_sets]  # as _schedulable_sets, from this query
    if schedule_form is None and schedulable:
        # `?schedule=<set>` (the edit link) fills the form with that schedule; so does a lone set's.
        wanted = request.GET.get("schedule") or (schedulable[0].slug if len(schedulable) == 1 else "")
        current = next((s for s in schedules if s.golden_set.slug == wanted), None)
        initial = ScheduleForm.initial_for(current) if current is not None else {"golden_set": wanted}
        schedule_form = ScheduleForm(sets=schedulable, initial=initial)
    return render(
        request,
        "evaluation/runs/target_detail.html",
        {
            "target": target,
            "url": redact_url(target.url),
            "headers": shown_headers(target.spec()),
            "params": params_text(target.params),
            "stages": params_text(target.stages),
            "sets": sets,
            "runs": list(runs),
            "may_edit": access.may_edit_target(request.user, target),
            "schedules": schedules,
            "schedule_form": schedule_form,
        },
        status=status,
    )


@require_GET
def target_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _target_page(request, get_target(request, pk))


@require_POST
def target_schedule(request: HttpRequest, pk: int) -> HttpResponse:
    """Set (`save`) or delete (`delete`) the nightly run of (golden set, target). Only the set's reviewers
    and admins: a target or set this user may not see is a 404, as on the rest of the page."""
    target = get_target(request, pk)
    golden_set = get_set(request, request.POST.get("golden_set", ""))
    back = reverse("evaluation:target_detail", args=[target.pk]) + "#schedules"
    if request.POST.get("action") == "delete":
        if services.schedule_delete(golden_set=golden_set, target=target):
            messages.success(request, f"Nightly run of {golden_set.slug} on {target.name} deleted.")
        else:
            messages.warning(request, f"{golden_set.slug} had no nightly run on {target.name}.")
        return redirect(back)
    form = ScheduleForm(request.POST, sets=_schedulable_sets(request, target))
    if form.is_valid():
        try:
            schedule = services.schedule_set(
                golden_set=golden_set,
                target=target,
                hour=form.cleaned_data["hour"],
                minute=form.cleaned_data["minute"],
                enabled=form.cleaned_data["enabled"],
                params=form.cleaned_data["params"],
                rescore_baseline=form.cleaned_data["rescore_baseline"],
                by=request.user,
            )
        except services.RunError as exc:
            problems_to_form(form, exc.problems, ScheduleForm.PROBLEM_FIELDS)
        else:
            state = "" if schedule.enabled else " (off)"
            messages.success(
                request,
                f"Nightly run of {golden_set.slug} on {target.name} at "
                f"{schedule.hour:02d}:{schedule.minute:02d} UTC saved{state}.",
            )
            return redirect(back)
    return _target_page(request, target, schedule_form=form, status=422)


@require_http_methods(["GET", "POST"])
def target_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    target = get_target(request, pk) if pk is not None else None
    if target is None and not access.may_create_target(request.user):
        raise Http404("nothing here")
    if target is not None and not access.may_edit_target(request.user, target):
        raise PermissionDenied("only admins, its owner or the reviewers of every set it lists edit it")
    initial = TargetForm.initial_for(target) if target is not None else {}
    form = TargetForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        values = {name: form.cleaned_data[name] for name in services.TARGET_FIELDS}
        values["rate_limit"] = form.cleaned_data["rate_limit"]
        chosen = list(form.cleaned_data["golden_sets"])
        try:
            if target is None:
                saved = services.target_create(owner=request.user, golden_sets=chosen, **values)
            else:
                # Sets this user cannot see stay listed: only their reviewers or an admin take them off.
                visible = set(access.golden_sets_for(request.user).values_list("pk", flat=True))
                kept = [s for s in target.golden_sets.all() if s.pk not in visible]
                saved = services.target_update(
                    target=target, golden_sets=[*chosen, *kept], hidden_sets=kept, **values
                )
        except TargetError as exc:
            problems_to_form(form, exc.problems, TARGET_PROBLEM_FIELDS)
        else:
            messages.success(request, f"Target {saved.name} saved.")
            return redirect("evaluation:target_detail", pk=saved.pk)
    status = 422 if request.method == "POST" else 200
    return render(
        request, "evaluation/runs/target_form.html", {"form": form, "target": target}, status=status
    )


def _trend_budgets(budgets: Budgets) -> dict[str, tuple[float | None, float | None]]:
    """Each trend series' (warn, fail) budget: the core tier's for a metric's mean, the weighted budgets
    for its traffic-weighted twin (off unless the set's budgets say)."""
    out = {metric: (b.warn, b.fail) for metric, b in budgets.core.items()}
    out |= {f"{WEIGHTED_PREFIX}{metric}": (b.warn, b.fail) for metric, b in budgets.weighted.items()}
    return out


@require_GET
def target_trend(request: HttpRequest, pk: int) -> HttpResponse:
    target = get_target(request, pk)
    sets = [s for s in target.golden_sets.order_by("slug") if access.golden_set_for(request.user, s.slug)]
    slug = request.GET.get("set") or (sets[0].slug if sets else "")
    golden_set = get_set(request, slug) if slug else None
    if golden_set is not None and golden_set not in sets:
        raise Http404("this target is not evaluated on that set")
    points = selectors.run_trend(target=target, golden_set=golden_set) if golden_set is not None else []
    metrics = selectors.TREND_METRICS
    in_force = (
        selectors.baseline_get(golden_set=golden_set, target=target) if golden_set is not None else None
    )
    baseline = next((p for p in points if in_force is not None and p["run_id"] == in_force.run_id), None)
    budgets = selectors.budgets_get(golden_set=golden_set) if golden_set is not None else Budgets()
    return render(
        request,
        "evaluation/runs/trend.html",
        {
            "target": target,
            "golden_set": golden_set,
            "sets": sets,
            "points": [
                {
                    **p,
                    "params_text": params_text(p["params"]),
                    "cells": [
                        num(p.get(m), why="no query counted", metric=m.removeprefix(WEIGHTED_PREFIX))
                        for m in metrics
                    ],
                }
                for p in points
            ],
            "labels": [series_label(m) for m in metrics],
            "charts": trend_charts(points, metrics, baseline=baseline, budgets=_trend_budgets(budgets)),
            "chart": TREND_CHART,
            "baseline": baseline,
        },
    )
