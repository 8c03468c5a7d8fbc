"""Saving a grade: the grading endpoint's service, the app's hot path (docs/labeling.md, "Grading").

The same save sets a document's other states: a can't-judge mark with its reason (kept apart from
grades, `CantJudgeMark`), or neither (what the grading page's undo restores when there was nothing).
Blind: nothing here reads an earlier label. The errors carry the HTTP status and code the endpoint
answers with.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

from assay.inputs import id_number
from assay.storable import text_problem
from labeling.models import (
    Assignment,
    Candidate,
    CantJudgeMark,
    Document,
    GoldenSet,
    Judgment,
    JudgmentEvent,
    LabelProposal,
    Query,
    Rubric,
)
from labeling.roles import rates

MAX_NOTE = 2000
# One save never counts more than this: a tab left open over lunch is not ten minutes of judging.
MAX_TIME_PER_SAVE_MS = 10 * 60 * 1000


class GradingError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(GradingError):
    status = 404
    code = "not_found"


class Reassigned(GradingError):
    status = 409
    code = "reassigned"


class OffScale(GradingError):
    status = 400
    code = "off_scale"


class Locked(GradingError):
    status = 409
    code = "done"


class OnRecord(GradingError):
    """A grade that a proposed label change was made from stays on record: it may change, not go."""

    status = 409
    code = "on_record"


class Busy(GradingError):
    """The database stayed locked by other writers (SQLite only) through every retry; the client waits
    `retry_after` seconds and sends the same save again (it is idempotent)."""

    status = 503
    code = "busy"
    retry_after = 2


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """The document's state as saved (its grade, or its can't-judge reason, or neither; the note and
    total time) and the assignment's progress. `judgment_id` is None unless the state is a grade."""

    judgment_id: int | None
    grade: int | None
    note: str
    time_spent_ms: int
    created: bool
    changed: bool
    graded: int
    total: int
    status: str
    cant_judge: str = ""  # the mark's reason when the state is can't judge
    cant_judged: int = 0  # the assignment's documents marked can't judge


@dataclass(frozen=True, slots=True)
class GradingRow:
    """What a save checks, read in one statement by `_grading_row` (its columns in this order): the
    assignment, its query's status and the rubric's scale, the progress counts, and the candidate's
    document with the rater's own judgment or can't-judge mark of it. Typed, so a misspelt column is a
    mypy error rather than a KeyError on the hot path."""

    assignment_id: int
    status: str
    kind: str
    query_id: int
    query_status: str
    scale_min: int
    scale_max: int
    n_scope: int
    n_pool: int
    n_graded: int
    n_cant_judge: int
    document_id: int | None  # None: the candidate is not of this assignment's query
    content_hash: str | None
    in_scope: int
    judgment_id: int | None
    old_grade: int | None  # the rater's judgment of the document, when there is one (judgment_id)
    old_note: str  # "" and 0 when there is none
    old_time_spent_ms: int
    mark_id: int | None  # the rater's can't-judge mark of the document, when there is one
    old_cant_judge: str  # "", "" and 0 when there is none
    mark_note: str
    mark_time_spent_ms: int
    n_pending: int
    golden_set_id: int

    @property
    def total(self) -> int:
        """The documents the assignment covers: its scope when it has one, else the query's pool."""
        return self.n_scope if self.n_scope > 0 else self.n_pool

    @property
    def judged(self) -> tuple[int, str, int] | None:
        """The rater's judgment of the document before this save: grade, note and time, or None."""
        if self.judgment_id is None or self.old_grade is None:
            return None
        return self.old_grade, self.old_note, self.old_time_spent_ms


class Retired(GradingError):
    status = 409
    code = "retired"


REASSIGNED_MESSAGE = "this assignment was reassigned to another rater; your grade was not saved"
# One text for every candidate outside the assignment (another assignment's token, another rater's, a
# made-up one): it names none of them, so trying tokens tells a rater nothing.
NOT_IN_ASSIGNMENT = "this document is not part of this assignment (reload the page); your grade was not saved"
RETIRED_MESSAGE = "this query was retired from its golden set; your grade was not saved"
BUSY_MESSAGE = "the database is busy with other saves; your grade was not saved yet, try again in a moment"
DONE_BUSY_MESSAGE = (
    "the database is busy with other saves; the query was not marked done yet, try again in a moment"
)
# Seconds between attempts when SQLite answers "database is locked" (after its own busy timeout: this is
# the rare case of a writer holding the file longer, such as a worker finalizing a large run).
LOCKED_RETRY_DELAYS = (0.1, 0.3, 1.0)
LOCKED_MESSAGE = (
    "you marked this query done, so its grades are locked (a reviewer can reopen it); your grade was not"
    " saved"
)
ON_RECORD_MESSAGE = (
    "this grade was proposed to the set's reviewers as a label change, so it stays on record: give the"
    " document another grade instead; nothing was changed"
)
CANT_JUDGE_REASONS = tuple(CantJudgeMark.Reason.values)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def retried_when_locked(message: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Run the decorated function (a whole transaction: a rater's write) again when SQLite says the
    database is locked, then give up with Busy(message), which the grading endpoints answer 503 with
    Retry-After and the grading page sends again. Inside a caller's transaction nothing is retried: only
    the caller can start it again. PostgreSQL never answers "locked": a write there waits its turn."""

    def decorate(func: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(func)
        def attempt(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            for delay in (*LOCKED_RETRY_DELAYS, None):
                try:
                    return func(*args, **kwargs)
                except OperationalError as exc:
                    if "database is locked" not in str(exc) and "database table is locked" not in str(exc):
                        raise
                    if delay is None or connection.in_atomic_block:
                        raise Busy(message) from exc
                time.sleep(delay)
            raise AssertionError("unreachable: the last attempt returns or raises")

        return attempt

    return decorate


@retried_when_locked(BUSY_MESSAGE)
@transaction.atomic
def judgment_submit(
    *,
    assignment_id: int,
    rater: User,
    candidate_id: int | None,
    grade: int | None,
    note: str = "",
    time_spent_ms: int = 0,
    cant_judge: str = "",
    undo: bool = False,
) -> SubmitResult:
    """Save one document's state: a grade (insert or update the rater's judgment), a can't-judge mark
    (`cant_judge`, one of `CANT_JUDGE_REASONS`, with `grade` None), or neither (`grade` None and no
    reason: the grade or mark goes); append its history event, flagged `undo` when the grading page's `u`
    restored an earlier state. A document holds a grade or a mark, never both: either replaces the other.

    Blind: nothing here reads an earlier label (frozen, adjudicated or another rater's), so what a save
    answers, and how long it takes, cannot tell the rater anything about them. Overturns are looked at
    when the rater marks the query done (`assignment_done`); from then on the grades and marks are locked
    and only a note may still be added to one.

    The assignment row is locked first: a rater's two tabs on one assignment take turns, and a
    reassignment (which takes the same lock) cannot slip between the check and the write.

    `candidate_id` None: the grading page's token named no candidate of the assignment
    (`selectors.candidate_for_token`); after the assignment's own checks the save answers NotFound with
    `NOT_IN_ASSIGNMENT`, the same words for every candidate outside the assignment, whoever's it is.
    """
    # The grading endpoint leaves these two checks to this function: its words are the endpoint's 400s.
    if cant_judge and cant_judge not in CANT_JUDGE_REASONS:
        raise GradingError(f"cant_judge must be one of {', '.join(CANT_JUDGE_REASONS)}, got {cant_judge!r}")
    if grade is not None and cant_judge:
        raise GradingError(
            "a document is graded or marked can't judge, not both: send grade null with cant_judge"
        )
    row = _grading_row(assignment_id=assignment_id, rater_id=rater.pk, candidate_id=candidate_id)
    # Read after the row's lock: a rater taken off the set (its list or the raters group) before this
    # save commits is refused as for anyone else's assignment, and nothing is saved.
    if row is None or not rates(rater, row.golden_set_id):
        raise NotFound("no such assignment")
    if row.query_status != Query.Status.ACTIVE:
        raise Retired(RETIRED_MESSAGE)
    if row.status == Assignment.Status.REASSIGNED:
        raise Reassigned(REASSIGNED_MESSAGE)
    scoped = row.n_scope > 0
    document_id = row.document_id
    if document_id is None or (scoped and not row.in_scope):
        raise NotFound(NOT_IN_ASSIGNMENT)
    if grade is not None and not row.scale_min <= grade <= row.scale_max:
        raise OffScale(f"grade {grade} is outside the scale {row.scale_min}..{row.scale_max}")
    note = note.strip() if grade is not None or cant_judge else ""  # a note belongs to a grade or a mark
    if len(note) > MAX_NOTE:
        raise GradingError(f"the note is longer than {MAX_NOTE} characters")
    unstorable = text_problem(note, free_text=True)
    if unstorable:
        raise GradingError(f"the note {unstorable}; your grade was not saved")
    old_grade = row.old_grade if row.judgment_id is not None else None
    old_mark = row.old_cant_judge
    if row.status == Assignment.Status.DONE and (old_grade, old_mark) != (grade, cant_judge):
        raise Locked(LOCKED_MESSAGE)
    spent = max(0, min(int(time_spent_ms), MAX_TIME_PER_SAVE_MS))
    if grade is None:
        return _ungraded_submit(
            row, document_id, rater=rater, cant_judge=cant_judge, note=note, spent=spent, undo=undo
        )
    digest = row.content_hash or ""  # the content this grade is given on (stale detection)
    old: tuple[int, str, int] | None  # the judgment before this save: grade, note, time
    carried = 0  # the time spent on a can't-judge mark this grade replaces
    if row.mark_id is not None:
        CantJudgeMark.objects.filter(pk=row.mark_id).delete()
        carried = row.mark_time_spent_ms
    if row.judgment_id is not None:
        judgment_id, created = row.judgment_id, False
        old = row.judged
    else:
        judgment_id, created = _judgment_insert(
            assignment_id, document_id, grade=grade, note=note, spent=spent + carried, digest=digest
        )
        old = None if created else _judgment_current(judgment_id)
    if old is None:
        changed, time_total, saved = True, spent + carried, (grade, note)
    else:
        changed = old[0] != grade or old[1] != note
        time_total = old[2] + spent
        saved = (grade, note) if changed else (old[0], old[1])
        # The note belongs to this grade: a regrade without one leaves no stale reason behind (the
        # history keeps every earlier note). An unchanged save only adds its time.
        Judgment.objects.filter(pk=judgment_id).update(
            grade=saved[0],
            note=saved[1],
            time_spent_ms=time_total,
            content_hash=digest,
            updated=timezone.now(),
        )
    if changed:
        JudgmentEvent.objects.create(
            judgment_id=judgment_id,
            assignment_id=assignment_id,
            document_id=document_id,
            rater=rater,
            old_grade=None if old is None else old[0],
            new_grade=grade,
            old_cant_judge=old_mark,
            note=note,
            time_spent_ms=spent,
            content_hash=digest,
            undo=undo,
        )
        if row.n_pending:
            _proposals_follow(judgment_id=judgment_id, grade=grade, note=note)
    # The row lock makes the counts read above exact: nobody else wrote judgments of this assignment since.
    graded = row.n_graded + created
    total = row.total
    status = row.status
    return SubmitResult(
        judgment_id=judgment_id,
        grade=saved[0],
        note=saved[1],
        time_spent_ms=time_total,
        created=created,
        changed=changed,
        graded=graded,
        total=total,
        status=status,
        cant_judged=row.n_cant_judge - (row.mark_id is not None),
    )


def _ungraded_submit(
    row: GradingRow, document_id: int, *, rater: User, cant_judge: str, note: str, spent: int, undo: bool
) -> SubmitResult:
    """`judgment_submit` without a grade: the document is marked can't judge (`cant_judge`) or left with
    neither; a grade it had goes (its history stays in `JudgmentEvent`, by assignment and document)."""
    assignment_id = row.assignment_id
    digest = row.content_hash or ""
    graded, cant_judged = row.n_graded, row.n_cant_judge
    old_grade = row.old_grade if row.judgment_id is not None else None
    old_mark, old_note = row.old_cant_judge, row.mark_note
    # The time on the document carries over from the grade or mark this replaces (at most one exists).
    time_total = spent + row.old_time_spent_ms + row.mark_time_spent_ms
    if row.judgment_id is not None:
        if LabelProposal.objects.filter(judgment_id=row.judgment_id).exists():
            raise OnRecord(ON_RECORD_MESSAGE)
        Judgment.objects.filter(pk=row.judgment_id).delete()
        graded -= 1
        old_note = row.old_note
    created = False
    fields = {"reason": cant_judge, "note": note, "time_spent_ms": time_total, "content_hash": digest}
    if row.mark_id is not None:
        if cant_judge:
            CantJudgeMark.objects.filter(pk=row.mark_id).update(**fields, updated=timezone.now())
        else:
            CantJudgeMark.objects.filter(pk=row.mark_id).delete()
            cant_judged -= 1
    elif cant_judge:
        # The assignment row is locked: no other save of this document can insert a mark meanwhile.
        CantJudgeMark.objects.create(assignment_id=assignment_id, document_id=document_id, **fields)
        created = True
        cant_judged += 1
    changed = (old_grade, old_mark, old_note) != (None, cant_judge, note)
    if changed:
        JudgmentEvent.objects.create(
            judgment_id=None,
            assignment_id=assignment_id,
            document_id=document_id,
            rater=rater,
            old_grade=old_grade,
            new_grade=None,
            old_cant_judge=old_mark,
            new_cant_judge=cant_judge,
            note=note,
            time_spent_ms=spent,
            content_hash=digest,
            undo=undo,
        )
    return SubmitResult(
        judgment_id=None,
        grade=None,
        note=note,
        time_spent_ms=time_total if cant_judge else 0,
        created=created,
        changed=changed,
        graded=graded,
        total=row.total,
        status=row.status,
        cant_judge=cant_judge,
        cant_judged=cant_judged,
    )


def _grading_row(*, assignment_id: int, rater_id: int, candidate_id: int | None) -> GradingRow | None:
    """Lock the assignment row (where the database can), then read everything a save checks in one
    statement: the assignment's status, the rubric's scale, progress counts, and the candidate's document,
    content hash, scope membership and the rater's current judgment or can't-judge mark of it (no label:
    grading is blind),
    and whether that judgment has a pending proposal (only after the rater marked the query done and saw
    its overturns), so a regrade touches proposals only when there is one. Every writer of an
    assignment's judgments holds this lock, so what is read cannot change before the save commits.

    Two statements, not one SELECT ... FOR UPDATE with the joins: in READ COMMITTED a statement that had to
    wait for the lock still reads the other tables as they were when it started, so a second tab would
    see the judgment from before the first tab's save. The read after the lock starts after that commit.

    Raw SQL because this is the app's hot path: building the equivalent ORM lookups cost three times the
    CPU of the rest of the save (docs/benchmarks.md, grading). The columns come back as a `GradingRow`,
    in its fields' order, so every use of one is type-checked."""
    # Past the id column's range SQLite's driver raises OverflowError: no such row, as for any unknown id.
    if id_number(assignment_id) is None:
        return None
    candidate_id = id_number(candidate_id)
    scope = Assignment.scope.field
    qn = connection.ops.quote_name
    t = {
        m.__name__: qn(m._meta.db_table)
        for m in (
            Assignment,
            Query,
            GoldenSet,
            Rubric,
            Candidate,
            Document,
            Judgment,
            LabelProposal,
            CantJudgeMark,
        )
    }
    through = qn(scope.m2m_db_table())
    scope_a, scope_c = qn(scope.m2m_column_name()), qn(scope.m2m_reverse_name())
    # Only table and column names (from the models, quoted) are interpolated; every value is a parameter.
    sql = f"""
        SELECT a.id AS assignment_id, a.status, a.kind, a.query_id, q.status AS query_status,
               r.scale_min, r.scale_max,
               (SELECT COUNT(*) FROM {through} s WHERE s.{scope_a} = a.id) AS n_scope,
               (SELECT COUNT(*) FROM {t["Candidate"]} p WHERE p.query_id = a.query_id) AS n_pool,
               (SELECT COUNT(*) FROM {t["Judgment"]} j WHERE j.assignment_id = a.id) AS n_graded,
               (SELECT COUNT(*) FROM {t["CantJudgeMark"]} m WHERE m.assignment_id = a.id) AS n_cant_judge,
               c.document_id, d.content_hash,
               (SELECT COUNT(*) FROM {through} s WHERE s.{scope_a} = a.id AND s.{scope_c} = c.id) AS in_scope,
               jd.id AS judgment_id, jd.grade AS old_grade, COALESCE(jd.note, '') AS old_note,
               COALESCE(jd.time_spent_ms, 0) AS old_time_spent_ms,
               cj.id AS mark_id, COALESCE(cj.reason, '') AS old_cant_judge,
               COALESCE(cj.note, '') AS mark_note,
               COALESCE(cj.time_spent_ms, 0) AS mark_time_spent_ms,
               (SELECT COUNT(*) FROM {t["LabelProposal"]} lp
                 WHERE lp.judgment_id = jd.id AND lp.status = %s) AS n_pending,
               q.golden_set_id
          FROM {t["Assignment"]} a
          JOIN {t["Query"]} q ON q.id = a.query_id
          JOIN {t["GoldenSet"]} g ON g.id = q.golden_set_id
          JOIN {t["Rubric"]} r ON r.id = g.rubric_id
          LEFT JOIN {t["Candidate"]} c ON c.id = %s AND c.query_id = a.query_id
          LEFT JOIN {t["Document"]} d ON d.id = c.document_id
          LEFT JOIN {t["Judgment"]} jd ON jd.assignment_id = a.id AND jd.document_id = c.document_id
          LEFT JOIN {t["CantJudgeMark"]} cj ON cj.assignment_id = a.id AND cj.document_id = c.document_id
         WHERE a.id = %s AND a.rater_id = %s"""  # noqa: S608
    with connection.cursor() as cursor:
        if connection.features.has_select_for_update:
            lock = f"SELECT id FROM {t['Assignment']} WHERE id = %s AND rater_id = %s FOR UPDATE"  # noqa: S608
            cursor.execute(lock, [assignment_id, rater_id])
            if cursor.fetchone() is None:
                return None
        cursor.execute(sql, [LabelProposal.Status.PENDING, candidate_id, assignment_id, rater_id])
        found = cursor.fetchone()
        if found is None:
            return None
        return GradingRow(*found)


def _judgment_insert(
    assignment_id: int, document_id: int, *, grade: int, note: str, spent: int, digest: str
) -> tuple[int, bool]:
    """A new judgment's id, or (should another writer have inserted first: SQLite has no row locks, so
    the unique constraint is the last word) the existing one's, with created False."""
    try:
        with transaction.atomic():
            judgment = Judgment.objects.create(
                assignment_id=assignment_id,
                document_id=document_id,
                grade=grade,
                note=note,
                time_spent_ms=spent,
                content_hash=digest,
            )
            return judgment.pk, True
    except IntegrityError:
        existing = Judgment.objects.get(assignment_id=assignment_id, document_id=document_id)
        return existing.pk, False


def _judgment_current(judgment_id: int) -> tuple[int, str, int]:
    grade, note, spent = (
        Judgment.objects.filter(pk=judgment_id).values_list("grade", "note", "time_spent_ms").get()
    )
    return grade, note, spent


def _proposals_follow(*, judgment_id: int, grade: int, note: str) -> None:
    """A regrade withdraws the judgment's pending proposal (it proposed another grade); a new note on
    the same grade becomes the proposal's note. Only judgments saved before can have one."""
    pending = LabelProposal.objects.filter(judgment_id=judgment_id, status=LabelProposal.Status.PENDING)
    pending.exclude(to_grade=grade).update(status=LabelProposal.Status.WITHDRAWN, decided_at=timezone.now())
    pending.filter(to_grade=grade).update(note=note)
