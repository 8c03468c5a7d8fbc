"""Playwright against Debian's Chromium and a real server on a loopback port (pytest-django's live_server).

One browser per test module (not per session: while Playwright's sync API runs it keeps an event loop
running in the main thread, and tests that run after this directory call asyncio.run() there); each test
gets a fresh context (cookies, storage), so tests stay independent and each file stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from tests.conftest import PASSWORD

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.fixture(scope="module", autouse=True)
def _sync_orm_beside_playwright() -> Iterator[None]:
    """Playwright's sync API keeps an event loop running in this thread; the tests' ORM calls are still
    plain synchronous code, which Django refuses inside a running loop unless told otherwise. Only here."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if before is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (make test does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context()
    context.set_default_timeout(10_000)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


@pytest.fixture
def login(live_server: Any) -> Callable[[Page, str], None]:
    """Log in through the real form, by keyboard."""

    def do(page: Page, username: str) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/")

    return do


@pytest.fixture
def session_for(live_server: Any) -> Callable[[BrowserContext, str], None]:
    """Put a logged-in session cookie into a browser context (the login form itself is tested once)."""

    def do(context: BrowserContext, username: str) -> None:
        client = Client()
        client.force_login(User.objects.get(username=username))
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}])

    return do
