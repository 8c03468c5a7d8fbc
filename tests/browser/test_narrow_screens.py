"""The reviewer's widest pages on a 390 px phone screen (390x844), with real content (tests/browser/site.py):
the run report, the runs list, the side-by-side view, the adjudication page and an experiment's page
reflow without sideways scrolling (a wide table scrolls inside its own box, which a keyboard reaches:
axe-core finds nothing there either), and the nav, an admin's the longest, folds behind the top bar's menu
button and, opened, shows every link and "Log out" inside the screen. The menu button: a keyboard opens
and closes it (Escape gives the focus back), axe-core finds nothing open or closed, it is not there on a
desktop, and without scripts the menu stays unfolded. The compare page stacks its two lists, A then B. The
reviewer's tables of records (and Django admin's change lists) are cards: each row a box inside the screen,
each labeled cell headed by its column's name, and axe-core finds nothing; on a desktop, rows again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from evaluation.runs.selectors import run_compare_query
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


# What the top bar's menu holds: the nav's links and "Log out".
MENU_ITEMS = "header.topbar nav a, header.topbar .logout button"


def assert_fits(page: Page) -> None:
    """No sideways scrolling of the page; the top bar one line (under 80 px), its menu folded behind the
    menu button; opened, every link of the nav and "Log out" inside the screen; folded again after."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.evaluate("window.innerWidth"), f"{width} px wide: {page.evaluate(SPILLING)}"
    header = page.locator("header.topbar").bounding_box()
    assert header is not None and header["height"] < 80, header
    button, items = page.locator("#menu-button"), page.locator(MENU_ITEMS)
    assert items.count() > 1
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(items.first).to_be_hidden()
    button.click()
    expect(button).to_have_attribute("aria-expanded", "true")
    for item in items.all():
        expect(item).to_be_visible()
        box = item.bounding_box()
        inside = box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH
        assert inside, f"{item.inner_text()!r} is not inside the screen: {box}"
    button.click()
    expect(items.first).to_be_hidden()


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


def test_the_menu_folds_behind_a_button_a_keyboard_opens_and_closes(
    browser: Browser, live_server: Any, session_for: Session, site: Site
) -> None:
    page = sized_page(browser, session_for, USERS["reviewer"], WIDTH, HEIGHT)
    try:
        page.goto(f"{live_server.url}{PAGES['runs'](site)}")
        button, items = page.locator("#menu-button"), page.locator(MENU_ITEMS)
        expect(button).to_have_attribute("aria-controls", "site-menu")
        page.keyboard.press("Tab")  # the brand, then the button
        page.keyboard.press("Tab")
        expect(button).to_be_focused()
        page.keyboard.press("Enter")
        expect(button).to_have_attribute("aria-expanded", "true")
        page.keyboard.press("Tab")
        expect(items.first).to_be_focused()
        violations = axe_violations(page)
        assert not violations, described(violations)
        page.keyboard.press("Escape")
        expect(button).to_have_attribute("aria-expanded", "false")
        expect(button).to_be_focused()
        expect(items.first).to_be_hidden()
        page.keyboard.press(" ")  # a button: Space opens it too
        expect(items.first).to_be_visible()
        page.keyboard.press(" ")
        expect(items.first).to_be_hidden()
        violations = axe_violations(page)
        assert not violations, described(violations)

        page.set_viewport_size({"width": 1366, "height": HEIGHT})  # a desktop: no button, the nav in the bar
        expect(button).to_be_hidden()
        for item in items.all():
            expect(item).to_be_visible()
    finally:
        page.context.close()


def test_without_scripts_the_menu_stays_unfolded(
    browser: Browser, live_server: Any, session_for: Session, site: Site
) -> None:
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}, java_script_enabled=False)
    try:
        session_for(context, USERS["reviewer"])
        page = context.new_page()
        page.goto(f"{live_server.url}{PAGES['runs'](site)}")
        expect(page.locator("#menu-button")).to_be_hidden()
        for item in page.locator(MENU_ITEMS).all():
            expect(item).to_be_visible()
    finally:
        context.close()


def test_the_compare_page_stacks_list_a_then_list_b(
    browser: Browser, live_server: Any, session_for: Session, site: Site
) -> None:
    page = sized_page(browser, session_for, USERS["reviewer"], WIDTH, HEIGHT)
    try:
        url = PAGES["side by side"](site)
        page.goto(f"{live_server.url}{url}")
        expect(page.locator("#side-by-side")).to_be_hidden()  # the wide table's place taken by the two lists
        a, b = page.locator("#list-a table"), page.locator("#list-b table")
        expect(a).to_contain_text("Rank in B")
        expect(b).to_contain_text("Rank in A")
        box_a, box_b = a.bounding_box(), b.bounding_box()
        assert box_a is not None and box_b is not None
        assert box_b["y"] >= box_a["y"] + box_a["height"]  # A, then B below it
        assert box_a["x"] + box_a["width"] <= WIDTH and box_b["x"] + box_b["width"] <= WIDTH
        query = parse_qs(urlsplit(url).query)["query"][0]
        data = run_compare_query(run_a=site.scene.baseline, run_b=site.scene.current, query_id=query)
        for side in ("a", "b"):  # each list whole, in its run's order
            shown = page.locator(f"#list-{side} tbody td:nth-child(2) .muted").all_inner_texts()
            assert shown == [hit["doc_id"] for hit in data[side]["hits"]]
        violations = axe_violations(page)
        assert not violations, described(violations)
    finally:
        page.context.close()


# The pages whose tables of records are cards on a phone (table.cards, static/css/cards.css), by role.
CARDS = {
    "reviewer": [
        *("set detail", "query review", "review queue", "agreement", "proposals", "judges"),
        *("judge qualification", "run report", "targets", "target detail", "budgets", "API tokens"),
        "experiment",
    ],
    "admin": ["admin golden sets"],  # Django admin's change list (static/js/admin.js)
}
# Each table of cards on the page: its rows' display and right edges, and its shown cells whose data-label
# is not written before them.
CARD_ROWS = """[...document.querySelectorAll("table.cards")].map((t) => ({
  rows: [...t.tBodies].flatMap((b) => [...b.rows])
    .map((r) => ({display: getComputedStyle(r).display, right: r.getBoundingClientRect().right})),
  unlabeled: [...t.querySelectorAll(":scope > tbody > tr > [data-label]")]
    .filter((c) => c.checkVisibility())
    .filter((c) => getComputedStyle(c, "::before").content !== `"${c.dataset.label}: "`)
    .map((c) => c.dataset.label),
}))"""


@pytest.mark.parametrize("role", list(CARDS))
def test_tables_of_records_are_cards_on_a_phone_and_rows_on_a_desktop(
    browser: Browser, live_server: Any, session_for: Session, site: Site, role: str
) -> None:
    page = sized_page(browser, session_for, USERS[role], WIDTH, HEIGHT)
    try:
        for name in CARDS[role]:
            page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
            page.goto(f"{live_server.url}{PAGES[name](site)}")
            tables = page.evaluate(CARD_ROWS)
            assert tables and all(t["rows"] for t in tables), name
            for table in tables:
                for row in table["rows"]:  # a card (a grid), or a line of its own (a row of one cell)
                    assert row["display"] in ("grid", "block") and row["right"] <= WIDTH, (name, row)
                assert not table["unlabeled"], (name, table["unlabeled"])
            violations = axe_violations(page)
            assert not violations, f"{name}: {described(violations)}"
            page.set_viewport_size({"width": 1366, "height": HEIGHT})
            for table in page.evaluate(CARD_ROWS):
                assert {row["display"] for row in table["rows"]} == {"table-row"}, name
    finally:
        page.context.close()
