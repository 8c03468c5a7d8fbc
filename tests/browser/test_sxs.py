"""The side-by-side rater's page in Chromium against a real server, by keyboard alone: 1-7 choose the
scale's point, the reason letters and h/l toggle, Enter submits, u undoes, n goes on; a second tab's
submit is refused in words, and so is a page left open while the study closed; a closed study's page
says so and sends nothing; at 390 px the lists stay side by side, keep their letters and the page does
not scroll sideways; axe-core finds no violation in either width, nor on the reviewer's study pages (a pending
study's and a closed one's too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, expect

from evaluation.models import EvaluationRun, PendingStudy, StudyTask, SxsStudy
from evaluation.studies.services import CLOSED, StudySpec, study_create
from evaluation.studies.services.close import study_close
from labeling.models import GoldenSet
from tests.browser.test_accessibility import axe_violations, described
from tests.browser.test_grading_keys import sized_page
from tests.browser.test_narrow_screens import assert_fits
from tests.support.studies import two_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


@pytest.fixture
def study(golden_set: GoldenSet, rita: User, alice: User) -> SxsStudy:
    run_a, run_b = two_runs(golden_set, 3)
    return study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=[alice], seed=1, answers_per_query=1), by=rita
    )


def _first_task(study: SxsStudy) -> StudyTask:
    task = StudyTask.objects.filter(study=study).order_by("token").first()
    assert task is not None
    return task


@pytest.mark.parametrize("width", [1280, 390])
def test_a_rater_answers_undoes_and_moves_on_by_keyboard(
    browser: Browser, live_server: Any, session_for: Session, study: SxsStudy, width: int
) -> None:
    page = sized_page(browser, session_for, "alice", width, 900 if width > 390 else 844)
    try:
        task = _first_task(study)
        page.goto(f"{live_server.url}/sxs/{task.token}/")
        expect(page.locator("#list-L")).to_contain_text("L")
        expect(page.locator("#list-R")).to_contain_text("R")
        left, right = page.locator("#side-L").bounding_box(), page.locator("#side-R").bounding_box()
        assert left is not None and right is not None
        assert abs(right["y"] - left["y"]) < 1 and right["x"] >= left["x"] + left["width"]  # side by side
        if width == 390:
            assert_fits(page)
        violations = axe_violations(page)
        assert not violations, described(violations)

        page.locator("body").click(position={"x": 1, "y": 1})
        page.keyboard.press("Enter")
        expect(page.locator("#sxs-message")).to_contain_text("Choose a point of the scale first")
        page.keyboard.press("6")  # R better
        page.locator("body").focus()
        for key in ("r", "s", "l"):  # relevance, duplicates, junk in R
            page.keyboard.press(key)
        page.keyboard.press("c")
        page.keyboard.type("R has the refund page first")
        page.keyboard.press("Escape")
        page.keyboard.press("Enter")
        expect(page.locator("#sxs-message")).to_contain_text("Answered.")
        task.refresh_from_db()
        assert (task.preference, task.reasons, task.junk_left, task.junk_right) == (
            2,
            ["relevance", "duplicates"],
            False,
            True,
        )
        assert task.note == "R has the refund page first"
        expect(page.locator("input[name=preference]").first).to_be_disabled()

        page.keyboard.press("u")
        expect(page.locator("#sxs-message")).to_contain_text("Undone")
        page.keyboard.press("2")
        page.locator("body").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#sxs-message")).to_contain_text("Answered.")
        task.refresh_from_db()
        assert task.preference == -2 and task.revision == 3

        page.keyboard.press("n")
        page.wait_for_url(lambda url: task.token not in url and "/sxs/" in url)
        assert page.url != f"{live_server.url}/sxs/{task.token}/"
    finally:
        page.context.close()


def test_a_second_tab_is_refused_in_words(
    browser: Browser, live_server: Any, session_for: Session, study: SxsStudy
) -> None:
    context = browser.new_context()
    session_for(context, "alice")
    try:
        task = _first_task(study)
        one, two = context.new_page(), context.new_page()
        for tab in (one, two):
            tab.goto(f"{live_server.url}/sxs/{task.token}/")
        one.keyboard.press("7")
        one.locator("body").focus()
        one.keyboard.press("Enter")
        expect(one.locator("#sxs-message")).to_contain_text("Answered.")
        two.keyboard.press("1")
        two.locator("body").focus()
        two.keyboard.press("Enter")
        expect(two.locator("#sxs-message")).to_contain_text("another tab or window")
        task.refresh_from_db()
        assert task.preference == 3
    finally:
        context.close()


def test_a_page_left_open_while_the_study_closed_is_refused_and_a_closed_page_sends_nothing(
    browser: Browser, live_server: Any, session_for: Session, study: SxsStudy, rita: User
) -> None:
    context = browser.new_context()
    session_for(context, "alice")
    try:
        task = _first_task(study)
        page = context.new_page()
        page.goto(f"{live_server.url}/sxs/{task.token}/")
        study_close(study=study, by=rita)
        page.keyboard.press("7")
        page.locator("body").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#sxs-message")).to_have_text(CLOSED)

        page.reload()
        expect(page.locator("#sxs-closed")).to_have_text(CLOSED)
        expect(page.locator("#sxs-submit")).to_be_disabled()
        expect(page.locator("input[name=preference]").first).to_be_disabled()
        sent: list[str] = []
        page.on("request", lambda request: sent.append(request.url) if request.method == "POST" else None)
        page.locator("body").focus()
        for key in ("7", "Enter", "u"):
            page.keyboard.press(key)
        expect(page.locator("#sxs-message")).to_have_text(CLOSED)
        assert sent == []
        violations = axe_violations(page)
        assert not violations, described(violations)
        task.refresh_from_db()
        assert task.answered_at is None and task.revision == 0
    finally:
        context.close()


def _pending(study: SxsStudy, status: str, reason: str = "") -> PendingStudy:
    """A study on two targets beside `study`: waiting on two queued runs (never started: no worker
    here), or failed with a reason."""
    runs = [
        EvaluationRun.objects.create(golden_version=study.golden_version, target=study.run_a.target)
        for _ in range(2)
    ]
    return PendingStudy.objects.create(
        name=f"on targets, {status}",
        golden_set=study.golden_set,
        golden_version=study.golden_version,
        run_a=runs[0],
        run_b=runs[1],
        status=status,
        reason=reason,
        created_by=study.created_by,
    )


def test_the_reviewer_s_study_pages_are_accessible_and_fit_390_px(
    browser: Browser, live_server: Any, session_for: Session, study: SxsStudy
) -> None:
    waiting = _pending(study, PendingStudy.Status.WAITING)
    failed = _pending(
        study, PendingStudy.Status.FAILED, "run B (run 9, target broken) failed: every query errored"
    )
    for width in (1280, 390):
        page = sized_page(browser, session_for, "rita", width, 844)
        try:
            for path in (
                f"/studies/{study.pk}/",
                "/sets/help-center/studies/",
                "/sets/help-center/studies/new/",
                f"/runs/{study.run_b_id}/",
                f"/studies/pending/{waiting.pk}/",
                f"/studies/pending/{failed.pk}/",
            ):
                page.goto(f"{live_server.url}{path}")
                expect(page.locator("main h1")).to_be_visible()
                if width == 390:
                    assert_fits(page)
                violations = axe_violations(page)
                assert not violations, f"{path}: {described(violations)}"
            if width == 390:  # the study's page closed last: its close form, then its reopen form
                page.goto(f"{live_server.url}/studies/{study.pk}/")
                page.locator("#study-close-form button").click()
                expect(page.locator("#study-frozen")).to_be_visible()
                assert_fits(page)
                violations = axe_violations(page)
                assert not violations, f"closed: {described(violations)}"
        finally:
            page.context.close()
    rater = sized_page(browser, session_for, "alice", 390, 844)
    try:
        for path in ("/sxs/", "/"):
            rater.goto(f"{live_server.url}{path}")
            assert_fits(rater)
            violations = axe_violations(rater)
            assert not violations, f"{path}: {described(violations)}"
    finally:
        rater.context.close()


def test_the_new_study_form_s_interval_line_follows_the_size_as_it_is_typed(
    browser: Browser, live_server: Any, session_for: Session, study: SxsStudy
) -> None:
    page = sized_page(browser, session_for, "rita", 1280, 900)
    try:
        page.goto(f"{live_server.url}/sets/help-center/studies/new/")
        line = page.locator("#study-expectation-text")
        expect(line).to_contain_text("At 20 queries")  # no size typed: the rule's minimum
        expect(page.locator("#study-expectation-warning")).to_contain_text("would likely stay inconclusive")
        page.locator("#id_size").fill("400")
        expect(line).to_contain_text("At 400 queries")
        expect(page.locator("#study-expectation-warning")).to_have_count(0)  # ±0.12: narrow enough
        page.locator("#id_min_lower").fill("0")
        expect(page.locator("#study-expectation-warning")).to_contain_text(
            "a candidate as good as the baseline never passes, at any size"
        )
        violations = axe_violations(page)
        assert not violations, described(violations)
    finally:
        page.context.close()
