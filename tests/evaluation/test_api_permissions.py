"""Every API endpoint against every kind of caller: anonymous, a token without the endpoint's scope, a
rater, an outsider, a reviewer of another set, a reviewer of the set, an admin (tokens act as their user).

Lists answer 200 to whoever is signed in and hold only what the caller may see; single objects are a 404
for whoever may not see them (their existence is not confirmed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import ApiToken, EvaluationRun, SearchTarget, scope_held
from tests.support.evaluation import (
    Scene,
    TokenFor,
    bearer,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(name="scene")
def one_run_scene(light_scene: Scene) -> Scene:
    """One finished run is all these checks need (the full scene runs two): 106 cases stay quick."""
    return light_scene


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: Callable[[Scene], str]
    scope: str
    is_list: bool = False
    body: Callable[[Scene], dict[str, Any]] | None = None
    # For lists: does the answer hold the scene's object?
    holds: Callable[[Any, Scene], bool] | None = None
    ok: int = 200


def _slugs(body: Any, scene: Scene) -> bool:
    return scene.golden_set.slug in [row["slug"] for row in body["results"]]


def _target_names(body: Any, scene: Scene) -> bool:
    return scene.target.name in [row["name"] for row in body["results"]]


def _run_ids(body: Any, scene: Scene) -> bool:
    return scene.current.pk in [row["id"] for row in body["results"]]


def _version(scene: Scene) -> str:
    return f"/api/v1/golden-sets/{scene.golden_set.slug}/versions/{scene.version.name}/"


def _version_file(fmt: str) -> Callable[[Scene], str]:
    return lambda scene: _version(scene) + f"files/{fmt}/"


ENDPOINTS = [
    Endpoint("golden sets", "get", lambda s: "/api/v1/golden-sets/", "golden:read", True, holds=_slugs),
    Endpoint("golden set", "get", lambda s: f"/api/v1/golden-sets/{s.golden_set.slug}/", "golden:read"),
    Endpoint(
        "versions", "get", lambda s: f"/api/v1/golden-sets/{s.golden_set.slug}/versions/", "golden:read"
    ),
    Endpoint("version", "get", _version, "golden:read"),
    *(
        Endpoint(f"version file {fmt}", "get", _version_file(fmt), "golden:read")
        for fmt in ("json", "jsonl", "qrels")
    ),
    Endpoint("targets", "get", lambda s: "/api/v1/targets/", "read", True, holds=_target_names),
    Endpoint("target", "get", lambda s: f"/api/v1/targets/{s.target.pk}/", "read"),
    Endpoint("runs", "get", lambda s: "/api/v1/runs/", "read", True, holds=_run_ids),
    Endpoint(
        "trigger a run",
        "post",
        lambda s: "/api/v1/runs/",
        "runs:write",
        body=lambda s: {"golden_set": s.golden_set.slug, "target": s.target.name},
        ok=201,
    ),
    Endpoint("run", "get", lambda s: f"/api/v1/runs/{s.current.pk}/", "read"),
    Endpoint("run report", "get", lambda s: f"/api/v1/runs/{s.current.pk}/report/", "read"),
    Endpoint("run verdict", "get", lambda s: f"/api/v1/runs/{s.current.pk}/verdict/", "read"),
    Endpoint("cancel a run", "post", lambda s: f"/api/v1/runs/{s.current.pk}/cancel/", "runs:write"),
]

CALLERS = [
    "anonymous",
    "token without the scope",
    "rater",
    "outsider",
    "reviewer of another set",
    "reviewer",
    "admin",
]


def _call(endpoint: Endpoint, scene: Scene, headers: dict[str, Any]) -> Any:
    client = Client()
    path = endpoint.path(scene)
    if endpoint.method == "post":
        body = endpoint.body(scene) if endpoint.body else {}
        return client.post(path, data=json.dumps(body), content_type="application/json", **headers)
    return client.get(path, **headers)


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_each_endpoint_answers_each_caller_as_its_permissions_say(
    endpoint: Endpoint,
    caller: str,
    scene: Scene,
    other_target: SearchTarget,
    token_for: TokenFor,
    rita: User,
    alice: User,
    charlie: User,
    victor: User,
    ada: User,
) -> None:
    users = {
        "rater": alice,
        "outsider": charlie,
        "reviewer of another set": victor,
        "reviewer": rita,
        "admin": ada,
    }
    if caller == "anonymous":
        headers: dict[str, Any] = {}
    elif caller == "token without the scope":
        headers = bearer(
            token_for(rita, *(s for s in ApiToken.SCOPES if not scope_held([s], endpoint.scope)))
        )
    else:
        headers = bearer(token_for(users[caller]))
    before = EvaluationRun.objects.count()

    response = _call(endpoint, scene, headers)

    if caller == "anonymous":
        assert response.status_code == 401, response.content
        assert response["WWW-Authenticate"].startswith("Bearer")
    elif caller == "token without the scope":
        assert response.status_code == 403, response.content
        assert endpoint.scope in response.json()["detail"]
    elif caller in ("reviewer", "admin"):
        assert response.status_code == endpoint.ok, response.content
        if endpoint.holds is not None:
            assert endpoint.holds(response.json(), scene)
    elif endpoint.is_list:
        assert response.status_code == 200, response.content
        assert endpoint.holds is not None and not endpoint.holds(response.json(), scene)
    else:
        assert response.status_code == 404, response.content
    created = EvaluationRun.objects.count() - before
    assert created == (1 if endpoint.name == "trigger a run" and caller in ("reviewer", "admin") else 0)
    if endpoint.name == "cancel a run" and caller not in ("reviewer", "admin"):
        scene.current.refresh_from_db()
        assert scene.current.status == EvaluationRun.Status.SUCCEEDED


def test_a_reviewer_of_another_set_sees_their_own_set_target_and_runs(
    scene: Scene, other_target: SearchTarget, other_set: Any, token_for: TokenFor, victor: User
) -> None:
    client = Client()
    headers = bearer(token_for(victor))
    sets = client.get("/api/v1/golden-sets/", **headers).json()["results"]
    targets = client.get("/api/v1/targets/", **headers).json()["results"]
    assert [s["slug"] for s in sets] == [other_set.slug]
    assert [t["name"] for t in targets] == [other_target.name]
    assert client.get("/api/v1/runs/", **headers).json()["results"] == []
