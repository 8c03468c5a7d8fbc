"""A NUL byte in a page's path or query parameters is a worded 400 (config.middleware.RefuseNulBytes); it
was a 500 on PostgreSQL (`/runs/?set=%00`). The API answers such requests itself, in its error shape."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from labeling.models import GoldenSet

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("query", ["set=%00", "target=%00", "status=x%00y", "%00=1"])
def test_a_nul_in_a_query_parameter_is_a_worded_400(query: str, rita: User, golden_set: GoldenSet) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(rita)
    for path in ("/runs/", f"/sets/{golden_set.slug}/", "/targets/"):
        response = client.get(f"{path}?{query}")
        assert response.status_code == 400, (path, query)
        assert "NUL byte" in response.content.decode()


def test_the_api_keeps_its_own_error_shape_for_a_nul(rita: User) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(rita)
    response = client.get("/api/v1/runs/?golden_set=%00")
    assert response.status_code == 400
    assert "detail" in response.json()
