"""The grading page: blinded, shuffled per (rater, query), shows only the rater's own grades, and renders
a 40-candidate pool with as many SQL queries as a 10-candidate one."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, Candidate, GoldenSet
from labeling.selectors import shuffle_key
from tests import factories

SECRET_SYSTEM = "zz-secret-system"


def _order(client: Client, assignment: Assignment) -> list[int]:
    """The candidates (their ids) in the page's order, read back from the page's tokens."""
    body = client.get(reverse("labeling:grade", args=[assignment.pk])).content.decode()
    by_token = factories.tokens(assignment)
    return [by_token[x].pk for x in re.findall(r'data-candidate="([^"]*)"', body)]


@pytest.fixture
def pool(golden_set: GoldenSet, alice: User, bob: User) -> tuple[Assignment, Assignment]:
    query = factories.pooled_query(golden_set, 12, text="cancel subscription", filters={"product": "billing"})
    Candidate.objects.filter(query=query).update(
        provenance=[{"system": SECRET_SYSTEM, "rank": 7}], best_rank=7
    )
    first = Candidate.objects.filter(query=query).order_by("id").first()
    assert first is not None
    factories.FrozenLabelFactory.create(query=query, document=first.document, grade=3)
    mine = factories.AssignmentFactory.create(query=query, rater=alice)
    theirs = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    return mine, theirs


def test_it_shows_the_query_its_scope_and_the_rubric(pool, client: Client) -> None:
    mine, _ = pool
    client.force_login(mine.rater)
    body = client.get(reverse("labeling:grade", args=[mine.pk])).content.decode()
    assert "cancel subscription" in body
    assert "en-US" in body and "product: billing" in body
    for grade in mine.query.golden_set.rubric.grades:
        assert grade["meaning"] in body
        assert all(example in body for example in grade["positive_examples"] + grade["negative_examples"])
    assert "js/grading.js" in body


def test_it_never_shows_systems_ranks_frozen_labels_or_other_raters_grades(pool, client: Client) -> None:
    mine, theirs = pool
    candidates = list(mine.query.candidates.order_by("id"))
    services.judgment_submit(
        assignment_id=theirs.pk,
        rater=theirs.rater,
        candidate_id=candidates[0].pk,
        grade=0,
        note="bob-only note",
    )
    client.force_login(mine.rater)
    body = client.get(reverse("labeling:grade", args=[mine.pk])).content.decode()
    assert SECRET_SYSTEM not in body
    assert "bob-only note" not in body and "bob" not in body
    assert "rank" not in body.lower().replace("rank this", "")
    # Nothing is pre-graded for alice: neither bob's 0 nor the frozen 3 shows up.
    assert set(re.findall(r'data-grade="(\d*)" data-note', body)) == {""}
    assert 'aria-pressed="true"' not in body


def test_the_order_is_fixed_per_rater_and_query_and_differs_between_raters(pool, client: Client) -> None:
    mine, theirs = pool
    client.force_login(mine.rater)
    alice_order = _order(client, mine)
    assert alice_order == _order(client, mine)  # stable across reloads
    expected = sorted(
        alice_order, key=lambda c: shuffle_key(rater_id=mine.rater_id, query_id=mine.query_id, candidate_id=c)
    )
    assert alice_order == expected
    assert alice_order != sorted(alice_order)  # not the pool's (rank or id) order
    client.force_login(theirs.rater)
    bob_order = _order(client, theirs)
    assert sorted(bob_order) == sorted(alice_order) and bob_order != alice_order


def test_it_shows_the_raters_own_saved_grades_after_reload(pool, client: Client) -> None:
    mine, _ = pool
    candidate = mine.query.candidates.order_by("id")[3]
    services.judgment_submit(assignment_id=mine.pk, rater=mine.rater, candidate_id=candidate.pk, grade=2)
    client.force_login(mine.rater)
    body = client.get(reverse("labeling:grade", args=[mine.pk])).content.decode()
    assert f'data-candidate="{factories.token(mine, candidate)}" data-grade="2"' in body
    assert "1 of 12 graded" in body
    # Saved today: its item says so (the page counts a later save of it no second time), and no other.
    today = re.findall(r'data-candidate="([^"]*)"[^>]*data-today="true"', body)
    assert today == [factories.token(mine, candidate)]


def _queries_for_page(client: Client, assignment: Assignment) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("labeling:grade", args=[assignment.pk]))
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_the_page_costs_the_same_number_of_sql_queries_for_10_and_40_candidates(
    golden_set: GoldenSet, alice: User, client: Client
) -> None:
    counts = []
    for n in (10, 40):
        query = factories.pooled_query(golden_set, n)
        assignment = factories.AssignmentFactory.create(query=query, rater=alice)
        for candidate in query.candidates.all()[: n // 2]:  # half graded, some with notes
            factories.JudgmentFactory.create(
                assignment=assignment, document=candidate.document, grade=1, note="n"
            )
        client.force_login(alice)
        counts.append(_queries_for_page(client, assignment))
    assert counts[0] == counts[1]
    assert counts[0] <= 12
