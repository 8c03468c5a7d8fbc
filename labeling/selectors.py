"""Reads for the labeling pages. Each page's data comes from a fixed number of queries (no N+1)."""

from __future__ import annotations

import functools
import gc
import hashlib
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, NamedTuple, ParamSpec, TypeVar

from django.db.models import Count, F, Func, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from assay.charts import BarChart, bar_chart
from assay.golden.model import Scale
from assay.labels.agreement import (
    AgreementReport,
    Figure,
    QueryAgreement,
    RaterFigures,
    Rating,
    agreement_compute,
)
from assay.labels.disputes import consolidate
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    DisputeCheck,
    Document,
    FrozenLabel,
    GoldenSet,
    GoldItem,
    Judgment,
    LabelProposal,
    Query,
    TierMove,
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
    final: PairLabel | None = None  # the consolidated label and how it was reached (None: not judged)
    gold: int | None = None  # the known answer, when the document is a gold item of the query


def query_review_get(*, query: Query) -> list[ReviewRow]:
    """Everything about one query's pool, for reviewers: provenance, frozen label, every rater's grade
    and note with its history, the consolidated label and the gold answer."""
    frozen = dict(FrozenLabel.objects.filter(query=query).values_list("document_id", "grade"))
    finals = {d: label for (_, d), label in _pair_labels(query.golden_set, [query.pk]).items()}
    gold = dict(GoldItem.objects.filter(query=query).values_list("document_id", "grade"))
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
    return [
        ReviewRow(
            c,
            frozen.get(c.document_id),
            judgments.get(c.document_id, []),
            finals.get(c.document_id),
            gold.get(c.document_id),
        )
        for c in candidates
    ]


# --- consolidated labels (issue 4) ----------------------------------------------------------------

FROZEN = "frozen"  # a label carried over from the set's current frozen labels: nothing judged since
REJUDGE = str(Assignment.Kind.REJUDGE)
P = ParamSpec("P")
T = TypeVar("T")


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


class _Graded(NamedTuple):
    pk: int  # creation order; first, so that a plain sort orders by it
    grade: int
    kind: str
    content_hash: str
    updated: Any  # datetime; fetched for re-judgments only (they are compared with adjudications)


def _gc_paused(func: Callable[P, T]) -> Callable[P, T]:
    """Run `func` with the cyclic garbage collector paused. These reads build a few hundred thousand
    small tuples and dataclasses (no reference cycles among them); while they pile up, the collector
    keeps re-traversing everything alive, which doubled the time of consolidating 40,000 documents.
    Reference counting still frees everything; collection resumes afterwards (and in nested calls the
    outermost one resumes it)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        paused = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if paused:
                gc.enable()

    return wrapper


# The same few inputs come back for every document (two grades of 0..3, expected 1 or 2): computing each
# once keeps consolidating a set of 40,000 documents well under a second.
_consolidate = functools.lru_cache(maxsize=8192)(consolidate)


@_gc_paused
def labels_consolidated(*, golden_set: GoldenSet, query_ids: Collection[int] | None = None) -> Consolidated:
    """Per judged (query, document) of the set's active queries (all, or `query_ids`), the final grade
    with its method, or why there is none yet. Retired queries are left out.

    The rules are `assay.labels.disputes.consolidate`'s (docs/agreement.md), over the current grades of the
    live assignments (reassigned ones and gold checks make no label), with these additions:
    - a re-judgment (a `rejudge` assignment, for changed content) replaces the earlier grades, and an
      adjudication older than it no longer counts;
    - a (query, document) nobody judged keeps its frozen label (method `frozen`), so a golden file
      imported and frozen without changes comes back unchanged;
    - two disagreeing grades with no third rater coming (the dual assignments are done and no live third
      assignment covers the document) wait for a reviewer, not for a third rater;
    - a single rater's grade (`single`) that differs from the frozen label keeps the frozen label: it is
      a proposed change (`LabelProposal`) until a reviewer accepts it, which is an adjudication. Dual
      work (agreed, median) and adjudications change labels as before. Calibration rounds make none.
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
    held: int | None = None  # a single rater's grade that overturns the frozen label, held for review


def _pair_labels(
    golden_set: GoldenSet, query_ids: Collection[int] | None
) -> dict[tuple[int, int], PairLabel]:
    rubric = golden_set.rubric
    scale = Scale(rubric.scale_min, rubric.scale_max)
    queries = Query.objects.filter(golden_set=golden_set, status=Query.Status.ACTIVE)
    if query_ids is not None:
        queries = queries.filter(pk__in=list(query_ids))
    live = (
        Assignment.objects.everyday().filter(query__in=queries).exclude(status=Assignment.Status.REASSIGNED)
    )
    dual: set[int] = set()
    done: dict[int, set[str]] = {}
    counted: dict[int, tuple[int, str]] = {}  # assignment -> (query, kind), for the ones that make labels
    for pk, query_id, kind, status in live.values_list("pk", "query_id", "kind", "status"):
        if kind == Assignment.Kind.SECOND:
            dual.add(query_id)
        if status == Assignment.Status.DONE:
            done.setdefault(query_id, set()).add(kind)
        if kind != Assignment.Kind.GOLD:
            counted[pk] = (query_id, kind)
    third_scope = set(
        live.filter(kind=Assignment.Kind.THIRD).values_list("scope__query_id", "scope__document_id")
    )
    # Plain columns, no joins and no timestamps: this reads every judgment of the set.
    rows = (
        Judgment.objects.filter(assignment__in=live.exclude(kind=Assignment.Kind.GOLD))
        .order_by()
        .values_list("assignment_id", "document_id", "grade", "content_hash", "pk")
    )
    rejudged_at = dict(
        Judgment.objects.filter(assignment__in=live.filter(kind=Assignment.Kind.REJUDGE)).values_list(
            "pk", "updated"
        )
    )
    graded: dict[tuple[int, int], list[_Graded]] = defaultdict(list)
    for assignment_id, document_id, grade, digest, pk in rows:
        query_id, kind = counted[assignment_id]
        graded[(query_id, document_id)].append(_Graded(pk, grade, kind, digest, rejudged_at.get(pk)))
    adjudications: dict[tuple[int, int], tuple[int, Any, str]] = {}
    for query_id, document_id, grade, at, digest in (
        Adjudication.objects.filter(query__in=queries)
        .order_by("at", "id")
        .values_list("query_id", "document_id", "grade", "at", "content_hash")
    ):
        adjudications[(query_id, document_id)] = (grade, at, digest)  # the newest wins
    out: dict[tuple[int, int], PairLabel] = {}
    frozen: dict[tuple[int, int], int] = {}
    for query_id, document_id, grade in FrozenLabel.objects.filter(query__in=queries).values_list(
        "query_id", "document_id", "grade"
    ):
        frozen[(query_id, document_id)] = grade
        out[(query_id, document_id)] = PairLabel(grade, FROZEN)
    dual_done = {q for q, kinds in done.items() if {Assignment.Kind.PRIMARY, Assignment.Kind.SECOND} <= kinds}
    with_third = {query_id for query_id, kind in counted.values() if kind == Assignment.Kind.THIRD}
    for pair in graded.keys() | adjudications.keys():
        grades = graded.get(pair, [])
        out[pair] = _pair_label(
            third_counted(grades, key=lambda g: (g.kind, g.grade)) if pair[0] in with_third else grades,
            adjudications.get(pair),
            expected=2 if pair[0] in dual else 1,
            third_coming=pair in third_scope or pair[0] not in dual_done,
            scale=scale,
            frozen=frozen.get(pair),
        )
    return out


KindGrade = tuple[str, int]
# The first two raters' assignments (labeling.services checks a query when both are done).
DUAL_KINDS = (Assignment.Kind.PRIMARY, Assignment.Kind.SECOND)


def third_counted(items: list[T], *, key: Callable[[T], KindGrade]) -> list[T]:
    """One document's grades without the third rater's where the first two raters do not disagree.

    A third rater is there for the documents the first two disagree on, and only there does their
    grade count. A rater who checked the query's gold items before becoming its third rater keeps
    them in their (third) assignment's scope; their grades on those stay gold checks, as they were:
    they make no label and show in no reviewer column, but count in the agreement figures."""
    dual = {grade for kind, grade in map(key, items) if kind in DUAL_KINDS}
    if len(dual) > 1:
        return items
    return [item for item in items if key(item)[0] != Assignment.Kind.THIRD]


def _pair_label(
    graded: list[_Graded],
    adjudication: tuple[int, Any, str] | None,
    *,
    expected: int,
    third_coming: bool,
    scale: Scale,
    frozen: int | None,
) -> PairLabel:
    rejudged = [g for g in graded if g.kind == REJUDGE]
    if rejudged:
        latest = max(rejudged, key=lambda g: (g.updated, g.pk))
        basis, expected = [latest], 1
        if adjudication is not None and adjudication[1] < latest.updated:
            adjudication = None  # decided on the content before it changed
    else:
        basis = sorted(graded)  # by pk: in the order they were first given, for a stable reason
    grades = tuple([g.grade for g in basis])
    try:
        final = _consolidate(
            grades, adjudication=adjudication[0] if adjudication else None, expected=expected, scale=scale
        )
    except ValueError as exc:  # a grade off the current rubric's scale (the rubric changed since)
        return PairLabel(None, None, f"cannot consolidate: {exc}", "reviewer", grades=grades)
    if final.grade is not None and final.method == "single" and frozen is not None and final.grade != frozen:
        # One rater's overturn of a frozen label is a proposal (LabelProposal) until a reviewer accepts
        # it (an adjudication): the label stays what was frozen.
        return PairLabel(frozen, FROZEN, grades=grades, held=final.grade)
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
    """The content the grades were given on; when they were given on different content, the first
    judgment's (so that the label reads as stale against the current content)."""
    known = [g for g in basis if g.content_hash]  # basis is in pk order
    return known[0].content_hash if known else None


# --- agreement dashboard, reviewer queue, adjudication page (issue 4) ------------------------------


def labels_summary_get(*, golden_set: GoldenSet) -> dict[str, Any]:
    """How the set's labels stand: final labels per method and unresolved ones per who acts next."""
    consolidated = labels_consolidated(golden_set=golden_set)
    methods: dict[str, int] = {}
    for label in consolidated.labels:
        methods[label.method] = methods.get(label.method, 0) + 1
    awaiting: dict[str, int] = {}
    for u in consolidated.unresolved:
        awaiting[u.awaiting] = awaiting.get(u.awaiting, 0) + 1
    return {
        "labels": len(consolidated.labels),
        "methods": dict(sorted(methods.items())),
        "unresolved": len(consolidated.unresolved),
        "awaiting": dict(sorted(awaiting.items())),
    }


@_gc_paused
def ratings_list(*, golden_set: GoldenSet) -> list[Rating]:
    """Every rater's current grade on the set's active queries, as agreement statistics take them.

    Reassigned work is left out; after a re-judgment of changed content only the re-judgment counts for
    that document (the earlier grades were given on other content). Gold checks count: they are
    independent grades of the same items.
    """
    assignments = {
        pk: (external_id, username, kind)
        for pk, external_id, username, kind in Assignment.objects.everyday()
        .filter(query__golden_set=golden_set, query__status=Query.Status.ACTIVE)
        .exclude(status=Assignment.Status.REASSIGNED)
        .values_list("pk", "query__external_id", "rater__username", "kind")
    }
    doc_ids = _doc_ids(golden_set)
    # Plain columns of one table; the names come from the two small maps above.
    rows = list(
        Judgment.objects.filter(assignment_id__in=list(assignments))
        .order_by()
        .values_list("assignment_id", "document_id", "grade", "time_spent_ms", "pk")
    )
    rejudge = [pk for pk, (_, _, kind) in assignments.items() if kind == Assignment.Kind.REJUDGE]
    latest_rejudge: dict[tuple[str, int], tuple[Any, int]] = {}  # (query, document) -> (updated, pk)
    for assignment_id, document_id, updated, pk in Judgment.objects.filter(
        assignment_id__in=rejudge
    ).values_list("assignment_id", "document_id", "updated", "pk"):
        key = (assignments[assignment_id][0], document_id)
        if key not in latest_rejudge or (updated, pk) > latest_rejudge[key]:
            latest_rejudge[key] = (updated, pk)
    keep_pk = {pk for _, pk in latest_rejudge.values()}
    out = []
    for assignment_id, document_id, grade, spent, pk in rows:
        external_id, rater, _ = assignments[assignment_id]
        if (external_id, document_id) in latest_rejudge and pk not in keep_pk:
            continue
        out.append(Rating(external_id, doc_ids[document_id], rater, grade, float(spent) if spent else None))
    return out


def _doc_ids(golden_set: GoldenSet) -> dict[int, str]:
    """Document pk -> doc id for the whole set: one scan, cheaper than a long IN list of pks."""
    return dict(Document.objects.filter(golden_set=golden_set).values_list("pk", "doc_id"))


@dataclass(frozen=True, slots=True)
class DisputedQuery:
    query: Query
    check: DisputeCheck | None  # the newest dispute decision, if any
    needs_reviewer: int  # documents only a reviewer can settle now
    awaiting_third: int


@dataclass(frozen=True, slots=True)
class RaterRow:
    figures: RaterFigures
    chart: BarChart


@dataclass(frozen=True, slots=True)
class AgreementDashboard:
    golden_set: GoldenSet
    report: AgreementReport
    thresholds: dict[str, Any]
    n_ratings: int
    distribution: BarChart  # every grade given, all raters
    raters: list[RaterRow]
    kappa_matrix: list[tuple[str, list[Figure | None]]]  # quadratic; None on the diagonal
    hard_queries: list[QueryAgreement]  # dual-labeled queries with a hard disagreement or flip, worst first
    disputed: list[DisputedQuery]


def _scale_labels(scale: Scale) -> list[int]:
    return list(range(scale.min, scale.max + 1))


@_gc_paused
def agreement_dashboard_get(*, golden_set: GoldenSet) -> AgreementDashboard:
    """All agreement figures of the set (`assay.labels.agreement.agreement_compute`) with what the page
    draws: grade distribution charts, the kappa matrix, the worst queries and the disputed ones."""
    rubric = golden_set.rubric
    scale = Scale(rubric.scale_min, rubric.scale_max)
    ratings = ratings_list(golden_set=golden_set)
    external = dict(golden_set.queries.values_list("pk", "external_id"))
    doc_ids = _doc_ids(golden_set)
    gold_rows = list(
        GoldItem.objects.filter(query__golden_set=golden_set, query__status=Query.Status.ACTIVE).values_list(
            "query__external_id", "document__doc_id", "grade"
        )
    )
    consolidated = labels_consolidated(golden_set=golden_set)
    final = {
        (external[label.query_id], doc_ids[label.document_id]): label.grade
        for label in consolidated.labels
        if label.method != FROZEN  # a carried-over label is no rater's consensus
    }
    report = agreement_compute(
        ratings,
        scale=scale,
        relevant_min_grade=golden_set.relevant_min_grade,
        gold={(q, d): g for q, d, g in gold_rows},
        final=final,
        hard_diff=golden_set.hard_diff,
    )
    labels = _scale_labels(scale)
    totals = dict.fromkeys(labels, 0)
    for r in ratings:
        totals[r.grade] += 1
    names = [r.rater for r in report.raters]
    matrix = report.kappa_matrix("quadratic")
    hard = [q for q in report.queries if q.hard_disagreements or q.relevance_flips]
    hard.sort(key=lambda q: (-(len(q.hard_disagreements) + len(q.relevance_flips)), q.query_id))
    return AgreementDashboard(
        golden_set=golden_set,
        report=report,
        thresholds={
            "hard_diff": golden_set.hard_diff,
            "min_dual_docs": golden_set.min_dual_docs,
            "min_exact": golden_set.min_exact,
            "max_mad": golden_set.max_mad,
        },
        n_ratings=len(ratings),
        distribution=bar_chart("Grades given, all raters", [(str(g), totals[g]) for g in labels]),
        raters=[
            RaterRow(
                r, bar_chart(f"Grades given by {r.rater}", [(str(g), r.distribution[g]) for g in labels])
            )
            for r in report.raters
        ],
        kappa_matrix=[(a, [None if a == b else matrix[a][b] for b in names]) for a in names],
        hard_queries=hard,
        disputed=review_queue_get(golden_set=golden_set, consolidated=consolidated).disputed,
    )


@dataclass(frozen=True, slots=True)
class QueueItem:
    query: Query
    document: Document
    reason: str
    awaiting: str


@dataclass(frozen=True, slots=True)
class ReviewQueue:
    disputed: list[DisputedQuery]
    needs_reviewer: list[QueueItem]  # documents only a reviewer can settle now (the first QUEUE_ROWS)
    awaiting_third: list[QueueItem]  # documents a third rater is (or will be) grading (the first QUEUE_ROWS)
    shadow: list[Query]  # every active shadow query, with its quarantine reason
    n_needs_reviewer: int
    n_awaiting_third: int


QUEUE_ROWS = 200  # documents listed per table; the page says how many more there are


@_gc_paused
def review_queue_get(*, golden_set: GoldenSet, consolidated: Consolidated | None = None) -> ReviewQueue:
    """What waits for the set's reviewers: disputed queries (the newest dispute decision says disputed
    and the query is still in shadow, or a document of it needs a reviewer), the documents that need a
    reviewer, those waiting for a third rater, and the shadow tier."""
    consolidated = consolidated or labels_consolidated(golden_set=golden_set)
    queries = {q.pk: q for q in golden_set.queries.filter(status=Query.Status.ACTIVE).order_by("external_id")}
    pending = [
        u
        for u in consolidated.unresolved
        if u.awaiting in ("reviewer", "third_rater") and u.query_id in queries
    ]
    pending.sort(key=lambda u: (queries[u.query_id].external_id, u.document_id))
    counts: dict[int, list[int]] = {}
    for u in pending:
        counts.setdefault(u.query_id, [0, 0])[0 if u.awaiting == "reviewer" else 1] += 1
    reviewer = [u for u in pending if u.awaiting == "reviewer"]
    third = [u for u in pending if u.awaiting == "third_rater"]
    shown = reviewer[:QUEUE_ROWS] + third[:QUEUE_ROWS]
    documents = Document.objects.in_bulk([u.document_id for u in shown])

    def items(unresolved: list[Unresolved]) -> list[QueueItem]:
        out = [
            QueueItem(queries[u.query_id], documents[u.document_id], u.reason, u.awaiting)
            for u in unresolved[:QUEUE_ROWS]
        ]
        return sorted(out, key=lambda i: (i.query.external_id, i.document.doc_id))

    latest: dict[int, DisputeCheck] = {}
    for check in DisputeCheck.objects.filter(query__in=list(queries)).order_by("at", "id"):
        latest[check.query_id] = check
    disputed = [
        DisputedQuery(q, latest.get(pk), *counts.get(pk, [0, 0]))
        for pk, q in queries.items()
        if (pk in latest and latest[pk].disputed and q.tier == Query.Tier.SHADOW) or counts.get(pk, [0])[0]
    ]
    return ReviewQueue(
        disputed=disputed,
        needs_reviewer=items(reviewer),
        awaiting_third=items(third),
        shadow=[q for q in queries.values() if q.tier == Query.Tier.SHADOW],
        n_needs_reviewer=len(reviewer),
        n_awaiting_third=len(third),
    )


@dataclass(frozen=True, slots=True)
class RaterGrade:
    grade: int
    note: str


@dataclass(frozen=True, slots=True)
class AdjudicationRow:
    document: Document
    grades: list[RaterGrade | None]  # one per column of the page, None where that rater has no grade
    final: PairLabel
    adjudications: list[Adjudication]  # newest first
    gold: int | None

    @property
    def needs_reviewer(self) -> bool:
        return self.final.awaiting == "reviewer"

    @property
    def disagree(self) -> bool:
        return len(set(self.final.grades)) > 1


@dataclass(frozen=True, slots=True)
class AdjudicationPage:
    query: Query
    columns: list[str]  # "First rater", "Second rater", ...: roles, never names, systems or ranks
    rows: list[AdjudicationRow]
    checks: list[DisputeCheck]  # newest first
    moves: list[TierMove]  # newest first


COLUMN_NAMES: dict[str, str] = {
    Assignment.Kind.PRIMARY: "First rater",
    Assignment.Kind.SECOND: "Second rater",
    Assignment.Kind.THIRD: "Third rater",
    Assignment.Kind.REJUDGE: "Re-judgment",
}


def adjudication_page_get(*, query: Query) -> AdjudicationPage:
    """Each judged document of the query with every rater's grade and note side by side, its final label
    and adjudications: what a reviewer decides from. Documents awaiting a reviewer come first, then the
    other disagreements; within those, by document id (never by rank, which would hint at the systems).

    Candidate provenance and ranks are not fetched at all.
    """
    assignments = [
        a
        for a in Assignment.objects.filter(query=query)
        .exclude(status=Assignment.Status.REASSIGNED)
        .exclude(kind=Assignment.Kind.GOLD)
        if a.kind in COLUMN_NAMES
    ]
    order = list(COLUMN_NAMES)
    assignments.sort(key=lambda a: (order.index(a.kind), a.pk))
    columns: list[str] = []
    for a in assignments:
        name = COLUMN_NAMES[a.kind]
        same = sum(1 for c in columns if c.startswith(name))
        columns.append(f"{name} {same + 1}" if same else name)
    position = {a.pk: i for i, a in enumerate(assignments)}
    grades: dict[int, list[RaterGrade | None]] = {}
    for j in Judgment.objects.filter(assignment_id__in=list(position)).only(
        "assignment_id", "document_id", "grade", "note"
    ):
        grades.setdefault(j.document_id, [None] * len(assignments))[position[j.assignment_id]] = RaterGrade(
            j.grade, j.note
        )
    for row in grades.values():
        # A third rater's gold checks (grades where the first two agree) are not third grades.
        given = [i for i, g in enumerate(row) if g is not None]
        counted = set(third_counted(given, key=lambda i: (assignments[i].kind, row[i].grade)))  # type: ignore[union-attr]
        for i in set(given) - counted:
            row[i] = None
    adjudications: dict[int, list[Adjudication]] = {}
    for adj in Adjudication.objects.filter(query=query).select_related("reviewer").order_by("-at", "-id"):
        adjudications.setdefault(adj.document_id, []).append(adj)
    finals = {d: label for (_, d), label in _pair_labels(query.golden_set, [query.pk]).items()}
    gold = dict(GoldItem.objects.filter(query=query).values_list("document_id", "grade"))
    wanted = set(grades) | set(adjudications)
    documents = Document.objects.in_bulk(list(wanted))
    rows = [
        AdjudicationRow(
            document=documents[d],
            grades=grades.get(d, [None] * len(assignments)),
            final=finals.get(d) or PairLabel(None, None, "not judged", None),
            adjudications=adjudications.get(d, []),
            gold=gold.get(d),
        )
        for d in wanted
    ]
    rows.sort(
        key=lambda r: (not r.needs_reviewer, r.final.grade is not None, not r.disagree, r.document.doc_id)
    )
    return AdjudicationPage(
        query=query,
        columns=columns,
        rows=rows,
        checks=list(DisputeCheck.objects.filter(query=query).order_by("-at", "-id")),
        moves=list(TierMove.objects.filter(query=query).select_related("by").order_by("-at", "-id")),
    )


# --- proposed label changes ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProposalRow:
    proposal: LabelProposal
    others: list[tuple[str, int]]  # other grades on the same document: (whose, in words; grade)


@dataclass(frozen=True, slots=True)
class ProposalsPage:
    pending: list[tuple[Query, list[ProposalRow]]]  # by query external id
    n_pending: int
    decided: list[LabelProposal]  # the newest decisions first (the first DECIDED_ROWS)


DECIDED_ROWS = 50
OTHER_GRADE_NAMES: dict[str, str] = {
    Assignment.Kind.PRIMARY: "first rater",
    Assignment.Kind.SECOND: "second rater",
    Assignment.Kind.THIRD: "third rater",
    Assignment.Kind.REJUDGE: "re-judgment",
    Assignment.Kind.GOLD: "gold check",
    Assignment.Kind.CALIBRATION: "calibration round",
}


def proposals_pending_count(*, golden_set: GoldenSet) -> int:
    return LabelProposal.objects.filter(
        query__golden_set=golden_set, query__status=Query.Status.ACTIVE, status=LabelProposal.Status.PENDING
    ).count()


def proposals_page_get(*, golden_set: GoldenSet) -> ProposalsPage:
    """The set's pending proposals, grouped by query, each with the other grades given on the same
    document (gold checks, calibration rounds, earlier work): the agreement a reviewer weighs it with."""
    pending = list(
        LabelProposal.objects.filter(
            query__golden_set=golden_set,
            query__status=Query.Status.ACTIVE,
            status=LabelProposal.Status.PENDING,
        )
        .select_related("query", "document", "rater")
        .order_by("query__external_id", "document__doc_id", "id")
    )
    others: dict[tuple[int, int], list[tuple[int, str, int]]] = defaultdict(list)
    for judgment_id, query_id, document_id, kind, grade in (
        Judgment.objects.filter(
            assignment__query__in={p.query_id for p in pending},
            document__in={p.document_id for p in pending},
        )
        .exclude(assignment__status=Assignment.Status.REASSIGNED)
        .values_list("pk", "assignment__query_id", "document_id", "assignment__kind", "grade")
    ):
        others[(query_id, document_id)].append((judgment_id, OTHER_GRADE_NAMES.get(kind, kind), grade))
    grouped: dict[int, tuple[Query, list[ProposalRow]]] = {}
    for p in pending:
        context = [
            (who, g) for j, who, g in others.get((p.query_id, p.document_id), []) if j != p.judgment_id
        ]
        grouped.setdefault(p.query_id, (p.query, []))[1].append(ProposalRow(p, sorted(context)))
    decided = list(
        LabelProposal.objects.filter(query__golden_set=golden_set)
        .exclude(status=LabelProposal.Status.PENDING)
        .select_related("query", "document", "rater", "decided_by")
        .order_by("-decided_at", "-id")[:DECIDED_ROWS]
    )
    return ProposalsPage(pending=list(grouped.values()), n_pending=len(pending), decided=decided)
