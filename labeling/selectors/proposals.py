"""Proposed label changes for reviewers: single raters' overturns of frozen labels (docs/agreement.md,
"Proposed label changes")."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from labeling.models import Assignment, GoldenSet, Judgment, LabelProposal, Query


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
