"""Every figure opens onto its evidence, in Chromium against a real server (docs/sxs.md, "Evidence"): a
reviewer walks from a study's results to one query's evidence page and back, at 1,366 and 390 px; the
page shows both lists with their labels, the figures and the raters' answers un-blinded, axe-core finds no
violation, and at 390 px the two lists stack and the page does not scroll sideways; the same from an
experiment's configuration table to its queries against the baseline and one query's evidence."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, expect

from evaluation.models import SxsStudy
from labeling.models import GoldenSet
from tests.browser.test_accessibility import axe_violations, described
from tests.browser.test_grading_keys import sized_page
from tests.browser.test_narrow_screens import assert_fits, assert_two_columns
from tests.support.experiments import finished_experiment, tuned_answer
from tests.support.runs import golden_file, make_target, make_version
from tests.support.stub_server import StubServer
from tests.support.studies import one_query_answered

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


@pytest.fixture
def study(golden_set: GoldenSet, rita: User, alice: User, bob: User) -> SxsStudy:
    return one_query_answered(golden_set, rita, alice, bob)


@pytest.mark.parametrize("width", [1366, 390])
def test_a_reviewer_walks_from_the_study_to_a_querys_evidence_and_back(
    browser: Browser, live_server: Any, session_for: Session, study: SxsStudy, width: int
) -> None:
    page = sized_page(browser, session_for, "rita", width, 844)
    try:
        page.goto(f"{live_server.url}/studies/{study.pk}/")
        page.locator("#study-offline a", has_text="q-1").click()
        page.wait_for_url(f"{live_server.url}/studies/{study.pk}/evidence/?query=q-1")
        expect(page.locator("main h1")).to_contain_text(f"Study {study.pk}, query q-1")
        expect(page.locator("#evidence-side-a h3")).to_contain_text(f"A (the baseline): {study.run_a.label}")
        expect(page.locator("#evidence-side-b h3")).to_contain_text(f"B (the candidate): {study.run_b.label}")
        expect(page.locator("#evidence-side-a tr[data-doc='d3']")).to_contain_text("unjudged")
        expect(page.locator("#evidence-side-a tr[data-doc='d1']")).to_contain_text("3")
        expect(page.locator("#evidence-overlap")).to_contain_text("RBO 0.7378")
        expect(page.locator("tr[data-rater='alice']")).to_contain_text("B hides the refund page")
        expect(page.locator("tr[data-rater='alice']")).to_contain_text("something else (see the note)")
        expect(page.locator("tr[data-rater='bob']")).to_contain_text("relevance at the top")
        assert_two_columns(page, "#evidence-side-a", "#evidence-side-b", narrow=width == 390)
        violations = axe_violations(page)
        assert not violations, described(violations)

        page.locator("#evidence-side-b h3 a").click()  # the candidate's run page
        page.wait_for_url(f"{live_server.url}/runs/{study.run_b_id}/")
        page.go_back()
        page.locator("#evidence-back a").first.click()
        page.wait_for_url(f"{live_server.url}/studies/{study.pk}/#study-results")
        expect(page.locator("#study-offline")).to_be_visible()
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [1366, 390])
def test_a_reviewer_walks_from_an_experiment_to_a_configurations_query_and_back(
    browser: Browser,
    live_server: Any,
    session_for: Session,
    stub: StubServer,
    golden_set: GoldenSet,
    rita: User,
    width: int,
) -> None:
    stub.default = tuned_answer
    version = make_version(golden_set, golden_file(8))
    experiment = finished_experiment(
        version, make_target(f"{stub.url}/search", golden_set), rita, grid={"params": {"w": [1, 3]}}, top=2
    )
    page = sized_page(browser, session_for, "rita", width, 844)
    try:
        page.goto(f"{live_server.url}/experiments/{experiment.pk}/")
        page.locator("#config-table a", has_text="each query").first.click()
        page.wait_for_url(re.compile(rf".*/experiments/{experiment.pk}/configs/\d+/$"))
        expect(page.locator("#config-query-table tbody tr")).to_have_count(8)
        if width == 390:
            assert_fits(page)
        violations = axe_violations(page)
        assert not violations, described(violations)
        page.locator("#config-query-table a", has_text="q-1").click()
        page.wait_for_url(re.compile(r".*/evidence/\?query=q-1$"))
        expect(page.locator("#evidence-side-a h3")).to_contain_text("A (the baseline)")
        assert_two_columns(page, "#evidence-side-a", "#evidence-side-b", narrow=width == 390)
        violations = axe_violations(page)
        assert not violations, described(violations)
        page.locator("#evidence-back a").first.click()
        page.wait_for_url(re.compile(rf".*/experiments/{experiment.pk}/configs/\d+/$"))
        page.locator("#evidence-back a").first.click()
        page.wait_for_url(f"{live_server.url}/experiments/{experiment.pk}/#configurations")
    finally:
        page.context.close()
