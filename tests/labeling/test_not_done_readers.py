"""Every reader of labels applies the one rule of `labeling.selectors.grade_counts`: a single rater's
grades count once the rater marks the query done; the dual sample counts as it is given. The agreement
figures' ratings, the set page's label counts and the query page say so (the freeze's side is in
tests/golden_io/test_freeze_not_done.py)."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, GoldenSet, Query
from labeling.selectors import NOT_DONE, grade_counts, labels_consolidated, ratings_list
from tests import factories

pytestmark = pytest.mark.django_db


def _grade(assignment: Assignment, grades: list[int]) -> None:
    for candidate, grade in zip(assignment.query.candidates.order_by("best_rank"), grades, strict=False):
        services.judgment_submit(
            assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=grade
        )


def test_the_rule_holds_back_only_unfinished_single_rater_work() -> None:
    kinds = [k.value for k in Assignment.Kind if k != Assignment.Kind.CALIBRATION]
    statuses = [Assignment.Status.OPEN, Assignment.Status.DONE]
    for kind, status, dual in itertools.product(kinds, statuses, (False, True)):
        single = kind == "rejudge" or (kind == "primary" and not dual)
        expected = kind != "gold" and (status == "done" or not single)
        assert grade_counts(kind, status, dual=dual) is expected, (kind, status, dual)


@pytest.fixture
def single(golden_set: GoldenSet, alice: User) -> Assignment:
    query = factories.pooled_query(golden_set, 4, external_id="q-0401")
    return factories.AssignmentFactory.create(query=query, rater=alice)


def test_the_agreement_ratings_take_a_single_raters_grades_once_done_and_the_dual_sample_as_given(
    golden_set: GoldenSet, single: Assignment, bob: User
) -> None:
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    dual_query = factories.pooled_query(golden_set, 1, external_id="q-0500")
    first = factories.AssignmentFactory.create(query=dual_query, rater=bob, kind="primary")
    second = factories.AssignmentFactory.create(query=dual_query, rater=carol, kind="second")
    _grade(single, [3, 1])
    _grade(first, [2])
    _grade(second, [2])

    assert sorted((r.query_id, r.rater) for r in ratings_list(golden_set=golden_set)) == [
        ("q-0500", "bob"),
        ("q-0500", "carol"),
    ]
    _grade(single, [3, 1, 0, 0])
    services.assignment_done(assignment_id=single.pk, rater=single.rater)
    assert sorted(r.grade for r in ratings_list(golden_set=golden_set) if r.query_id == "q-0401") == [
        0,
        0,
        1,
        3,
    ]


def test_the_set_page_counts_and_the_query_page_name_work_not_done(
    golden_set: GoldenSet, single: Assignment, rita: User, client: Client
) -> None:
    _grade(single, [3, 1])
    query: Query = single.query
    assert [(n.grades, n.label) for n in labels_consolidated(golden_set=golden_set).not_done] == [
        ((3,), None),
        ((1,), None),
    ]
    client.force_login(rita)

    summary = client.get(reverse("labeling:labels_summary", args=[golden_set.slug])).content.decode()
    assert "Consolidated labels: 0" in summary and "unresolved: 0" in summary
    assert "graded on work not marked done, not counted yet: 2" in summary
    page = client.get(reverse("labeling:query_review", args=[golden_set.slug, query.pk])).content.decode()
    assert page.count(NOT_DONE) == 2

    _grade(single, [3, 1, 0, 0])
    services.assignment_done(assignment_id=single.pk, rater=single.rater)

    summary = client.get(reverse("labeling:labels_summary", args=[golden_set.slug])).content.decode()
    assert "Consolidated labels: 4 (single 4)" in summary and "not marked done" not in summary
    page = client.get(reverse("labeling:query_review", args=[golden_set.slug, query.pk])).content.decode()
    assert NOT_DONE not in page
