"""Run pages: the list with live progress, the trigger form and its plan, the report and its download,
cancel, baseline promotion and re-scoring, unjudged documents queued or asked of the judge, side by
side.

Part of `evaluation.runs.views` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe
from django.utils.text import capfirst
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.display import overrides_text, params_text
from evaluation.runs import access, selectors, services
from evaluation.runs.action_words import asked_sentences, queued_sentences
from evaluation.runs.compare_page import (
    compare_choice_shown,
    compare_choices,
    compare_lists,
    compare_rows,
    query_values,
)
from evaluation.runs.forms import RunForm
from evaluation.runs.hooks import PANEL_PLACES, run_page_panels_of
from evaluation.runs.list_specs import per_query_spec, picker_spec, runs_spec
from evaluation.runs.models import EvaluationRun
from evaluation.runs.overlap_page import (
    by_query,
    query_overlap,
    query_shown,
    run_overlap,
    runs_overlap,
    summary_shown,
    with_rbo,
)
from evaluation.runs.report_page import (
    movement,
    per_query_shown,
    report_context,
    rescore_context,
    run_snapshot,
)
from evaluation.runs.views.access_helpers import get_run, problems_message, require_evaluation_user, settled
from golden_io.models import GitExportConfig, GoldenVersion
from labeling.lists import list_page
from labeling.roles import reviews

# ------------------------------------------------------------------------------------- runs: list


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    require_evaluation_user(request)
    sets = list(access.golden_sets_for(request.user))
    targets = list(access.targets_for(request.user))
    runs = list_page(
        request, access.run_rows(access.runs_for(request.user)), runs_spec(sets=sets, targets=targets)
    )
    return render(
        request,
        "evaluation/runs/run_list.html",
        {
            "runs": runs,
            "may_trigger": any(access.may_trigger(request.user, s) for s in sets),
        },
    )


@require_GET
def run_row(request: HttpRequest, run_id: int) -> HttpResponse:
    """One row of the run list, polled while the run is active (htmx swaps the row)."""
    run = get_run(request, run_id)
    return render(request, "evaluation/runs/_run_row.html", {"run": run})


@require_GET
def run_progress(request: HttpRequest, run_id: int) -> HttpResponse:
    """The report page's progress bar. Once the run is final the page reloads itself to show the report
    (HX-Refresh), so the poll ends where the verdict appears."""
    run = get_run(request, run_id)
    progress = selectors.run_progress(run=run)
    response = render(request, "evaluation/runs/_progress.html", {"run": run, "progress": progress})
    return settled(request, response, progress["final"])


# ------------------------------------------------------------------------------------- runs: trigger


@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    require_evaluation_user(request)
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
            messages.success(request, f"{capfirst(run.label)} queued.")
            return redirect("evaluation:run_detail", run_id=run.pk)
    status = 422 if request.method == "POST" else 200
    return render(request, "evaluation/runs/run_new.html", {"form": form, "plan": form.plan()}, status=status)


@require_GET
def run_new_plan(request: HttpRequest) -> HttpResponse:
    """The Start-a-run form's note on what the chosen version and target will be gated against, shown as
    soon as either is picked (htmx), before Start."""
    require_evaluation_user(request)
    form = RunForm(request.GET, user=request.user)
    return render(request, "evaluation/runs/_gate_plan.html", {"plan": form.plan()})


# ------------------------------------------------------------------------------------- runs: report


def _target_sends(run: EvaluationRun) -> dict[str, Any]:
    """The params and stage toggles the target itself sent when the run started (its snapshot)."""
    snapshot = run.target_snapshot or {}
    return {**(snapshot.get("params") or {}), **(snapshot.get("stages") or {})}


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run(request, run_id)
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
    # What the capabilities built on runs show here (evaluation/runs/hooks.py): a run's studies, the
    # experiment whose adoption started it.
    panels = run_page_panels_of(run)
    for panel in panels:
        context.update(panel.context)
    context["panels"] = {place: [p for p in panels if p.place == place] for place in PANEL_PLACES}
    if run.report is not None:
        context.update(report_context(run, show_all=request.GET.get("all", "")))
        rows = context.pop("per_query_rows")
        unjudged = context.pop("unjudged_rows")
        per_query = list_page(request, rows, per_query_spec(rows))
        per_query.items = [per_query_shown(row) for row in per_query.items]  # the page's rows only
        context["per_query"] = per_query
        context.update(rescore_context(run))
        context["overlap"] = run_overlap(run, context["baseline_run"])
        if may_review and unjudged:
            context["judge_offer"] = services.unjudged_judge_offer(run=run, rows=unjudged)
    return render(request, "evaluation/runs/run_detail.html", context)


@require_GET
def run_report_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """The report artifact as `assay run` writes it (feed it to `assay gate`)."""
    from assay.artifacts import dump_artifact

    run = get_run(request, run_id)
    if run.report is None:
        raise Http404("this run has no report yet")
    response = HttpResponse(dump_artifact(run.report), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-relevance.json"'
    return response


@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers and admins cancel a run")
    if services.run_cancel(run=run, by=request.user):
        messages.success(request, f"{capfirst(run.label)} cancelled.")
    else:
        messages.warning(request, f"{capfirst(run.label)} had already finished ({run.status}).")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_promote(request: HttpRequest, run_id: int) -> HttpResponse:
    """Promote to baseline (`promote`), or the rebaseline workflow through git (`rebaseline`)."""
    run = get_run(request, run_id)
    rationale = request.POST.get("rationale", "")
    rebaseline = request.POST.get("action") == "rebaseline"
    try:
        if rebaseline:
            baseline = services.rebaseline_write(run=run, by=request.user, rationale=rationale)
        else:
            baseline = services.baseline_promote(run=run, by=request.user, rationale=rationale)
    except services.BaselineError as exc:
        problems_message(request, "Not promoted", exc.problems)
    else:
        text = f"{capfirst(run.label)} is now the baseline of {run.golden_version.golden_set.slug}"
        previous = baseline.previous
        if previous is None:
            text += " (its first baseline)"
        elif previous.run_id == run.pk:
            text += " again, with this rationale"
        else:
            text += f", replacing {previous.run.label}"
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
    run = get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers re-score its baseline")
    try:
        regated = services.run_regate_rescored(run=run, by=request.user)
    except services.RunError as exc:
        problems_message(request, "Not re-scored", exc.problems)
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
    run = get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers queue documents for rating")
    outcome = services.unjudged_queue(run=run, by=request.user)
    sentences = queued_sentences(
        outcome,
        version=run.golden_version.name,
        link=query_link(run.golden_version.golden_set.slug, outcome),
        escape=conditional_escape,
    )
    say(request, sentences)
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
def run_unjudged_ask_judge(request: HttpRequest, run_id: int) -> HttpResponse:
    """ "Ask the judge": the run's unjudged top-k documents to the judge qualified for each query (a job per
    judge over exactly those pairs; docs/runs.md, "Judge labels in the report")."""
    run = get_run(request, run_id)
    if not access.may_manage_run(request.user, run):
        raise PermissionDenied("only the set's reviewers ask a judge")
    outcome = services.unjudged_ask_judge(run=run, by=request.user)
    sentences = asked_sentences(
        outcome,
        version=run.golden_version.name,
        link=query_link(run.golden_version.golden_set.slug, outcome),
        escape=conditional_escape,
    )
    say(request, sentences)
    return redirect("evaluation:run_detail", run_id=run.pk)


def query_link(slug: str, outcome: services.UnjudgedQueued) -> Callable[[str], str]:
    """A query id of the set `slug` as a link to its review page (where a reviewer decides and sees its
    assignments)."""

    def link(query_id: str) -> str:
        pk = outcome.query_pks.get(query_id)
        if pk is None:
            return conditional_escape(query_id)
        url = reverse("labeling:query_review", kwargs={"slug": slug, "pk": pk})
        return format_html('<a href="{}">{}</a>', url, query_id)

    return link


def say(request: HttpRequest, sentences: Iterable[tuple[str, str]]) -> None:
    """Sentences of `evaluation.runs.action_words`, escaped there, as messages."""
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
    run_a, run_b = get_run(request, a_id), get_run(request, b_id)
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
        context["lists"] = compare_lists(context["rows"])
        context["values"] = {side: query_values(context["data"][side]["metrics"]) for side in ("a", "b")}
        context["changes"] = [
            {**d, "moved_text": moved, "css": css}
            for d in context["data"]["documents"]
            for moved, css in [movement(d["rank_a"], d["rank_b"])]
        ]
        context["query_overlap"] = query_overlap(context["data"], run_b)
    else:
        found = runs_overlap(run_a, run_b)
        overlaps = by_query(found)
        choices = compare_choices(run_a, run_b)
        with_rbo(choices, overlaps)
        picker = list_page(request, choices, picker_spec(choices))
        picker.items = [  # only the page's rows are formatted
            {**compare_choice_shown(c), "overlap": query_shown(overlaps.get(c["id"]))} for c in picker.items
        ]
        context["choices"] = picker
        context["overlap"] = summary_shown(found.to_dict() if found is not None else None)
    return render(request, "evaluation/runs/compare.html", context)
