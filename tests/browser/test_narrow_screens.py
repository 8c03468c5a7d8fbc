"""The reviewer's widest pages on a 390 px phone screen (390x844), with real content (tests/browser/site.py):
the run report, the runs list, the side-by-side view, the adjudication page and an experiment's page
reflow without sideways scrolling (a wide table scrolls inside its own box, which a keyboard reaches:
axe-core finds nothing there either), and the nav, an admin's the longest, shows every link and "Log out"
inside the screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.site import *  # noqa: F403  (the site and the fixtures it stands on)
from tests.browser.site import PAGES, USERS, Site
from tests.browser.test_accessibility import axe_violations, described
from tests.browser.test_grading_keys import sized_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
WIDTH, HEIGHT = 390, 844
# What sticks out past the right edge of the screen, outside the boxes that scroll (.scroll), for the
# assertion's message.
SPILLING = """[...document.querySelectorAll("body *")]
    .filter((e) => !e.closest(".scroll") && e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .slice(0, 12)
    .map((e) => `${e.tagName}.${e.className}: ${Math.round(e.getBoundingClientRect().right)}`)"""


def assert_fits(page: Page) -> None:
    """No sideways scrolling of the page, and every link of the nav and "Log out" inside the screen."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.evaluate("window.innerWidth"), f"{width} px wide: {page.evaluate(SPILLING)}"
    items = page.locator("header.topbar nav a, header.topbar .logout button")
    assert items.count() > 1
    for item in items.all():
        expect(item).to_be_visible()
        box = item.bounding_box()
        inside = box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH
        assert inside, f"{item.inner_text()!r} is not inside the screen: {box}"


def assert_two_columns(page: Page, first: str, second: str, *, narrow: bool) -> None:
    """Two boxes side by side, `first` on the left; on a narrow screen stacked, `first` above, and the
    page fitting it (`assert_fits`)."""
    one, two = page.locator(first).bounding_box(), page.locator(second).bounding_box()
    assert one is not None and two is not None
    if narrow:
        assert two["y"] >= one["y"] + one["height"] - 1, (one, two)  # stacked, the first above
        assert_fits(page)
    else:
        assert abs(two["y"] - one["y"]) < 1 and two["x"] > one["x"], (one, two)  # side by side


@pytest.mark.parametrize(
    ("role", "name"),
    [
        ("reviewer", "run report"),
        ("reviewer", "runs"),
        ("reviewer", "side by side"),
        ("reviewer", "adjudication"),
        ("reviewer", "doc"),
        ("reviewer", "experiment"),  # its tables, heat map and coverage card
        ("admin", "home"),  # the longest nav: every reviewer's link and Admin
    ],
)
def test_the_page_fits_a_390_px_screen(
    browser: Browser, live_server: Any, session_for: Session, site: Site, role: str, name: str
) -> None:
    page = sized_page(browser, session_for, USERS[role], WIDTH, HEIGHT)
    try:
        page.goto(f"{live_server.url}{PAGES[name](site)}")
        expect(page.locator("main h1")).to_be_visible()
        assert_fits(page)
        violations = axe_violations(page)
        assert not violations, described(violations)
    finally:
        page.context.close()
