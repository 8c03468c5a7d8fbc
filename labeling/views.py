"""Rater and reviewer pages. Thin: check access with one helper per object kind, call one service or
selector, render. Login is required by the middleware; these add the role and ownership checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.problems import ImportReport
from labeling import rounds, selectors, services
from labeling.forms import (
    AdjudicationForm,
    CalibrationRoundForm,
    DocumentsUploadForm,
    GoldenUploadForm,
    GoldForm,
    ProposalDecisionForm,
    QueryLogUploadForm,
    ReassignForm,
    RetireForm,
    RunUploadForm,
    ThresholdsForm,
    TierMoveForm,
    form_errors,
)
from labeling.models import Assignment, CalibrationRound, Document, GoldenSet, LabelProposal, Query
from labeling.roles import is_admin, is_rater, is_reviewer

# --- access helpers: one per object kind ---------------------------------------------------------


def _require_rater(request: HttpRequest) -> None:
    if not (is_rater(request.user) or is_admin(request.user)):
        raise PermissionDenied("grading is for raters")


def _require_reviewer(request: HttpRequest) -> None:
    """Reviewer pages answer 404 to everyone else, as the golden-version pages do: a rater or an
    outsider learns nothing about which sets exist."""
    if not is_reviewer(request.user):
        raise Http404("no such page")


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
    retired = assignment.query.status != Query.Status.ACTIVE
    if retired or assignment.status == Assignment.Status.REASSIGNED:
        return render(
            request,
            "labeling/reassigned.html",
            {
                "assignment": assignment,
                "retired": retired,
                "message": services.RETIRED_MESSAGE if retired else services.REASSIGNED_MESSAGE,
            },
            status=409,
        )
    page = selectors.grading_page_get(assignment=assignment)
    rubric = assignment.query.golden_set.rubric
    done = assignment.status == Assignment.Status.DONE
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
            "done": done,
            # Only once the rater has marked the query done: until then nothing here reads a label.
            "overturns": services.overturns_list(assignment=assignment) if done else [],
        },
    )


def _json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": code, "message": message}, status=status)


@require_http_methods(["GET", "POST"])
def grades(request: HttpRequest, pk: int) -> JsonResponse:
    """GET: the rater's saved grades. POST JSON {candidate, grade, note?, time_spent_ms?}: save one grade.

    Statuses: 200 saved; 400 malformed body or off-scale grade; 403 missing CSRF token (middleware);
    404 not your assignment or a candidate outside it; 409 reassigned, the query retired, or marked done
    (grades locked; a note on the saved grade still saves). Nothing here depends on earlier labels.
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


@require_POST
def done(request: HttpRequest, pk: int) -> JsonResponse:
    """Mark the query done (the `d` key): 200 with the grades that overturn a frozen label, each to get
    a note; 422 `incomplete` while a document is ungraded; 404/409 as for a grade."""
    try:
        result = services.assignment_done(assignment_id=pk, rater=request.user)  # type: ignore[arg-type]
    except services.GradingError as exc:
        return _json_error(exc.status, exc.code, exc.message)
    return JsonResponse(
        {
            "done": True,
            "status": result.status,
            "already": result.already,
            "overturns": [
                {"candidate": o.candidate_id, "title": o.title, "grade": o.grade, "note": o.note}
                for o in result.overturns
            ],
            "notes_missing": result.notes_missing,
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
            "summary": selectors.labels_summary_get(golden_set=golden_set),
            "n_proposals": selectors.proposals_pending_count(golden_set=golden_set),
            "queries": queries,
            "raters": golden_set.raters.order_by("username"),
            "reassign_form": ReassignForm(raters=golden_set.raters.order_by("username")),
        },
    )


@require_GET
def query_review(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
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
    messages.success(request, f"Assigned {result.summary()}.")
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


@require_POST
def reopen(request: HttpRequest, pk: int) -> HttpResponse:
    """A reviewer gives a done query back to its rater."""
    assignment = _get_assignment_for_reviewer(request, pk)
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


# --- agreement, disputes, adjudication (issue 4) --------------------------------------------------


def _back(url: str) -> HttpResponseRedirect:
    """After a POST: see the page again (303, so a reload does not post twice)."""
    return HttpResponseRedirect(url, status=303)


def _get_document_of_query(query: Query, pk: int) -> Document:
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


@require_GET
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    dashboard = selectors.agreement_dashboard_get(golden_set=golden_set)
    return render(
        request,
        "labeling/agreement.html",
        {
            "golden_set": golden_set,
            "d": dashboard,
            "thresholds_form": ThresholdsForm(initial=dashboard.thresholds),
            "scale": list(golden_set.rubric.scale),
            "rounds": rounds.calibration_round_list(golden_set=golden_set),
        },
    )


@require_POST
def thresholds(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    target = reverse("labeling:agreement", kwargs={"slug": slug})
    form = ThresholdsForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Thresholds not changed: {form_errors(form)}")
        return _back(target)
    try:
        services.golden_set_thresholds_set(golden_set=golden_set, thresholds=form.cleaned_data)
    except services.ReviewError as exc:
        messages.error(request, f"Thresholds not changed: {exc}")
        return _back(target)
    messages.success(request, "Dispute thresholds saved; they apply to the checks from now on.")
    return _back(target)


@require_GET
def disputes(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    return render(
        request,
        "labeling/disputes.html",
        {"golden_set": golden_set, "queue": selectors.review_queue_get(golden_set=golden_set)},
    )


@require_POST
def disputes_check(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    n = services.disputes_check_all(golden_set=golden_set)
    messages.success(request, f"Checked every finished dual-labeled query: {n} new decision(s).")
    return _back(reverse("labeling:disputes", kwargs={"slug": slug}))


@require_GET
def proposals(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
    return render(
        request,
        "labeling/proposals.html",
        {"golden_set": golden_set, "page": selectors.proposals_page_get(golden_set=golden_set)},
    )


def _proposals_url(slug: str) -> str:
    return reverse("labeling:proposals", kwargs={"slug": slug})


def _decision_post(request: HttpRequest, slug: str, decide: Callable[[bool, str], str]) -> HttpResponse:
    """Accept or reject (the form's decision) with a rationale through `decide`, which returns what
    happened in words; a refusal is shown as it is worded and nothing changes."""
    form = ProposalDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Nothing decided: {form_errors(form)}")
        return _back(_proposals_url(slug))
    try:
        done = decide(form.cleaned_data["decision"] == "accept", form.cleaned_data["rationale"])
    except services.ReviewError as exc:
        messages.error(request, f"Nothing decided: {exc}")
        return _back(_proposals_url(slug))
    messages.success(request, done)
    return _back(_proposals_url(slug))


@require_POST
def proposal_decide(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    golden_set = _get_set_for_reviewer(request, slug)
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

    return _decision_post(request, slug, decide)


@require_POST
def proposals_decide_query(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)

    def decide(accept: bool, rationale: str) -> str:
        n = services.proposals_decide_query(query=query, by=request.user, accept=accept, rationale=rationale)  # type: ignore[arg-type]
        return f"{query.external_id}: {n} proposal(s) {'accepted' if accept else 'rejected'}."

    return _decision_post(request, slug, decide)


@require_GET
def adjudicate(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
    return render(
        request,
        "labeling/adjudicate.html",
        {
            "golden_set": query.golden_set,
            "query": query,
            "page": selectors.adjudication_page_get(query=query),
            "scale": list(query.golden_set.rubric.scale),
            "tier_form": TierMoveForm(initial={"tier": "core" if query.tier != "core" else "shadow"}),
            "retire_form": RetireForm(),
        },
    )


def _adjudicate_url(query: Query) -> str:
    return reverse("labeling:adjudicate", kwargs={"slug": query.golden_set.slug, "pk": query.pk})


@require_POST
def adjudication_add(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
    form = AdjudicationForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not saved: {form_errors(form)}")
        return _back(_adjudicate_url(query))
    document = _get_document_of_query(query, form.cleaned_data["document"])
    try:
        adjudication = services.adjudication_create(
            query=query,
            document=document,
            reviewer=request.user,  # type: ignore[arg-type]
            grade=form.cleaned_data["grade"],
            rationale=form.cleaned_data["rationale"],
        )
    except services.ReviewError as exc:
        messages.error(request, f"Not saved: {exc}")
        return _back(_adjudicate_url(query))
    messages.success(request, f"{document.doc_id}: final grade {adjudication.grade} (adjudicated).")
    return _back(_adjudicate_url(query) + f"#d-{document.pk}")


@require_POST
def tier_move(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
    form = TierMoveForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not moved: {form_errors(form)}")
        return _back(_adjudicate_url(query))
    before = query.tier
    try:
        move = services.query_move_tier(
            query=query,
            tier=form.cleaned_data["tier"],
            by=request.user,  # type: ignore[arg-type]
            reason=form.cleaned_data["reason"],
        )
    except services.ReviewError as exc:
        messages.error(request, f"Not moved: {exc}")
        return _back(_adjudicate_url(query))
    if move is None:
        messages.info(request, f"Query {query.external_id} is already in {before}.")
    else:
        messages.success(request, f"Query {query.external_id} moved from {move.from_tier} to {move.to_tier}.")
        if move.to_tier == Query.Tier.CORE:
            waiting = [
                u
                for u in selectors.labels_consolidated(
                    golden_set=query.golden_set, query_ids=[query.pk]
                ).unresolved
            ]
            if waiting:
                messages.warning(
                    request,
                    f"{len(waiting)} of its documents have no final grade yet: a freeze will stop at them.",
                )
    return _back(_adjudicate_url(query))


@require_POST
def retire(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
    form = RetireForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not retired: {form_errors(form)}")
        return _back(_adjudicate_url(query))
    try:
        services.query_retire(query=query, by=request.user, reason=form.cleaned_data["reason"])  # type: ignore[arg-type]
    except services.ReviewError as exc:
        messages.error(request, f"Not retired: {exc}")
        return _back(_adjudicate_url(query))
    messages.success(request, f"Query {query.external_id} is retired: later golden versions leave it out.")
    return _back(reverse("labeling:set_detail", kwargs={"slug": slug}))


@require_POST
def gold(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    query = _get_query_for_reviewer(request, slug, pk)
    target = reverse("labeling:query_review", kwargs={"slug": slug, "pk": pk})
    form = GoldForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Gold item not changed: {form_errors(form)}")
        return _back(target)
    document = _get_document_of_query(query, form.cleaned_data["document"])
    if form.cleaned_data["unmark"]:
        if services.gold_unmark(query=query, document=document):
            messages.success(request, f"{document.doc_id} is no longer a gold item.")
        else:
            messages.info(request, f"{document.doc_id} was not a gold item.")
        return _back(target)
    try:
        item = services.gold_mark(
            query=query,
            document=document,
            grade=form.cleaned_data["grade"],
            by=request.user,  # type: ignore[arg-type]
        )
    except services.ReviewError as exc:
        messages.error(request, f"Gold item not changed: {exc}")
        return _back(target)
    messages.success(
        request,
        f"{document.doc_id} is a gold item (known grade {item.grade}): raters who do not grade this query"
        " meet it in their queues once the query has its first rater.",
    )
    return _back(target)


# --- calibration rounds


def _get_round_for_reviewer(request: HttpRequest, slug: str, pk: int) -> CalibrationRound:
    golden_set = _get_set_for_reviewer(request, slug)
    return get_object_or_404(
        CalibrationRound.objects.select_related("golden_set__rubric", "created_by", "promoted_by"),
        pk=pk,
        golden_set=golden_set,
    )


def _round_url(round_: CalibrationRound) -> str:
    return reverse("labeling:calibration_round", kwargs={"slug": round_.golden_set.slug, "pk": round_.pk})


@require_http_methods(["GET", "POST"])
def calibration_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's calibration rounds and the form that starts one (POST here)."""
    golden_set = _get_set_for_reviewer(request, slug)
    choices = rounds.calibration_round_choices(golden_set=golden_set)
    form = CalibrationRoundForm(request.POST if request.method == "POST" else None, choices=choices)
    status = 200
    if request.method == "POST":
        problems: list[str] = []
        if form.is_valid():
            queries, raters, problems = rounds.calibration_round_resolve(
                golden_set=golden_set,
                external_ids=form.cleaned_data["queries"],
                usernames=form.cleaned_data["raters"],
            )
            if not problems:
                try:
                    started = rounds.calibration_round_start(
                        golden_set=golden_set,
                        name=form.cleaned_data["name"],
                        queries=queries,
                        raters=raters,
                        by=request.user,  # type: ignore[arg-type]
                    )
                except rounds.CalibrationError as exc:
                    problems = exc.problems
                else:
                    messages.success(
                        request,
                        f"Round {started.name!r} started: {len(raters)} raters × {len(queries)} quer"
                        f"{'y' if len(queries) == 1 else 'ies'}, in each rater's queue now.",
                    )
                    return _back(_round_url(started))
        else:
            problems = [form_errors(form)]
        for problem in problems:
            messages.error(request, f"Round not started: {problem}")
        status = 400
    return render(
        request,
        "labeling/calibration_list.html",
        {
            "golden_set": golden_set,
            "rounds": rounds.calibration_round_list(golden_set=golden_set),
            "form": form,
        },
        status=status,
    )


@require_GET
def calibration_round(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    round_ = _get_round_for_reviewer(request, slug, pk)
    return render(
        request,
        "labeling/calibration_round.html",
        {
            "golden_set": round_.golden_set,
            "round": round_,
            "page": rounds.calibration_round_get(round=round_),
            "scale": list(round_.golden_set.rubric.scale),
        },
    )


@require_POST
def calibration_promote(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    round_ = _get_round_for_reviewer(request, slug, pk)
    try:
        result = rounds.calibration_round_promote(round=round_, by=request.user)  # type: ignore[arg-type]
    except rounds.CalibrationError as exc:
        for problem in exc.problems:
            messages.error(request, f"Not promoted: {problem}")
        return _back(_round_url(round_))
    n = len(result.adjudications)
    messages.success(
        request,
        f"Promoted {n} median grade{'s' if n != 1 else ''} of round {round_.name!r} as adjudications: they"
        " are the final labels now.",
    )
    if result.ties:
        shown = "; ".join(f"{t.query_id}/{t.doc_id} ({t.grades_text})" for t in result.ties[:20])
        more = f" and {len(result.ties) - 20} more" if len(result.ties) > 20 else ""
        ties = f"{len(result.ties)} tie{'s' if len(result.ties) != 1 else ''}"
        messages.warning(request, f"{ties} left to a reviewer: {shown}{more}.")
    for note in result.skipped[:20]:
        messages.warning(request, f"Not promoted: {note}")
    return _back(_round_url(round_))
