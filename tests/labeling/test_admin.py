"""The Django admin shows the decision records (issue 4) and does not let anyone edit them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from labeling import services
from labeling.models import GoldenSet

pytestmark = pytest.mark.django_db


def test_decision_records_are_listed_read_only(golden_set: GoldenSet, rita: User, client: Client) -> None:
    query = golden_set.queries.create(external_id="q-1", text="refund")
    services.query_move_tier(query=query, tier="shadow", by=rita, reason="ambiguous")
    admin = User.objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(admin)
    for model in ("tiermove", "adjudication", "disputecheck", "golditem"):
        assert client.get(f"/admin/labeling/{model}/").status_code == 200, model
    page = client.get("/admin/labeling/tiermove/").content.decode()
    assert "ambiguous" in page
    assert client.get("/admin/labeling/tiermove/add/").status_code == 403
    move = query.tier_moves.get()
    response = client.post(f"/admin/labeling/tiermove/{move.pk}/change/", {"reason": "rewritten"})
    assert response.status_code == 403 or "rewritten" not in query.tier_moves.get().reason
    assert query.tier_moves.get().reason == "ambiguous"
