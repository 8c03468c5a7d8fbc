"""Scopes mean their names: a token made with `read` reads every resource its user can see (every GET
operation of the schema), and Swagger UI offers the token first."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from evaluation.models import ApiToken, Experiment, PendingStudy, scope_held
from evaluation.studies.services import StudySpec, study_create
from tests.support.evaluation import (
    Scene,
    TokenFor,
    bearer,
)
from tests.support.studies import two_runs

pytestmark = pytest.mark.django_db


def _schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _path(template: str, scene: Scene) -> str:
    """The operation's path with the scene's objects in it (`{id}` is a target's under /targets/, a side-by-
    side study's under /studies/: one is made of two runs of its own golden version)."""
    studies = template.startswith("/api/v1/studies/")
    if studies and "{id}" in template:
        run_a, run_b = two_runs(scene.golden_set, 3, version="sxs-scopes")
        spec = StudySpec(run_a=run_a, run_b=run_b, raters=list(scene.golden_set.raters.all()), seed=1)
        owner = scene.golden_set.reviewers.get()
        ident = study_create(spec=spec, by=owner).pk
        if template.startswith("/api/v1/studies/pending/"):
            # A study asked for on two targets whose runs have finished (reading it makes the study).
            ident = PendingStudy.objects.create(
                golden_set=scene.golden_set,
                golden_version=run_a.golden_version,
                run_a=run_a,
                run_b=run_b,
                options={"raters": [r.pk for r in spec.raters], "seed": 1},
                created_by=owner,
            ).pk
    else:
        ident = scene.target.pk if template.startswith("/api/v1/targets/") else scene.current.pk
    values = {
        "slug": scene.golden_set.slug,
        "name": scene.version.name,
        "fmt": "csv" if studies else "json",
        "id": str(ident),
    }
    if template.startswith("/api/v1/experiments/"):
        values["id"] = str(_experiment(scene).pk)
    return re.sub(r"\{(\w+)\}", lambda found: values[found.group(1)], template)


def _experiment(scene: Scene) -> Experiment:
    """An experiment of the scene's set and target (queued: nothing runs it here)."""
    found = Experiment.objects.filter(golden_version=scene.version, target=scene.target).first()
    return found or Experiment.objects.create(
        golden_version=scene.version, target=scene.target, grid={"configs": [{"w": 1}]}, configs=[{"w": 1}]
    )


def test_read_holds_every_reading_scope_and_nothing_else() -> None:
    assert scope_held(["read"], "golden:read")
    assert scope_held(["read"], "read")
    assert not scope_held(["read"], "runs:write")
    assert not scope_held(["golden:read"], "read")
    assert not scope_held(["runs:write"], "golden:read")


def test_a_read_token_gets_every_get_operation_of_the_schema(
    light_scene: Scene, token_for: TokenFor, rita: User
) -> None:
    """rita reviews the scene's set: every GET answers 200 with a token of the `read` scope alone. The
    operations come from the schema, so an endpoint added later is covered without editing this test."""
    headers = bearer(token_for(rita, "read"))
    client = Client()
    gets = [path for path, operations in _schema()["paths"].items() if "get" in operations]
    assert len(gets) >= 11
    for template in gets:
        path = _path(template, light_scene)
        response = client.get(path, **headers)
        assert response.status_code == 200, (template, response.content[:300])


def test_a_read_token_of_another_user_gets_a_documented_404_for_what_they_cannot_see(
    light_scene: Scene, token_for: TokenFor, victor: User
) -> None:
    """victor reviews another set: lists answer 200 (without the scene's objects), single objects the
    404 each operation documents; never a 403 for a missing scope."""
    headers = bearer(token_for(victor, "read"))
    client = Client()
    for template, operations in _schema()["paths"].items():
        if "get" not in operations:
            continue
        path = _path(template, light_scene)
        response = client.get(path, **headers)
        expected = 200 if "{" not in template else 404
        assert response.status_code == expected, (template, response.content[:300])
        assert str(expected) in operations["get"]["responses"]


def test_a_token_without_a_reading_scope_is_told_which_scopes_would_do(
    light_scene: Scene, token_for: TokenFor, rita: User
) -> None:
    response = Client().get("/api/v1/golden-sets/", **bearer(token_for(rita, "runs:write")))
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "this token lacks the scope 'golden:read' or 'read' (it has: runs:write)"
    )


def test_swagger_ui_offers_the_token_first_and_sends_it_as_a_bearer_header() -> None:
    schema = _schema()
    schemes = schema["components"]["securitySchemes"]
    assert next(iter(schemes)) == "apiToken"
    assert schemes["apiToken"]["scheme"] == "bearer"
    assert "never here" in schemes["cookieAuth"]["description"]
    for operations in schema["paths"].values():
        for operation in operations.values():
            assert next(iter(operation["security"][0])) == "apiToken"


def test_the_scope_choices_say_what_read_covers() -> None:
    assert "golden sets" in ApiToken.SCOPES["read"]
