"""Every page works under the Content-Security-Policy (config/settings.py): no inline script, no eval,
no inline style outside Swagger UI; and the grading page resends a save the server answered busy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from playwright.sync_api import ConsoleMessage, Page, Route, expect

from labeling.models import Assignment, GoldenSet, Judgment
from tests import factories
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Login = Callable[[Page, str], None]


def _violations(page: Page) -> list[str]:
    found: list[str] = []

    def seen(message: ConsoleMessage) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            found.append(f"{page.url}: {message.text}")

    page.on("console", seen)
    return found


def test_every_kind_of_page_loads_without_a_policy_violation(
    page: Page, live_server: Any, login: Login, golden_set: GoldenSet, assignment: Assignment
) -> None:
    User.objects.create_superuser(username="ada", password=PASSWORD, email="ada@example.org")
    violations = _violations(page)
    login(page, "alice")  # the login page itself, and the throttled login behind it
    grading = f"{live_server.url}{reverse('labeling:grade', args=[assignment.pk])}"
    page.goto(grading)
    expect(page.locator(".candidate.focused")).to_have_count(1)  # grading.js ran
    page.goto(f"{live_server.url}{reverse('labeling:queue')}")
    page.locator("form.logout button").click()
    login(page, "ada")
    for name in (
        "home",
        "labeling:set_list",
        "golden_io:set_list",
        "evaluation:run_list",
        "evaluation:target_list",
        "evaluation:tokens",
        "admin:index",
    ):
        response = page.goto(f"{live_server.url}{reverse(name)}")
        assert response is not None and response.status == 200, name
        assert "script-src 'self'" in response.headers["content-security-policy"]
    page.goto(f"{live_server.url}{reverse('api-docs')}")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()  # its script came as a file and ran
    assert violations == []


def test_a_save_answered_busy_is_resent_and_lands(
    page: Page, live_server: Any, login: Login, assignment: Assignment
) -> None:
    # The one stand-in: a live server on PostgreSQL never finds its database locked, so the first save's
    # answer is the 503 the grading endpoint gives when SQLite stays locked (tests/labeling/
    # test_sqlite_busy_saves.py gets that answer from a real locked SQLite file).
    answered_busy: list[str] = []

    def busy_once(route: Route) -> None:
        if route.request.method == "POST" and not answered_busy:
            answered_busy.append(route.request.post_data or "")
            route.fulfill(
                status=503,
                headers={"Retry-After": "1", "Content-Type": "application/json"},
                body='{"error": "busy", "message": "the database is busy"}',
            )
        else:
            route.continue_()

    page.route("**/grades/", busy_once)
    login(page, "alice")
    page.goto(f"{live_server.url}{reverse('labeling:grade', args=[assignment.pk])}")
    focused = page.locator(".candidate.focused")
    candidate = factories.tokens(assignment)[focused.get_attribute("data-candidate") or ""].pk
    page.keyboard.press("2")
    expect(focused.locator(".save-state")).to_contain_text("the server is busy. Trying again in 1 s")
    expect(focused.locator(".save-state")).to_have_text("Saved")
    assert len(answered_busy) == 1
    judgment = Judgment.objects.get(assignment=assignment, document__candidates__pk=candidate)
    assert judgment.grade == 2
