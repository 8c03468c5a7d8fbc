"""A run is named the same way wherever it is named (docs/runs.md, "What a run's label shows"): its
number, its target and the params it sent beyond the defaults (`EvaluationRun.label`), on the runs list,
the run page, the studies list, a study's page, the other run of a study on a run's page, the New-study
form's choices, the experiment page (its adoption's confirming run) and the API's run representation
(notifications: tests/evaluation/test_services_notifications.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import EvaluationRun, PendingStudy, SxsStudy
from evaluation.services.studies import StudySpec, study_create
from labeling.models import GoldenSet
from tests.support.evaluation import TokenFor, bearer, html_text, logged_in, token_for_fixture  # noqa: F401
from tests.support.runs import make_target
from tests.support.studies import finished_run, two_runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(golden_set: GoldenSet) -> tuple[EvaluationRun, EvaluationRun, EvaluationRun]:
    """Run A sends nothing, run B flips the rewriter on, and a run of a target that sends
    min_should_match=1 with its rewriter stage off."""
    run_a, run_b = two_runs(golden_set, 3)
    msm = make_target(
        "http://127.0.0.1:9/search",
        golden_set,
        name="demo-search-msm1",
        params={"min_should_match": 1},
        stages={"rewrite": False},
    )
    run_c = finished_run(run_a.golden_version, msm, {}, {})
    run_c.target_snapshot = msm.spec().to_dict()  # what run_create records
    run_c.effective_params = {"min_should_match": 1, "rewrite": False}
    run_c.save()
    run_b.target_snapshot, run_b.effective_params = run_b.target.spec().to_dict(), {"rewrite": True}
    run_b.save()
    return run_a, run_b, run_c


@pytest.fixture
def study(runs: tuple[EvaluationRun, ...], rita: User, alice: User) -> SxsStudy:
    return study_create(
        spec=StudySpec(run_a=runs[0], run_b=runs[1], raters=[alice], seed=1, answers_per_query=1), by=rita
    )


def _labels(runs: tuple[EvaluationRun, ...]) -> list[str]:
    return [run.label for run in runs]


def test_the_label_says_what_the_run_sent_beyond_its_targets_defaults(
    runs: tuple[EvaluationRun, ...],
) -> None:
    a, b, c = runs
    assert _labels(runs) == [
        f"run {a.pk} engine",
        f"run {b.pk} engine (rewrite=true)",
        f"run {c.pk} demo-search-msm1 (min_should_match=1)",
    ]


def test_the_runs_list_and_the_run_page_name_runs_by_their_label(
    runs: tuple[EvaluationRun, ...], rita: User
) -> None:
    client = logged_in(rita)
    listed = html_text(client.get("/runs/").content.decode())
    assert all(label in listed for label in _labels(runs))
    for run in runs:
        page = html_text(client.get(f"/runs/{run.pk}/").content.decode())
        assert f"{run.label[0].upper()}{run.label[1:]}: help-center@" in page


def test_study_pages_name_both_runs_by_their_label(
    runs: tuple[EvaluationRun, ...], study: SxsStudy, rita: User
) -> None:
    client = logged_in(rita)
    a, b, _ = _labels(runs)
    detail = html_text(client.get(f"/studies/{study.pk}/").content.decode())
    assert f"Run A (baseline) {a}" in detail and f"Run B (candidate) {b}" in detail
    listed = html_text(client.get("/sets/help-center/studies/").content.decode())
    assert a in listed and b in listed
    on_run = html_text(client.get(f"/runs/{runs[0].pk}/").content.decode())
    assert f"this run as run A (the baseline) against {b}" in on_run
    form = client.get("/sets/help-center/studies/new/").content.decode()
    assert all(f"{label}, golden 2026-08-01</option>" in form for label in _labels(runs))


def test_the_api_run_representation_carries_the_label(
    runs: tuple[EvaluationRun, ...], rita: User, token_for: TokenFor
) -> None:
    token = token_for(rita, "read")
    listed = Client().get("/api/v1/runs/", **bearer(token)).json()["results"]
    assert {row["id"]: row["label"] for row in listed} == {run.pk: run.label for run in runs}
    one: dict[str, Any] = Client().get(f"/api/v1/runs/{runs[2].pk}/", **bearer(token)).json()
    assert one["label"] == runs[2].label and one["adopted_from"] is None


def test_a_pending_studys_page_and_the_studies_list_name_its_runs_by_their_label(
    runs: tuple[EvaluationRun, ...], rita: User, alice: User
) -> None:
    a, b, _ = runs
    EvaluationRun.objects.filter(pk=b.pk).update(status=EvaluationRun.Status.RUNNING)  # still searching
    pending = PendingStudy.objects.create(
        name="on targets",
        golden_set=a.golden_version.golden_set,
        golden_version=a.golden_version,
        run_a=a,
        run_b=b,
        options={"raters": [alice.pk], "seed": 1, "answers_per_query": 1},
        created_by=rita,
    )
    client = logged_in(rita)
    page = html_text(client.get(f"/studies/pending/{pending.pk}/").content.decode())
    assert a.label in page and b.label in page
    listed = html_text(client.get("/sets/help-center/studies/").content.decode())
    assert f"{a.label} (succeeded)" in listed and f"{b.label} (running)" in listed
