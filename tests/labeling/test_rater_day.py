"""The grading page's progress strip: today's documents and pace from the rater's own saves only, the
queue's done and remaining, and the previous query `p` opens."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labeling import selectors, services
from labeling.models import Assignment, GoldenSet, JudgmentEvent, Query
from tests import factories

pytestmark = pytest.mark.django_db

NOON = timezone.make_aware(dt.datetime(2026, 12, 2, 12, 0))


def _saved_at(assignment: Assignment, seconds: list[int], grade: int = 1, spent_ms: int = 0) -> None:
    """One save per document of the assignment, `seconds` after 11:00 of the test's day, each with the
    time the page counted on it (`spent_ms`, else as many milliseconds as the document's seconds)."""
    candidates = list(assignment.query.candidates.order_by("id"))
    for candidate, second in zip(candidates, seconds, strict=False):
        result = services.judgment_submit(
            assignment_id=assignment.pk,
            rater=assignment.rater,
            candidate_id=candidate.pk,
            grade=grade,
            time_spent_ms=spent_ms or second * 1000,
        )
        at = NOON - dt.timedelta(hours=1) + dt.timedelta(seconds=second)
        assert result.judgment_id is not None
        JudgmentEvent.objects.filter(judgment_id=result.judgment_id).update(at=at)


def test_today_counts_the_raters_own_documents_once_and_their_median_pace(
    golden_set: GoldenSet, alice: User, bob: User
) -> None:
    query = factories.pooled_query(golden_set, 5)
    mine = factories.AssignmentFactory.create(query=query, rater=alice)
    theirs = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    _saved_at(mine, [1, 20, 30, 70])  # 1, 20, 30 and 70 s counted on each: median 25 s
    _saved_at(theirs, [0, 1, 2, 3, 4])  # bob's saves are not alice's pace
    day = selectors.rater_day_get(rater=alice, now=NOON)
    assert (day.count, day.pace) == (4, 25.0)
    # A document saved again adds the time counted since (the regrade of the first: 1 + 39 s).
    _saved_at(mine, [5], grade=2, spent_ms=39_000)
    assert selectors.rater_day_get(rater=alice, now=NOON + dt.timedelta(hours=1)).pace == 35.0
    assert len(day.saved) == 4 and all(a == mine.pk for a, _ in day.saved)
    yesterday = selectors.rater_day_get(rater=alice, now=NOON - dt.timedelta(days=1))
    assert (yesterday.count, yesterday.pace) == (0, None)
    tomorrow = selectors.rater_day_get(rater=alice, now=NOON + dt.timedelta(days=1))
    assert tomorrow.count == 0


def test_the_queue_counts_leave_out_reassigned_and_retired_work(golden_set: GoldenSet, alice: User) -> None:
    a, b, c, d = (
        factories.AssignmentFactory.create(query=factories.pooled_query(golden_set, 1), rater=alice)
        for _ in range(4)
    )
    Assignment.objects.filter(pk=a.pk).update(status="done")
    Assignment.objects.filter(pk=b.pk).update(status="reassigned")
    Query.objects.filter(pk=c.query_id).update(status="retired")
    day = selectors.rater_day_get(rater=alice)
    assert (day.queue_done, day.queue_remaining) == (1, 1)
    assert d.status == "open"


def test_previous_is_next_the_other_way_skipping_done_work_and_going_round(
    golden_set: GoldenSet, alice: User, bob: User
) -> None:
    first, second, third, fourth = (
        factories.AssignmentFactory.create(query=factories.pooled_query(golden_set, 1), rater=alice)
        for _ in range(4)
    )
    factories.AssignmentFactory.create(query=factories.pooled_query(golden_set, 1), rater=bob)
    Assignment.objects.filter(pk=second.pk).update(status="done")
    # n skips the done one; p, its inverse, skips it too: p after n comes back, whatever the query.
    for here in (first, third, fourth):
        there = selectors.assignment_next(rater=alice, after=here.pk)
        assert there is not None and there != second
        assert selectors.assignment_previous(rater=alice, before=there) == here
    assert selectors.assignment_previous(rater=alice, before=third) == first
    assert selectors.assignment_previous(rater=alice, before=first) == fourth  # round, as n goes round
    assert selectors.assignment_previous(rater=alice, before=second) == first  # from done work too
    Assignment.objects.filter(pk__in=[third.pk, fourth.pk]).update(status="reassigned")
    assert selectors.assignment_previous(rater=alice, before=first) is None  # no other open work


def test_the_grading_page_shows_the_strip_and_links_the_previous_query(
    client: Client, golden_set: GoldenSet, alice: User
) -> None:
    first, second = (
        factories.AssignmentFactory.create(query=factories.pooled_query(golden_set, 3), rater=alice)
        for _ in range(2)
    )
    client.force_login(alice)
    page = client.get(reverse("labeling:grade", args=[second.pk])).content.decode()
    assert f'data-previous-url="{reverse("labeling:grade", args=[first.pk])}"' in page
    assert 'id="queue-counts">0 done · 2 remaining' in page
    assert "0 documents" in page
    first_page = client.get(reverse("labeling:grade", args=[first.pk])).content.decode()
    assert f'data-previous-url="{reverse("labeling:grade", args=[second.pk])}"' in first_page  # round
    Assignment.objects.filter(pk=second.pk).update(status="done")
    first_page = client.get(reverse("labeling:grade", args=[first.pk])).content.decode()
    assert "data-previous-url" not in first_page and 'id="previous-query"' not in first_page
