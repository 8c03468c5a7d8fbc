"""Access checks for the labeling pages, one helper per object kind, and the redirect after a POST.

Login is required by the middleware; these add the role and ownership checks. Who reviews a set is the
one rule of `labeling.roles` (the reviewer role and the set's list, or admin), which golden_io's and
evaluation's pages and the API read too. A reviewer page answers 404 to everyone else (as the
golden-version pages do), so nothing about a set is confirmed to them.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404

from labeling.models import Assignment, CalibrationRound, Document, GoldenSet, Judge, Query
from labeling.roles import is_admin, is_rater, is_reviewer, reviewed_filter, reviewed_sets
from labeling.selectors import rater_assignments


def require_rater(request: HttpRequest) -> None:
    if not (is_rater(request.user) or is_admin(request.user)):
        raise PermissionDenied("grading is for raters")


def require_reviewer(request: HttpRequest) -> None:
    """Reviewer pages answer 404 to everyone else, as the golden-version pages do: a rater or an
    outsider learns nothing about which sets exist."""
    if not is_reviewer(request.user):
        raise Http404("no such page")


def get_assignment_for_rater(request: HttpRequest, pk: int) -> Assignment:
    """The request user's own assignment of a set they rate (`labeling.roles.rates`: the rater role and
    the set's raters list, read now); anyone else's, or one of a set they were taken off, is a 404 (its
    existence is not confirmed)."""
    assignment = (
        rater_assignments(request.user).select_related("query__golden_set__rubric").filter(pk=pk).first()
    )
    if assignment is None:
        raise Http404("no such assignment")
    return assignment


def get_set_for_reviewer(request: HttpRequest, slug: str) -> GoldenSet:
    """A set the user reviews (`labeling.roles.reviewed_sets`), else 404."""
    require_reviewer(request)
    return get_object_or_404(reviewed_sets(request.user).select_related("rubric"), slug=slug)


def get_query_for_reviewer(request: HttpRequest, slug: str, pk: int) -> Query:
    golden_set = get_set_for_reviewer(request, slug)
    return get_object_or_404(Query.objects.select_related("golden_set__rubric"), pk=pk, golden_set=golden_set)


def get_assignment_for_reviewer(request: HttpRequest, pk: int) -> Assignment:
    require_reviewer(request)
    assignments = Assignment.objects.select_related("query__golden_set", "rater").filter(
        reviewed_filter(request.user, "query__golden_set")
    )
    return get_object_or_404(assignments, pk=pk)


def back(url: str) -> HttpResponseRedirect:
    """After a POST: see the page again (303, so a reload does not post twice)."""
    return HttpResponseRedirect(url, status=303)


def get_document_of_query(query: Query, pk: int) -> Document:
    """A document of the query's set that is in the query's pool or judged for it; else 404."""
    found = (
        Document.objects.filter(pk=pk, golden_set=query.golden_set)
        .filter(Q(candidates__query=query) | Q(judgments__assignment__query=query))
        .distinct()
        .first()
    )
    if found is None:
        raise Http404("no such document for this query")
    return found


def get_round_for_reviewer(request: HttpRequest, slug: str, pk: int) -> CalibrationRound:
    golden_set = get_set_for_reviewer(request, slug)
    return get_object_or_404(
        CalibrationRound.objects.select_related("golden_set__rubric", "created_by", "promoted_by"),
        pk=pk,
        golden_set=golden_set,
    )


def get_judge_for_reviewer(request: HttpRequest, slug: str, pk: int) -> Judge:
    """A judge of a set the user reviews (admins: any set), looked up within that set: another set's judge
    is a 404 even to its own reviewers under this set's address."""
    golden_set = get_set_for_reviewer(request, slug)
    return get_object_or_404(
        Judge.objects.select_related("golden_set", "rubric"), pk=pk, golden_set=golden_set
    )
