"""The experiments' API (docs/api.md, "Experiments"): start one, follow it, read its result; the
refusals (the words of `assay sweep`, in the error shape); cancel; **Use this configuration**; scopes and
object permissions (a reviewer of another set gets 404 for each endpoint). Eager Celery, stub engine."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.experiments.services.experiments import experiment_create
from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.evaluation import TokenFor, bearer, token_for_fixture, victor_fixture  # noqa: F401
from tests.support.experiments import tuned_answer
from tests.support.runs import eager_celery, golden_file, make_target, make_version, stub_fixture  # noqa: F401
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db

GRID = {"params": {"w": [1, 2], "mode": ["a", "b"]}}


@pytest.fixture
def version(golden_set: GoldenSet) -> GoldenVersion:
    return make_version(golden_set, golden_file(30))


@pytest.fixture
def target(stub: StubServer, golden_set: GoldenSet, version: GoldenVersion) -> SearchTarget:
    stub.default = tuned_answer
    return make_target(f"{stub.url}/search", golden_set)


def _post(token: str, path: str, body: dict[str, Any]) -> Any:
    return Client().post(path, body, content_type="application/json", **bearer(token))


def test_start_follow_and_read_an_experiment(
    rita: User, target: SearchTarget, token_for: TokenFor, django_capture_on_commit_callbacks: Any
) -> None:
    token = token_for(rita, "read", "runs:write")
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        response = _post(
            token,
            "/api/v1/experiments/",
            {"golden_set": "help-center", "target": "staging", "grid": GRID, "seed": 2},
        )
    assert response.status_code == 201, response.content
    body = response.json()
    experiment = Experiment.objects.get()
    assert body["id"] == experiment.pk and body["configurations"] == 4 and body["status"] == "queued"
    assert response["Location"].endswith(f"/experiments/{experiment.pk}/")

    detail = Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(token)).json()
    assert detail["status"] == "succeeded" and detail["final"] and detail["done"] == detail["total"]
    assert detail["result"]["split"]["seed"] == 2 and len(detail["result"]["configs"]) == 4
    assert detail["result"]["winner"]["params"] in [c["params"] for c in detail["result"]["configs"]]
    rows = (
        Client().get("/api/v1/experiments/?golden_set=help-center&status=succeeded", **bearer(token)).json()
    )
    assert [r["id"] for r in rows["results"]] == [experiment.pk] and "result" not in rows["results"][0]
    bad = Client().get("/api/v1/experiments/?status=done", **bearer(token))
    assert bad.status_code == 400


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ("{oops", "grid: not JSON: invalid JSON at line 1 column 2: Expecting property name enclosed in "
         "double quotes"),
        ({"params": {"a": list(range(30)), "b": list(range(20))}},
         "grid: 600 configurations (30 x 20); at most 500 in one sweep"),
        ({"params": {"w": []}}, 'grid: "params.w": an empty list of values'),
        ([1, 2], 'grid: expected a JSON object {"params": {...}} or {"configs": [...]}'),
    ],
)  # fmt: skip
def test_bad_grids_are_refused_in_the_words_of_assay_sweep(
    rita: User, target: SearchTarget, token_for: TokenFor, grid: Any, words: str
) -> None:
    response = _post(
        token_for(rita),
        "/api/v1/experiments/",
        {"golden_set": "help-center", "target": "staging", "grid": grid},
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "the experiment cannot start", "problems": [words]}
    assert not Experiment.objects.exists()


def test_a_configuration_the_adapter_refuses_is_named(
    rita: User, target: SearchTarget, token_for: TokenFor
) -> None:
    response = _post(
        token_for(rita),
        "/api/v1/experiments/",
        {"golden_set": "help-center", "target": "staging", "grid": {"configs": [{"w": 1}, {"q": "x"}]}},
    )
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem.startswith("grid: configuration 2 {q='x'}: ")


def test_cancel_and_use_this_configuration(
    rita: User,
    target: SearchTarget,
    version: GoldenVersion,
    token_for: TokenFor,
    django_capture_on_commit_callbacks: Any,
) -> None:
    token = token_for(rita, "runs:write")
    queued = experiment_create(golden_version=version, target=target, grid=GRID, created_by=rita)
    cancel = _post(token, f"/api/v1/experiments/{queued.pk}/cancel/", {})
    assert cancel.status_code == 200 and cancel.json()["cancelled"] is True
    assert cancel.json()["experiment"]["status"] == "cancelled"
    not_done = _post(token, f"/api/v1/experiments/{queued.pk}/use/", {"rationale": "why not"})
    assert not_done.status_code == 400
    assert not_done.json()["problems"] == [
        f"experiment {queued.pk} has no winner (cancelled): nothing to use"
    ]

    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        experiment = experiment_create(golden_version=version, target=target, grid=GRID, created_by=rita)
    experiment.refresh_from_db()
    assert experiment.result is not None
    with django_capture_on_commit_callbacks(execute=False):
        used = _post(token, f"/api/v1/experiments/{experiment.pk}/use/", {"rationale": "best held out"})
    assert used.status_code == 201, used.content
    body = used.json()
    run = EvaluationRun.objects.get(pk=body["run"])
    assert run.trigger == "api" and run.triggered_by == rita
    assert body["params_after"] == experiment.result["winner"]["grid"] and body["params_before"] == {}
    target.refresh_from_db()
    assert target.params == experiment.result["winner"]["grid"]
    assert ExperimentAdoption.objects.get().rationale == "best held out"


def test_a_reviewer_of_another_set_gets_404_and_a_read_token_cannot_write(
    rita: User, victor: User, target: SearchTarget, version: GoldenVersion, token_for: TokenFor
) -> None:
    experiment = experiment_create(golden_version=version, target=target, grid=GRID, created_by=rita)
    other = token_for(victor)
    assert Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(other)).status_code == 404
    for action in ("cancel", "use"):
        assert (
            _post(other, f"/api/v1/experiments/{experiment.pk}/{action}/", {"rationale": "x"}).status_code
            == 404
        )
    listed = Client().get("/api/v1/experiments/", **bearer(other)).json()
    assert listed["results"] == []
    started = _post(
        other, "/api/v1/experiments/", {"golden_set": "help-center", "target": "staging", "grid": GRID}
    )
    assert started.status_code == 404
    reader = token_for(rita, "read")
    assert (
        _post(
            reader, "/api/v1/experiments/", {"golden_set": "help-center", "target": "staging", "grid": GRID}
        ).status_code
        == 403
    )
    assert _post(reader, f"/api/v1/experiments/{experiment.pk}/cancel/", {}).status_code == 403
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.QUEUED and Experiment.objects.count() == 1
