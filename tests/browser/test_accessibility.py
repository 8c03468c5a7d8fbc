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
from tests.browser.tabs import loaded, new_tabs

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


# The pages of each role in parts of at most `PART`, a test each: the site is built once for a part (a test
# per page rebuilt it fifty times, most of the module's minutes), and the reviewer's forty-odd pages are
# shared between pytest-xdist's workers rather than one test of a minute.
PART = 15
PARTS = {
    f"{role}-{i // PART + 1}": (role, names[i : i + PART])
    for role, names in ROLE_PAGES.items()
    for i in range(0, len(names), PART)
}


def test_the_parts_hold_every_page_of_every_role_once() -> None:
    for role, names in ROLE_PAGES.items():
        assert [name for r, part in PARTS.values() if r == role for name in part] == names


@pytest.mark.parametrize(("role", "names"), list(PARTS.values()), ids=list(PARTS))
def test_no_page_of_the_role_has_an_accessibility_violation(
    browser: Browser, live_server: Any, session_for: Session, site: Site, role: str, names: list[str]
) -> None:
    # Every page of the part is checked, then all are told.
    context = browser.new_context()
    failures: list[str] = []
    try:
        if role in USERS:
            session_for(context, USERS[role])
        tabs = new_tabs(context, 30_000)
        for batch in (names[i : i + len(tabs)] for i in range(0, len(names), len(tabs))):
            urls = [f"{live_server.url}{PAGES[name](site)}" for name in batch]
            for name, (page, _, _) in zip(batch, loaded(tabs, urls), strict=True):
                if name in DRAWN:
                    page.locator(DRAWN[name]).first.wait_for()
                if name in KEYS:
                    page.keyboard.press(KEYS[name])
                violations = axe_violations(page)
                if violations:
                    failures.append(f"{role}'s {name} page ({page.url}):\n{described(violations)}")
    finally:
        context.close()
    assert not failures, "\n".join(failures)
