"""The OpenAPI schema against the API itself: schemathesis generates requests for every operation from
the schema the server publishes and sends them to a live server (pytest-django's, on loopback) with a
reviewer's token; every answer must be one the schema documents (status, content type, body shape,
the error shape on errors), a request the schema forbids must be refused, and no request may be
answered with a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings

from tests.support.evaluation import (
    Scene,
    TokenFor,
    bearer,
)


@pytest.fixture
def quiet_broker() -> Iterator[None]:
    """Nothing consumes the broker here: the runs the generated POSTs queued are dropped afterwards."""
    import redis

    from config.celery import app

    yield
    url = str(app.conf.broker_url)
    if url.startswith("redis://"):
        redis.Redis.from_url(url).flushdb()


@pytest.fixture
def api_token(scene: Scene, rita: User, token_for: TokenFor) -> str:
    return token_for(rita)


@pytest.fixture
def api_schema(live_server: Any, api_token: str, quiet_broker: None) -> Any:
    published = Client().get("/api/schema/", {"format": "json"}, **bearer(api_token))
    assert published.status_code == 200, published.content
    schema = schemathesis.openapi.from_dict(published.json())
    schema.config.update(base_url=live_server.url)
    return schema


def test_every_operation_answers_as_its_schema_says(api_schema: Any, api_token: str) -> None:
    # Each operation's strategy driven by hypothesis here, rather than by schemathesis' pytest plugin,
    # whose fixture loader does not work with this pytest.
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 13  # every endpoint of evaluation/api/urls.py and the schema's own
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        def check(case: Any) -> None:
            case.call_and_validate(
                headers={"Authorization": f"Bearer {api_token}"},
                # The schema gives a body's shape, not its meaning: a body of the right shape may still
                # be refused, with a documented 400 naming why (a target name holding a NUL, a null
                # param override), which this check would take for a rejected valid request.
                excluded_checks=[schemathesis.checks.positive_data_acceptance],
            )

        check()
