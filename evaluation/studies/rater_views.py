"""The rater's side of side-by-side studies (docs/sxs.md, "The rater's page"): their study tasks, the
blind page of one task and its JSON endpoints (answer, undo).

Blind by construction: a task is found by its random token and the request user (anyone else's, or a
made-up token, is the same 404); the page gets the query and two lists of cards, left and right, and
nothing else of the study: no run, system, study name, label, metric or other rater's answer. Every
response to a task answers the same whichever run is on which side: what differs is the cards alone.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from assay.inputs import id_number
from assay.jsonin import JsonInputError, json_loads
from assay.sxs import REASON_LABELS, REASONS
from evaluation.studies.models import TOKEN_SHAPE, StudyTask, SxsStudy
from evaluation.studies.services import (
    CLOSED,
    AnswerRefused,
    answer_problems,
    rater_open_tasks,
    rater_tasks,
    study_answer,
    study_undo,
)
from labeling.keyboard import REASON_KEYS, SXS, page_keys
from labeling.roles import rated_filter

# The seven points as the rater reads them, left to right (the stored value is the position minus 4).
SCALE = (
    (-3, "L much better"),
    (-2, "L better"),
    (-1, "L slightly better"),
    (0, "About the same"),
    (1, "R slightly better"),
    (2, "R better"),
    (3, "R much better"),
)


def _own_task(request: HttpRequest, token: str) -> StudyTask:
    tasks = rater_tasks(request.user).select_related("item", "study__instructions")
    task = tasks.filter(token=token).first() if TOKEN_SHAPE.fullmatch(token) else None
    if task is None:
        raise Http404("no such study task of yours")
    return task


def _open_tasks(user: Any) -> Any:
    return rater_open_tasks(user).order_by("token")


@require_GET
def study_tasks(request: HttpRequest) -> HttpResponse:
    """The rater's studies: per study, how many of their queries they answered, and where to go on (a
    closed study says so: nothing is left to answer there)."""
    studies = (
        SxsStudy.objects.filter(rated_filter(request.user), tasks__rater_id=request.user.pk)
        .select_related("golden_set")
        .annotate(
            n_total=Count("tasks", filter=Q(tasks__rater_id=request.user.pk)),
            n_done=Count(
                "tasks", filter=Q(tasks__rater_id=request.user.pk, tasks__answered_at__isnull=False)
            ),
        )
        .order_by("-created", "-id")
    )
    # Each study by the name its reviewer chose for raters: never its place in this list, which moves when a
    # new study arrives (docs/sxs.md, "The name raters see").
    rows = [{"study": s} for s in studies]
    return render(
        request,
        "evaluation/studies/study_tasks.html",
        {"rows": rows, "n_open": _open_tasks(request.user).count()},
    )


@require_GET
def study_next(request: HttpRequest) -> HttpResponse:
    """The rater's next open task after `?after=<token>` (in token order, which is random), else the first
    open one, else their study list with a word."""
    after = request.GET.get("after", "")
    after = after if TOKEN_SHAPE.fullmatch(after) else ""
    open_ = _open_tasks(request.user)
    study = id_number(request.GET.get("study", ""))
    if study is not None:
        open_ = open_.filter(study_id=study)
    task = (open_.filter(token__gt=after).first() if after else None) or open_.exclude(token=after).first()
    if task is None:
        messages.info(request, "No side-by-side query left to answer. Thank you!")
        return redirect("sxs:study_tasks")
    return redirect("sxs:study_task", token=task.token)


def _sides(task: StudyTask) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    item = task.item
    if task.candidate_left:
        return item.cards_b, item.cards_a
    return item.cards_a, item.cards_b


@require_GET
def study_task(request: HttpRequest, token: str) -> HttpResponse:
    task = _own_task(request, token)
    left, right = _sides(task)
    mine = StudyTask.objects.filter(study_id=task.study_id, rater_id=request.user.pk).aggregate(
        total=Count("id"), done=Count("id", filter=Q(answered_at__isnull=False))
    )
    reasons = [(tag, REASON_LABELS.get(tag, tag), REASON_KEYS[tag]) for tag in REASONS]
    # The seven points are keyed 1-7, left to right.
    keyboard = page_keys(SXS, list(range(1, len(SCALE) + 1)))
    return render(
        request,
        "evaluation/studies/study_task.html",
        {
            "task": task,
            "item": task.item,
            "filters": sorted(task.item.filters.items()),
            "sides": [("Left", "L", left), ("Right", "R", right)],
            "scale": [(v, label, key) for (v, label), key in zip(SCALE, keyboard.digits, strict=True)],
            "reasons": reasons,
            "keyboard": keyboard,
            "chosen_reasons": set(task.reasons),
            "instructions": task.study.instructions,
            "mine": mine,
            "next_url": reverse("sxs:study_next") + f"?after={task.token}",
            "closed": CLOSED if task.study.closed_at is not None else "",
        },
    )


def _error(exc: AnswerRefused) -> JsonResponse:
    return JsonResponse({"error": exc.code, "message": exc.message}, status=exc.status)


def _state(task: StudyTask) -> dict[str, Any]:
    """What an answer or undo answers: the task's state as the rater sees it (sides as shown)."""
    return {
        "answered": task.answered_at is not None,
        "revision": task.revision,
        "preference": task.preference,
        "reasons": list(task.reasons),
        "junk_left": task.junk_left,
        "junk_right": task.junk_right,
        "note": task.note,
    }


@require_POST
def study_task_answer(request: HttpRequest, token: str) -> JsonResponse:
    """POST JSON {preference (-3 left much better .. 3 right much better), reasons, junk_left, junk_right,
    note, revision}. 200 saved; 400 a body that cannot be read, in words; 404 not your task; 409 `closed`
    (the study is closed), `stale` (another tab answered or undid since this page was drawn) or
    `answered` (undo first)."""
    try:
        body = json_loads(request.body or b"null")
    except JsonInputError as exc:
        return JsonResponse({"error": "bad_request", "message": f"the body must be JSON ({exc})"}, status=400)
    answer, revision, problem = answer_problems(body)
    if answer is None or revision is None:
        return JsonResponse({"error": "bad_request", "message": problem}, status=400)
    try:
        task = study_answer(token=token, rater=request.user, revision=revision, answer=answer)
    except AnswerRefused as exc:
        return _error(exc)
    return JsonResponse({"saved": True, **_state(task)})


@require_POST
def study_task_undo(request: HttpRequest, token: str) -> JsonResponse:
    """POST JSON {revision}: take the answer back. 200; 404; 409 `closed`, `stale` or `open` (nothing to
    undo)."""
    try:
        body = json_loads(request.body or b"null")
    except JsonInputError as exc:
        return JsonResponse({"error": "bad_request", "message": f"the body must be JSON ({exc})"}, status=400)
    revision = body.get("revision") if isinstance(body, dict) else None
    if type(revision) is not int or revision < 0:
        message = "revision: the whole number the page was drawn with (reload the page)"
        return JsonResponse({"error": "bad_request", "message": message}, status=400)
    try:
        task = study_undo(token=token, rater=request.user, revision=revision)
    except AnswerRefused as exc:
        return _error(exc)
    return JsonResponse({"undone": True, **_state(task)})
