"""The reviewer's home page lists what waits (docs/runs.md, "What waits for you"): studies waiting for
answers with their progress, experiments finished since the last visit, studies waiting for their runs
and runs failed in the last 7 days, each linking to its page; only of the sets the user reviews (an
admin every set); nothing for raters or users without a role. A visit is a run of views without a
quiet half hour: a reload keeps what was new, a visit after a pause starts where the last one ended."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluation.home.models import VISIT_GAP, HomeSeen
from evaluation.home.selectors import SHOWN
from evaluation.models import EvaluationRun, Experiment, PendingStudy
from labeling.models import GoldenSet
from tests.support.evaluation import logged_in, page_text, section_text
from tests.support.home import (
    DAY,
    HOUR,
    Home,
    answer,
    experiment_of,
    failed_run_at,
    home_world,
    study_of,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(name="home")
def home_fixture(golden_set: GoldenSet, other_set: GoldenSet, rita: User, victor: User, alice: User) -> Home:
    return home_world(golden_set, other_set, rita, victor, alice)


def _seen(user: User, ago: timedelta) -> None:
    """The user's last view of the home page was `ago` before now."""
    HomeSeen.objects.update_or_create(user=user, defaults={"seen_at": timezone.now() - ago, "since": None})


def _links(response: object, element_id: str) -> list[str]:
    markup = response.content.decode()  # type: ignore[attr-defined]
    start = markup.index(f'id="{element_id}"')
    return re.findall(r'href="([^"]+)"', markup[start : markup.index("</section>", start)])


def test_a_reviewer_s_home_lists_what_waits_each_linking_to_its_page(home: Home, rita: User) -> None:
    _seen(rita, 2 * HOUR)
    client = logged_in(rita)

    page = client.get("/")

    assert page.status_code == 200
    studies = section_text(page, "home-studies")
    assert "ranker v2 against the baseline" in studies and "1/3 answered" in studies
    assert "synonyms on" not in studies  # every answer in
    assert "docs ranker" not in page_text(page)  # another set's
    finished = section_text(page, "home-finished")
    assert "since your last visit" in finished
    assert f"experiment #{home.finished_lately.pk}" in finished and "succeeded" in finished
    for absent in (home.finished_before, home.running, home.elsewhere["experiment"]):
        assert f"experiment #{absent.pk} " not in finished  # type: ignore[attr-defined]
    pending = section_text(page, "home-pending")
    assert "msm1 on targets" in pending and "broken on targets" not in pending
    assert "docs on targets" not in pending
    failed = section_text(page, "home-failed")
    assert f"run {home.failed_lately.pk} engine (rewrite=true) on help-center@" in failed
    assert "every one of the 3 queries errored: HTTP 500" in failed
    assert f"run {home.failed_long_ago.pk} " not in failed and "timed out" not in failed

    links = {
        "home-studies": [f"/studies/{home.waiting.pk}/"],
        "home-finished": [f"/experiments/{home.finished_lately.pk}/"],
        "home-pending": [f"/studies/pending/{home.pending.pk}/"],
        "home-failed": [f"/runs/{home.failed_lately.pk}/"],
    }
    for section, expected in links.items():
        assert _links(page, section) == expected, section
        for link in expected:
            assert client.get(link).status_code == 200, link


def test_what_finished_since_the_last_visit_stays_for_the_visit_and_moves_on_after_a_pause(
    home: Home, rita: User
) -> None:
    _seen(rita, 2 * HOUR)
    client = logged_in(rita)
    first = client.get("/")
    seen = HomeSeen.objects.get(user=rita)
    assert seen.since is not None and timezone.now() - seen.since > 2 * HOUR - timedelta(minutes=1)
    assert f"experiment #{home.finished_lately.pk}" in section_text(first, "home-finished")

    again = client.get("/")  # a reload: the same visit
    assert f"experiment #{home.finished_lately.pk}" in section_text(again, "home-finished")
    assert HomeSeen.objects.get(user=rita).since == seen.since

    # The next visit, after a quiet half hour: what finished an hour ago was seen on the last one.
    HomeSeen.objects.filter(user=rita).update(seen_at=timezone.now() - VISIT_GAP - timedelta(minutes=1))
    later = client.get("/")
    assert "None." in section_text(later, "home-finished")
    assert HomeSeen.objects.get(user=rita).since > seen.since  # type: ignore[operator]


def test_a_first_visit_lists_the_experiments_of_the_last_seven_days(home: Home, rita: User) -> None:
    page = logged_in(rita).get("/")
    finished = section_text(page, "home-finished")
    assert "in the last 7 days" in finished
    assert f"experiment #{home.finished_lately.pk}" in finished
    assert f"experiment #{home.finished_before.pk}" in finished and "failed" in finished
    assert HomeSeen.objects.get(user=rita).since is None


def test_an_admin_sees_every_set_and_another_set_s_reviewer_only_theirs(
    home: Home, ada: User, victor: User
) -> None:
    everything = page_text(logged_in(ada).get("/"))
    for shown in ("ranker v2 against the baseline", "docs ranker", "msm1 on targets", "docs on targets"):
        assert shown in everything, shown
    assert f"run {home.failed_lately.pk} " in everything and "timed out" in everything

    theirs = page_text(logged_in(victor).get("/"))
    assert "docs ranker" in theirs and "docs on targets" in theirs and "timed out" in theirs
    for hidden in ("ranker v2 against the baseline", "msm1 on targets", "every one of the 3 queries errored"):
        assert hidden not in theirs, hidden
    assert f"experiment #{home.finished_lately.pk} " not in theirs


def test_raters_and_users_without_a_role_get_no_lists_and_no_visit_recorded(
    home: Home, alice: User, charlie: User
) -> None:
    for user in (alice, charlie):
        page = logged_in(user).get("/")
        assert page.status_code == 200
        text = page_text(page)
        assert (
            "What waits for you" not in text
            and "ranker v2" not in text
            and "/runs/" not in page.content.decode()
        )
    assert not HomeSeen.objects.filter(user__in=[alice, charlie]).exists()


def test_a_pending_study_whose_run_failed_is_settled_by_the_visit(home: Home, rita: User) -> None:
    run = home.pending.run_b
    EvaluationRun.objects.filter(pk=run.pk).update(
        status=EvaluationRun.Status.FAILED, finished_at=timezone.now(), error_message="every query errored"
    )
    page = logged_in(rita).get("/")

    home.pending.refresh_from_db()
    assert home.pending.status == PendingStudy.Status.FAILED
    assert "msm1 on targets" not in section_text(page, "home-pending")
    assert f"run {run.pk} " in section_text(page, "home-failed")


def test_a_long_list_shows_the_first_ones_and_counts_the_rest(home: Home, rita: User) -> None:
    for _ in range(SHOWN + 2):
        failed_run_at(home.waiting, DAY, "HTTP 503")
    page = logged_in(rita).get("/")
    failed = section_text(page, "home-failed")
    assert failed.count("HTTP 503") == SHOWN and "and 3 more: every failed run" in failed
    assert "/runs/?status=failed" in _links(page, "home-failed")


def test_nothing_waiting_says_so(golden_set: GoldenSet, rita: User) -> None:
    text = page_text(logged_in(rita).get("/"))
    assert "Nothing waits for you: no study is waiting for answers or for its runs" in text


def test_a_view_after_a_quiet_half_hour_begins_a_new_visit() -> None:
    start = timezone.now()
    seen = HomeSeen(seen_at=start, since=None)
    seen.view(start + timedelta(minutes=29))
    assert seen.since is None and seen.seen_at == start + timedelta(minutes=29)
    seen.view(start + timedelta(minutes=58))  # 29 minutes after the last view: the same visit
    assert seen.since is None
    seen.view(start + timedelta(minutes=88))
    assert seen.since == start + timedelta(minutes=58) and seen.seen_at == start + timedelta(minutes=88)
    seen.view(start)  # a clock that went back keeps the latest view
    assert seen.seen_at == start + timedelta(minutes=88)


def test_an_anonymous_request_goes_to_the_login_page_and_records_no_visit(db: None) -> None:
    assert Client().get("/").status_code == 302
    assert not HomeSeen.objects.exists()


def test_the_lists_read_the_same_number_of_queries_however_many_rows_they_show(
    home: Home, rita: User, django_assert_num_queries: Any
) -> None:
    client = logged_in(rita)
    client.get("/")
    with CaptureQueriesContext(connection) as few:
        client.get("/")
    for _ in range(5):
        failed_run_at(home.waiting, DAY, "HTTP 503")
        experiment_of(home.waiting, Experiment.Status.CANCELLED, HOUR)
        answer(study_of(home.waiting.golden_set, rita, home.waiting.raters.get(), "another"), 1)
    with django_assert_num_queries(len(few)):
        page = client.get("/")
    assert section_text(page, "home-failed").count("HTTP 503") == 5
