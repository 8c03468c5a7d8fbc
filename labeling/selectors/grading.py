"""Rater reads: the queue, the next open assignment, the grading page and the saved grades.

Blind: nothing here fetches a frozen label, an adjudication or another rater's grade.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Func, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from labeling.models import Assignment, Candidate, Document, Judgment, Query


def shuffle_key(*, rater_id: int, query_id: int, candidate_id: int) -> str:
    """The blind order: fixed per (rater, query), so stable across reloads and different per rater."""
    return hashlib.sha256(f"{rater_id}:{query_id}:{candidate_id}".encode()).hexdigest()


def count_subquery(queryset: QuerySet[Any]) -> Coalesce:
    """COUNT(*) of a (correlated) queryset as an expression, so several counts cost one query."""
    sub = queryset.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n")
    return Coalesce(Subquery(sub, output_field=IntegerField()), Value(0))


def assignment_list(*, rater: Any) -> QuerySet[Assignment]:
    """The rater's assignments with progress (`n_graded`, `n_total`), open ones first, oldest first."""
    pool = Candidate.objects.filter(query_id=OuterRef("query_id"))
    scope = Candidate.objects.filter(scoped_assignments=OuterRef("pk"))
    graded = Judgment.objects.filter(assignment_id=OuterRef("pk"))
    return (
        Assignment.objects.filter(rater=rater)
        .exclude(status=Assignment.Status.REASSIGNED)
        .select_related("query__golden_set")
        .annotate(
            n_pool=count_subquery(pool),
            n_scope=count_subquery(scope),
            n_graded=count_subquery(graded),
        )
        .order_by("-status", "created", "id")  # "open" sorts after "done": descending puts it first
    )


def assignment_next(*, rater: Any, after: int | None = None) -> Assignment | None:
    """The rater's next open assignment: the first after `after` in queue order, else the first at all.
    Retired queries are skipped: their grades make no label and count in no agreement figure."""
    open_ = Assignment.objects.filter(
        rater=rater, status=Assignment.Status.OPEN, query__status=Query.Status.ACTIVE
    ).order_by("created", "id")
    if after is not None:
        current = Assignment.objects.filter(pk=after, rater=rater).values_list("created", "id").first()
        if current is not None:
            later = open_.filter(Q(created__gt=current[0]) | Q(created=current[0], id__gt=current[1])).first()
            if later is not None:
                return later
            return open_.exclude(pk=after).first()
    return open_.first()


@dataclass(frozen=True, slots=True)
class GradingItem:
    candidate_id: int
    document: Document
    grade: int | None  # the rater's own saved grade, nothing else
    note: str


@dataclass(frozen=True, slots=True)
class GradingPage:
    assignment: Assignment
    query: Query
    items: list[GradingItem]
    graded: int
    total: int


def grading_page_get(*, assignment: Assignment) -> GradingPage:
    """What the rater may see: the query, the documents in their blind order and their own grades.

    Never provenance, ranks, frozen labels or anyone else's judgments: those are not even fetched.
    """
    candidates = list(
        Candidate.objects.filter(
            Q(scoped_assignments=assignment) if assignment.scope.exists() else Q(query_id=assignment.query_id)
        )
        .select_related("document")
        .only("id", "query_id", "document")
    )
    own = {
        j.document_id: j
        for j in Judgment.objects.filter(assignment=assignment).only("document_id", "grade", "note")
    }
    candidates.sort(
        key=lambda c: shuffle_key(
            rater_id=assignment.rater_id, query_id=assignment.query_id, candidate_id=c.pk
        )
    )
    items = [
        GradingItem(
            candidate_id=c.pk,
            document=c.document,
            grade=own[c.document_id].grade if c.document_id in own else None,
            note=own[c.document_id].note if c.document_id in own else "",
        )
        for c in candidates
    ]
    graded = sum(1 for item in items if item.grade is not None)
    return GradingPage(
        assignment=assignment, query=assignment.query, items=items, graded=graded, total=len(items)
    )


def grades_get(*, assignment: Assignment) -> dict[str, dict[str, Any]]:
    """The rater's saved grades by candidate id (a second tab refreshes itself from this)."""
    rows = Judgment.objects.filter(assignment=assignment).values_list("document_id", "grade", "note")
    by_document = {doc: (grade, note) for doc, grade, note in rows}
    candidates = Candidate.objects.filter(query_id=assignment.query_id, document_id__in=list(by_document))
    return {
        str(c.pk): {"grade": by_document[c.document_id][0], "note": by_document[c.document_id][1]}
        for c in candidates.only("id", "document_id")
    }
