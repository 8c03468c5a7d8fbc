"""A dual-labeled query graded the way the app grades one (no test here): two raters save their grades
through the services and mark the query done, so the dispute check runs as it does in the app."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User

from labeling import services
from labeling.models import Candidate, GoldenSet, Query
from tests import factories


def dual_graded(
    golden_set: GoldenSet,
    first: tuple[User, Sequence[int]],
    second: tuple[User, Sequence[int]],
    *,
    external_id: str,
    text: str = "",
) -> tuple[Query, list[Candidate]]:
    """A query pooled with one candidate per grade, graded by `first` (primary) and `second` (second rater),
    each a (rater, grades in the pool's rank order); returns the query as it stands after and its
    candidates in rank order."""
    n = len(first[1])
    query = factories.pooled_query(
        golden_set, n, external_id=external_id, text=text or f"query {external_id}"
    )
    candidates = list(query.candidates.order_by("best_rank"))
    for (rater, grades), kind in ((first, "primary"), (second, "second")):
        assignment = factories.AssignmentFactory.create(query=query, rater=rater, kind=kind)
        for candidate, grade in zip(candidates, grades, strict=True):
            services.judgment_submit(
                assignment_id=assignment.pk,
                rater=rater,
                candidate_id=candidate.pk,
                grade=grade,
                note="",
                time_spent_ms=2000,
            )
        services.assignment_done(assignment_id=assignment.pk, rater=rater)
    query.refresh_from_db()
    return query, candidates
