"""The reviewer's side of side-by-side studies (docs/sxs.md): a set's studies and its "a passed study
before a baseline" setting, creating a study, a study's page (progress, verdict, results, closing and
reopening it, and their record) and its answers as CSV and JSONL.

Who: those who review the study's golden set (`labeling.roles`, read through `reviewed_filter`);
everyone else gets 404, as for runs (evaluation.runs.access).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.inputs import id_number
from assay.overlap import summarize
from assay.sxs import REASON_LABELS
from evaluation.runs import access
from evaluation.runs.models import EvaluationRun
from evaluation.runs.overlap_page import query_shown, summary_shown
from evaluation.runs.views.access_helpers import settled
from evaluation.studies.access import get_pending, get_study, pending_for, studies_for, study_progress
from evaluation.studies.forms import StudyForm, form_expectation
from evaluation.studies.models import PendingStudy, StudySetting, SxsStudy
from evaluation.studies.services import StudyError, study_analysis, study_create, study_setting_set
from evaluation.studies.services.close import study_close, study_reopen
from evaluation.studies.services.export import study_export_csv, study_export_jsonl
from evaluation.studies.services.pending import pending_resolve, study_on_targets
from evaluation.studies.services.planning import study_created_expectation
from labeling.forms import problems_to_form
from labeling.selectors.progress import poll_ms


@require_GET
def study_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access.get_golden_set(request.user, slug)
    studies = (
        studies_for(request.user)
        .filter(golden_set=golden_set)
        .annotate(n_tasks=Count("tasks"), n_done=Count("tasks", filter=Q(tasks__answered_at__isnull=False)))
        .order_by("-created", "-id")
    )
    for study in studies:
        study_analysis(study)  # the verdict as the answers stand (and as this version's rule says)
    setting = StudySetting.objects.filter(golden_set=golden_set).first()
    # Studies asked for on two targets: resolved as the list is read (a run may have ended meanwhile).
    pending = [
        pending_resolve(p) if p.status == PendingStudy.Status.WAITING else p
        for p in pending_for(request.user)
        .filter(golden_set=golden_set)
        .exclude(status=PendingStudy.Status.CREATED)
    ]
    return render(
        request,
        "evaluation/studies/study_list.html",
        {
            "golden_set": golden_set,
            "studies": studies,
            "pending": [p for p in pending if p.status != PendingStudy.Status.CREATED],
            "require": bool(setting and setting.require_passed_study),
        },
    )


@require_POST
def study_setting(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access.get_golden_set(request.user, slug)
    require = request.POST.get("require_passed_study") == "on"
    try:
        study_setting_set(golden_set=golden_set, require_passed_study=require, by=request.user)
    except StudyError as exc:
        for problem in exc.problems:
            messages.error(request, problem)
    else:
        messages.success(
            request,
            "A run now needs a passed study before it becomes the baseline."
            if require
            else "A run no longer needs a passed study to become the baseline.",
        )
    return redirect("evaluation:study_list", slug=golden_set.slug)


@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = access.get_golden_set(request.user, slug)
    initial = {k: request.GET[k] for k in ("run_a", "run_b") if id_number(request.GET.get(k, "")) is not None}
    form = StudyForm(request.POST or None, golden_set=golden_set, user=request.user, initial=initial)
    status = 200
    if request.method == "POST":
        if form.is_valid() and form.on_targets:
            try:
                pending = study_on_targets(
                    golden_set=golden_set,
                    target_a=form.cleaned_data["target_a"],
                    target_b=form.cleaned_data["target_b"],
                    golden_version=form.cleaned_data["golden_version"],
                    raters=form.cleaned_data["raters"],
                    values=form.values(),
                    by=request.user,
                    trigger=EvaluationRun.Trigger.WEB,
                )
            except StudyError as exc:
                problems_to_form(form, exc.problems, StudyForm.PROBLEM_FIELDS)
            else:
                messages.success(
                    request,
                    f"Runs {pending.run_a_id} and {pending.run_b_id} started: the study is made when both "
                    "finish.",
                )
                return redirect("evaluation:study_pending", pk=pending.pk)
        elif form.is_valid():
            try:
                study = study_create(spec=form.spec(), by=request.user)
            except StudyError as exc:
                problems_to_form(form, exc.problems, StudyForm.PROBLEM_FIELDS)
            else:
                expectation = study_created_expectation(study)
                collect = f"{study.tasks.count()} answers to collect"
                messages.success(request, f"Study {study.pk} created: {collect}. {expectation.text}.")
                if expectation.warn:
                    messages.warning(request, f"{expectation.warning[0].upper()}{expectation.warning[1:]}.")
                return redirect("evaluation:study_detail", pk=study.pk)
        status = 400
    expectation, sized = form_expectation(golden_set, form.data or form.initial)
    context = {"golden_set": golden_set, "form": form, "expectation": expectation, "sized": sized}
    return render(request, "evaluation/studies/study_new.html", context, status=status)


@require_GET
def study_new_expectation(request: HttpRequest, slug: str) -> HttpResponse:
    """The New-study form's line on the interval its size will likely give (htmx, as the size or the rule
    is typed): docs/sxs.md, "How wide the interval will likely be"."""
    golden_set = access.get_golden_set(request.user, slug)
    expectation, sized = form_expectation(golden_set, request.GET)
    context = {"golden_set": golden_set, "expectation": expectation, "sized": sized}
    return render(request, "evaluation/studies/_study_expectation.html", context)


def _pending_context(pending: PendingStudy) -> dict[str, Any]:
    runs = [("A (the baseline)", pending.run_a), ("B (the candidate)", pending.run_b)]
    return {"pending": pending, "runs": runs, "poll_ms": poll_ms(pending.created)}


@require_GET
def study_pending(request: HttpRequest, pk: int) -> HttpResponse:
    """A study asked for on two targets: its runs' progress while they search, its reason when it failed,
    and the study itself (a redirect) once both runs have finished."""
    pending = pending_resolve(get_pending(request.user, pk))
    if pending.study_id is not None:
        return redirect("evaluation:study_detail", pk=pending.study_id)
    return render(request, "evaluation/studies/study_pending.html", _pending_context(pending))


@require_GET
def study_pending_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The pending page's status and runs, polled while it waits (htmx). Once it is settled (the study
    made, or failed) the page reloads itself (HX-Refresh): to the study, or to the reason."""
    pending = pending_resolve(get_pending(request.user, pk))
    response = render(request, "evaluation/studies/_pending_status.html", _pending_context(pending))
    return settled(request, response, pending.status != PendingStudy.Status.WAITING)


@require_GET
def study_pending_row(request: HttpRequest, pk: int) -> HttpResponse:
    """One row of a set's "Studies on targets", polled while it waits (htmx swaps the row)."""
    pending = pending_resolve(get_pending(request.user, pk))
    return render(
        request, "evaluation/studies/_pending_row.html", {"p": pending, "poll_ms": poll_ms(pending.created)}
    )


def study_overlap(study: SxsStudy) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """A study's two lists as its raters saw them (each chosen query's top `shown` of both runs, the
    identical ones not asked included): the means (`summary_shown`, seeded by the study) and each query's
    row (id, text, `query_shown`), in the study's order (the overlap pages' wording:
    `evaluation.runs.overlap_page`)."""
    rows = list(study.queries.order_by("id").values_list("query_id", "text", "cards_a", "cards_b"))
    found = summarize(
        [(qid, [c["id"] for c in a], [c["id"] for c in b]) for qid, _, a, b in rows],
        k=study.shown,
        seed=study.seed,
    )
    each = dict(found.per_query)
    shown_rows = [{"id": qid, "text": text, "overlap": query_shown(each[qid])} for qid, text, _, _ in rows]
    return (summary_shown(found.to_dict()) if rows else None), shown_rows


def _reason_rows(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    reasons = analysis.get("reasons") or {}
    tags = sorted(set(reasons.get("baseline", {})) | set(reasons.get("candidate", {})))
    return [
        {
            "tag": REASON_LABELS.get(tag, tag),
            "baseline": reasons.get("baseline", {}).get(tag, []),
            "candidate": reasons.get("candidate", {}).get(tag, []),
        }
        for tag in tags
    ]


@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_study(request.user, pk)
    analysis = study_analysis(study)
    texts = dict(study.queries.values_list("query_id", "text"))
    return render(
        request,
        "evaluation/studies/study_detail.html",
        {
            "study": study,
            "progress": study_progress(study),
            "analysis": analysis,
            "strata": sorted((analysis.get("strata") or {}).items()),
            "reason_rows": _reason_rows(analysis),
            "texts": texts,
            "identical": study.queries.filter(identical=True).count(),
            "asked": study.queries.filter(identical=False).count(),
            "events": study.events.select_related("by", "baseline__target", "baseline__run__target").defer(
                "baseline__run__report", "baseline__run__gate", "baseline__run__key_map"
            ),
            **dict(zip(("overlap", "overlap_rows"), study_overlap(study), strict=True)),
        },
    )


def _study_act(request: HttpRequest, pk: int, act: Any, done: str) -> HttpResponse:
    """A reviewer's act on the study (`study_close`, `study_reopen`) with the form's reason; `done` is
    said on success (with `{pk}` and `{verdict}`), each refusal's words otherwise."""
    study = get_study(request.user, pk)
    try:
        after = act(study=study, by=request.user, why=request.POST.get("why", ""))
    except StudyError as exc:
        for problem in exc.problems:
            messages.error(request, problem)
    else:
        messages.success(request, done.format(pk=after.pk, verdict=after.verdict))
    return redirect("evaluation:study_detail", pk=study.pk)


@require_POST
def study_close_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Close the study: its verdict read now and frozen, no answer or undo taken after."""
    done = "Study {pk} is closed: its verdict ({verdict}) is frozen, and no answer or undo is taken any more."
    return _study_act(request, pk, study_close, done)


@require_POST
def study_reopen_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Reopen the study, with a reason: answers are taken again and its verdict follows them."""
    done = "Study {pk} is open again: answers and undos are taken, and its verdict follows."
    return _study_act(request, pk, study_reopen, done)


def _download(study: SxsStudy, text: str, content_type: str, extension: str) -> HttpResponse:
    response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-answers.{extension}"'
    return response


@require_GET
def study_answers_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_study(request.user, pk)
    return _download(study, study_export_csv(study), "text/csv", "csv")


@require_GET
def study_answers_jsonl(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_study(request.user, pk)
    return _download(study, study_export_jsonl(study), "application/x-ndjson", "jsonl")
