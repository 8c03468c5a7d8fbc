"""Tier moves and retirement: each is a TierMove row with who, when, from, to and why."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from labeling import services
from labeling.models import GoldenSet, Query, TierMove
from tests import factories

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
