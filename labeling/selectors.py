"""Reads for the labeling pages. Each page's data comes from a fixed number of queries (no N+1)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Func, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from golden_io.golden import Scale
from labeling.disputes import consolidate
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    Document,
    FrozenLabel,
    GoldenSet,
    Judgment,
    Query,
)
from labeling.roles import is_admin


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
    """The rater's next open assignment: the first after `after` in queue order, else the first at all."""
    open_ = Assignment.objects.filter(rater=rater, status=Assignment.Status.OPEN).order_by("created", "id")
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


def golden_set_list(*, user: Any) -> QuerySet[GoldenSet]:
    """The sets a reviewer reviews (admins: all of them), with query counts."""
    sets = GoldenSet.objects.select_related("rubric").annotate(n_queries=Count("queries", distinct=True))
    if is_admin(user):
        return sets.order_by("slug")
    return sets.filter(reviewers=user).order_by("slug")


def golden_set_queries(*, golden_set: GoldenSet) -> QuerySet[Query]:
    """The set's queries with pool size, frozen labels and live assignments (for the overview table)."""
    live = (
        Assignment.objects.exclude(status=Assignment.Status.REASSIGNED)
        .select_related("rater")
        .annotate(n_graded=count_subquery(Judgment.objects.filter(assignment_id=OuterRef("pk"))))
    )
    return (
        golden_set.queries.annotate(
            n_pool=count_subquery(Candidate.objects.filter(query_id=OuterRef("pk"))),
            n_frozen=count_subquery(FrozenLabel.objects.filter(query_id=OuterRef("pk"))),
        )
        .prefetch_related(Prefetch("assignments", queryset=live.order_by("kind", "id"), to_attr="live"))
        .order_by("external_id")
    )


@dataclass(frozen=True, slots=True)
class ReviewRow:
    candidate: Candidate
    frozen: int | None
    judgments: list[Judgment]


def query_review_get(*, query: Query) -> list[ReviewRow]:
    """Everything about one query's pool, for reviewers: provenance, frozen label, every rater's grade
    and note with its history."""
    frozen = dict(FrozenLabel.objects.filter(query=query).values_list("document_id", "grade"))
    judgments: dict[int, list[Judgment]] = {}
    for j in (
        Judgment.objects.filter(assignment__query=query)
        .select_related("assignment__rater")
        .prefetch_related("events")
        .order_by("assignment__kind", "assignment_id")
    ):
        judgments.setdefault(j.document_id, []).append(j)
    candidates = (
        Candidate.objects.filter(query=query)
        .select_related("document")
        .order_by(F("best_rank").asc(nulls_last=True), "document__doc_id")
    )
    return [ReviewRow(c, frozen.get(c.document_id), judgments.get(c.document_id, [])) for c in candidates]


# --- consolidated labels (issue 4) ----------------------------------------------------------------

FROZEN = "frozen"  # a label carried over from the set's current frozen labels: nothing judged since


@dataclass(frozen=True, slots=True)
class FinalLabel:
    """A (query, document)'s final grade and how it was reached: single, agreed, median, adjudicated or
    frozen. `content_hash` is the document content the deciding grade was given on (None: not known,
    e.g. a frozen label or grades saved before hashes were recorded)."""

    query_id: int
    document_id: int
    grade: int
    method: str
    content_hash: str | None = None


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A judged (query, document) with no final grade yet; `awaiting` is second_rater, third_rater or
    reviewer, `reason` says why in words (with the grades)."""

    query_id: int
    document_id: int
    reason: str
    awaiting: str = "reviewer"


@dataclass(frozen=True, slots=True)
class Consolidated:
    labels: list[FinalLabel]
    unresolved: list[Unresolved]


@dataclass(frozen=True, slots=True)
class _Graded:
    grade: int
    kind: str
    updated: Any  # datetime
    content_hash: str
    pk: int


def labels_consolidated(*, golden_set: GoldenSet, query_ids: Collection[int] | None = None) -> Consolidated:
    """Per judged (query, document) of the set's active queries (all, or `query_ids`), the final grade
    with its method, or why there is none yet. Retired queries are left out.

    The rules are `labeling.disputes.consolidate`'s (docs/agreement.md), over the current grades of the
    live assignments (reassigned ones and gold checks make no label), with these additions:
    - a re-judgment (a `rejudge` assignment, for changed content) replaces the earlier grades, and an
      adjudication older than it no longer counts;
    - a (query, document) nobody judged keeps its frozen label (method `frozen`), so a golden file
      imported and frozen without changes comes back unchanged;
    - two disagreeing grades with no third rater coming (the dual assignments are done and no live third
      assignment covers the document) wait for a reviewer, not for a third rater.
    """
    labels: list[FinalLabel] = []
    unresolved: list[Unresolved] = []
    for (query_id, document_id), label in sorted(_pair_labels(golden_set, query_ids).items()):
        if label.grade is not None and label.method is not None:
            labels.append(FinalLabel(query_id, document_id, label.grade, label.method, label.content_hash))
        else:
            unresolved.append(
                Unresolved(query_id, document_id, label.reason or "unresolved", label.awaiting or "reviewer")
            )
    return Consolidated(labels=labels, unresolved=unresolved)


@dataclass(frozen=True, slots=True)
class PairLabel:
    """One (query, document)'s consolidation: the final grade and method, or the reason and who acts."""

    grade: int | None
    method: str | None
    reason: str | None = None
    awaiting: str | None = None
    content_hash: str | None = None
    grades: tuple[int, ...] = ()  # the grades it was decided on (after a re-judgment: that grade only)


def _pair_labels(
    golden_set: GoldenSet, query_ids: Collection[int] | None
) -> dict[tuple[int, int], PairLabel]:
    rubric = golden_set.rubric
    scale = Scale(rubric.scale_min, rubric.scale_max)
    queries = Query.objects.filter(golden_set=golden_set, status=Query.Status.ACTIVE)
    if query_ids is not None:
        queries = queries.filter(pk__in=list(query_ids))
    live = Assignment.objects.filter(query__in=queries).exclude(status=Assignment.Status.REASSIGNED)
    dual: set[int] = set()
    done: dict[int, set[str]] = {}
    for query_id, kind, status in live.values_list("query_id", "kind", "status"):
        if kind == Assignment.Kind.SECOND:
            dual.add(query_id)
        if status == Assignment.Status.DONE:
            done.setdefault(query_id, set()).add(kind)
    third_scope = set(
        live.filter(kind=Assignment.Kind.THIRD).values_list("scope__query_id", "scope__document_id")
    )
    graded: dict[tuple[int, int], list[_Graded]] = {}
    rows = (
        Judgment.objects.filter(assignment__in=live.exclude(kind=Assignment.Kind.GOLD))
        .order_by()
        .values_list(
            "assignment__query_id",
            "document_id",
            "grade",
            "assignment__kind",
            "updated",
            "content_hash",
            "pk",
        )
    )
    for query_id, document_id, grade, kind, updated, digest, pk in rows:
        graded.setdefault((query_id, document_id), []).append(_Graded(grade, kind, updated, digest, pk))
    adjudications: dict[tuple[int, int], tuple[int, Any, str]] = {}
    for query_id, document_id, grade, at, digest in (
        Adjudication.objects.filter(query__in=queries)
        .order_by("at", "id")
        .values_list("query_id", "document_id", "grade", "at", "content_hash")
    ):
        adjudications[(query_id, document_id)] = (grade, at, digest)  # the newest wins
    out: dict[tuple[int, int], PairLabel] = {}
    frozen = FrozenLabel.objects.filter(query__in=queries).values_list("query_id", "document_id", "grade")
    for query_id, document_id, grade in frozen:
        out[(query_id, document_id)] = PairLabel(grade, FROZEN)
    for pair in graded.keys() | adjudications.keys():
        out[pair] = _pair_label(
            graded.get(pair, []),
            adjudications.get(pair),
            expected=2 if pair[0] in dual else 1,
            third_coming=pair in third_scope
            or not {Assignment.Kind.PRIMARY, Assignment.Kind.SECOND} <= done.get(pair[0], set()),
            scale=scale,
        )
    return out


def _pair_label(
    graded: list[_Graded],
    adjudication: tuple[int, Any, str] | None,
    *,
    expected: int,
    third_coming: bool,
    scale: Scale,
) -> PairLabel:
    rejudged = [g for g in graded if g.kind == Assignment.Kind.REJUDGE]
    if rejudged:
        latest = max(rejudged, key=lambda g: (g.updated, g.pk))
        basis, expected = [latest], 1
        if adjudication is not None and adjudication[1] < latest.updated:
            adjudication = None  # decided on the content before it changed
    else:
        basis = sorted(graded, key=lambda g: g.pk)  # in the order they were first given: a stable reason
    grades = tuple(g.grade for g in basis)
    try:
        final = consolidate(
            grades, adjudication=adjudication[0] if adjudication else None, expected=expected, scale=scale
        )
    except ValueError as exc:  # a grade off the current rubric's scale (the rubric changed since)
        return PairLabel(None, None, f"cannot consolidate: {exc}", "reviewer", grades=grades)
    if final.grade is not None:
        if final.method == "adjudicated" and adjudication is not None:
            digest = adjudication[2] or None
        else:
            digest = _judged_hash(basis)
        return PairLabel(final.grade, final.method, content_hash=digest, grades=grades)
    reason, awaiting = final.unresolved_reason, final.awaiting
    if awaiting == "third_rater" and not third_coming:
        reason = f"{reason.removesuffix(': awaiting third rater') if reason else 'grades disagree'}: "
        reason += "no third rater is available, a reviewer decides"
        awaiting = "reviewer"
    return PairLabel(None, None, reason, awaiting, grades=grades)


def _judged_hash(basis: list[_Graded]) -> str | None:
    """The content the grades were given on; when they were given on different content, the earliest
    (so that the label reads as stale against the current content)."""
    known = sorted((g for g in basis if g.content_hash), key=lambda g: (g.updated, g.pk))
    return known[0].content_hash if known else None
