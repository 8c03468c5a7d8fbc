"""Reviewer pages for a golden set: the set list, the set page, a query's pool, assigning, reassigning
and reopening assignments."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from labeling import selectors, services
from labeling.forms import ReassignForm
from labeling.views.access import (
    get_assignment_for_reviewer,
    get_query_for_reviewer,
    get_set_for_reviewer,
    require_reviewer,
)


@require_GET
def set_list(request: HttpRequest) -> HttpResponse:
    require_reviewer(request)
    return render(request, "labeling/set_list.html", {"sets": selectors.golden_set_list(user=request.user)})


@require_GET
def set_detail(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    queries = list(selectors.golden_set_queries(golden_set=golden_set))
    return render(
        request,
        "labeling/set_detail.html",
        {
            "golden_set": golden_set,
            "summary": selectors.labels_summary_get(golden_set=golden_set),
            "n_proposals": selectors.proposals_pending_count(golden_set=golden_set),
            "queries": queries,
            "raters": golden_set.raters.order_by("username"),
            "reassign_form": ReassignForm(raters=golden_set.raters.order_by("username")),
        },
    )


@require_GET
def query_review(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = get_query_for_reviewer(request, slug, pk)
    rubric = query.golden_set.rubric
    return render(
        request,
        "labeling/query_review.html",
        {
            "golden_set": query.golden_set,
            "query": query,
            "rows": selectors.query_review_get(query=query),
            "scale": list(rubric.scale),
        },
    )


@require_POST
def assign(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    result = services.assignments_create(golden_set=golden_set)
    messages.success(request, f"Assigned {result.summary()}.")
    for note in result.notes[:20]:
        messages.warning(request, note)
    return redirect("labeling:set_detail", slug=slug)


@require_POST
def reassign(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = get_assignment_for_reviewer(request, pk)
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


@require_POST
def reopen(request: HttpRequest, pk: int) -> HttpResponse:
    """A reviewer gives a done query back to its rater."""
    assignment = get_assignment_for_reviewer(request, pk)
    target = reverse("labeling:set_detail", kwargs={"slug": assignment.query.golden_set.slug})
    try:
        services.assignment_reopen(assignment=assignment, by=request.user)  # type: ignore[arg-type]
    except services.ReopenError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(target, status=303)
    messages.success(
        request, f"Query {assignment.query.external_id} is open again for {assignment.rater.username}."
    )
    return HttpResponseRedirect(target, status=303)
