"""Evaluation pages: runs (list with live progress, trigger form, report, side-by-side, cancel, baseline
promotion, rebaseline, queueing unjudged documents), targets (list, detail with its nightly schedules,
form, trend charts), budgets, baseline history and API tokens.

Who sees what is `evaluation.access` (the API's rules too): those who review a golden set (admins, and
the reviewer role on the set's list: `labeling.roles`) see its runs, targets, budgets and baselines;
everyone else gets 404 (grading is blind). Views are thin:
look the object up through access, call one service or selector, render. The report page's tables are
`evaluation.report_page`, the forms `evaluation.forms`, the trend charts' geometry `assay.charts`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.adapters import ADAPTER_CHOICES
from assay.budgets import Budgets, load_budgets
from assay.charts import TREND_CHART, trend_charts
from assay.display import overrides_text, params_text
from assay.drift import BudgetsError
from assay.jsonin import JsonInputError, json_loads
from assay.metric_table import WEIGHTED_PREFIX, series_label
from assay.run_meta import redact_url
from assay.targets import TargetError, shown_headers
from evaluation import access, selectors, services
from evaluation.action_words import asked_sentences, queued_sentences
from evaluation.budgets_form import DEFAULTS_NOTE, budgets_from_post, budgets_grid, slice_names
from evaluation.budgets_page import noise_panel, suggested_budgets
from evaluation.forms import (
    TARGET_PROBLEM_FIELDS,
    RunForm,
    ScheduleForm,
    TargetForm,
    TokenForm,
    problems_to_form,
)
from evaluation.list_specs import per_query_spec, picker_spec, runs_spec, targets_spec
from evaluation.models import ApiToken, EvaluationRun, SearchTarget
from evaluation.report_page import (
    compare_choice_shown,
    compare_choices,
    compare_rows,
    movement,
    num,
    per_query_shown,
    query_values,
    report_context,
    rescore_context,
    run_snapshot,
)
from evaluation.tokens import TokenError, api_token_create, api_token_list, api_token_revoke
from golden_io.models import GitExportConfig, GoldenVersion
from labeling.forms import UploadForm, form_errors
from labeling.lists import list_page
from labeling.models import GoldenSet
from labeling.roles import is_reviewer, reviews

# ------------------------------------------------------------------------------------- access helpers


def _get_run(request: HttpRequest, run_id: int) -> EvaluationRun:
    return access.get_run(request.user, run_id)


def _get_set(request: HttpRequest, slug: str) -> GoldenSet:
    return access.get_golden_set(request.user, slug)


def _get_target(request: HttpRequest, pk: int) -> SearchTarget:
    return access.get_target(request.user, pk)


def _require_evaluation_user(request: HttpRequest) -> None:
    """Pages that list things: users without the reviewer role (raters included) get a 404 like
    everywhere."""
    if not is_reviewer(request.user):
        raise Http404("nothing here")


def _problems_message(request: HttpRequest, what: str, problems: Iterable[str]) -> None:
    messages.error(request, f"{what}: " + "; ".join(problems))


# ------------------------------------------------------------------------------------- runs: list


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    _require_evaluation_user(request)
    sets = list(access.golden_sets_for(request.user))
    targets = list(access.targets_for(request.user))
    runs = list_page(
        request, access.run_rows(access.runs_for(request.user)), runs_spec(sets=sets, targets=targets)
    )
    return render(
        request,
        "evaluation/run_list.html",
        {
            "runs": runs,
            "may_trigger": any(access.may_trigger(request.user, s) for s in sets),
        },
    )


@require_GET
def run_row(request: HttpRequest, run_id: int) -> HttpResponse:
    """One row of the run list, polled while the run is active (htmx swaps the row)."""
    run = _get_run(request, run_id)
    return render(request, "evaluation/_run_row.html", {"run": run})


@require_GET
def run_progress(request: HttpRequest, run_id: int) -> HttpResponse:
    """The report page's progress bar. Once the run is final the page reloads itself to show the report
    (HX-Refresh), so the poll ends where the verdict appears."""
    run = _get_run(request, run_id)
    progress = selectors.run_progress(run=run)
    response = render(request, "evaluation/_progress.html", {"run": run, "progress": progress})
    if progress["final"] and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"
    return response


# ------------------------------------------------------------------------------------- runs: trigger


@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    _require_evaluation_user(request)
    initial = {k: request.GET[k] for k in ("golden_version", "target", "params") if k in request.GET}
    form = RunForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        version: GoldenVersion = form.cleaned_data["golden_version"]
        try:
            run = services.run_create(
                golden_version=version,
                target=form.cleaned_data["target"],
                triggered_by=request.user,
                trigger=EvaluationRun.Trigger.WEB,
                params=form.cleaned_data["params"],
                rebaseline=form.cleaned_data["rebaseline"],
                rescore_baseline=form.cleaned_data["rescore_baseline"],
            )
        except services.RunError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            messages.success(request, f"Run {run.pk} queued.")
            return redirect("evaluation:run_detail", run_id=run.pk)
    status = 422 if request.method == "POST" else 200
    return render(request, "evaluation/run_new.html", {"form": form, "plan": form.plan()}, status=status)


@require_GET
def run_new_plan(request: HttpRequest) -> HttpResponse:
    """The Start-a-run form's note on what the chosen version and target will be gated against, shown as
    soon as either is picked (htmx), before Start."""
    _require_evaluation_user(request)
    form = RunForm(request.GET, user=request.user)
    return render(request, "evaluation/_gate_plan.html", {"plan": form.plan()})


# ------------------------------------------------------------------------------------- runs: report


def _target_sends(run: EvaluationRun) -> dict[str, Any]:
    """The params and stage toggles the target itself sent when the run started (its snapshot)."""
    snapshot = run.target_snapshot or {}
    return {**(snapshot.get("params") or {}), **(snapshot.get("stages") or {})}


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    golden_set = run.golden_version.golden_set
    may_review = reviews(request.user, golden_set)
    in_force = selectors.baseline_get(golden_set=golden_set, target=run.target)
    context: dict[str, Any] = {
        "run": run,
        "golden_set": golden_set,
        "progress": selectors.run_progress(run=run),
        "may_review": may_review,
        "may_manage": access.may_manage_run(request.user, run),
        "baseline_in_force": in_force,
        "is_baseline": in_force is not None and in_force.run_id == run.pk,
        "git_export": GitExportConfig.objects.filter(golden_set=golden_set).first(),
        "snapshot": run_snapshot(run),
        "params": params_text(run.effective_params),
        "overrides": overrides_text(_target_sends(run), run.params),
        "deliveries": list(run.notifications.all()),  # who was told of its verdict (docs/runs.md)
    }
    if run.report is not None:
        context.update(report_context(run, show_all=request.GET.get("all", "")))
        rows = context.pop("per_query_rows")
        per_query = list_page(request, rows, per_query_spec(rows))
        per_query.items = [per_query_shown(row) for row in per_query.items]  # the page's rows only
        context["per_query"] = per_query
        context.update(rescore_context(run))
        if may_review and context["unjudged"].rows:
            context["judge_offer"] = services.unjudged_judge_offer(run=run)
    return render(request, "evaluation/run_detail.html", context)


@require_GET
def run_report_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """The report artifact as `assay run` writes it (feed it to `assay gate`)."""
    from assay.artifacts import dump_artifact

    run = _get_run(request, run_id)
    if run.report is None:
        raise Http404("this run has no report yet")
    response = HttpResponse(dump_artifact(run.report), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-relevance.json"'
    return response


@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers and admins cancel a run")
    if services.run_cancel(run=run, by=request.user):
        messages.success(request, f"Run {run.pk} cancelled.")
    else:
        messages.warning(request, f"Run {run.pk} had already finished ({run.status}).")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_promote(request: HttpRequest, run_id: int) -> HttpResponse:
    """Promote to baseline (`promote`), or the rebaseline workflow through git (`rebaseline`)."""
    run = _get_run(request, run_id)
    rationale = request.POST.get("rationale", "")
    rebaseline = request.POST.get("action") == "rebaseline"
    try:
        if rebaseline:
            baseline = services.rebaseline_write(run=run, by=request.user, rationale=rationale)
        else:
            baseline = services.baseline_promote(run=run, by=request.user, rationale=rationale)
    except services.BaselineError as exc:
        _problems_message(request, "Not promoted", exc.problems)
    else:
        text = (
            f"Run {run.pk} is now the baseline of {run.golden_version.golden_set.slug} on {run.target.name}"
        )
        previous = baseline.previous
        if previous is None:
            text += " (its first baseline)"
        elif previous.run_id == run.pk:
            text += " again, with this rationale"
        else:
            text += f", replacing run {previous.run_id}"
        if baseline.git_commit:
            text += f"; branch {baseline.git_branch} at {baseline.git_commit[:10]}"
            if baseline.git_push_error:
                messages.warning(
                    request, f"The push failed (the local commit is kept): {baseline.git_push_error}"
                )
        messages.success(request, text + ".")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_rescore_baseline(request: HttpRequest, run_id: int) -> HttpResponse:
    """Re-score the baseline the run was gated against on the run's golden version, and gate it again."""
    run = _get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers re-score its baseline")
    try:
        regated = services.run_regate_rescored(run=run, by=request.user)
    except services.RunError as exc:
        _problems_message(request, "Not re-scored", exc.problems)
    else:
        rescore = regated.rescore
        how = (
            f"Baseline (run {rescore.source_run_id}) re-scored on version {run.golden_version.name}"
            if regated.made
            else f"The baseline's re-score on version {run.golden_version.name} made before was used "
            f"(run {rescore.source_run_id}, nothing re-scored)"
        )
        verdict = regated.run.verdict
        change = (
            f"{verdict}, was {regated.verdict_before}"
            if verdict != regated.verdict_before
            else f"{verdict}, unchanged"
        )
        messages.success(request, f"{how}; run {run.pk} gated again: {change}.")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_unjudged_queue(request: HttpRequest, run_id: int) -> HttpResponse:
    """ "Queue them for rating": what was added and reopened, or that nothing was, and what each
    document waits for (docs/runs.md, "Unjudged documents")."""
    run = _get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers queue documents for rating")
    outcome = services.unjudged_queue(run=run, by=request.user)
    sentences = queued_sentences(
        outcome, version=run.golden_version.name, link=_query_link(run, outcome), escape=conditional_escape
    )
    _say(request, sentences)
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_unjudged_ask_judge(request: HttpRequest, run_id: int) -> HttpResponse:
    """ "Ask the judge": the run's unjudged top-k documents to the judge qualified for each query (a job per
    judge over exactly those pairs; docs/runs.md, "Judge labels in the report")."""
    run = _get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers ask a judge")
    outcome = services.unjudged_ask_judge(run=run, by=request.user)
    sentences = asked_sentences(
        outcome, version=run.golden_version.name, link=_query_link(run, outcome), escape=conditional_escape
    )
    _say(request, sentences)
    return redirect("evaluation:run_detail", run_id=run.pk)


def _query_link(run: EvaluationRun, outcome: services.UnjudgedQueued) -> Callable[[str], str]:
    """A query id as a link to its review page (where a reviewer decides and sees its assignments)."""
    slug = run.golden_version.golden_set.slug

    def link(query_id: str) -> str:
        pk = outcome.query_pks.get(query_id)
        if pk is None:
            return conditional_escape(query_id)
        url = reverse("labeling:query_review", kwargs={"slug": slug, "pk": pk})
        return format_html('<a href="{}">{}</a>', url, query_id)

    return link


def _say(request: HttpRequest, sentences: Iterable[tuple[str, str]]) -> None:
    """Sentences of `evaluation.action_words`, escaped there, as messages."""
    levels = {"success": messages.SUCCESS, "info": messages.INFO, "warning": messages.WARNING}
    for level, text in sentences:
        messages.add_message(request, levels[level], mark_safe(text))  # escaped by the builder


# ------------------------------------------------------------------------------------- side by side


@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    """Two runs for one query: `?a=<run>&b=<run>&query=<id>`; without a query, the queries by change."""
    try:
        a_id, b_id = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
    except ValueError:
        raise Http404("give two runs: ?a=<run id>&b=<run id>") from None
    run_a, run_b = _get_run(request, a_id), _get_run(request, b_id)
    query_id = request.GET.get("query", "")
    context: dict[str, Any] = {
        "a": run_a,
        "b": run_b,
        "query_id": query_id,
        "a_params": params_text(run_a.effective_params),
        "b_params": params_text(run_b.effective_params),
    }
    if query_id:
        try:
            context["data"] = selectors.run_compare_query(run_a=run_a, run_b=run_b, query_id=query_id)
        except KeyError:
            raise Http404(f"neither run has the query {query_id}") from None
        context["rows"] = compare_rows(context["data"])
        context["values"] = {side: query_values(context["data"][side]["metrics"]) for side in ("a", "b")}
        context["changes"] = [
            {**d, "moved_text": moved, "css": css}
            for d in context["data"]["documents"]
            for moved, css in [movement(d["rank_a"], d["rank_b"])]
        ]
    else:
        choices = compare_choices(run_a, run_b)
        picker = list_page(request, choices, picker_spec(choices))
        picker.items = [compare_choice_shown(c) for c in picker.items]  # only the page's rows are formatted
        context["choices"] = picker
    return render(request, "evaluation/compare.html", context)


@require_GET
def target_list(request: HttpRequest) -> HttpResponse:
    _require_evaluation_user(request)
    spec = targets_spec(sets=list(access.golden_sets_for(request.user)), adapters=ADAPTER_CHOICES)
    targets = list_page(request, access.targets_for(request.user).distinct(), spec)
    return render(
        request,
        "evaluation/target_list.html",
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
        "evaluation/target_detail.html",
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
    return _target_page(request, _get_target(request, pk))


@require_POST
def target_schedule(request: HttpRequest, pk: int) -> HttpResponse:
    """Set (`save`) or delete (`delete`) the nightly run of (golden set, target). Only the set's reviewers
    and admins: a target or set this user may not see is a 404, as on the rest of the page."""
    target = _get_target(request, pk)
    golden_set = _get_set(request, request.POST.get("golden_set", ""))
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
    target = _get_target(request, pk) if pk is not None else None
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
    return render(request, "evaluation/target_form.html", {"form": form, "target": target}, status=status)


def _trend_budgets(budgets: Budgets) -> dict[str, tuple[float | None, float | None]]:
    """Each trend series' (warn, fail) budget: the core tier's for a metric's mean, the weighted budgets
    for its traffic-weighted twin (off unless the set's budgets say)."""
    out = {metric: (b.warn, b.fail) for metric, b in budgets.core.items()}
    out |= {f"{WEIGHTED_PREFIX}{metric}": (b.warn, b.fail) for metric, b in budgets.weighted.items()}
    return out


@require_GET
def target_trend(request: HttpRequest, pk: int) -> HttpResponse:
    target = _get_target(request, pk)
    sets = [s for s in target.golden_sets.order_by("slug") if access.golden_set_for(request.user, s.slug)]
    slug = request.GET.get("set") or (sets[0].slug if sets else "")
    golden_set = _get_set(request, slug) if slug else None
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
        "evaluation/trend.html",
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


# ------------------------------------------------------------------------------------- budgets, baselines


def _slice_names(golden_set: GoldenSet, budgets: Budgets) -> dict[str, list[str]]:
    """The strata, traffic bands and failure modes the set's active queries have, and any the budgets
    name: one row of the budgets form each."""
    found = golden_set.queries.filter(status="active").values_list("stratum", "traffic_band", "failure_mode")
    rows = set(found.order_by().distinct())
    return slice_names(
        budgets,
        {
            "strata": {r[0] for r in rows},
            "traffic_bands": {r[1] for r in rows},
            "failure_modes": {r[2] for r in rows},
        },
    )


def _uploaded_budgets(request: HttpRequest) -> tuple[Any, list[str]]:
    """A budgets file sent with the upload form (or its JSON as the `budgets` field): the decoded JSON,
    or what is wrong with it."""
    if "budgets" in request.POST:
        text: str | bytes = request.POST["budgets"]
    else:
        form = UploadForm(request.POST, request.FILES)
        if not form.is_valid():
            return None, [f"budgets file: {form_errors(form)}"]
        text = form.cleaned_data["file"].read()
    try:
        return json_loads(text), []
    except JsonInputError as exc:
        return None, [f"budgets file: {exc}"]


@require_http_methods(["GET", "POST"])
def budgets_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's budgets as a form (metric x scope x warn/fail; evaluation.budgets_form) beside the noise
    floor of a target's baseline configuration (`?target=`). "Fill in the suggestions" puts the suggested
    budgets in the form, saved only by "Save budgets"; the budgets file downloads (budgets.json) and
    uploads as it is."""
    golden_set = _get_set(request, slug)
    stored = hasattr(golden_set, "budgets")
    budgets = selectors.budgets_get(golden_set=golden_set)
    names = _slice_names(golden_set, budgets)
    target_id = (request.POST if request.method == "POST" else request.GET).get("target") or None
    noise = noise_panel(golden_set=golden_set, budgets=budgets, target_id=target_id)
    grid = budgets_grid(budgets, names)
    problems: list[str] = []
    filled = False
    action = request.POST.get("action", "upload" if "budgets" in request.POST else "save")
    if request.method == "POST":
        data: Any = None
        if action == "upload":
            data, problems = _uploaded_budgets(request)
        elif action != "defaults":
            grid, data = budgets_from_post(request.POST, names)
            problems = list(grid.errors)
        if action == "suggest" and not problems:
            suggested, problems = suggested_budgets(noise, load_budgets(data))
            if suggested is not None:
                grid, filled = budgets_grid(suggested, slice_names(suggested, names)), True
        elif not problems:
            try:
                services.budgets_set(golden_set=golden_set, data=data, by=request.user)
            except BudgetsError as exc:
                problems = exc.problems
            else:
                messages.success(
                    request, f"Budgets of {golden_set.slug} saved; runs finishing from now use them."
                )
                url = reverse("evaluation:budgets", args=[golden_set.slug])
                return redirect(f"{url}?target={target_id}" if target_id else url)
    return render(
        request,
        "evaluation/budgets.html",
        {
            "golden_set": golden_set,
            "grid": grid,
            "problems": problems,
            "stored": stored,
            "noise": noise,
            "filled": filled,
            "upload_form": UploadForm(),
            "defaults_note": DEFAULTS_NOTE,
        },
        status=422 if problems else 200,
    )


@require_GET
def budgets_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's budgets file (the stored budgets in full, or the defaults): what `assay gate --budgets`
    reads and the budgets page uploads."""
    golden_set = _get_set(request, slug)
    text = json.dumps(selectors.budgets_get(golden_set=golden_set).to_dict(), indent=2) + "\n"
    response = HttpResponse(text, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="budgets-{golden_set.slug}.json"'
    return response


@require_GET
def baseline_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set(request, slug)
    return render(
        request,
        "evaluation/baselines.html",
        {"golden_set": golden_set, "baselines": list(selectors.baseline_list(golden_set=golden_set))},
    )


# ------------------------------------------------------------------------------------- API tokens


def _tokens_page(request: HttpRequest, form: TokenForm, created: str = "", status: int = 200) -> HttpResponse:
    return render(
        request,
        "evaluation/tokens.html",
        {"form": form, "tokens": api_token_list(user=request.user), "created": created},
        status=status,
    )


@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens; a new token is shown once, on the page that created it."""
    if not is_reviewer(request.user):
        raise Http404("nothing here")
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            _, raw = api_token_create(
                user=request.user, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
            )
        except TokenError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            return _tokens_page(request, TokenForm(), created=raw)
    return _tokens_page(request, form, status=422 if request.method == "POST" else 200)


@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    # As the tokens page: reviewers' (a token without the role opens nothing; an admin revokes it).
    if not is_reviewer(request.user):
        raise Http404("no such token")
    token = ApiToken.objects.filter(pk=pk, user_id=request.user.pk or 0).first()
    if token is None:
        raise Http404("no such token")
    if api_token_revoke(token=token):
        messages.success(request, f"Token {token.name} revoked.")
    return redirect("evaluation:tokens")
