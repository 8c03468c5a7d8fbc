"""Reviewer pages for agreement, disputes, proposals, adjudication, tier moves, retirement, a query's pool
and its gold items (docs/agreement.md, "In the app"). Their small forms, refused, answer with the page they
were sent from (labeling/inline_forms.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from assay.display import counted
from assay.inputs import id_number
from labeling import selectors, services
from labeling.forms import (
    AdjudicationForm,
    GoldForm,
    ProposalDecisionForm,
    QueryProposalsForm,
    RetireForm,
    ThresholdsForm,
    TierMoveForm,
    problems_to_form,
)
from labeling.inline_forms import InlineForms, Refused, kept_query
from labeling.lists import Filter, ListSpec, Sort, choices_of, contains, equals, list_page, ordered, where
from labeling.models import Document, GoldenSet, LabelProposal, Query
from labeling.views.access import back, get_document_of_query, get_query_for_reviewer, get_set_for_reviewer


@require_GET
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    return _agreement_page(request, get_set_for_reviewer(request, slug))


def _agreement_page(
    request: HttpRequest, golden_set: GoldenSet, thresholds_form: ThresholdsForm | None = None
) -> HttpResponse:
    """The agreement page; with `thresholds_form`, the thresholds as sent, each mistake beside its field
    and all of them at the top of the form (400)."""
    dashboard = selectors.agreement_dashboard_get(golden_set=golden_set)
    return render(
        request,
        "labeling/agreement.html",
        {
            "golden_set": golden_set,
            "d": dashboard,
            "thresholds_form": thresholds_form or ThresholdsForm(initial=dashboard.thresholds),
            "scale": list(golden_set.rubric.scale),
            "rounds": selectors.calibration_round_list(golden_set=golden_set),
        },
        status=200 if thresholds_form is None else 400,
    )


@require_POST
def thresholds(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    target = reverse("labeling:agreement", kwargs={"slug": slug})
    form = ThresholdsForm(request.POST)
    if not form.is_valid():
        return _agreement_page(request, golden_set, form)
    try:
        services.golden_set_thresholds_set(golden_set=golden_set, thresholds=form.cleaned_data)
    except services.ReviewError as exc:
        problems_to_form(form, str(exc).split("; "), {})
        return _agreement_page(request, golden_set, form)
    messages.success(
        request,
        "Thresholds saved: the dispute thresholds apply to the checks from now on, the reading thresholds to"
        " every reading at once.",
    )
    return back(target)


QUEUE_PAGE = 25  # rows per page of each of the review queue's lists


def _documents_spec(prefix: str, anchor: str, noun: str, one: str, strata: set[str]) -> ListSpec:
    """The review queue's document lists: what a reviewer decides, what a third rater grades."""
    return ListSpec(
        noun=noun,
        search=contains("query__external_id", "query__text", "document__doc_id", "document__title"),
        search_hint="query or document",
        filters=[
            Filter(
                f"{prefix}stratum", "Stratum", choices_of(strata, blank="(none)"), equals("query__stratum")
            )
        ],
        sorts=[
            Sort("query", "query id", ordered("query__external_id", "document__doc_id")),
            Sort("document", "document id", ordered("document__doc_id", "query__external_id")),
            Sort("reason", "reason", ordered("reason", "query__external_id", "document__doc_id")),
        ],
        per_page=QUEUE_PAGE,
        prefix=prefix,
        anchor=anchor,
        one=one,
    )


def _queue_lists(request: HttpRequest, golden_set: GoldenSet, queue: selectors.ReviewQueue) -> dict[str, Any]:
    """The review queue's four lists, each searched, filtered, sorted and paged on its own."""
    strata = set(golden_set.queries.order_by().values_list("stratum", flat=True).distinct())
    return {
        "disputed": list_page(
            request,
            queue.disputed,
            ListSpec(
                noun="disputed queries",
                search=contains("query__external_id", "query__text"),
                search_hint="query id or text",
                filters=[
                    Filter("d-tier", "Tier", Query.Tier.choices, equals("query__tier")),
                    Filter(
                        "d-stratum", "Stratum", choices_of(strata, blank="(none)"), equals("query__stratum")
                    ),
                ],
                sorts=[
                    Sort("query", "query id", ordered("query__external_id")),
                    Sort(
                        "waiting",
                        "most documents to decide",
                        ordered("-needs_reviewer", "query__external_id"),
                    ),
                    Sort("checked", "newest dispute decision", ordered("-check__at", "query__external_id")),
                ],
                per_page=QUEUE_PAGE,
                prefix="d-",
                anchor="disputed-queries",
            ),
        ),
        "needs_reviewer": list_page(
            request,
            queue.needs_reviewer,
            _documents_spec("r-", "needs-reviewer", "documents to decide", "document to decide", strata),
        ),
        "awaiting_third": list_page(
            request,
            queue.awaiting_third,
            _documents_spec(
                "t-", "awaiting-third", "documents with a third rater", "document with a third rater", strata
            ),
        ),
        "shadow": list_page(
            request,
            queue.shadow,
            ListSpec(
                noun="shadow queries",
                search=contains("external_id", "text", "quarantine_reason"),
                search_hint="query or reason",
                filters=[
                    Filter("s-stratum", "Stratum", choices_of(strata, blank="(none)"), equals("stratum"))
                ],
                sorts=[
                    Sort("query", "query id", ordered("external_id")),
                    Sort("text", "text", ordered("text")),
                ],
                per_page=QUEUE_PAGE,
                prefix="s-",
                anchor="shadow",
            ),
        ),
    }


@require_GET
def disputes(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    queue = selectors.review_queue_get(golden_set=golden_set)
    return render(
        request,
        "labeling/disputes.html",
        {"golden_set": golden_set, **_queue_lists(request, golden_set, queue)},
    )


@require_POST
def disputes_check(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    n = services.disputes_check_all(golden_set=golden_set)
    messages.success(request, f"Checked every finished dual-labeled query: {counted(n, 'new decision')}.")
    return back(reverse("labeling:disputes", kwargs={"slug": slug}))


@require_GET
def proposals(request: HttpRequest, slug: str) -> HttpResponse:
    return _proposals_page(request, get_set_for_reviewer(request, slug))


def _proposals_page(
    request: HttpRequest, golden_set: GoldenSet, refused: Refused | None = None
) -> HttpResponse:
    """The pending proposals, each with its decision's form, and one form per query with several; with
    `refused`, the decision sent back beside its form (labeling/inline_forms.py)."""
    forms = InlineForms(refused, proposal=ProposalDecisionForm, proposals=QueryProposalsForm)
    return forms.render(
        request,
        "labeling/proposals.html",
        {
            "golden_set": golden_set,
            "page": selectors.proposals_page_get(golden_set=golden_set),
        },
    )


def _decision_post(
    request: HttpRequest,
    golden_set: GoldenSet,
    form: ProposalDecisionForm,
    decide: Callable[[bool, str], str],
) -> HttpResponse:
    """Accept or reject (the form's decision) with a rationale through `decide`, which returns what
    happened in words; a refusal is shown beside the form it came from, and nothing changes."""
    if form.is_valid():
        try:
            done = decide(form.cleaned_data["decision"] == "accept", form.cleaned_data["rationale"])
        except services.ReviewError as exc:
            form.refuse([str(exc)])
        else:
            messages.success(request, done)
            return back(reverse("labeling:proposals", kwargs={"slug": golden_set.slug}))
    return _proposals_page(request, golden_set, Refused(form, "Nothing decided"))


@require_POST
def proposal_decide(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    golden_set = get_set_for_reviewer(request, slug)
    proposal = get_object_or_404(
        LabelProposal.objects.select_related("query", "document"), pk=pk, query__golden_set=golden_set
    )

    def decide(accept: bool, rationale: str) -> str:
        services.proposal_decide(proposal=proposal, by=request.user, accept=accept, rationale=rationale)  # type: ignore[arg-type]
        what = (
            f"accepted, final grade {proposal.to_grade}"
            if accept
            else f"rejected, the label stays {proposal.from_grade}"
        )
        return f"{proposal.query.external_id} / {proposal.document.doc_id}: {what}."

    return _decision_post(request, golden_set, ProposalDecisionForm(request.POST, key=proposal.pk), decide)


@require_POST
def proposals_decide_query(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = get_query_for_reviewer(request, slug, pk)

    def decide(accept: bool, rationale: str) -> str:
        n = services.proposals_decide_query(query=query, by=request.user, accept=accept, rationale=rationale)  # type: ignore[arg-type]
        return f"{query.external_id}: {counted(n, 'proposal')} {'accepted' if accept else 'rejected'}."

    return _decision_post(request, query.golden_set, QueryProposalsForm(request.POST, key=query.pk), decide)


ADJUDICATION_PAGE = 20  # documents per page of the adjudication page

ADJUDICATION_SPEC = ListSpec(
    noun="documents",
    search=contains("document__doc_id", "document__title"),
    search_hint="document id or title",
    filters=[
        Filter(
            "state",
            "Documents",
            list(selectors.ADJUDICATION_STATES.items()),
            where(lambda row, value: row.state == value),
        )
    ],
    sorts=[
        Sort("disputed", "disputed first", lambda rows: sorted(rows, key=selectors.adjudication_order)),
        Sort("spread", "widest disagreement", ordered("-spread", "document__doc_id")),
        Sort("document", "document id", ordered("document__doc_id")),
    ],
    per_page=ADJUDICATION_PAGE,
    anchor="documents",
)


@require_GET
def adjudicate(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    return _adjudicate_page(request, get_query_for_reviewer(request, slug, pk))


def _adjudicate_page(request: HttpRequest, query: Query, refused: Refused | None = None) -> HttpResponse:
    """One query's judged documents, the disputed ones first and open, the agreed ones folded; the
    verdict, the tier move ("Return to core") and the next disputed query at the top. With `refused`, the
    form sent back beside where it was (labeling/inline_forms.py)."""
    page = selectors.adjudication_page_get(query=query)
    documents = list_page(request, page.rows, ADJUDICATION_SPEC)
    scale = list(query.golden_set.rubric.scale)
    forms = InlineForms(
        refused,
        adjudication=partial(AdjudicationForm, scale=scale),
        tier=TierMoveForm,
        retire=RetireForm,
    )
    return forms.render(
        request,
        "labeling/adjudicate.html",
        {
            "golden_set": query.golden_set,
            "query": query,
            "page": page,
            "documents": documents,
            "disputed_rows": [r for r in documents.items if r.disputed],
            "agreed_rows": [r for r in documents.items if not r.disputed],
            "to_decide": sum(1 for r in page.rows if r.needs_reviewer),
            "next_dispute": selectors.dispute_next(golden_set=query.golden_set, after=query),
            "scale": scale,
            "other_tier": "core" if query.tier != "core" else "shadow",
        },
    )


def _adjudicate_url(request: HttpRequest, query: Query) -> str:
    """The adjudication page, on the page of its list the form was sent from."""
    url = reverse("labeling:adjudicate", kwargs={"slug": query.golden_set.slug, "pk": query.pk})
    return kept_query(request, url)


def _posted_document(request: HttpRequest, query: Query) -> Document:
    """The document a form is about (its hidden `document`): one of the query's, else 404."""
    return get_document_of_query(query, id_number(request.POST.get("document")) or 0)


@require_POST
def adjudication_add(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = get_query_for_reviewer(request, slug, pk)
    document = _posted_document(request, query)
    form = AdjudicationForm(request.POST, key=document.pk, scale=list(query.golden_set.rubric.scale))
    if form.is_valid():
        try:
            adjudication = services.adjudication_create(
                query=query,
                document=document,
                reviewer=request.user,  # type: ignore[arg-type]
                grade=form.cleaned_data["grade"],
                rationale=form.cleaned_data["rationale"],
            )
        except services.ReviewError as exc:
            form.refuse([str(exc)])
        else:
            messages.success(request, f"{document.doc_id}: final grade {adjudication.grade} (adjudicated).")
            # Back to the top of the page, where the message, what is left to decide and "Next dispute" are.
            return back(_adjudicate_url(request, query))
    return _adjudicate_page(request, query, Refused(form, "Not saved"))


@require_POST
def tier_move(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """A tier move from the adjudication page: "Return to core" (key `core`) or "Move to another tier"."""
    query = get_query_for_reviewer(request, slug, pk)
    form = TierMoveForm(request.POST, key="core" if request.POST.get("return") else "")
    before = query.tier
    if form.is_valid():
        try:
            move = services.query_move_tier(
                query=query,
                tier=form.cleaned_data["tier"],
                by=request.user,  # type: ignore[arg-type]
                reason=form.cleaned_data["reason"],
            )
        except services.ReviewError as exc:
            form.refuse([str(exc)])
        else:
            _moved(request, query, before, move)
            return back(_adjudicate_url(request, query))
    return _adjudicate_page(request, query, Refused(form, "Not moved"))


def _moved(request: HttpRequest, query: Query, before: str, move: Any) -> None:
    """What a tier move did, in the messages: moved or already there, and what a freeze will stop at."""
    if move is None:
        messages.info(request, f"Query {query.external_id} is already in {before}.")
        return
    messages.success(request, f"Query {query.external_id} moved from {move.from_tier} to {move.to_tier}.")
    if move.to_tier == Query.Tier.CORE:
        waiting = selectors.labels_consolidated(golden_set=query.golden_set, query_ids=[query.pk]).unresolved
        if waiting:
            messages.warning(
                request,
                f"{len(waiting)} of its documents have no final grade yet: a freeze will stop at them.",
            )


@require_POST
def retire(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = get_query_for_reviewer(request, slug, pk)
    form = RetireForm(request.POST)
    if form.is_valid():
        try:
            services.query_retire(query=query, by=request.user, reason=form.cleaned_data["reason"])  # type: ignore[arg-type]
        except services.ReviewError as exc:
            form.refuse([str(exc)])
        else:
            messages.success(
                request, f"Query {query.external_id} is retired: later golden versions leave it out."
            )
            return back(reverse("labeling:set_detail", kwargs={"slug": slug}))
    return _adjudicate_page(request, query, Refused(form, "Not retired"))


@require_GET
def query_review(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    return _query_review_page(request, get_query_for_reviewer(request, slug, pk))


def _query_review_page(request: HttpRequest, query: Query, refused: Refused | None = None) -> HttpResponse:
    """Everything about one query: each document of its pool with every rater's grade, the final label and
    its gold item's form; with `refused`, the gold item's form sent back beside its document."""
    scale = list(query.golden_set.rubric.scale)
    forms = InlineForms(refused, gold=partial(GoldForm, scale=scale))
    return forms.render(
        request,
        "labeling/query_review.html",
        {
            "golden_set": query.golden_set,
            "query": query,
            "rows": selectors.query_review_get(query=query),
            "scale": scale,
        },
    )


@require_POST
def gold(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = get_query_for_reviewer(request, slug, pk)
    target = reverse("labeling:query_review", kwargs={"slug": slug, "pk": pk})
    document = _posted_document(request, query)
    form = GoldForm(request.POST, key=document.pk, scale=list(query.golden_set.rubric.scale))
    if form.is_valid() and form.cleaned_data["unmark"]:
        if services.gold_unmark(query=query, document=document):
            messages.success(request, f"{document.doc_id} is no longer a gold item.")
        else:
            messages.info(request, f"{document.doc_id} was not a gold item.")
        return back(target)
    if form.is_valid():
        try:
            item = services.gold_mark(
                query=query,
                document=document,
                grade=form.cleaned_data["grade"],
                by=request.user,  # type: ignore[arg-type]
            )
        except services.ReviewError as exc:
            form.refuse([str(exc)])
        else:
            messages.success(
                request,
                f"{document.doc_id} is a gold item (known grade {item.grade}): raters who do not grade this"
                " query meet it in their queues once the query has its first rater.",
            )
            return back(target)
    return _query_review_page(request, query, Refused(form, "Gold item not changed"))
