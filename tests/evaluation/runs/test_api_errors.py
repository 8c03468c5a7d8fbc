"""The API's one error shape, its query-parameter checks, and the schema documenting both."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import EvaluationRun
from evaluation.runs.api.errors import ERROR_STATUSES
from tests.support.evaluation import (
    Scene,
    TokenFor,
    bearer,
)

pytestmark = pytest.mark.django_db


def _error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"detail", "problems"} and isinstance(body["detail"], str) and body["detail"]
    assert all(isinstance(p, str) for p in body["problems"])
    return body


def test_unknown_query_parameters_and_bad_filter_values_are_a_worded_400(
    scene: Scene, rita: User, token_for: TokenFor
) -> None:
    headers = bearer(token_for(rita))
    body = _error(Client().get("/api/v1/runs/?bogus=1&status=nonsense", **headers), 400)
    assert body["detail"] == "invalid query parameters"
    assert body["problems"] == [
        "bogus: not a query parameter of this endpoint (it reads: golden_set, limit, offset, status, target)",
        f"status 'nonsense': expected one of {', '.join(EvaluationRun.Status.values)}",
    ]
    for query, says in [
        ("limit=0", "limit '0': expected a whole number from 1 to 500"),
        ("limit=abc", "limit 'abc': expected a whole number from 1 to 500"),
        ("offset=-1", "offset '-1': expected a whole number from 0 to 1000000000"),
        # str.isdigit() takes these, and int() refused them: a 500 before.
        ("limit=%C2%B2", "limit '²': expected a whole number from 1 to 500"),
        ("offset=%C2%B2", "offset '²': expected a whole number from 0 to 1000000000"),
        ("limit=" + "9" * 5000, f"limit '{'9' * 5000}': expected a whole number from 1 to 500"),
        # Past the database's integer: PostgreSQL refused the OFFSET, a 500 before.
        (
            "offset=99999999999999999999",
            "offset '99999999999999999999': expected a whole number from 0 to 1000000000",
        ),
        ("offset=%D9%A3", "offset '٣': expected a whole number from 0 to 1000000000"),  # an Arabic-Indic 3
        ("status=queued&status=failed", "status: given 2 times; give it once"),
        ("golden_set=a%00b", "'golden_set': a query parameter cannot hold a NUL character"),  # was a 500
    ]:
        assert _error(Client().get(f"/api/v1/runs/?{query}", **headers), 400)["problems"] == [says]
    detail = Client().get(f"/api/v1/runs/{scene.current.pk}/?limit=5", **headers)
    assert "limit: not a query parameter" in _error(detail, 400)["problems"][0]  # no page on a detail
    listed = Client().get("/api/v1/runs/?status=succeeded&limit=1", **headers)
    assert listed.status_code == 200 and len(listed.json()["results"]) == 1


def test_every_error_has_the_same_shape(scene: Scene, rita: User, token_for: TokenFor) -> None:
    headers = bearer(token_for(rita, "read"))
    assert _error(Client().get("/api/v1/runs/"), 401)["problems"] == []
    assert _error(Client().get("/api/v1/runs/", HTTP_AUTHORIZATION="Bearer nope"), 401)
    assert "runs:write" in _error(Client().post("/api/v1/runs/", {}, **headers), 403)["detail"]
    assert _error(Client().get("/api/v1/runs/999999/", **headers), 404)["detail"] == "no such run"
    assert (
        _error(Client().get("/api/v1/runs/abc/", **headers), 404)["detail"]
        == "no API endpoint at /api/v1/runs/abc/"
    )
    invalid = Client().post(
        "/api/v1/runs/", {"target": "x", "rebaseline": "maybe"}, content_type="application/json",
        **bearer(token_for(rita)),
    )  # fmt: skip
    problems = _error(invalid, 400)["problems"]
    assert "golden_set: This field is required." in problems
    assert "rebaseline: Must be a valid boolean." in problems


def test_the_schema_documents_the_error_shape_on_every_operation(rita: User, token_for: TokenFor) -> None:
    schema = Client().get("/api/schema/", {"format": "json"}, **bearer(token_for(rita))).json()
    operations = [op for path in schema["paths"].values() for op in path.values()]
    assert len(operations) >= 12
    for operation in operations:
        for code in ERROR_STATUSES:
            response = operation["responses"][str(code)]
            assert response["description"]
            ref = response["content"]["application/json"]["schema"]["$ref"]
            assert ref == "#/components/schemas/Problems", (operation["operationId"], code)
    runs = schema["paths"]["/api/v1/runs/"]["get"]["parameters"]
    status = next(p for p in runs if p["name"] == "status")
    assert "succeeded" in status["schema"]["enum"]
    limit = next(p for p in runs if p["name"] == "limit")
    assert limit["schema"]["minimum"] == 1 and limit["schema"]["maximum"] == 500
