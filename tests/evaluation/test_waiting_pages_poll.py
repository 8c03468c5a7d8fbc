"""Pages that wait update themselves (htmx polling) and stop once settled: a pending study's page (its
status fragment, which reloads the page once the study is made or has failed), its row on the set's study
list, and an experiment's row on the experiment list. The run pages' own polling: test_views_runs.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import EvaluationRun, Experiment, PendingStudy, SxsStudy
from labeling.models import GoldenSet
from tests.support.evaluation import logged_in
from tests.support.home import Home, home_world
from tests.support.studies import two_runs

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}
Status = EvaluationRun.Status


@pytest.fixture(name="pending")
def pending_fixture(golden_set: GoldenSet, rita: User, alice: User) -> PendingStudy:
    """A study on two targets whose two runs are still running (their results are in: once they are
    marked succeeded the study can be made)."""
    run_a, run_b = two_runs(golden_set, 3)
    EvaluationRun.objects.filter(pk__in=[run_a.pk, run_b.pk]).update(status=Status.RUNNING)
    return PendingStudy.objects.create(
        name="ranker on targets",
        golden_set=golden_set,
        golden_version=run_a.golden_version,
        run_a=run_a,
        run_b=run_b,
        options={"raters": [alice.pk], "seed": 1, "answers_per_query": 1, "rater_name": "Ranking check"},
        created_by=rita,
    )


def _polls(markup: str, url: str) -> bool:
    return f'hx-get="{url}"' in markup and 'hx-trigger="every ' in markup


def test_a_pending_study_s_page_follows_its_runs_and_reloads_once_the_study_is_made(
    pending: PendingStudy, rita: User
) -> None:
    client = logged_in(rita)
    status_url = f"/studies/pending/{pending.pk}/status/"
    page = client.get(f"/studies/pending/{pending.pk}/").content.decode()
    assert _polls(page, status_url) and "Reload this page" not in page
    assert "This page follows the runs as they search" in page

    waiting = client.get(status_url, headers=HX)
    assert waiting.status_code == 200 and "HX-Refresh" not in waiting
    assert _polls(waiting.content.decode(), status_url) and "running" in waiting.content.decode()

    EvaluationRun.objects.filter(pk__in=[pending.run_a_id, pending.run_b_id]).update(status=Status.SUCCEEDED)
    made = client.get(status_url, headers=HX)
    study = SxsStudy.objects.get()
    assert made["HX-Refresh"] == "true" and not _polls(made.content.decode(), status_url)
    assert f'href="/studies/{study.pk}/"' in made.content.decode()
    assert study.rater_name == "Ranking check"
    reloaded = client.get(f"/studies/pending/{pending.pk}/")
    assert reloaded.status_code == 302 and reloaded["Location"] == f"/studies/{study.pk}/"


def test_a_pending_study_whose_run_failed_stops_polling_and_says_why(
    pending: PendingStudy, rita: User
) -> None:
    client = logged_in(rita)
    status_url = f"/studies/pending/{pending.pk}/status/"
    EvaluationRun.objects.filter(pk=pending.run_b_id).update(status=Status.FAILED, error_message="HTTP 500")
    failed = client.get(status_url, headers=HX)
    assert failed["HX-Refresh"] == "true"
    page = client.get(f"/studies/pending/{pending.pk}/").content.decode()
    assert not _polls(page, status_url) and 'id="pending-reason"' in page and "HTTP 500" in page
    # Without htmx (a plain request), the fragment is all there is: no reload asked.
    assert "HX-Refresh" not in client.get(status_url)


def test_a_pending_row_on_the_study_list_polls_until_the_study_is_made(
    pending: PendingStudy, rita: User
) -> None:
    client = logged_in(rita)
    row_url = f"/studies/pending/{pending.pk}/row/"
    listing = client.get("/sets/help-center/studies/").content.decode()
    assert _polls(listing, row_url)
    assert _polls(client.get(row_url, headers=HX).content.decode(), row_url)

    EvaluationRun.objects.filter(pk__in=[pending.run_a_id, pending.run_b_id]).update(status=Status.SUCCEEDED)
    row = client.get(row_url, headers=HX).content.decode()
    study = SxsStudy.objects.get()
    assert not _polls(row, row_url) and f'made: <a href="/studies/{study.pk}/">the study</a>' in row


def test_an_experiment_s_row_polls_while_it_is_queued_or_running(
    golden_set: GoldenSet, other_set: GoldenSet, rita: User, victor: User, alice: User
) -> None:
    home: Home = home_world(golden_set, other_set, rita, victor, alice)
    client = logged_in(rita)
    running_url = f"/experiments/{home.running.pk}/row/"
    listing = client.get("/experiments/").content.decode()
    assert _polls(listing, running_url)
    assert not _polls(listing, f"/experiments/{home.finished_lately.pk}/row/")

    Experiment.objects.filter(pk=home.running.pk).update(status=Experiment.Status.SUCCEEDED, done=4)
    row = client.get(running_url, headers=HX).content.decode()
    assert not _polls(row, running_url) and "succeeded" in row and "4/4" in row


@pytest.mark.parametrize("path", ["/studies/pending/{pk}/status/", "/studies/pending/{pk}/row/"])
def test_the_polled_fragments_are_the_set_s_reviewers_only(
    pending: PendingStudy, alice: User, victor: User, path: str, other_set: Any
) -> None:
    for user in (alice, victor):
        assert logged_in(user).get(path.format(pk=pending.pk), headers=HX).status_code == 404
    pending.refresh_from_db()
    assert pending.status == PendingStudy.Status.WAITING
