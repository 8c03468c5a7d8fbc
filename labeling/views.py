"""Rater and reviewer pages. Thin: check access with one helper per object kind, call one service or
selector, render. Login is required by the middleware; these add the role and ownership checks."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labeling import selectors, services
from labeling.forms import (
    DocumentsUploadForm,
    GoldenUploadForm,
    QueryLogUploadForm,
    ReassignForm,
    RunUploadForm,
)
from labeling.models import Assignment, GoldenSet, Query
from labeling.problems import ImportReport
from labeling.roles import is_admin, is_rater, is_reviewer

# --- access helpers: one per object kind ---------------------------------------------------------


def _require_rater(request: HttpRequest) -> None:
    if not (is_rater(request.user) or is_admin(request.user)):
        raise PermissionDenied("grading is for raters")


def _require_reviewer(request: HttpRequest) -> None:
    if not is_reviewer(request.user):
        raise PermissionDenied("this page is for reviewers")


def _get_assignment_for_rater(request: HttpRequest, pk: int) -> Assignment:
    """The request user's own assignment; anyone else's is a 404 (its existence is not confirmed)."""
    assignment = (
        Assignment.objects.select_related("query__golden_set__rubric")
        .filter(pk=pk, rater_id=request.user.pk)
        .first()
    )
    if assignment is None:
        raise Http404("no such assignment")
    return assignment


def _get_set_for_reviewer(request: HttpRequest, slug: str) -> GoldenSet:
    _require_reviewer(request)
    sets = GoldenSet.objects.select_related("rubric")
    if not is_admin(request.user):
        sets = sets.filter(reviewers=request.user.pk)
    return get_object_or_404(sets, slug=slug)


def _get_query_for_reviewer(request: HttpRequest, slug: str, pk: int) -> Query:
    golden_set = _get_set_for_reviewer(request, slug)
    return get_object_or_404(Query.objects.select_related("golden_set__rubric"), pk=pk, golden_set=golden_set)


def _get_assignment_for_reviewer(request: HttpRequest, pk: int) -> Assignment:
    _require_reviewer(request)
    assignments = Assignment.objects.select_related("query__golden_set", "rater")
    if not is_admin(request.user):
        assignments = assignments.filter(query__golden_set__reviewers=request.user.pk)
    return get_object_or_404(assignments, pk=pk)


# --- raters -------------------------------------------------------------------------------------


@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    _require_rater(request)
    assignments = list(selectors.assignment_list(rater=request.user))
    open_ = [a for a in assignments if a.status == Assignment.Status.OPEN]
    return render(
        request,
        "labeling/queue.html",
        {"assignments": assignments, "n_open": len(open_), "n_done": len(assignments) - len(open_)},
    )


@require_GET
def queue_next(request: HttpRequest) -> HttpResponse:
    """Where `n` on the grading page goes: the next open assignment, else back to the queue."""
    _require_rater(request)
    after = request.GET.get("after", "")
    nxt = selectors.assignment_next(rater=request.user, after=int(after) if after.isdigit() else None)
    if nxt is None:
        messages.info(request, "No open assignments left. Thank you!")
        return redirect("labeling:queue")
    return redirect("labeling:grade", pk=nxt.pk)


@require_GET
def grade(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = _get_assignment_for_rater(request, pk)
    if assignment.status == Assignment.Status.REASSIGNED:
        return render(
            request,
            "labeling/reassigned.html",
            {"assignment": assignment, "message": services.REASSIGNED_MESSAGE},
            status=409,
        )
    page = selectors.grading_page_get(assignment=assignment)
    rubric = assignment.query.golden_set.rubric
    return render(
        request,
        "labeling/grade.html",
        {
            "page": page,
            "assignment": assignment,
            "query": page.query,
            "rubric": rubric,
            "scale": list(rubric.scale),
            "filters": sorted(page.query.filters.items()),
        },
    )


def _json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": code, "message": message}, status=status)


@require_http_methods(["GET", "POST"])
def grades(request: HttpRequest, pk: int) -> JsonResponse:
    """GET: the rater's saved grades. POST JSON {candidate, grade, note?, time_spent_ms?}: save one grade.

    Statuses: 200 saved; 400 malformed body or off-scale grade; 403 missing CSRF token (middleware);
    404 not your assignment or a candidate outside it; 409 reassigned; 422 note required.
    """
    if request.method == "GET":
        assignment = _get_assignment_for_rater(request, pk)
        return JsonResponse(
            {"status": assignment.status, "grades": selectors.grades_get(assignment=assignment)}
        )
    # The service looks the assignment up itself, locked, and answers 404 for anyone else's.
    try:
        body = json.loads(request.body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _json_error(
            400, "bad_request", "the body must be JSON: {candidate, grade, note?, time_spent_ms?}"
        )
    problem = _grade_body_problem(body)
    if problem:
        return _json_error(400, "bad_request", problem)
    try:
        result = services.judgment_submit(
            assignment_id=pk,
            rater=request.user,  # type: ignore[arg-type]
            candidate_id=body["candidate"],
            grade=body["grade"],
            note=body.get("note") or "",
            time_spent_ms=body.get("time_spent_ms") or 0,
        )
    except services.GradingError as exc:
        return _json_error(exc.status, exc.code, exc.message)
    return JsonResponse(
        {
            "saved": True,
            "candidate": body["candidate"],
            "grade": result.grade,
            "note": result.note,
            "changed": result.changed,
            "graded": result.graded,
            "total": result.total,
            "status": result.status,
        }
    )


def _grade_body_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object: {candidate, grade, note?, time_spent_ms?}"
    for name in ("candidate", "grade"):
        value = body.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{name} must be an integer, got {value!r}"
    if not isinstance(body.get("note", ""), str | None):
        return "note must be text"
    spent = body.get("time_spent_ms", 0)
    if spent is not None and (not isinstance(spent, int) or isinstance(spent, bool) or spent < 0):
        return f"time_spent_ms must be a non-negative integer, got {spent!r}"
    return None


# --- reviewers ----------------------------------------------------------------------------------


@require_GET
def set_list(request: HttpRequest) -> HttpResponse:
    _require_reviewer(request)
    return render(request, "labeling/set_list.html", {"sets": selectors.golden_set_list(user=request.user)})


@require_GET
def set_detail(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    queries = list(selectors.golden_set_queries(golden_set=golden_set))
    return render(
        request,
        "labeling/set_detail.html",
        {
            "golden_set": golden_set,
            "queries": queries,
            "raters": golden_set.raters.order_by("username"),
            "reassign_form": ReassignForm(raters=golden_set.raters.order_by("username")),
        },
    )


@require_GET
def query_review(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
    return render(
        request,
        "labeling/query_review.html",
        {"golden_set": query.golden_set, "query": query, "rows": selectors.query_review_get(query=query)},
    )


IMPORT_FORMS: dict[str, Any] = {
    "golden": GoldenUploadForm,
    "documents": DocumentsUploadForm,
    "query-log": QueryLogUploadForm,
    "run": RunUploadForm,
}


def _import_forms(**bound: Any) -> dict[str, Any]:
    return {kind.replace("-", "_"): bound.get(kind) or form() for kind, form in IMPORT_FORMS.items()}


@require_GET
def import_page(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    return render(request, "labeling/import.html", {"golden_set": golden_set, "forms": _import_forms()})


@require_POST
def import_upload(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    if kind not in IMPORT_FORMS:
        raise Http404("no such import")
    form = IMPORT_FORMS[kind](request.POST, request.FILES)
    if not form.is_valid():
        context = {"golden_set": golden_set, "forms": _import_forms(**{kind: form})}
        return render(request, "labeling/import.html", context, status=400)
    upload = form.cleaned_data["file"]
    data, name = upload.read(), upload.name
    report: ImportReport
    if kind == "golden":
        report = services.golden_import(golden_set=golden_set, data=data, source=name)
    elif kind == "documents":
        report = services.documents_import(golden_set=golden_set, data=data, source=name)
    elif kind == "query-log":
        options = services.SamplingOptions(
            cap=form.cleaned_data["cap"],
            reserve_share=form.cleaned_data["reserve_share"],
            zero_hit_min_share=form.cleaned_data["zero_hit_min_share"],
            seed=form.cleaned_data["seed"],
        )
        report = services.query_log_import(golden_set=golden_set, data=data, source=name, options=options)
    else:
        report = services.pool_import_run(
            golden_set=golden_set,
            data=data,
            source=name,
            system=form.cleaned_data["system"],
            depth=form.cleaned_data["depth"],
        )
    return render(
        request,
        "labeling/import_report.html",
        {"golden_set": golden_set, "report": report},
        status=200 if report.ok else 400,
    )


@require_POST
def assign(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    result = services.assignments_create(golden_set=golden_set)
    messages.success(request, f"Assigned {result.primary} primary and {result.second} second assignment(s).")
    for note in result.notes[:20]:
        messages.warning(request, note)
    return redirect("labeling:set_detail", slug=slug)


@require_POST
def reassign(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = _get_assignment_for_reviewer(request, pk)
    golden_set = assignment.query.golden_set
    form = ReassignForm(request.POST, raters=golden_set.raters.all())
    target = reverse("labeling:set_detail", kwargs={"slug": golden_set.slug})
    if not form.is_valid():
        messages.error(request, "Choose one of the golden set's raters.")
        return HttpResponseRedirect(target, status=303)
    try:
        new = services.assignment_reassign(assignment=assignment, rater=form.cleaned_data["rater"])
    except services.AssignmentError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(target, status=303)
    messages.success(request, f"Query {assignment.query.external_id} now goes to {new.rater}.")
    return HttpResponseRedirect(target, status=303)
