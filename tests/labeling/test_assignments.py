"""Assignments: whole queries, a deterministic dual sample to a different rater, nobody twice."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from labeling import services
from labeling.models import Assignment, GoldenSet, Query
from labeling.selectors import assignment_next
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def raters() -> list[User]:
    return [factories.UserFactory.create(username=f"r{i}", groups=["raters"]) for i in range(3)]


@pytest.fixture
def gset(raters: list[User]) -> GoldenSet:
    gs = factories.GoldenSetFactory.create(slug="hc", dual_rate=0.3, raters=raters)
    for _ in range(60):
        factories.pooled_query(gs, 2)
    factories.QueryFactory.create(golden_set=gs)  # no pool yet: not assigned
    factories.pooled_query(gs, 2, status=Query.Status.RETIRED)  # retired: not assigned
    return gs


def test_it_gives_every_pooled_query_one_primary_and_the_dual_sample_a_second_rater(gset: GoldenSet) -> None:
    report = services.assignments_create(golden_set=gset)
    assert report.primary == 60
    sampled = [q for q in gset.queries.all() if services.dual_sampled(golden_set=gset, query=q)]
    assert report.second == len([q for q in sampled if q.candidates.exists() and q.status == "active"])
    assert 8 <= report.second <= 28  # about 30% of 60
    for query in gset.queries.filter(status="active").exclude(candidates=None):
        kinds = sorted(query.assignments.values_list("kind", "rater_id"))
        raters = [r for _, r in kinds]
        assert len(set(raters)) == len(raters)  # never the same rater twice
        expected = ["primary", "second"] if query in sampled else ["primary"]
        assert [k for k, _ in kinds] == expected


def test_it_balances_the_load_between_raters(gset: GoldenSet, raters: list[User]) -> None:
    services.assignments_create(golden_set=gset)
    loads = [Assignment.objects.filter(rater=r).count() for r in raters]
    assert max(loads) - min(loads) <= 1


def test_assigning_again_changes_nothing(gset: GoldenSet) -> None:
    services.assignments_create(golden_set=gset)
    before = set(Assignment.objects.values_list("query_id", "rater_id", "kind"))
    again = services.assignments_create(golden_set=gset)
    assert (again.primary, again.second) == (0, 0)
    assert set(Assignment.objects.values_list("query_id", "rater_id", "kind")) == before


def test_the_dual_sample_is_deterministic(gset: GoldenSet) -> None:
    first = [services.dual_sampled(golden_set=gset, query=q) for q in gset.queries.order_by("id")]
    again = [services.dual_sampled(golden_set=gset, query=q) for q in gset.queries.order_by("id")]
    assert first == again
    gset.dual_rate = 0.0
    assert not any(services.dual_sampled(golden_set=gset, query=q) for q in gset.queries.all())
    gset.dual_rate = 1.0
    assert all(services.dual_sampled(golden_set=gset, query=q) for q in gset.queries.all())


def test_with_one_rater_the_second_assignment_is_reported_missing(raters: list[User]) -> None:
    gs = factories.GoldenSetFactory.create(slug="solo", dual_rate=1.0, raters=raters[:1])
    factories.pooled_query(gs, 1, external_id="q-1")
    report = services.assignments_create(golden_set=gs)
    assert (report.primary, report.second) == (1, 0)
    assert report.notes == ["query q-1: no rater left for a second assignment"]


def test_the_database_refuses_the_same_query_twice_for_one_rater(gset: GoldenSet, raters: list[User]) -> None:
    query = gset.queries.exclude(candidates=None).first()
    assert query is not None
    Assignment.objects.create(query=query, rater=raters[0])
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(query=query, rater=raters[0], kind="second")


def test_reassignment_keeps_the_old_row_and_refuses_a_rater_who_has_the_query(
    gset: GoldenSet, raters: list[User]
) -> None:
    query = gset.queries.exclude(candidates=None).first()
    assert query is not None
    first = Assignment.objects.create(query=query, rater=raters[0])
    second = Assignment.objects.create(query=query, rater=raters[1], kind="second")
    with pytest.raises(services.AssignmentError, match="r1 already has this query"):
        services.assignment_reassign(assignment=first, rater=raters[1])
    moved = services.assignment_reassign(assignment=first, rater=raters[2])
    first.refresh_from_db()
    assert (first.status, first.rater, moved.rater, moved.kind) == (
        "reassigned",
        raters[0],
        raters[2],
        "primary",
    )
    with pytest.raises(services.AssignmentError, match="already reassigned"):
        services.assignment_reassign(assignment=first, rater=raters[1])
    # Back to the first rater: their earlier row (and work) comes back instead of a second row.
    back = services.assignment_reassign(assignment=moved, rater=raters[0])
    assert back.pk == first.pk and back.status == "open"
    assert second.status == "open"
    assert Assignment.objects.filter(query=query).count() == 3


@pytest.mark.parametrize("kind", ["third", "rejudge", "gold"])
def test_a_scoped_assignment_is_never_reassigned_to_a_rater_who_held_the_query(
    gset: GoldenSet, raters: list[User], kind: str
) -> None:
    query = gset.queries.exclude(candidates=None).first()
    assert query is not None
    first_doc, second_doc = query.candidates.order_by("id")
    earlier = Assignment.objects.create(query=query, rater=raters[0])
    services.judgment_submit(assignment_id=earlier.pk, rater=raters[0], candidate_id=first_doc.pk, grade=0)
    services.assignment_reassign(assignment=earlier, rater=raters[1])
    scoped = Assignment.objects.create(query=query, rater=raters[2], kind=kind)
    scoped.scope.set([second_doc])
    # Reopening r0's earlier row would bring its grade on the other document along and mark the
    # scoped work done before r0 graded what it covers.
    refused = f"r0 held this query before .primary.; a {kind} assignment goes to a rater new"
    with pytest.raises(services.AssignmentError, match=refused):
        services.assignment_reassign(assignment=scoped, rater=raters[0])
    scoped.refresh_from_db()
    earlier.refresh_from_db()
    assert (scoped.status, scoped.rater, earlier.status) == ("open", raters[2], "reassigned")
    newcomer = factories.UserFactory.create(username="r3", groups=["raters"])
    moved = services.assignment_reassign(assignment=scoped, rater=newcomer)
    assert (moved.kind, moved.status, list(moved.scope.all())) == (kind, "open", [second_doc])


def test_the_next_assignment_follows_the_queue_wraps_around_and_skips_retired_queries(
    gset: GoldenSet, raters: list[User]
) -> None:
    queries = list(gset.queries.exclude(candidates=None).filter(status="active").order_by("id")[:4])
    mine = [Assignment.objects.create(query=q, rater=raters[0]) for q in queries]
    Assignment.objects.create(query=queries[0], rater=raters[1], kind="second")  # someone else's
    services.query_retire(query=queries[2], by=raters[2], reason="duplicate of another query")
    assert assignment_next(rater=raters[0]) == mine[0]
    assert assignment_next(rater=raters[0], after=mine[0].pk) == mine[1]
    assert assignment_next(rater=raters[0], after=mine[1].pk) == mine[3]  # the retired one is skipped
    assert assignment_next(rater=raters[0], after=mine[3].pk) == mine[0]  # back to the start
    assert assignment_next(rater=raters[2]) is None
