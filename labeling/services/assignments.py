"""Assignments: whole queries to raters, the dual sample twice, gold items mixed in; reassignment and
progress (docs/labeling.md, "Assignments")."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from assay.display import in_number
from labeling.models import Assignment, Candidate, CantJudgeMark, GoldenSet, GoldItem, Judgment, Query
from labeling.roles import raters_of
from labeling.selectors import count_subquery
from labeling.selectors.judge_scope import pregrade_first

# Kinds scoped to some candidates of the pool, always given to a rater who never held the query.
SCOPED_KINDS = (Assignment.Kind.THIRD, Assignment.Kind.REJUDGE, Assignment.Kind.GOLD)


class AssignmentError(Exception):
    """A reassignment or assignment that would break a rule; the message says which."""


def dual_sampled(*, golden_set: GoldenSet, query: Query) -> bool:
    """Deterministic: the same queries are dual-labeled however often assignment runs."""
    digest = hashlib.sha256(f"{golden_set.slug}:{query.external_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < golden_set.dual_rate


@dataclass(slots=True)
class AssignReport:
    primary: int = 0
    second: int = 0
    gold: int = 0  # gold-item assignments (known answers mixed into the raters' queues)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        gold = f", {self.gold} gold-item" if self.gold else ""
        noun = in_number(self.primary + self.gold + self.second, "assignment")  # the noun counts them all
        return f"{self.primary} primary{gold} and {self.second} second {noun}"


@transaction.atomic
def assignments_create(*, golden_set: GoldenSet, raters: Sequence[User] | None = None) -> AssignReport:
    """Give every active query with a pool a primary rater, and the dual sample a second, different one;
    then mix the gold items into the queues of raters who have not met them (`gold_distribute`).

    Idempotent: queries that already have a live assignment of a kind are skipped. Whole queries only;
    the least-loaded rater gets the next one (ties by id), never someone who held the query before.
    Queries a qualified judge's grades single out (`judge_scope.pregrade_first`: a judge label 2+ grades
    from the frozen label, or a judge's broken answer) are assigned first, so they come first in the
    raters' queues (oldest first); nothing else of the judge reaches a rater.
    """
    # Those who rate the set now (labeling.roles): work given to someone off the list or out of the
    # raters group would wait where they cannot open it.
    pool = list(raters) if raters is not None else list(raters_of(golden_set).order_by("id"))
    report = AssignReport()
    if not pool:
        report.notes.append(f"golden set {golden_set.slug} has no raters: add some first")
        return report
    load: Counter[int] = Counter(
        dict(
            Assignment.objects.filter(query__golden_set=golden_set, status=Assignment.Status.OPEN)
            .order_by()
            .values("rater")
            .annotate(n=Count("id"))
            .values_list("rater", "n")
        )
    )
    queries = (
        golden_set.queries.filter(status=Query.Status.ACTIVE)
        .annotate(pool=Count("candidates"))
        .filter(pool__gt=0)
        .prefetch_related("assignments")
        .order_by("external_id")
    )
    first = pregrade_first(golden_set=golden_set)
    for query in sorted(queries, key=lambda q: q.pk not in first):  # stable: by external id within each
        everyday = [a for a in query.assignments.all() if a.calibration_round_id is None]
        held = {a.rater_id for a in everyday}
        live = {a.kind for a in everyday if a.status != Assignment.Status.REASSIGNED}
        wanted = [Assignment.Kind.PRIMARY]
        if dual_sampled(golden_set=golden_set, query=query):
            wanted.append(Assignment.Kind.SECOND)
        for kind in wanted:
            if kind in live:
                continue
            free = [r for r in pool if r.pk not in held]
            if not free:
                report.notes.append(f"query {query.external_id}: no rater left for a {kind} assignment")
                break
            rater = min(free, key=lambda r: (load[r.pk], r.pk))
            Assignment.objects.create(query=query, rater=rater, kind=kind)
            held.add(rater.pk)
            load[rater.pk] += 1
            if kind == Assignment.Kind.PRIMARY:
                report.primary += 1
            else:
                report.second += 1
    report.gold = gold_distribute(golden_set=golden_set)
    return report


@transaction.atomic
def assignment_reassign(*, assignment: Assignment, rater: User) -> Assignment:
    """Move an assignment to another rater. The old one keeps its rater and judgments, marked reassigned,
    so a tab still open on it gets a clear refusal instead of writing into someone else's work."""
    old = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if old.status == Assignment.Status.REASSIGNED:
        raise AssignmentError("this assignment was already reassigned")
    if old.rater_id == rater.pk:
        raise AssignmentError(f"{rater} already holds this assignment")
    existing = (
        Assignment.objects.everyday().select_for_update().filter(query_id=old.query_id, rater=rater).first()
    )
    if existing is not None and existing.status != Assignment.Status.REASSIGNED:
        raise AssignmentError(
            f"{rater} already has this query ({existing.kind}); nobody grades a query twice"
        )
    if existing is not None and old.kind in SCOPED_KINDS:
        # Reopening their earlier row would carry its grades outside this scope into the labels and count
        # them as this assignment's progress; a third rater must also be new to the query
        # (`_third_rater_assign`, `assignment_rejudge_create`, `gold_distribute` choose the same way).
        raise AssignmentError(
            f"{rater} held this query before ({existing.kind}); a {old.kind} assignment goes to a rater"
            " new to the query"
        )
    old.status = Assignment.Status.REASSIGNED
    old.save(update_fields=["status"])
    if existing is not None:
        # The query comes back to someone who had it before: their earlier work is theirs again.
        existing.status = Assignment.Status.OPEN
        existing.kind = old.kind
        existing.completed = None
        existing.save(update_fields=["status", "kind", "completed"])
        new = existing
    else:
        new = Assignment.objects.create(query_id=old.query_id, rater=rater, kind=old.kind)
    new.scope.set(old.scope.all())
    _refresh_completion(new)
    return new


def _refresh_completion(assignment: Assignment) -> tuple[int, int]:
    """(handled, total) for the assignment; a done one whose work grew (its pool or scope) is open again.
    Only the rater marks a query done (`assignment_done`)."""
    handled, total = assignment_progress(assignment=assignment)
    complete = total > 0 and handled >= total
    if not complete and assignment.status == Assignment.Status.DONE:
        assignment.status = Assignment.Status.OPEN
        assignment.completed = None
        assignment.reopened = timezone.now()
        assignment.save(update_fields=["status", "completed", "reopened"])
    return handled, total


def assignment_candidates(*, assignment: Assignment, scoped: bool | None = None) -> Q:
    """The candidates an assignment covers: its scope when it has one, else the query's whole pool.
    `scoped` saves the lookup when the caller already knows."""
    if scoped is None:
        scoped = assignment.scope.exists()
    return Q(scoped_assignments=assignment) if scoped else Q(query_id=assignment.query_id)


@dataclass(frozen=True, slots=True)
class Progress:
    """An assignment's documents: graded, marked can't judge (not a grade), and all it covers."""

    graded: int
    cant_judge: int
    total: int

    @property
    def handled(self) -> int:
        """Graded or marked can't judge: what marking the query done needs of every document."""
        return self.graded + self.cant_judge

    def describe(self) -> str:
        marked = f", {self.cant_judge} can't judge" if self.cant_judge else ""
        return f"{self.graded} of {self.total} graded{marked}"


def assignment_counts(*, assignment: Assignment, scoped: bool | None = None) -> Progress:
    """The assignment's `Progress`, in one query."""
    pool = Candidate.objects.filter(assignment_candidates(assignment=assignment, scoped=scoped))
    graded, marked, total = (
        Assignment.objects.filter(pk=assignment.pk)
        .annotate(
            n_graded=count_subquery(Judgment.objects.filter(assignment_id=assignment.pk)),
            n_marked=count_subquery(CantJudgeMark.objects.filter(assignment_id=assignment.pk)),
            n_total=count_subquery(pool),
        )
        .values_list("n_graded", "n_marked", "n_total")
        .get()
    )
    return Progress(graded=graded, cant_judge=marked, total=total)


def assignment_progress(*, assignment: Assignment, scoped: bool | None = None) -> tuple[int, int]:
    """(handled, total): the documents graded or marked can't judge, and all the assignment covers."""
    progress = assignment_counts(assignment=assignment, scoped=scoped)
    return progress.handled, progress.total


def gold_distribute(*, golden_set: GoldenSet, query_ids: Sequence[int] | None = None) -> int:
    """Every rater of the set meets every gold item: a `gold` assignment scoped to the query's gold
    candidates for each rater who holds no assignment on the query (the others see them in their own
    pool). Extends existing gold assignments with new gold items. Returns how many assignments are new.

    Only queries that have their primary rater already: handing a query's gold items to everyone first
    would leave nobody to grade the query itself (nobody holds a query twice).
    """
    with_primary = (
        Assignment.objects.filter(kind=Assignment.Kind.PRIMARY)
        .exclude(status=Assignment.Status.REASSIGNED)
        .values("query_id")
    )
    gold = GoldItem.objects.filter(
        query__golden_set=golden_set, query__status=Query.Status.ACTIVE, query_id__in=with_primary
    )
    if query_ids is not None:
        gold = gold.filter(query_id__in=list(query_ids))
    by_query: dict[int, set[int]] = {}
    for query_id, document_id in gold.values_list("query_id", "document_id"):
        by_query.setdefault(query_id, set()).add(document_id)
    raters = list(raters_of(golden_set).order_by("id"))
    created = 0
    for query_id, document_ids in sorted(by_query.items()):
        candidates = list(Candidate.objects.filter(query_id=query_id, document_id__in=document_ids))
        held = {a.rater_id: a for a in Assignment.objects.everyday().filter(query_id=query_id)}
        for rater in raters:
            assignment = held.get(rater.pk)
            if assignment is None:
                assignment = Assignment.objects.create(
                    query_id=query_id, rater=rater, kind=Assignment.Kind.GOLD
                )
                created += 1
            elif assignment.kind != Assignment.Kind.GOLD or assignment.status == Assignment.Status.REASSIGNED:
                continue
            assignment.scope.add(*candidates)
            _refresh_completion(assignment)
    return created
