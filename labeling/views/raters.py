"""Rater pages: the queue, the grading page and its JSON endpoints (docs/labeling.md, "Grading")."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import BadRequest
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.inputs import MAX_DB_INT, id_number
from assay.jsonin import JsonInputError, json_loads
from labeling import selectors, services
from labeling.keyboard import GRADING, page_keys
from labeling.lists import Filter, ListSpec, Sort, contains, equals, list_page, ordered
from labeling.models import Assignment, CantJudgeMark, Query
from labeling.views.access import get_assignment_for_rater, require_rater

QUEUE_PAGE = 100  # assignments per page of My queue: a rater's whole day fits on one


def _queue_spec(assignments: QuerySet[Assignment]) -> ListSpec:
    """My queue: search the query text; filter by golden set (the rater's own) and state; sort. No
    filter by kind: a gold check, a third rater's disputed documents or a calibration round named on the
    rater's own page would tell of known answers or other raters' grades (docs/labeling.md)."""
    sets = assignments.order_by().values_list("query__golden_set__slug", "query__golden_set__name").distinct()
    return ListSpec(
        noun="assignments",
        search=contains("query__text"),
        search_hint="query text",
        filters=[
            Filter(
                "set",
                "Golden set",
                sorted(sets, key=lambda s: s[1].casefold()),
                equals("query__golden_set__slug"),
            ),
            Filter("state", "Status", selectors.QUEUE_STATES, equals("state")),
        ],
        sorts=[
            Sort("queue", "open first, oldest first", ordered("-status", "created", "id")),
            Sort("oldest", "oldest first", ordered("created", "id")),
            Sort("newest", "newest first", ordered("-created", "-id")),
            Sort("query", "query text", ordered("query__text", "id")),
            Sort("left", "most left to grade", ordered("-n_left", "created", "id")),
            Sort("set", "golden set", ordered("query__golden_set__name", "created", "id")),
        ],
        per_page=QUEUE_PAGE,
        anchor="queue-list",
    )


@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    require_rater(request)
    assignments = selectors.assignment_list(rater=request.user)
    counts = assignments.order_by().aggregate(
        n_open=Count("id", filter=Q(status=Assignment.Status.OPEN)),
        n_done=Count("id", filter=Q(status=Assignment.Status.DONE)),
    )
    return render(
        request,
        "labeling/queue.html",
        {"assignments": list_page(request, assignments, _queue_spec(assignments)), **counts},
    )


@require_GET
def queue_next(request: HttpRequest) -> HttpResponse:
    """Where `n` on the grading page goes: the next open assignment after `?after=<assignment id>` (none
    or empty: the first), else back to the queue. An `after` that is not an id is a worded 400."""
    require_rater(request)
    after = request.GET.get("after", "")
    after_id = id_number(after)
    if after and after_id is None:
        raise BadRequest(
            f"after must be an assignment id (a whole number from 1 to {MAX_DB_INT}), got {after!r}"
        )
    nxt = selectors.assignment_next(rater=request.user, after=after_id)
    if nxt is None:
        messages.info(request, "No open assignments left. Thank you!")
        return redirect("labeling:queue")
    return redirect("labeling:grade", pk=nxt.pk)


@require_GET
def grade(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = get_assignment_for_rater(request, pk)
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
    day = selectors.rater_day_get(rater=request.user)
    saved_today = {document for a, document in day.saved if a == assignment.pk}
    previous = selectors.assignment_previous(rater=request.user, before=assignment)
    return render(
        request,
        "labeling/grade.html",
        {
            "page": page,
            "assignment": assignment,
            "query": page.query,
            "rubric": rubric,
            "scale": list(rubric.scale),
            "keyboard": page_keys(GRADING, list(rubric.scale)),
            "filters": sorted(page.query.filters.items()),
            "done": done,
            # Only once the rater has marked the query done: until then nothing here reads a label.
            "overturns": _overturns_out(assignment, services.overturns_list(assignment=assignment))
            if done
            else [],
            "day": day,
            "saved_today": {item.token for item in page.items if item.document.pk in saved_today},
            "previous": previous,
            "reasons": CantJudgeMark.Reason.choices,
        },
    )


def _overturns_out(assignment: Assignment, overturns: list[services.Overturn]) -> list[dict[str, Any]]:
    """The grades to explain as the page and the done endpoint show them: each candidate by its token
    (never its id), in the page's own blind order."""
    shown = sorted(
        overturns,
        key=lambda o: selectors.shuffle_key(
            rater_id=assignment.rater_id, query_id=assignment.query_id, candidate_id=o.candidate_id
        ),
    )
    return [
        {
            "candidate": selectors.candidate_token(assignment_id=assignment.pk, candidate_id=o.candidate_id),
            "title": o.title,
            "doc_id": o.doc_id,
            "grade": o.grade,
            "note": o.note,
        }
        for o in shown
    ]


def _json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": code, "message": message}, status=status)


def _refused(exc: services.GradingError) -> JsonResponse:
    """A rater write the service refused; `busy` (SQLite stayed locked through the service's retries)
    says when to send it again, and the grading page does."""
    response = _json_error(exc.status, exc.code, exc.message)
    if isinstance(exc, services.Busy):
        response["Retry-After"] = str(exc.retry_after)
    return response


@require_http_methods(["GET", "POST"])
def grades(request: HttpRequest, pk: int) -> JsonResponse:
    """GET: the rater's saved grades (and can't-judge marks, when there are some). POST JSON
    {candidate, grade, note?, time_spent_ms?, undo?}: save one grade; `grade: null` with
    `cant_judge: <reason>` marks the document can't judge, `grade: null` alone leaves it with neither.

    Statuses: 200 saved; 400 malformed body or off-scale grade; 403 missing CSRF token (middleware);
    404 not your assignment or a candidate outside it; 409 reassigned, the query retired, marked done
    (grades locked; a note on the saved grade still saves), or a grade on record as a proposal cleared;
    503 `busy` with Retry-After when SQLite stayed locked through the service's retries. Nothing here
    depends on earlier labels.
    """
    if request.method == "GET":
        assignment = get_assignment_for_rater(request, pk)
        return JsonResponse(selectors.grades_get(assignment=assignment))
    # The service looks the assignment up itself, locked, and answers 404 for anyone else's.
    try:
        body = json_loads(request.body or b"null")
    except JsonInputError as exc:
        return _json_error(
            400, "bad_request", f"the body must be JSON: {{candidate, grade, note?, time_spent_ms?}} ({exc})"
        )
    problem = _grade_body_problem(body)
    if problem:
        return _json_error(400, "bad_request", problem)
    # A token that names no candidate of this rater's assignment goes on as None: the save then answers
    # as for any document outside the assignment, after the assignment's own checks (reassigned, retired).
    candidate_id = selectors.candidate_for_token(
        assignment_id=pk, rater_id=request.user.pk, token=body["candidate"]
    )
    try:
        result = services.judgment_submit(
            assignment_id=pk,
            rater=request.user,  # type: ignore[arg-type]
            candidate_id=candidate_id,
            grade=body["grade"],
            note=body.get("note") or "",
            time_spent_ms=body.get("time_spent_ms") or 0,
            cant_judge=body.get("cant_judge") or "",
            undo=bool(body.get("undo")),
        )
    except services.GradingError as exc:
        return _refused(exc)
    saved: dict[str, Any] = {
        "saved": True,
        "candidate": body["candidate"],
        "grade": result.grade,
        "note": result.note,
        "changed": result.changed,
        "graded": result.graded,
        "total": result.total,
        "status": result.status,
    }
    # Only when there is a mark to tell of: a plain grade's answer keeps its shape.
    if result.cant_judge:
        saved["cant_judge"] = result.cant_judge
    if result.cant_judged:
        saved["cant_judged"] = result.cant_judged
    return JsonResponse(saved)


@require_POST
def done(request: HttpRequest, pk: int) -> JsonResponse:
    """Mark the query done (the `d` key): 200 with the grades that overturn a frozen label, each to get
    a note; 422 `incomplete` while a document is ungraded; 404/409 and 503 `busy` with Retry-After as
    for a grade (marking done again answers the same, so the page may resend it)."""
    try:
        result = services.assignment_done(assignment_id=pk, rater=request.user)  # type: ignore[arg-type]
    except services.GradingError as exc:
        return _refused(exc)
    assignment = get_assignment_for_rater(request, pk)  # marked done by this rater: theirs
    overturns = [
        {"candidate": o["candidate"], "title": o["title"], "grade": o["grade"], "note": o["note"]}
        for o in _overturns_out(assignment, result.overturns)
    ]
    return JsonResponse(
        {
            "done": True,
            "status": result.status,
            "already": result.already,
            "overturns": overturns,
            "notes_missing": result.notes_missing,
        }
    )


def _grade_body_problem(body: Any) -> str | None:
    """The body's shape: each field of the right type. What the values mean together (a known reason, a
    grade or a reason, not both; the grade on the scale) is `services.judgment_submit`'s to refuse."""
    if not isinstance(body, dict):
        return "the body must be a JSON object: {candidate, grade, note?, time_spent_ms?}"
    candidate = body.get("candidate")
    if not isinstance(candidate, str):
        # Whatever else it is (a database id, a number past any column's range): the same worded refusal.
        return f"candidate must be the document's token from the grading page (text), got {_shown(candidate)}"
    grade = body.get("grade")
    no_grade = grade is None and "grade" in body  # null: no grade (a can't-judge mark, or neither)
    if not no_grade and (not isinstance(grade, int) or isinstance(grade, bool)):
        return f"grade must be an integer, got {_shown(grade)}"
    if not isinstance(body.get("undo", False), bool):
        return "undo must be true or false"
    if not isinstance(body.get("note", ""), str | None):
        return "note must be text"
    spent = body.get("time_spent_ms", 0)
    if spent is not None and (not isinstance(spent, int) or isinstance(spent, bool) or spent < 0):
        return f"time_spent_ms must be a non-negative integer, got {_shown(spent)}"
    return None


def _shown(value: Any) -> str:
    """A value of the body as a refusal quotes it: a few dozen characters at most."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."
