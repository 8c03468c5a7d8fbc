"""Tier moves and retirement: each is a TierMove row with who, when, from, to and why. Retiring closes
the query's open assignments; a golden file that brings the query back (golden_io's import) reopens them."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from golden_io.services import golden_import
from labeling import services
from labeling.models import Assignment, GoldenSet, Judgment, Query, TierMove
from labeling.selectors import assignment_list, assignment_next
from labeling.templatetags.labeling_tags import rater_summary
from tests import factories
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def query(golden_set: GoldenSet) -> Query:
    return factories.QueryFactory.create(golden_set=golden_set, external_id="q-7")


def test_it_moves_a_query_and_records_who_from_to_and_why(query: Query, rita: User) -> None:
    move = services.query_move_tier(query=query, tier="shadow", by=rita, reason="  ambiguous intent ")
    assert move is not None
    stored = Query.objects.get(pk=query.pk)
    assert (stored.tier, stored.quarantine_reason) == ("shadow", "ambiguous intent")
    assert query.tier == "shadow"  # the caller's instance follows
    assert (move.by, move.from_tier, move.to_tier, move.reason) == (
        rita,
        "core",
        "shadow",
        "ambiguous intent",
    )
    assert move.at is not None
    back = services.query_move_tier(query=query, tier="core", by=rita, reason="resolved by adjudication")
    assert back is not None and (back.from_tier, back.to_tier) == ("shadow", "core")
    assert Query.objects.get(pk=query.pk).quarantine_reason == ""  # the TierMove rows keep the reasons
    assert list(TierMove.objects.values_list("to_tier", flat=True)) == ["shadow", "core"]


def test_moving_to_the_tier_it_is_in_records_nothing(query: Query) -> None:
    assert services.query_move_tier(query=query, tier="core", by=None, reason="no change") is None
    assert not TierMove.objects.exists()


@pytest.mark.parametrize(
    ("tier", "reason", "message"),
    [
        ("gold", "why", "tier: 'gold' is not one of core, shadow, challenge"),
        ("shadow", "   ", "reason: say why"),
    ],
)
def test_it_refuses_an_unknown_tier_or_a_missing_reason(
    query: Query, rita: User, tier: str, reason: str, message: str
) -> None:
    with pytest.raises(services.ReviewError, match=message):
        services.query_move_tier(query=query, tier=tier, by=rita, reason=reason)
    assert Query.objects.get(pk=query.pk).tier == "core" and not TierMove.objects.exists()


def test_a_system_move_has_no_user(query: Query) -> None:
    move = services.query_move_tier(query=query, tier="shadow", by=None, reason="disputed: hard disagreement")
    assert move is not None and move.by is None


def test_retiring_records_the_status_change_and_blocks_later_moves(query: Query, rita: User) -> None:
    move = services.query_retire(query=query, by=rita, reason="duplicate of q-3")
    assert (move.from_status, move.to_status, move.from_tier, move.to_tier) == (
        "active",
        "retired",
        "core",
        "core",
    )
    assert Query.objects.get(pk=query.pk).status == "retired"
    with pytest.raises(services.ReviewError, match="already retired"):
        services.query_retire(query=query, by=rita, reason="again")
    with pytest.raises(services.ReviewError, match="is retired"):
        services.query_move_tier(query=query, tier="shadow", by=rita, reason="x")
    assert TierMove.objects.count() == 1


# --- retiring closes the query's open work; bringing it back reopens that work ----------------------


@pytest.fixture
def work(golden_set: GoldenSet, alice: User, bob: User) -> tuple[Query, Assignment, Assignment]:
    """q-1 with a two-document pool: alice's primary assignment half graded (open), bob's second done."""
    query = factories.pooled_query(golden_set, 2, external_id="q-1", text="refund policy")
    candidates = list(query.candidates.order_by("best_rank"))
    first = factories.AssignmentFactory.create(query=query, rater=alice, kind="primary")
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    services.judgment_submit(assignment_id=first.pk, rater=alice, candidate_id=candidates[0].pk, grade=2)
    for candidate in candidates:
        services.judgment_submit(assignment_id=second.pk, rater=bob, candidate_id=candidate.pk, grade=2)
    services.assignment_done(assignment_id=second.pk, rater=bob)
    return query, first, second


def test_retiring_closes_the_open_assignments_and_leaves_the_judgments(
    work: tuple[Query, Assignment, Assignment], alice: User, rita: User
) -> None:
    query, first, second = work
    judgments = list(Judgment.objects.order_by("pk").values_list("pk", "grade", "updated"))
    assert [a.pk for a in assignment_list(rater=alice)] == [first.pk]

    move = services.query_retire(query=query, by=rita, reason="duplicate of q-3")

    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.completed) == ("reassigned", move.at)
    assert second.status == "done"  # finished work stays finished
    assert list(Judgment.objects.order_by("pk").values_list("pk", "grade", "updated")) == judgments
    assert list(assignment_list(rater=alice)) == []
    assert assignment_next(rater=alice) is None
    assert rater_summary(alice) == {"open": 0, "done": 0, "next": None}
    client = Client()
    client.login(username="alice", password=PASSWORD)
    assert "refund policy" not in client.get(reverse("labeling:queue")).content.decode()
    page = client.get(reverse("labeling:grade", args=[first.pk]))
    assert page.status_code == 409 and "was retired" in page.content.decode()
    candidate = query.candidates.order_by("best_rank").last()
    assert candidate is not None
    with pytest.raises(services.Retired, match="retired"):
        services.judgment_submit(assignment_id=first.pk, rater=alice, candidate_id=candidate.pk, grade=1)
    response = client.post(
        reverse("labeling:grades", args=[first.pk]),
        data=json.dumps({"candidate": factories.token(first, candidate), "grade": 1}),
        content_type="application/json",
    )
    assert response.status_code == 409 and response.json()["error"] == "retired"
    assert Judgment.objects.count() == len(judgments)


def test_a_golden_file_bringing_the_query_back_reopens_what_retiring_closed(
    work: tuple[Query, Assignment, Assignment], alice: User, rita: User
) -> None:
    query, first, second = work
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    # Reassigned before the retirement: carol's earlier row stays reassigned when the query comes back.
    gone = factories.AssignmentFactory.create(query=query, rater=carol, kind="primary", status="reassigned")
    services.query_retire(query=query, by=rita, reason="duplicate of q-3")
    doc = query.candidates.order_by("best_rank").first().document  # type: ignore[union-attr]
    data = json.dumps(
        {
            "version": "v2",
            "k": 10,
            "queries": [
                {"id": "q-1", "text": "refund policy", "judgments": [{"doc_id": doc.doc_id, "grade": 2}]}
            ],
        }
    ).encode()

    report = golden_import(golden_set=query.golden_set, data=data, source="v2.json")

    assert report.ok, report.problems
    assert report.counts["assignments of returning queries reopened"] == 1
    assert Query.objects.get(pk=query.pk).status == "active"
    statuses = dict(Assignment.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "open", second.pk: "done", gone.pk: "reassigned"}
    assert Assignment.objects.get(pk=first.pk).completed is None
    assert [a.pk for a in assignment_list(rater=alice)] == [first.pk]
    candidate = query.candidates.order_by("best_rank").last()
    assert candidate is not None
    result = services.judgment_submit(assignment_id=first.pk, rater=alice, candidate_id=candidate.pk, grade=1)
    assert (result.graded, result.total, result.status) == (2, 2, "open")
    assert services.assignment_done(assignment_id=first.pk, rater=alice).status == "done"
