"""Marking a query done, reopening it, and the proposed label changes made when it is marked done
(docs/labeling.md, "Blind until done"; docs/agreement.md, "Proposed label changes")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from labeling.models import Assignment, Candidate, FrozenLabel, Judgment, LabelProposal, Query
from labeling.roles import rated_filter
from labeling.selectors import DUAL_KINDS
from labeling.selectors.labels import JUDGE, single_rater_work
from labeling.services.assignments import assignment_counts
from labeling.services.grading import (
    DONE_BUSY_MESSAGE,
    GradingError,
    NotFound,
    Reassigned,
    Retired,
    retried_when_locked,
)
from labeling.services.judge_qualification import drift_check_schedule
from labeling.services.review import query_dispute_check


class Incomplete(GradingError):
    status = 422
    code = "incomplete"


# Kinds whose grades make labels (a gold check measures the rater, a calibration round the rubric).
LABEL_KINDS = (
    Assignment.Kind.PRIMARY,
    Assignment.Kind.SECOND,
    Assignment.Kind.THIRD,
    Assignment.Kind.REJUDGE,
)


@dataclass(frozen=True, slots=True)
class Overturn:
    """A grade of the rater's that differs from the set's frozen label for the document."""

    candidate_id: int
    judgment_id: int
    document_id: int
    doc_id: str
    title: str
    grade: int
    frozen: int
    note: str


@dataclass(frozen=True, slots=True)
class DoneResult:
    status: str
    already: bool  # it was done before this request: nothing changed
    overturns: list[Overturn]
    proposed: int  # proposals this made (single-rater work only)

    @property
    def notes_missing(self) -> int:
        return sum(1 for o in self.overturns if not o.note)


@retried_when_locked(DONE_BUSY_MESSAGE)
@transaction.atomic
def assignment_done(*, assignment_id: int, rater: User) -> DoneResult:
    """The rater marks the query done: every candidate must be graded or marked can't judge; the grades
    and marks are locked from now on.

    This is where the overturn rule applies: the answer lists the grades that differ from the frozen
    labels, each to be explained by a note (a save of the same grade with a note, still allowed). On
    single-rater work each overturn becomes a `LabelProposal` for the set's reviewers: it changes no
    label until one of them accepts it. Finished dual work runs the dispute check. Marking a done query
    done again changes nothing and answers the same.
    """
    assignment = (
        # Only the assignment row: locking the set's row too would make raters of one set take turns.
        Assignment.objects.select_for_update(of=("self",))
        .select_related("query__golden_set")
        .filter(rated_filter(rater, "query__golden_set"), pk=assignment_id, rater_id=rater.pk)
        .first()
    )
    if assignment is None:
        raise NotFound("no such assignment")
    if assignment.query.status != Query.Status.ACTIVE:
        raise Retired("this query was retired from its golden set: there is nothing to mark done")
    if assignment.status == Assignment.Status.REASSIGNED:
        raise Reassigned("this assignment was reassigned to another rater: it was not marked done")
    already = assignment.status == Assignment.Status.DONE
    if not already:
        progress = assignment_counts(assignment=assignment)
        if progress.total == 0:
            raise Incomplete("this query has no documents to grade yet")
        if progress.handled < progress.total:
            raise Incomplete(f"{progress.describe()}: grade every document before marking the query done")
        assignment.status = Assignment.Status.DONE
        assignment.completed = timezone.now()
        assignment.save(update_fields=["status", "completed"])
    overturns = overturns_list(assignment=assignment)
    proposed = _proposals_sync(assignment=assignment, overturns=overturns) if single_rater(assignment) else 0
    if not already and assignment.kind in DUAL_KINDS:
        query_dispute_check(query_id=assignment.query_id)
    if not already:
        # The grades now count: the set's qualified judges are checked against them after the commit.
        drift_check_schedule(golden_set_id=assignment.query.golden_set_id)
    return DoneResult(status=assignment.status, already=already, overturns=overturns, proposed=proposed)


def overturns_list(*, assignment: Assignment) -> list[Overturn]:
    """The assignment's grades that differ from the frozen labels humans decided (none for gold checks and
    calibration rounds, which make no label). Read only once the rater has marked the query done.

    A frozen label a machine judge gave is no human decision to overturn: a rater's grade replaces it
    (consolidation), and a rater never sees a judge's grade, nor that one exists (docs/judge.md)."""
    if assignment.kind not in LABEL_KINDS:
        return []
    frozen = dict(
        FrozenLabel.objects.filter(query_id=assignment.query_id)
        .exclude(source=JUDGE)
        .values_list("document_id", "grade")
    )
    judgments = (
        Judgment.objects.filter(assignment=assignment, document_id__in=list(frozen))
        .select_related("document")
        .only("pk", "document_id", "grade", "note", "document__doc_id", "document__title")
    )
    candidates = dict(
        Candidate.objects.filter(query_id=assignment.query_id, document_id__in=list(frozen)).values_list(
            "document_id", "pk"
        )
    )
    out = [
        Overturn(
            candidate_id=candidates.get(j.document_id, 0),
            judgment_id=j.pk,
            document_id=j.document_id,
            doc_id=j.document.doc_id,
            title=j.document.title,
            grade=j.grade,
            frozen=frozen[j.document_id],
            note=j.note,
        )
        for j in judgments
        if j.grade != frozen[j.document_id]
    ]
    return sorted(out, key=lambda o: o.doc_id)


def single_rater(assignment: Assignment) -> bool:
    """Work whose grade stands alone in consolidation (`selectors.labels.single_rater_work`)."""
    if assignment.kind != Assignment.Kind.PRIMARY:
        return single_rater_work(assignment.kind, dual=False)
    dual = (
        Assignment.objects.everyday()
        .filter(query_id=assignment.query_id, kind=Assignment.Kind.SECOND)
        .exclude(status=Assignment.Status.REASSIGNED)
        .exists()
    )
    return single_rater_work(assignment.kind, dual=dual)


def _proposals_sync(*, assignment: Assignment, overturns: Sequence[Overturn]) -> int:
    """One pending proposal per overturning judgment, as it stands now; returns how many are new.
    A change a reviewer already decided (same judgment, same frozen and proposed grade) is not proposed
    again: marking the query done after a reopen does not undo a rejection."""
    proposals = LabelProposal.objects.select_for_update().filter(judgment__assignment=assignment)
    pending = {p.judgment_id: p for p in proposals if p.status == LabelProposal.Status.PENDING}
    decided = {
        (p.judgment_id, p.from_grade, p.to_grade)
        for p in proposals
        if p.status in (LabelProposal.Status.ACCEPTED, LabelProposal.Status.REJECTED)
    }
    wanted = {o.judgment_id: o for o in overturns}
    stale = [
        p.pk
        for j, p in pending.items()
        if j not in wanted or (p.from_grade, p.to_grade) != (wanted[j].frozen, wanted[j].grade)
    ]
    if stale:
        LabelProposal.objects.filter(pk__in=stale).update(
            status=LabelProposal.Status.WITHDRAWN, decided_at=timezone.now()
        )
    version = assignment.query.golden_set.frozen_version
    new = [
        LabelProposal(
            query_id=assignment.query_id,
            document_id=o.document_id,
            judgment_id=o.judgment_id,
            rater_id=assignment.rater_id,
            from_grade=o.frozen,
            from_version=version,
            to_grade=o.grade,
            note=o.note,
        )
        for o in overturns
        if (o.judgment_id not in pending or pending[o.judgment_id].pk in stale)
        and (o.judgment_id, o.frozen, o.grade) not in decided
    ]
    LabelProposal.objects.bulk_create(new)
    return len(new)


class ReopenError(Exception):
    """A reopen that cannot happen; the message says why."""


@transaction.atomic
def assignment_reopen(*, assignment: Assignment, by: User) -> Assignment:
    """A reviewer gives a done query back to its rater: the grades can change again until the rater
    marks it done once more. Pending proposals stay until the grade they propose changes."""
    locked = Assignment.objects.select_for_update().select_related("query", "rater").get(pk=assignment.pk)
    query, rater = locked.query.external_id, locked.rater.get_username()
    if locked.query.status != Query.Status.ACTIVE:
        raise ReopenError(f"query {query} is retired: nothing to reopen (bring it back first)")
    if locked.status == Assignment.Status.OPEN:
        since = f", reopened {locked.reopened:%Y-%m-%d %H:%M}" if locked.reopened else ""
        raise ReopenError(
            f"{rater}'s assignment of query {query} is still open (not marked done{since}): "
            "nothing to reopen, their grades can still change"
        )
    if locked.status == Assignment.Status.REASSIGNED:
        now = (
            Assignment.objects.everyday()
            .filter(query_id=locked.query_id, kind=locked.kind)
            .exclude(status=Assignment.Status.REASSIGNED)
            .select_related("rater")
            .order_by("created", "id")
        )
        holders = ", ".join(f"{a.rater.get_username()} ({a.status})" for a in now)
        goes_to = f"; its {locked.kind} work now goes to {holders}" if holders else ""
        raise ReopenError(
            f"{rater}'s assignment of query {query} was reassigned{goes_to}: nothing to reopen here"
        )
    locked.status, locked.completed, locked.reopened = Assignment.Status.OPEN, None, timezone.now()
    locked.save(update_fields=["status", "completed", "reopened"])
    return locked
