"""The error pages in a real browser under DEBUG (as `make run` serves them): a rater's 404 is the app's
page in its layout, with no URL pattern, no policy violation and an icon that loads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Login = Callable[[Page, str], None]


def test_a_raters_404_under_debug_is_the_apps_page(
    page: Page, live_server: Any, login: Login, alice: Any, settings: Any
) -> None:
    settings.DEBUG = True
    problems: list[str] = []

    def seen(message: ConsoleMessage) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            problems.append(message.text)

    page.on("console", seen)
    login(page, "alice")
    for address, said in (("/runs/", "Nothing here."), ("/targets/1/promote/", "There is no page at")):
        response = page.goto(f"{live_server.url}{address}")
        assert response is not None and response.status == 404
        expect(page.locator("h1#error-title")).to_contain_text("Page not found")
        expect(page.locator("#error-message")).to_contain_text(said)
        expect(page.locator("header.topbar .who")).to_have_text("alice")
        body = page.content()
        assert "URLconf" not in body and "evaluation:" not in body and "runs/<int" not in body
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert icon is not None and page.request.get(f"{live_server.url}{icon}").status == 200
    assert page.request.get(f"{live_server.url}/favicon.ico").status == 200
    assert problems == []
