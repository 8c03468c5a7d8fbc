"""The reviewer's home page in Chromium against a real server (docs/runs.md, "What waits for you"): its
four lists at 1,366 and 390 px, axe clean, no sideways scrolling at 390, each list's link opening its
page; and the pages that wait updating themselves as the work settles, with no reload by the person: a
pending study's page turns into the study once its runs have finished, an experiment's row on the list
shows its end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, expect

from evaluation.models import EvaluationRun, Experiment, SxsStudy
from labeling.models import GoldenSet
from tests.browser.test_accessibility import axe_violations, described
from tests.browser.test_grading_keys import sized_page
from tests.browser.test_narrow_screens import assert_fits
from tests.support.home import Home, home_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


@pytest.fixture(name="home")
def home_fixture(golden_set: GoldenSet, other_set: GoldenSet, rita: User, victor: User, alice: User) -> Home:
    return home_world(golden_set, other_set, rita, victor, alice)


@pytest.mark.parametrize("width", [1366, 390])
def test_the_home_page_lists_what_waits_and_each_link_opens_its_page(
    browser: Browser, live_server: Any, session_for: Session, home: Home, width: int
) -> None:
    page = sized_page(browser, session_for, "rita", width, 844)
    try:
        page.goto(f"{live_server.url}/")
        expect(page.locator("#waiting-title")).to_have_text("What waits for you")
        expect(page.locator("#home-studies")).to_contain_text("1/3 answered")
        expect(page.locator("#home-studies progress")).to_have_attribute("aria-label", "1 of 3 answers")
        expect(page.locator("#home-finished")).to_contain_text(f"experiment #{home.finished_lately.pk}")
        expect(page.locator("#home-pending")).to_contain_text("msm1 on targets")
        expect(page.locator("#home-failed")).to_contain_text("every one of the 3 queries errored")
        if width == 390:
            assert_fits(page)
            studies, failed = (page.locator(f"#home-{s}").bounding_box() for s in ("studies", "failed"))
            assert studies is not None and failed is not None and failed["y"] > studies["y"]  # stacked
        violations = axe_violations(page)
        assert not violations, described(violations)

        for section, path in (
            ("studies", f"/studies/{home.waiting.pk}/"),
            ("finished", f"/experiments/{home.finished_lately.pk}/"),
            ("pending", f"/studies/pending/{home.pending.pk}/"),
            ("failed", f"/runs/{home.failed_lately.pk}/"),
        ):
            page.goto(f"{live_server.url}/")
            page.locator(f"#home-{section} li a").first.click()
            page.wait_for_url(f"{live_server.url}{path}")
            expect(page.locator("main h1")).to_be_visible()
    finally:
        page.context.close()


def test_a_pending_study_s_page_turns_into_the_study_when_its_runs_finish(
    browser: Browser, live_server: Any, session_for: Session, home: Home
) -> None:
    pending = home.pending
    # Its two runs, with the results of the waiting study's finished runs, not yet finished.
    for run, source in ((pending.run_a, home.waiting.run_a), (pending.run_b, home.waiting.run_b)):
        for result in source.results.all():
            result.pk, result.run = None, run
            result.save()
        EvaluationRun.objects.filter(pk=run.pk).update(
            status=EvaluationRun.Status.RUNNING, report=source.report
        )
    pending.options = {
        **pending.options,
        "raters": [home.waiting.raters.get().pk],
        "rater_name": "Ranking check",
    }
    pending.save()
    page = sized_page(browser, session_for, "rita", 1366)
    try:
        page.goto(f"{live_server.url}/studies/pending/{pending.pk}/")
        expect(page.locator("#pending-status")).to_contain_text("This page follows the runs")
        expect(page.locator("#pending-runs")).to_contain_text("running")
        violations = axe_violations(page)
        assert not violations, described(violations)

        EvaluationRun.objects.filter(pk__in=[pending.run_a_id, pending.run_b_id]).update(
            status=EvaluationRun.Status.SUCCEEDED
        )
        page.wait_for_url(lambda url: "/studies/pending/" not in url)
        study = SxsStudy.objects.get(pending=pending)
        assert page.url == f"{live_server.url}/studies/{study.pk}/"
        expect(page.locator("#study-rater-name")).to_have_text("Ranking check")
    finally:
        page.context.close()


def test_an_experiment_s_row_shows_its_end_without_a_reload(
    browser: Browser, live_server: Any, session_for: Session, home: Home
) -> None:
    page = sized_page(browser, session_for, "rita", 1366)
    try:
        page.goto(f"{live_server.url}/experiments/")
        row = page.locator(f"#experiment-{home.running.pk}")
        expect(row).to_have_attribute("data-status", "running")
        page.evaluate("window.notReloaded = true")
        Experiment.objects.filter(pk=home.running.pk).update(status=Experiment.Status.SUCCEEDED, done=4)
        expect(row).to_have_attribute("data-status", "succeeded")
        expect(row).to_contain_text("4/4")
        assert page.evaluate("window.notReloaded") is True
        assert row.get_attribute("hx-get") is None  # settled: it asks no more
    finally:
        page.context.close()
