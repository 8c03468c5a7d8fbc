"""What an experiment's result claims (docs/experiments.md, "The winner" and "Parameters that change
nothing"): a grid of a parameter the demo search service does not read (its own process on loopback)
names no winner, offers nothing to use (page and API refuse in words) and is flagged, from its first
chunk on, while it runs; alpha is the experiment's, shown and refused out of range."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from assay.golden.format import parse_json
from evaluation.experiments.services.chunks import experiment_chunk_process
from evaluation.experiments.services.experiments import ExperimentError, experiment_begin, experiment_create
from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption
from labeling.models import GoldenSet
from tests.support.evaluation import (  # noqa: F401  (fixtures by name)
    TokenFor,
    bearer,
    html_text,
    logged_in,
    token_for_fixture,
)
from tests.support.experiments import (  # noqa: F401  (fixtures by name)
    DEMO,
    demo_url_fixture,
    experiment_finish,
    finished_experiment,
)
from tests.support.runs import golden_file, make_target, make_version, stub_fixture  # noqa: F401
from tests.support.stub_server import StubServer

pytestmark = pytest.mark.django_db

FLAG = "returned the baseline's results on every query: does the target read `titel_weight`?"


def test_a_parameter_the_target_ignores_is_flagged_from_the_first_chunk_and_names_no_winner(
    golden_set: GoldenSet, rita: User, demo_url: str, token_for: TokenFor
) -> None:
    version = make_version(golden_set, parse_json((DEMO / "golden.json").read_bytes()))
    # 32 in flight: a tuning chunk holds two configurations' 56 queries, so the first is the baseline's
    # and configuration 1's.
    target = make_target(f"{demo_url}/search", golden_set, concurrency=32)
    experiment = experiment_create(
        golden_version=version, target=target, grid={"params": {"titel_weight": [1, 2, 3]}}, created_by=rita
    )
    client, token = logged_in(rita), token_for(rita, "read", "runs:write")
    plan = experiment_begin(experiment_id=experiment.pk)
    assert plan is not None
    experiment_chunk_process(experiment_id=experiment.pk, chunk=plan.indices[0])

    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.RUNNING and experiment.phase == Experiment.Phase.TUNING
    first = f"1 configuration (1) {FLAG}"
    progress = html_text(client.get(f"/experiments/{experiment.pk}/progress/").content.decode())
    assert first in progress
    assert first in html_text(client.get(f"/experiments/{experiment.pk}/").content.decode())
    running = Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(token)).json()
    assert running["result"] is None
    assert running["echoes"] == [
        {"params": ["titel_weight"], "configs": [1], "queries": 56, "read": False, "message": first}
    ]

    experiment_finish(experiment, plan, skip=1)
    experiment.refresh_from_db()
    result = experiment.result
    assert experiment.status == Experiment.Status.SUCCEEDED and result is not None
    assert result["winner"] is None and result["alpha"] == 0.05
    assert result["best"]["holdout_gain"] == 0 and result["best"]["p_adjusted"] == 1
    every = f"3 configurations (1, 2, 3) {FLAG}"
    assert [e["message"] for e in result["echoes"]] == [every]
    assert all(c["same_as_baseline"] for c in result["configs"])

    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    text = html_text(page)
    assert "No configuration beat the baseline on the held-out queries" in text
    assert "The winner" not in text and "Use this configuration" not in text and 'id="adopt-form"' not in page
    assert every in text and "alpha = 0.05" in text
    assert page.count("= baseline</span>") == 3

    refused = client.post(f"/experiments/{experiment.pk}/use/", {"rationale": "try it"}, follow=True)
    words = (
        "No configuration beat the baseline on the held-out queries (a gain with p (Holm) below 0.05): "
        "nothing to use"
    )
    assert "Not used: " + words in html_text(refused.content.decode())
    api = Client().post(
        f"/api/v1/experiments/{experiment.pk}/use/",
        {"rationale": "try it"},
        content_type="application/json",
        **bearer(token),
    )
    assert api.status_code == 400 and api.json()["problems"] == [words]
    detail = Client().get(f"/api/v1/experiments/{experiment.pk}/", **bearer(token)).json()
    assert detail["alpha"] == 0.05 and detail["echoes"] == result["echoes"]
    assert not ExperimentAdoption.objects.exists() and not EvaluationRun.objects.exists()


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5])
def test_an_alpha_outside_0_and_1_is_refused(
    golden_set: GoldenSet, stub: StubServer, rita: User, alpha: float
) -> None:
    version = make_version(golden_set, golden_file(20))
    target = make_target(f"{stub.url}/search", golden_set)
    with pytest.raises(ExperimentError) as caught:
        experiment_create(
            golden_version=version, target=target, grid={"configs": [{"w": 1}]}, created_by=rita, alpha=alpha
        )
    assert caught.value.problems == [f"alpha {alpha}: expected a probability between 0 and 1, exclusive"]
    assert not Experiment.objects.exists()


def test_alpha_is_taken_from_the_form_and_the_api(
    golden_set: GoldenSet, stub: StubServer, rita: User, token_for: TokenFor
) -> None:
    version = make_version(golden_set, golden_file(20))
    target = make_target(f"{stub.url}/search", golden_set)
    grid = '{"configs": [{"w": 1}]}'
    form = {"golden_version": version.pk, "target": target.pk, "grid": grid, "metric": "ndcg", "split": 0.7,
            "top": 3, "seed": 0, "alpha": 0.01}  # fmt: skip
    assert logged_in(rita).post("/experiments/new/", form).status_code == 302
    token = token_for(rita, "read", "runs:write")
    body = {"golden_set": "help-center", "target": "staging", "grid": {"configs": [{"w": 1}]}, "alpha": 0.2}
    response = Client().post("/api/v1/experiments/", body, content_type="application/json", **bearer(token))
    assert response.status_code == 201 and response.json()["alpha"] == 0.2
    assert sorted(Experiment.objects.values_list("alpha", flat=True)) == [0.01, 0.2]
    bad = Client().post(
        "/api/v1/experiments/", {**body, "alpha": 1}, content_type="application/json", **bearer(token)
    )
    assert bad.status_code == 400
    assert bad.json()["problems"] == ["alpha 1.0: expected a probability between 0 and 1, exclusive"]


def test_a_result_concluded_before_alpha_keeps_its_figures_as_best_and_names_a_winner_only_if_one_won(
    golden_set: GoldenSet, stub: StubServer, rita: User
) -> None:
    from importlib import import_module

    from django.apps import apps

    migration = import_module("evaluation.migrations.0017_experiment_alpha")
    version = make_version(golden_set, golden_file(30))
    target = make_target(f"{stub.url}/search", golden_set)
    old = finished_experiment(version, target, rita, grid={"configs": [{"w": 1}]})
    assert old.result is not None
    # The stub answers every configuration alike: as stored before, that sweep named its best a winner.
    before = {k: v for k, v in old.result.items() if k not in ("best", "alpha", "echoes", "best_strata")}
    before["winner"], before["winner_strata"] = old.result["best"], old.result["best_strata"]
    Experiment.objects.filter(pk=old.pk).update(result=before)

    migration.forwards(apps, None)
    old.refresh_from_db()
    assert old.result is not None and old.result["winner"] is None and old.result["alpha"] == 0.05
    assert old.result["best"] == before["winner"] and old.result["best_strata"] == before["winner_strata"]
    assert [e["configs"] for e in old.result["echoes"]] == [[1]]
