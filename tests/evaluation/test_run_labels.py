"""A run is named the same way wherever it is named (docs/runs.md, "What a run's label shows"): its
number, its target and the params it sent beyond the defaults (`EvaluationRun.label`), on the runs list,
the run page, the studies list, a study's page, the other run of a study on a run's page, the New-study
form's choices, the experiment page (its adoption's confirming run), a target's page, the trend page,
the budgets and baselines pages, the side-by-side page, the Start-a-run form's gate plan and the API's run
representation and summary; the pages that list runs read as many queries for many runs as for few
(notifications: tests/evaluation/runs/test_services_notifications.py; the home page:
tests/evaluation/home/test_home_waiting.py; messages: tests/evaluation/runs/test_views_runs.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evaluation.models import Baseline, EvaluationRun, PendingStudy, SxsStudy
from evaluation.studies.services import StudySpec, study_create
from labeling.models import GoldenSet
from tests.support.evaluation import (  # noqa: F401
    TokenFor,
    bearer,
    html_text,
    logged_in,
    page_text,
    section_text,
    token_for_fixture,
)
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


def _scored(run: EvaluationRun, ndcg: float) -> EvaluationRun:
    """The run with a core nDCG mean in its report (what the trend page plots)."""
    run.report = {**(run.report or {}), "tiers": {"core": {"ndcg": {"value": ndcg}}}}
    run.save(update_fields=["report"])
    return run


@pytest.fixture
def baseline(runs: tuple[EvaluationRun, ...], rita: User) -> Baseline:
    """Run B (rewrite=true) is the baseline of help-center on its target, engine."""
    _, b, _ = runs
    return Baseline.objects.create(
        golden_set=b.golden_version.golden_set, target=b.target, run=b, approved_by=rita, rationale="good"
    )


def _more_runs(run: EvaluationRun, n: int) -> None:
    """`n` more finished runs of `run`'s target, each sending its own params (each label its own)."""
    for i in range(n):
        more = finished_run(run.golden_version, run.target, {}, {})
        more.effective_params = {"size": 10 + i}
        more.save(update_fields=["effective_params"])
        _scored(more, 0.5)


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def _assert_queries_stay_with_more_runs(client: Client, url: str, run: EvaluationRun) -> None:
    """The page at `url` reads as many queries after four more runs of `run`'s target as before: its
    labels come in the rows' own query (no query per run)."""
    few = _queries(client, url)
    _more_runs(run, 4)
    assert _queries(client, url) == few


def test_a_targets_page_names_its_runs_and_each_sets_baseline_by_their_label(
    runs: tuple[EvaluationRun, ...], baseline: Baseline, rita: User
) -> None:
    a, b, c = runs
    client = logged_in(rita)
    url = f"/targets/{a.target_id}/"
    page = client.get(url)
    sets = section_text(page, "target-sets")
    assert f"help-center {b.label} by rita" in sets
    recent = page_text(page).split("Recent runs", 1)[1]
    assert (
        f"run {a.pk} engine help-center@" in recent
        and f"run {b.pk} engine (rewrite=true) help-center@" in recent
    )
    assert c.label not in recent  # another target's
    _assert_queries_stay_with_more_runs(client, url, a)


def test_the_trend_page_names_each_run_and_the_baseline_by_their_label(
    runs: tuple[EvaluationRun, ...], baseline: Baseline, rita: User
) -> None:
    a, b, _ = runs
    _scored(a, 0.6)
    _scored(b, 0.7)
    client = logged_in(rita)
    url = f"/targets/{a.target_id}/trend/?set=help-center"
    page = client.get(url)
    markup = page.content.decode()
    assert (
        f'The dashed line is the baseline in force (<a href="/runs/{b.pk}/">{b.label}</a>, ringed)' in markup
    )
    assert f"<title>baseline: {b.label}, 0.7000</title>" in markup
    assert f"<title>{a.label} (golden 2026-08-01, verdict none): 0.6000</title>" in markup
    assert f'aria-label="{b.label}, the baseline (golden 2026-08-01' in markup
    table = section_text(page, "trend-table")
    assert f"{a.label} " in table and f"{b.label} " in table
    _assert_queries_stay_with_more_runs(client, url, a)


def test_the_budgets_and_baselines_pages_name_the_baseline_by_its_label(
    runs: tuple[EvaluationRun, ...], baseline: Baseline, rita: User
) -> None:
    b = runs[1]
    client = logged_in(rita)
    budgets = client.get("/sets/help-center/budgets/").content.decode()
    assert f'(baseline: <a href="/runs/{b.pk}/">{b.label}</a>, golden version 2026-08-01)' in budgets
    listed = section_text(client.get("/sets/help-center/baselines/"), "baselines")
    assert f"engine {b.label} 2026-08-01 rita" in listed


def test_a_run_page_names_the_baseline_in_force_and_the_start_form_its_gate_by_their_labels(
    runs: tuple[EvaluationRun, ...], baseline: Baseline, rita: User
) -> None:
    a, b, _ = runs
    client = logged_in(rita)
    run_page = client.get(f"/runs/{a.pk}/").content.decode()
    assert f'The baseline in force is <a href="/runs/{b.pk}/">{b.label}</a>.' in run_page
    plan = client.get(f"/runs/new/plan/?golden_version={a.golden_version_id}&target={a.target_id}")
    assert f"Gated against the baseline, {b.label}, on version 2026-08-01." in page_text(plan)


def test_the_side_by_side_page_names_both_runs_by_their_label(
    runs: tuple[EvaluationRun, ...], rita: User
) -> None:
    a, _, c = runs
    page = logged_in(rita).get(f"/runs/compare/?a={a.pk}&b={c.pk}&query=q-1")
    text = page_text(page)
    assert f"Side by side: {a.label} (A) and {c.label} (B)" in text
    assert f"A: {a.label} " in text and f"B: {c.label} " in text
    assert f"<title>{a.label[0].upper()}{a.label[1:]} vs {c.label} · Assay</title>" in page.content.decode()


def test_the_api_summary_names_the_run_by_its_label(
    runs: tuple[EvaluationRun, ...], rita: User, token_for: TokenFor
) -> None:
    c = runs[2]
    verdict = Client().get(f"/api/v1/runs/{c.pk}/verdict/", **bearer(token_for(rita, "read"))).json()
    assert (
        f"Run {c.pk} demo-search-msm1 (min_should_match=1) on `help-center@2026-08-01`, params "
        "`rewrite=false min_should_match=1`. [Full report]("  # every param sent, as PostgreSQL keeps them
    ) in verdict["summary_markdown"]
