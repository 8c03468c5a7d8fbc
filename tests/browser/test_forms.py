"""Forms in Chromium (static/js/forms.js): a form sent back with mistakes moves focus to the summary of
them at the top, and each of its links moves focus to the field to fix; the study form's raters start
ticked, and "none" and "select all" change them all at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling.models import GoldenSet
from tests.browser.test_accessibility import axe_violations, described

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def _focused_id(page: Page) -> str:
    return str(page.evaluate("document.activeElement && document.activeElement.id"))


def test_the_summary_takes_focus_and_each_link_takes_it_to_its_field(
    page: Page, live_server: Any, session_for: Session, golden_set: GoldenSet, rita: User
) -> None:
    session_for(page.context, "rita")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/studies/new/")
    raters = page.locator("input[name=raters]")
    expect(raters).to_have_count(2)
    for box in raters.all():
        expect(box).to_be_checked()  # the set's raters, every one ticked to begin with
    page.click("#id_raters .check-all-none button[data-check=none]")
    for box in raters.all():
        expect(box).not_to_be_checked()
    page.click("#id_raters .check-all-none button[data-check=all]")
    for box in raters.all():
        expect(box).to_be_checked()
    page.click("#id_raters .check-all-none button[data-check=none]")
    page.click("#study-form button[type=submit]")

    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    expect(summary.locator("h2")).to_have_text("2 problems to fix")
    assert not (found := axe_violations(page)), described(found)  # the summary, the marked fields
    summary.get_by_role("link", name="Raters: This field is required.").click()
    assert _focused_id(page) == "id_raters_0"
    summary.get_by_role("link", name="choose run A and run B").click()
    assert _focused_id(page) == "id_run_a"
    expect(page.locator("label[for=id_run_a]")).to_be_in_viewport()


def test_the_login_page_says_what_is_wrong_and_where(page: Page, live_server: Any, rita: User) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", "not the password")
    page.keyboard.press("Enter")
    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    assert not (found := axe_violations(page)), described(found)
    summary.locator("a").click()
    assert _focused_id(page) == "id_username"
