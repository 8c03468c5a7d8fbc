"""What the agreement page, the review queue and the adjudication page show (docs/agreement.md, "In the
app"): the raters' current grades as agreement statistics take them, and what waits for reviewers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, OuterRef, Q, Subquery

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
from assay.memory import gc_paused
from labeling.models import (
    Adjudication,
    Assignment,
    DisputeCheck,
    Document,
    GoldenSet,
    GoldItem,
    Judgment,
    Query,
    TierMove,
)
from labeling.roles import raters_of
from labeling.selectors.labels import (
    FROZEN,
    Consolidated,
    PairLabel,
    Unresolved,
    _pair_labels,
    grade_counts,
    labels_consolidated,
    third_counted,
)


def labels_summary_get(*, golden_set: GoldenSet) -> dict[str, Any]:
    """How the set's labels stand: final labels per method, unresolved ones per who acts next, and the
    documents graded on single-rater work not marked done (not counted yet)."""
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
        "not_done": len(consolidated.not_done),
    }


@gc_paused()
def ratings_list(*, golden_set: GoldenSet) -> list[Rating]:
    """Every rater's current grade on the set's active queries, as agreement statistics take them.

    Reassigned work is left out, and so is single-rater work not marked done (its grades count toward
    nothing yet, `selectors.labels.grade_counts`); after a re-judgment of changed content only the
    re-judgment counts for that document (the earlier grades were given on other content). Gold checks
    count: they are independent grades of the same items.
    """
    live = list(
        Assignment.objects.everyday()
        .filter(query__golden_set=golden_set, query__status=Query.Status.ACTIVE)
        .exclude(status=Assignment.Status.REASSIGNED)
        .values_list("pk", "query_id", "query__external_id", "rater__username", "kind", "status")
    )
    dual = {query_id for _, query_id, _, _, kind, _ in live if kind == Assignment.Kind.SECOND}
    assignments = {
        pk: (external_id, username, kind)
        for pk, query_id, external_id, username, kind, status in live
        if kind == Assignment.Kind.GOLD or grade_counts(kind, status, dual=query_id in dual)
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
    thresholds: dict[str, Any]  # the set's dispute and reading thresholds, as its settings form takes them
    n_ratings: int
    distribution: BarChart  # every grade given, all raters
    raters: list[RaterRow]
    kappa_matrix: list[tuple[str, list[Figure | None]]]  # quadratic; None on the diagonal
    hard_queries: list[QueryAgreement]  # dual-labeled queries with a hard disagreement or flip, worst first
    disputed: list[DisputedQuery]


def _scale_labels(scale: Scale) -> list[int]:
    return list(range(scale.min, scale.max + 1))


@gc_paused()
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
    # The raters' consensus only: a judge's fill-in takes no part in agreement (judges=False).
    consolidated = labels_consolidated(golden_set=golden_set, judges=False)
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
        reading_thresholds=golden_set.reading_thresholds,
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
            **golden_set.reading_thresholds.to_dict(),
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
    needs_reviewer: list[QueueItem]  # documents only a reviewer can settle now
    awaiting_third: list[QueueItem]  # documents a third rater is (or will be) grading
    shadow: list[Query]  # every active shadow query, with its quarantine reason


@gc_paused()
def review_queue_get(*, golden_set: GoldenSet, consolidated: Consolidated | None = None) -> ReviewQueue:
    """What waits for the set's reviewers: disputed queries (the newest dispute decision says disputed
    and the query is still in shadow, or a document of it needs a reviewer), the documents that need a
    reviewer, those waiting for a third rater, and the shadow tier.

    Without `consolidated`, only the documents with a disagreement are consolidated (`_disagreeing`):
    only they can wait for a third rater or a reviewer, and the rest of a large set would cost the page
    seconds for nothing."""
    if consolidated is None:
        pairs = _disagreeing(golden_set)
        consolidated = labels_consolidated(  # disputes are the humans': no judge fill-ins
            golden_set=golden_set,
            query_ids={q for q, _ in pairs},
            document_ids={d for _, d in pairs},
            judges=False,
        )
    active = golden_set.queries.filter(status=Query.Status.ACTIVE)
    latest: dict[int, DisputeCheck] = {}
    for check in DisputeCheck.objects.filter(query__in=active).order_by("at", "id"):
        latest[check.query_id] = check
    waiting = {u.query_id for u in consolidated.unresolved if u.awaiting in ("reviewer", "third_rater")}
    # Only the queries the queue lists are read: those with a waiting document, the shadow tier, and those
    # whose newest dispute decision says disputed.
    queries = {
        q.pk: q
        for q in active.filter(
            Q(pk__in=waiting)
            | Q(tier=Query.Tier.SHADOW)
            | Q(pk__in=[pk for pk, c in latest.items() if c.disputed])
        ).order_by("external_id")
    }
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
    # Every pending document (the pages list them a page at a time): their ids and titles only.
    documents = Document.objects.only("pk", "doc_id", "title").in_bulk([u.document_id for u in pending])

    def items(unresolved: list[Unresolved]) -> list[QueueItem]:
        out = [
            QueueItem(queries[u.query_id], documents[u.document_id], u.reason, u.awaiting) for u in unresolved
        ]
        return sorted(out, key=lambda i: (i.query.external_id, i.document.doc_id))

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
    )


def _disagreeing(golden_set: GoldenSet) -> set[tuple[int, int]]:
    """The (query, document) pairs of the dual-labeled queries whose live grades differ: the only ones
    that can wait for a third rater or a reviewer (docs/agreement.md, "Final labels"). A superset: a
    re-judgment or an adjudication may have settled them since. One grouped statement."""
    dual = Assignment.objects.filter(query__golden_set=golden_set, kind=Assignment.Kind.SECOND).exclude(
        status=Assignment.Status.REASSIGNED
    )
    return set(
        Judgment.objects.filter(assignment__query__in=dual.values("query_id"))
        .exclude(assignment__status=Assignment.Status.REASSIGNED)
        .exclude(assignment__kind__in=[Assignment.Kind.GOLD, Assignment.Kind.CALIBRATION])
        .values("assignment__query_id", "document_id")
        .annotate(grades=Count("grade", distinct=True))
        .filter(grades__gt=1)
        .values_list("assignment__query_id", "document_id")
    )


DISPUTE_NEXT_BATCH = 25  # candidates consolidated at a time while looking for the next disputed query


def dispute_next(*, golden_set: GoldenSet, after: Query) -> Query | None:
    """The disputed query after `after` in the review queue's order (by id, from the first again at the
    end), or None when no other query is disputed: where "Next dispute" goes.

    Disputed as the queue says: in shadow with its newest dispute decision disputed, or with a document
    only a reviewer can settle. Only the candidates are consolidated, a few at a time in order (the ones
    whose raters gave a document two different grades), so the answer costs the next few queries, not
    the set."""
    newest = (
        DisputeCheck.objects.filter(query_id=OuterRef("pk")).order_by("-at", "-id").values("disputed")[:1]
    )
    candidates = (
        golden_set.queries.filter(status=Query.Status.ACTIVE)
        .exclude(pk=after.pk)
        .filter(Q(tier=Query.Tier.SHADOW) | Q(pk__in={q for q, _ in _disagreeing(golden_set)}))
        .annotate(quarantined=Subquery(newest))
        .order_by("external_id")
        .only("pk", "external_id", "tier", "golden_set_id")
    )
    ordered = [q for q in candidates if q.external_id > after.external_id]
    ordered += [q for q in candidates if q.external_id <= after.external_id]
    for start in range(0, len(ordered), DISPUTE_NEXT_BATCH):
        batch = ordered[start : start + DISPUTE_NEXT_BATCH]
        unsure = [q.pk for q in batch if not (q.tier == Query.Tier.SHADOW and q.quarantined)]
        waiting = (
            {
                u.query_id
                for u in labels_consolidated(golden_set=golden_set, query_ids=unsure, judges=False).unresolved
                if u.awaiting == "reviewer"
            }
            if unsure
            else set()
        )
        for q in batch:
            if (q.tier == Query.Tier.SHADOW and q.quarantined) or q.pk in waiting:
                return q
    return None


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

    @property
    def disputed(self) -> bool:
        """Shown open on the adjudication page: the raters disagree, or there is no final grade yet.
        The others (agreed, single, frozen) are folded away."""
        return self.disagree or self.final.grade is None

    @property
    def state(self) -> str:
        """The page's filter: `decide` (a reviewer decides), `third` (a third rater grades it), `open`
        (no final grade otherwise), `decided` (adjudicated), `disagree` (settled by the rules), `agreed`."""
        if self.needs_reviewer:
            return "decide"
        if self.final.awaiting == "third_rater":
            return "third"
        if self.final.grade is None:
            return "open"
        if self.final.method == "adjudicated":
            return "decided"
        return "disagree" if self.disagree else "agreed"

    @property
    def spread(self) -> int:
        """Highest grade minus lowest (0 with fewer than two)."""
        return max(self.final.grades) - min(self.final.grades) if self.final.grades else 0


@dataclass(frozen=True, slots=True)
class AdjudicationPage:
    query: Query
    columns: list[str]  # "First rater", "Second rater", ...: roles, never names, systems or ranks
    removed: list[bool]  # per column: its rater no longer rates the set (`labeling.roles.raters_of`)
    rows: list[AdjudicationRow]
    checks: list[DisputeCheck]  # newest first
    moves: list[TierMove]  # newest first

    @property
    def headers(self) -> list[tuple[str, bool]]:
        """(column, whether its rater no longer rates the set), as the page heads its columns."""
        return list(zip(self.columns, self.removed, strict=True))


def adjudication_order(row: AdjudicationRow) -> tuple[bool, bool, bool, str]:
    """Documents awaiting a reviewer first, then those without a final grade, then the other
    disagreements; within those, by document id (never by rank, which would hint at the systems)."""
    return (not row.needs_reviewer, row.final.grade is not None, not row.disagree, row.document.doc_id)


ADJUDICATION_STATES: dict[str, str] = {
    "decide": "a reviewer decides",
    "third": "with a third rater",
    "open": "no final grade yet",
    "decided": "adjudicated",
    "disagree": "raters disagree, settled",
    "agreed": "raters agree",
}


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
    rows.sort(key=adjudication_order)
    rating = set(raters_of(query.golden_set).values_list("pk", flat=True))
    return AdjudicationPage(
        query=query,
        columns=columns,
        removed=[a.rater_id not in rating for a in assignments],
        rows=rows,
        checks=list(DisputeCheck.objects.filter(query=query).order_by("-at", "-id")),
        moves=list(TierMove.objects.filter(query=query).select_related("by").order_by("-at", "-id")),
    )
