"""axe-core finds no accessibility violation on any page of any role (tests/browser/site.py lists them),
each page with real content: the run report of a failing run, the review queue with a dispute, a
calibration round, the grading page, the error pages. axe-core is vendored under tests/browser/assets/
(VERSIONS.md there)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from tests.browser.site import *  # noqa: F403  (the site and the fixtures it stands on)
from tests.browser.site import DRAWN, KEYS, PAGES, ROLE_PAGES, USERS, Site

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
AXE = Path(__file__).parent / "assets" / "axe-core-4.14.1.min.js"


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it stands (its script is evaluated by Playwright, which the
    site's Content-Security-Policy does not restrict, unlike a <script> tag)."""
    page.evaluate(AXE.read_text())
    result: dict[str, Any] = page.evaluate("axe.run(document)")
    return list(result["violations"])


def described(violations: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']}\n" + "".join(f"    {n['target']}\n" for n in v["nodes"])
        for v in violations
    )


@pytest.mark.parametrize("role", list(ROLE_PAGES))
def test_no_page_of_the_role_has_an_accessibility_violation(
    browser: Browser, live_server: Any, session_for: Session, site: Site, role: str
) -> None:
    # One test per role, every page of the role in it: the site is built once for all of them (a test per
    # page rebuilt it fifty times, most of the module's minutes). Every page is checked, then all are told.
    context = browser.new_context()
    failures: list[str] = []
    try:
        if role in USERS:
            session_for(context, USERS[role])
        for name in ROLE_PAGES[role]:
            page = context.new_page()
            page.goto(f"{live_server.url}{PAGES[name](site)}")
            page.wait_for_load_state("networkidle")
            if name in DRAWN:
                page.locator(DRAWN[name]).first.wait_for()
            if name in KEYS:
                page.keyboard.press(KEYS[name])
            violations = axe_violations(page)
            if violations:
                failures.append(f"{role}'s {name} page ({page.url}):\n{described(violations)}")
            page.close()
    finally:
        context.close()
    assert not failures, "\n".join(failures)
