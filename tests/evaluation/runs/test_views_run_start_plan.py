"""No verdict by surprise: Start-a-run defaults to the golden version the baseline is on; picking another
says before Start what the gate will compare with (the baseline re-scored on it, when the reviewer
confirms, or why it cannot be), and a run that would only be refused is not started. The API and
`assay remote run` say the same in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.cli import main
from evaluation.models import BaselineRescore, EvaluationRun, SearchTarget
from evaluation.runs.services import baseline_promote
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.evaluation.runs.test_services_rescore import relabeled
from tests.support.evaluation import (
    bearer,
    logged_in,
    page_text,
)
from tests.support.runs import (
    RunFactory,
    make_version,
)

pytestmark = pytest.mark.django_db

OLD, NEW = "2026-08-01", "2026-09-01"


@pytest.fixture
def newer(finished: RunFactory, rita: User, golden_set: GoldenSet) -> GoldenVersion:
    """A baseline on the first version, then a newer version frozen (the newest is not the baseline's)."""
    baseline_promote(run=finished(), by=rita, rationale="the launch floor")
    return make_version(golden_set, relabeled())


def _selected_version(html: str) -> str:
    select = re.search(r'<select name="golden_version".*?</select>', html, re.S)
    assert select is not None
    chosen = re.search(r'<option value="\d+" selected>([^<]+)</option>', select.group(0))
    assert chosen is not None, select.group(0)
    return chosen.group(1)


def test_the_form_preselects_the_baseline_s_version_not_the_newest(newer: GoldenVersion, rita: User) -> None:
    response = logged_in(rita).get("/runs/new/")
    assert _selected_version(response.content.decode()) == f"help-center@{OLD}"
    assert "Gated against the baseline, run" in page_text(response)


def test_picking_another_version_says_so_before_start(
    newer: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    response = logged_in(rita).get(f"/runs/new/plan/?golden_version={newer.pk}&target={target.pk}")
    text = page_text(response)
    assert response.status_code == 200
    assert f"is on version {OLD}, not {NEW}" in text and "tick 'Re-score the baseline'" in text


def test_start_without_confirming_is_refused_on_the_form_and_starts_nothing(
    newer: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    before = EvaluationRun.objects.count()
    response = logged_in(rita).post(
        "/runs/new/", {"golden_version": newer.pk, "target": target.pk, "params": ""}
    )
    assert response.status_code == 422
    assert f"is on version {OLD}, not {NEW}: the gate refuses to compare" in page_text(response)
    assert EvaluationRun.objects.count() == before


def test_confirming_rescores_the_baseline_and_the_run_compares_instead_of_refusing(
    newer: GoldenVersion, target: SearchTarget, rita: User, finished: RunFactory
) -> None:
    response = logged_in(rita).post(
        "/runs/new/",
        {"golden_version": newer.pk, "target": target.pk, "params": "", "rescore_baseline": "on"},
    )
    assert response.status_code == 302
    queued = EvaluationRun.objects.latest("id")
    assert queued.rescore_baseline and queued.golden_version == newer

    run = finished(golden_version=newer, rescore_baseline=True)  # what the worker then does

    assert run.verdict == EvaluationRun.Verdict.PASS, run.gate
    assert run.baseline_rescore == BaselineRescore.objects.get(golden_version=newer)
    assert "refusing to compare" not in str(run.gate)


def test_a_baseline_that_cannot_be_rescored_is_said_and_the_confirmation_does_not_start_it(
    finished: RunFactory, rita: User, golden_set: GoldenSet, target: SearchTarget
) -> None:
    baseline_promote(run=finished(), by=rita, rationale="floor")
    deeper = make_version(golden_set, relabeled(k=20))
    client = logged_in(rita)

    plan = page_text(client.get(f"/runs/new/plan/?golden_version={deeper.pk}&target={target.pk}"))
    response = client.post(
        "/runs/new/",
        {"golden_version": deeper.pk, "target": target.pk, "params": "", "rescore_baseline": "on"},
    )

    assert "cannot be re-scored on it (it was scored at k=10 and version" in plan
    assert response.status_code == 422 and not EvaluationRun.objects.filter(golden_version=deeper).exists()
    rebaseline = client.post(
        "/runs/new/", {"golden_version": deeper.pk, "target": target.pk, "params": "", "rebaseline": "on"}
    )
    assert rebaseline.status_code == 302


def test_the_api_defaults_to_the_baseline_s_version_and_refuses_a_surprise(
    newer: GoldenVersion, rita: User, token_for: Any
) -> None:
    client = logged_in(rita)
    headers = bearer(token_for(rita))
    body = {"golden_set": "help-center", "target": "staging"}

    default = client.post("/api/v1/runs/", body, content_type="application/json", **headers)
    other = client.post("/api/v1/runs/", {**body, "version": NEW}, content_type="application/json", **headers)
    confirmed = client.post(
        "/api/v1/runs/",
        {**body, "version": NEW, "rescore_baseline": True},
        content_type="application/json",
        **headers,
    )

    assert default.status_code == 201 and default.json()["golden_version"] == OLD
    assert other.status_code == 400
    assert any(f"is on version {OLD}, not {NEW}" in p for p in other.json()["problems"])
    assert confirmed.status_code == 201 and confirmed.json()["rescore_baseline"] is True


@pytest.mark.django_db(transaction=True)
def test_remote_run_says_it_in_words(
    newer: GoldenVersion, rita: User, token_for: Any, live_server: Any, capsys: Any
) -> None:
    args = ["remote", "run", "--server", live_server.url, "--token", token_for(rita)]
    args += ["--golden-set", "help-center", "--target", "staging", "--version", NEW]

    code = main(args)

    _, err = capsys.readouterr()
    assert code == 2
    assert f"is on version {OLD}, not {NEW}: the gate refuses to compare" in err
    assert "assay remote run --rescore-baseline" in err and "--rebaseline" in err


def test_the_plan_reads_the_baseline_s_k_not_its_report(
    finished: RunFactory, rita: User, golden_set: GoldenSet, target: SearchTarget
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evaluation.runs.selectors import gate_plan

    baseline_promote(run=finished(), by=rita, rationale="floor")
    deeper = make_version(golden_set, relabeled(k=20))
    with CaptureQueriesContext(connection) as queries:
        plan = gate_plan(golden_version=deeper, target=target)
    assert plan.rescore_problem is not None and "scored at k=10" in plan.rescore_problem
    # The whole column is never selected (a report is tens of megabytes at 100,000 queries), only its k
    # (PostgreSQL: "report" -> 'k'; SQLite: JSON_EXTRACT("report", '$."k"')).
    whole = re.compile(r""""report"\s*(,(?!\s*'\$)|FROM)""")
    assert not [q["sql"] for q in queries.captured_queries if whole.search(q["sql"])]
