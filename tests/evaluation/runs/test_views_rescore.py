"""The run page's "Re-score the baseline on version X and gate again" (POST /runs/<id>/rescore-baseline/):
offered to the set's reviewers on a run refused for its golden version, it re-gates the run and the page
then says which version was re-scored on which, when and by whom; raters, outsiders and other sets'
reviewers get 404, a user who sees the run without reviewing its set 403. The API's run shows the
re-score record (null before). The nightly schedule form's opt-in."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import BaselineRescore, EvaluationRun, RunSchedule, SearchTarget
from evaluation.runs.services import baseline_promote
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.evaluation.runs.test_services_rescore import relabeled
from tests.support.evaluation import (
    bearer,
    logged_in,
    messages_text,
    page_text,
    section_text,
)
from tests.support.runs import (
    RunFactory,
    make_version,
)

pytestmark = pytest.mark.django_db

BUTTON = "Re-score the baseline on version 2026-09-01 and gate again"


@pytest.fixture
def refused(finished: RunFactory, rita: User, golden_set: GoldenSet) -> EvaluationRun:
    """A run on the new version 2026-09-01, refused against the baseline on 2026-08-01."""
    baseline_promote(run=finished(), by=rita, rationale="the launch floor")
    run = finished(golden_version=make_version(golden_set, relabeled()))
    assert run.verdict == EvaluationRun.Verdict.FAIL
    return run


def test_a_reviewer_rescores_and_regates_from_the_run_page(refused: EvaluationRun, rita: User) -> None:
    client = logged_in(rita)
    before = client.get(f"/runs/{refused.pk}/")
    assert BUTTON in page_text(before)
    assert f'action="/runs/{refused.pk}/rescore-baseline/"' in before.content.decode()

    response = client.post(f"/runs/{refused.pk}/rescore-baseline/", follow=True)

    refused.refresh_from_db()
    rescore = BaselineRescore.objects.get()
    assert refused.verdict == EvaluationRun.Verdict.PASS and refused.baseline_rescore == rescore
    text = page_text(response)
    assert (
        f"Baseline (run {rescore.source_run_id}) re-scored on version 2026-09-01; run {refused.pk} gated "
        "again: pass, was fail."
    ) in text
    card = section_text(response, "verdict-card")
    when = rescore.created.strftime("%Y-%m-%d %H:%M:%S")
    assert f"Baseline re-scored from version 2026-08-01 on version 2026-09-01 at {when} by rita" in card, card
    assert "Gated again against it by rita" in card
    assert BUTTON not in text and "refusing to compare" not in card


def test_a_second_click_changes_nothing_and_says_so(refused: EvaluationRun, rita: User) -> None:
    client = logged_in(rita)
    client.post(f"/runs/{refused.pk}/rescore-baseline/", follow=True)
    refused.refresh_from_db()
    gate = refused.gate
    at = datetime.fromisoformat(gate["regated"]["at"]).strftime("%Y-%m-%d %H:%M UTC")

    response = client.post(f"/runs/{refused.pk}/rescore-baseline/", follow=True)

    assert messages_text(response) == [
        f"Not re-scored: {refused.label} is already gated against the baseline re-scored on version "
        f"2026-09-01 (by rita at {at}), with the same budgets: gating again would change nothing "
        "(verdict pass)"
    ]
    refused.refresh_from_db()
    assert refused.gate == gate and BaselineRescore.objects.count() == 1


def test_a_nightly_rescore_is_shown_as_the_schedules(
    refused: EvaluationRun, rita: User, golden_set: GoldenSet, target: SearchTarget, finished: RunFactory
) -> None:
    schedule = RunSchedule.objects.create(golden_set=golden_set, target=target, rescore_baseline=True)
    run = finished(
        golden_version=refused.golden_version, schedule=schedule, trigger="schedule", triggered_by=None
    )

    card = section_text(logged_in(rita).get(f"/runs/{run.pk}/"), "verdict-card")

    assert "Baseline re-scored from version 2026-08-01 on version 2026-09-01 at" in card
    assert "by a nightly schedule" in card and "Gated again against it" not in card


def test_the_button_is_not_offered_when_the_versions_match(finished: RunFactory, rita: User) -> None:
    baseline_promote(run=finished(), by=rita, rationale="floor")
    run = finished()

    assert "Re-score the baseline" not in page_text(logged_in(rita).get(f"/runs/{run.pk}/"))
    response = logged_in(rita).post(f"/runs/{run.pk}/rescore-baseline/", follow=True)
    assert "Not re-scored: the baseline is already on version 2026-08-01: nothing to re-score" in page_text(
        response
    )


@pytest.mark.parametrize("who", ["alice", "charlie", "victor"])
def test_raters_outsiders_and_other_sets_reviewers_get_404(
    refused: EvaluationRun, who: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(who)

    assert logged_in(user).post(f"/runs/{refused.pk}/rescore-baseline/").status_code == 404
    assert not BaselineRescore.objects.exists()


def test_who_started_the_run_without_reviewing_its_set_gets_404(
    refused: EvaluationRun, finished: RunFactory, victor: User
) -> None:
    # Starting a run opens nothing of its own: the run is its set's reviewers' (evaluation.runs.access).
    theirs = finished(golden_version=refused.golden_version, triggered_by=victor)
    client = logged_in(victor)

    assert client.get(f"/runs/{theirs.pk}/").status_code == 404
    assert client.post(f"/runs/{theirs.pk}/rescore-baseline/").status_code == 404
    assert not BaselineRescore.objects.exists()


def test_anonymous_callers_are_sent_to_the_login(refused: EvaluationRun) -> None:
    from django.test import Client

    response = Client().post(f"/runs/{refused.pk}/rescore-baseline/")

    assert response.status_code in (302, 404)
    assert not BaselineRescore.objects.exists()


def test_the_api_run_carries_the_rescore_record(refused: EvaluationRun, rita: User, token_for: Any) -> None:
    url = f"/api/v1/runs/{refused.pk}/"
    client = logged_in(rita)
    assert client.get(url, **bearer(token_for(rita, "read"))).json()["baseline_rescore"] is None

    client.post(f"/runs/{refused.pk}/rescore-baseline/")
    body = client.get(url, **bearer(token_for(rita, "read"))).json()

    rescore = BaselineRescore.objects.get()
    assert body["baseline_rescore"] == {
        "id": rescore.pk,
        "source_run": rescore.source_run_id,
        "from_version": "2026-08-01",
        "golden_version": "2026-09-01",
        "created_by": "rita",
        "created": body["baseline_rescore"]["created"],
    }
    assert body["baseline_run"] == rescore.source_run_id and body["verdict"] == "pass"


def test_the_schedule_form_has_the_opt_in(
    target: SearchTarget, golden_set: GoldenSet, rita: User, version: GoldenVersion
) -> None:
    client = logged_in(rita)
    form = {"golden_set": "help-center", "action": "save", "enabled": "on", "hour": "3", "minute": "15"}

    client.post(f"/targets/{target.pk}/schedules/", {**form, "rescore_baseline": "on"})
    assert RunSchedule.objects.get().rescore_baseline is True
    page = client.get(f"/targets/{target.pk}/?schedule=help-center")
    assert "Re-score the baseline on a new golden version" in page_text(page)
    assert re.search(r'<input type="checkbox" name="rescore_baseline"[^>]* checked>', page.content.decode())
    assert "re-scores the baseline" in section_text(page, "schedules")

    client.post(f"/targets/{target.pk}/schedules/", form)
    assert RunSchedule.objects.get().rescore_baseline is False
