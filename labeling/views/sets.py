"""Reviewer pages for a golden set: the set list, the set page, assigning, reassigning and reopening
assignments."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from labeling import selectors, services
from labeling.forms import ReassignForm
from labeling.inline_forms import InlineForms, Refused, kept_query
from labeling.lists import Filter, ListSpec, Sort, choices_of, contains, equals, list_page, ordered, where
from labeling.models import GoldenSet, Query
from labeling.roles import raters_of
from labeling.views.access import (
    get_assignment_for_reviewer,
    get_set_for_reviewer,
    require_reviewer,
)

# The golden sets a reviewer reviews (this page and the golden versions' set list).
SETS_SPEC = ListSpec(
    noun="golden sets",
    search=contains("name", "slug", "surface"),
    search_hint="name or surface",
    sorts=[
        Sort("name", "name", ordered("name", "slug")),
        Sort("queries", "most queries", ordered("-n_queries", "slug")),
        Sort("new", "newest first", ordered("-created", "-pk")),
    ],
    anchor="sets",
)


@require_GET
def set_list(request: HttpRequest) -> HttpResponse:
    require_reviewer(request)
    sets = list_page(request, selectors.golden_set_list(user=request.user), SETS_SPEC)
    return render(request, "labeling/set_list.html", {"sets": sets})


def _queries_spec(golden_set: GoldenSet) -> ListSpec:
    """The set page's query list: search by id and text, filter by tier, status, stratum, locale and
    assignment progress."""
    fields = golden_set.queries.order_by().values_list("stratum", "locale").distinct()
    strata, locales = {s for s, _ in fields}, {loc for _, loc in fields}
    return ListSpec(
        noun="queries",
        search=contains("external_id", "text"),
        search_hint="id or text",
        filters=[
            Filter("tier", "Tier", Query.Tier.choices, equals("tier")),
            Filter("status", "Status", Query.Status.choices, equals("status")),
            Filter("stratum", "Stratum", choices_of(strata, blank="(none)"), equals("stratum")),
            Filter("locale", "Locale", choices_of(locales, blank="(no locale)"), equals("locale")),
            Filter(
                "progress",
                "Assignments",
                [(key, label) for key, (label, _) in selectors.QUERY_PROGRESS.items()],
                where(lookup=lambda v: selectors.QUERY_PROGRESS[v][1]),
            ),
        ],
        sorts=[
            Sort("id", "id", ordered("external_id")),
            Sort("text", "query text", ordered("text", "external_id")),
            Sort("stratum", "stratum", ordered("stratum", "external_id")),
            Sort("tier", "tier", ordered("tier", "external_id")),
            Sort("pool", "largest pool", ordered("-n_pool", "external_id")),
            Sort("frozen", "fewest frozen labels", ordered("n_frozen", "external_id")),
            Sort("new", "newest", ordered("-created", "-pk")),
        ],
        anchor="queries",
    )


@require_GET
def set_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return _set_page(request, get_set_for_reviewer(request, slug))


def _set_page(request: HttpRequest, golden_set: GoldenSet, refused: Refused | None = None) -> HttpResponse:
    """The set's queries with their assignments, each with its reassignment's form; with `refused`, the
    reassignment sent back beside its assignment (labeling/inline_forms.py)."""
    rows = selectors.golden_set_queries(golden_set=golden_set)
    queries = list_page(request, rows, _queries_spec(golden_set))
    raters = list(raters_of(golden_set).order_by("username"))
    forms = InlineForms(refused, reassign=partial(ReassignForm, raters=raters))
    return forms.render(
        request,
        "labeling/set_detail.html",
        {
            "golden_set": golden_set,
            "n_proposals": selectors.proposals_pending_count(golden_set=golden_set),
            "queries": queries,
            "raters": raters,
        },
    )


@require_GET
def labels_summary(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's consolidated labels by method and the unresolved ones by who acts next: one line the set
    page loads after itself (consolidating every document of a large set takes seconds)."""
    golden_set = get_set_for_reviewer(request, slug)
    summary = selectors.labels_summary_get(golden_set=golden_set)
    template = (
        "labeling/_labels_summary.html"
        if request.headers.get("HX-Request")
        else "labeling/labels_summary.html"
    )
    return render(request, template, {"golden_set": golden_set, "summary": summary})


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
    raters = list(raters_of(golden_set).order_by("username"))
    form = ReassignForm(request.POST, key=assignment.pk, raters=raters, held_by=assignment.rater_id)
    if form.is_valid():
        try:
            new = services.assignment_reassign(assignment=assignment, rater=form.cleaned_data["rater"])
        except services.AssignmentError as exc:
            form.refuse([str(exc)])
        else:
            messages.success(request, f"Query {assignment.query.external_id} now goes to {new.rater}.")
            target = reverse("labeling:set_detail", kwargs={"slug": golden_set.slug})
            return HttpResponseRedirect(kept_query(request, target), status=303)
    return _set_page(request, golden_set, Refused(form, "Not reassigned"))


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
