"""Swagger UI (`/api/docs/`) stays free of axe-core violations past the state it loads in, which
tests/browser/test_accessibility.py checks: with operations open, tried out, a call made, and the
Authorize dialog open, before and after a token is given. What makes it
so: templates/drf_spectacular/swagger_ui.html, static/css/api_docs.css, static/js/api_docs.js and
SPECTACULAR_SETTINGS in config/settings.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.test_accessibility import axe_violations, described

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def _assert_clean(page: Page, state: str) -> None:
    violations = axe_violations(page)
    assert not violations, f"Swagger UI, {state}:\n{described(violations)}"


def test_swagger_ui_opened_and_tried_out_has_no_accessibility_violation(
    context: BrowserContext, page: Page, live_server: Any, session_for: Session, rita: User
) -> None:
    session_for(context, "rita")
    page.goto(f"{live_server.url}{reverse('api-docs')}")
    listing = page.locator("#operations-runs-runs_list")
    creating = page.locator("#operations-runs-runs_create")
    for operation in (listing, creating):  # one with query parameters (an enum among them), one with a body
        operation.locator(".opblock-summary-control").click()
        expect(operation.locator(".responses-table")).to_be_visible()
    _assert_clean(page, "two operations open")
    for operation in (listing, creating):
        operation.locator(".try-out__btn").click()
    expect(creating.locator("textarea.body-param__text")).to_be_visible()
    listing.locator(".btn.execute").click()
    expect(listing.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")
    _assert_clean(page, "tried out, the list of runs called")
    page.locator(".scheme-container .btn.authorize").click()
    dialog = page.get_by_role("dialog", name="Available authorizations")
    expect(dialog).to_be_visible()
    _assert_clean(page, "the Authorize dialog open")
    dialog.locator(".auth-container", has=page.locator("input")).first.locator("input").fill("a-token")
    dialog.get_by_role("button", name="Authorize").first.click()
    expect(dialog.get_by_role("button", name="Logout")).to_be_visible()
    _assert_clean(page, "a token given in the Authorize dialog")
