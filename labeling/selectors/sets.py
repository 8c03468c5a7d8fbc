"""Reviewer reads of a golden set: the sets a user reviews, the set's queries with their progress, and
one query's pool with provenance, every grade, the final label and the gold answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet

from assay.golden.model import JUDGE
from labeling.models import (
    Assignment,
    Candidate,
    CantJudgeMark,
    FrozenLabel,
    GoldenSet,
    GoldItem,
    Judgment,
    JudgmentEvent,
    Query,
)
from labeling.roles import reviewed_sets
from labeling.selectors.grading import count_subquery
from labeling.selectors.labels import PairLabel, _pair_labels


def golden_set_list(*, user: Any) -> QuerySet[GoldenSet]:
    """The sets `user` reviews (`labeling.roles.reviewed_sets`; admins: all of them), with query counts."""
    sets = reviewed_sets(user).select_related("rubric")
    return sets.annotate(n_queries=Count("queries", distinct=True)).order_by("slug")


_LIVE = Assignment.objects.filter(query_id=OuterRef("pk")).exclude(status=Assignment.Status.REASSIGNED)
_OPEN = _LIVE.filter(status=Assignment.Status.OPEN)
# The set page's "Assignments" filter: what a query's live (not reassigned) assignments say.
QUERY_PROGRESS: dict[str, tuple[str, Q]] = {
    "unassigned": ("unassigned", ~Q(Exists(_LIVE))),
    "open": ("being graded", Q(Exists(_OPEN))),
    "done": ("all done", Q(Exists(_LIVE)) & ~Q(Exists(_OPEN))),
}


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


def golden_set_strata(*, golden_set: GoldenSet) -> list[str]:
    """The strata the set's active queries name, in order (a query without one names none): what a form
    offers where a stratum is chosen."""
    strata = golden_set.queries.filter(status=Query.Status.ACTIVE).exclude(stratum="")
    return list(strata.order_by("stratum").values_list("stratum", flat=True).distinct())


@dataclass(frozen=True, slots=True)
class ReviewRow:
    candidate: Candidate
    frozen: int | None
    judgments: list[Judgment]
    final: PairLabel | None = None  # the consolidated label and how it was reached (None: not judged)
    gold: int | None = None  # the known answer, when the document is a gold item of the query
    cant_judge: tuple[CantJudgeMark, ...] = ()  # raters' can't-judge marks with reasons: not grades
    # When a judge decided the frozen label (`FrozenLabel.source`): its name ("" when the file named none).
    frozen_judge: str | None = None


def _by_document(
    model: Any, query: Query, history: dict[tuple[int, int], list[JudgmentEvent]]
) -> dict[int, list[Any]]:
    """A query's grades (Judgment) or can't-judge marks (CantJudgeMark) by document, each with its rater
    and its `history` of events, in assignment kind then assignment order."""
    rows: dict[int, list[Any]] = {}
    for row in (
        model.objects.filter(assignment__query=query)
        .select_related("assignment__rater")
        .order_by("assignment__kind", "assignment_id")
    ):
        row.history = history.get((row.assignment_id, row.document_id), [])
        rows.setdefault(row.document_id, []).append(row)
    return rows


def query_review_get(*, query: Query) -> list[ReviewRow]:
    """Everything about one query's pool, for reviewers: provenance, frozen label, every rater's grade
    or can't-judge mark and note with its history (`history` on each: the document's events in that
    assignment, grades a mark or an undo replaced included), the consolidated label and the gold answer.
    A frozen label a judge decided says so, with the judge's name."""
    frozen: dict[int, int] = {}
    frozen_judge: dict[int, str] = {}
    for document_id, grade, source, judge_name in FrozenLabel.objects.filter(query=query).values_list(
        "document_id", "grade", "source", "judge_name"
    ):
        frozen[document_id] = grade
        if source == JUDGE:
            frozen_judge[document_id] = judge_name
    finals = {d: label for (_, d), label in _pair_labels(query.golden_set, [query.pk]).items()}
    gold = dict(GoldItem.objects.filter(query=query).values_list("document_id", "grade"))
    history: dict[tuple[int, int], list[JudgmentEvent]] = {}
    for event in JudgmentEvent.objects.filter(assignment__query=query).order_by("at", "id"):
        history.setdefault((event.assignment_id, event.document_id), []).append(event)
    judgments: dict[int, list[Judgment]] = _by_document(Judgment, query, history)
    marks: dict[int, list[CantJudgeMark]] = _by_document(CantJudgeMark, query, history)
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
            tuple(marks.get(c.document_id, ())),
            frozen_judge.get(c.document_id),
        )
        for c in candidates
    ]
