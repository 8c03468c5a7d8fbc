"""A rater's answer to a side-by-side study's task and its undo (docs/sxs.md, "The rater's page"): the
answer read from the page's JSON body, the rater's tasks and those still open, and the answer saved or
undone under the task's revision (a second tab's stale page saves nothing), refused once the study is
closed (`evaluation.studies.services.close`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from assay.storable import text_problem
from assay.sxs import (
    PREFERENCE_SCALE,
    REASONS,
)
from evaluation.studies.models import (
    TOKEN_SHAPE,
    StudyTask,
    SxsStudy,
)
from evaluation.studies.services.studies import AnswerRefused
from labeling.keyboard import key_of
from labeling.roles import rated_filter

NOTE_MAX = 2000  # characters of a rater's note

SECOND_TAB = (
    "This query was answered or undone in another tab or window since this page was drawn: nothing was "
    "saved. Reload the page to see your answer as it stands."
)
ALREADY = (
    f"You have answered this query already: undo ({key_of('undo')}) first to change your answer. "
    "Nothing was saved."
)
CLOSED = (
    "This study is closed: its reviewers have read its verdict from the answers as they stood, so no "
    "answer is saved or undone any more. Nothing changed."
)


@dataclass(frozen=True, slots=True)
class Answer:
    """A rater's answer as shown: preference from -3 (left much better) to +3 (right much better)."""

    preference: int
    reasons: tuple[str, ...] = ()
    junk_left: bool = False
    junk_right: bool = False
    note: str = ""
    time_spent_ms: int = 0


def answer_problems(body: Any) -> tuple[Answer | None, int | None, str]:
    """Read a rater's answer from a JSON body: (answer, revision, "") or (None, None, the problem)."""
    if not isinstance(body, dict):
        return (
            None,
            None,
            "the body must be a JSON object: {preference, reasons, junk_left, junk_right, note, revision}",
        )
    revision = body.get("revision")
    if type(revision) is not int or revision < 0:
        return None, None, "revision: the whole number the page was drawn with (reload the page)"
    preference = body.get("preference")
    if type(preference) is not int or preference not in PREFERENCE_SCALE:
        return None, None, "preference: a whole number from -3 (left much better) to 3 (right much better)"
    reasons = body.get("reasons", [])
    if not isinstance(reasons, list) or any(r not in REASONS for r in reasons):
        return None, None, f"reasons: a list of {', '.join(REASONS)}"
    flags = [body.get(k, False) for k in ("junk_left", "junk_right")]
    if any(type(f) is not bool for f in flags):
        return None, None, "junk_left, junk_right: true or false"
    note = body.get("note", "")
    if not isinstance(note, str):
        return None, None, "note: text"
    unstorable = text_problem(note, NOTE_MAX, free_text=True)
    if unstorable:
        return None, None, f"note: {unstorable}"
    spent = body.get("time_spent_ms", 0)
    if type(spent) is not int or not 0 <= spent <= 86_400_000:
        spent = 0
    ordered = tuple(r for r in REASONS if r in reasons)
    return Answer(preference, ordered, flags[0], flags[1], note.strip(), spent), revision, ""


def rater_tasks(rater: Any) -> QuerySet[StudyTask]:
    """The rater's own study tasks of the sets they rate now (`labeling.roles.rated_sets`): taken off a
    set's raters list or out of the raters group, none of its studies' tasks opens (the answers stay)."""
    return StudyTask.objects.filter(rated_filter(rater, "study__golden_set"), rater_id=rater.pk)


def rater_open_tasks(rater: Any) -> QuerySet[StudyTask]:
    """The rater's tasks still to answer (`rater_tasks`, unanswered), of open studies only: a closed
    study's tasks are in no queue and no count."""
    return rater_tasks(rater).filter(answered_at__isnull=True, study__closed_at__isnull=True)


def _locked_task(token: str, rater: Any) -> StudyTask:
    shaped = TOKEN_SHAPE.fullmatch(token) is not None
    # The rule is read in the same statement that takes the lock: a removal committed before it refuses.
    task = rater_tasks(rater).select_for_update(of=("self",)).filter(token=token).first() if shaped else None
    if task is None:
        raise AnswerRefused(404, "not_found", "No such study task of yours.")
    # Read after the task's lock, in a statement of its own: a close holds every task of its study locked
    # until it commits (study_close), so an answer either commits before the close reads the verdict or
    # waits and then finds the study closed.
    if SxsStudy.objects.filter(pk=task.study_id, closed_at__isnull=False).exists():
        raise AnswerRefused(409, "closed", CLOSED)
    return task


@transaction.atomic
def study_answer(*, token: str, rater: Any, revision: int, answer: Answer) -> StudyTask:
    """Save the rater's answer to their task. Refused (AnswerRefused, nothing saved): not their task
    (404), the study closed (409 `closed`), the page's revision behind the task's (409 `stale`: another
    tab answered or undid), answered already (409 `answered`: undo first)."""
    task = _locked_task(token, rater)
    if revision != task.revision:
        raise AnswerRefused(409, "stale", SECOND_TAB)
    if task.answered_at is not None:
        raise AnswerRefused(409, "answered", ALREADY)
    task.preference = answer.preference
    task.reasons = list(answer.reasons)
    task.junk_left, task.junk_right = answer.junk_left, answer.junk_right
    task.note = answer.note
    task.time_spent_ms = min(task.time_spent_ms + answer.time_spent_ms, 2**31 - 1)
    task.answered_at = timezone.now()
    task.revision += 1
    task.save()
    return task


@transaction.atomic
def study_undo(*, token: str, rater: Any, revision: int) -> StudyTask:
    """Take the rater's answer back (it can then be answered again). Refused like an answer: 404, 409
    `closed`, 409 `stale`, and 409 `open` when there is no answer to undo."""
    task = _locked_task(token, rater)
    if revision != task.revision:
        raise AnswerRefused(409, "stale", SECOND_TAB)
    if task.answered_at is None:
        raise AnswerRefused(409, "open", "There is no answer to undo on this query. Nothing changed.")
    task.preference, task.reasons, task.note = None, [], ""
    task.junk_left = task.junk_right = False
    task.answered_at = None
    task.revision += 1
    task.save()
    return task
