"""My queue in Chromium: search, filters and sort in the URL, pages that keep them, the back button."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling import services
from labeling.models import Assignment, GoldenSet
from tests import factories
from tests.browser.test_grading_keys import sized_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


@pytest.fixture
def queue(golden_set: GoldenSet, alice: User) -> list[Assignment]:
    """105 "bulk refund" queries in help-center (every third one done) and three in docs-site."""
    other = factories.GoldenSetFactory.create(slug="docs-site", name="Docs site", raters=[alice])
    held = []
    for i in range(105):
        query = factories.pooled_query(golden_set, 1, text=f"bulk refund {i:03}")
        held.append(factories.AssignmentFactory.create(query=query, rater=alice))
    for i in range(3):
        query = factories.pooled_query(other, 1, text=f"docs refund {i}")
        held.append(factories.AssignmentFactory.create(query=query, rater=alice))
    for assignment in held[:105:3]:
        candidate = assignment.query.candidates.get()
        services.judgment_submit(assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=1)
        services.assignment_done(assignment_id=assignment.pk, rater=alice)
    return held


def _at(tab: Page, **wanted: str) -> None:
    """Wait until the page's URL asks for exactly these parameters (empty ones, as a form sends an unset
    select, are no parameter; the default sort neither)."""

    def matches(url: str) -> bool:
        params = {k: v for k, v in parse_qsl(urlsplit(url).query) if v and (k, v) != ("sort", "queue")}
        return urlsplit(url).path == "/queue/" and params == wanted

    tab.wait_for_url(matches)


def _texts(page: Page) -> list[str]:
    return [t.strip() for t in page.locator("#queue tbody td:first-child a").all_inner_texts()]


def test_the_queues_search_filters_and_sort_stay_in_the_url_across_pages_and_back(
    page: Page, live_server: Any, session_for: Session, queue: list[Assignment]
) -> None:
    session_for(page.context, "alice")
    page.goto(f"{live_server.url}/queue/")
    expect(page.locator(".pager .list-summary").first).to_have_text("1–100 of 108 assignments")
    # By keyboard: the search box, the set, then Enter submits the form.
    search = page.get_by_role("searchbox", name="Search")
    search.fill("bulk")
    page.locator("select[name=set]").select_option("help-center")
    search.press("Enter")
    _at(page, q="bulk", set="help-center")
    expect(page.locator(".pager .list-summary").first).to_have_text("1–100 of 105 assignments (of 108)")
    assert len(_texts(page)) == 100
    # The next page keeps the search and the filter, and the controls still show them.
    page.locator(".pager a[rel=next]").first.focus()
    page.keyboard.press("Enter")
    _at(page, q="bulk", set="help-center", page="2")
    expect(page.locator("#queue tbody tr")).to_have_count(5)
    expect(page.get_by_role("searchbox", name="Search")).to_have_value("bulk")
    expect(page.locator("select[name=set]")).to_have_value("help-center")
    # A new filter starts again at page 1, keeping the rest.
    page.locator("select[name=state]").select_option("done")
    page.locator("select[name=sort]").select_option("query")
    page.get_by_role("button", name="Show").click()
    _at(page, q="bulk", set="help-center", state="done", sort="query")
    expect(page.locator(".pager .list-summary").first).to_have_text("35 assignments (of 108)")
    texts = _texts(page)
    assert texts == sorted(texts) and texts[0] == "bulk refund 000" and len(texts) == 35
    expect(page.locator("#queue tbody tr[data-state=done]")).to_have_count(35)
    # Back: the page before, as its URL says.
    page.go_back()
    _at(page, q="bulk", set="help-center", page="2")
    expect(page.locator("#queue tbody tr")).to_have_count(5)
    # Clearing drops the search and filters; the sort stays.
    page.goto(f"{live_server.url}/queue/?q=docs&sort=query")
    assert _texts(page) == ["docs refund 0", "docs refund 1", "docs refund 2"]
    page.get_by_role("link", name="Clear search and filters").click()
    _at(page, sort="query")
    expect(page.locator(".pager .list-summary").first).to_have_text("1–100 of 108 assignments")


def test_the_queue_fits_a_390_px_screen(
    browser: Any, live_server: Any, session_for: Session, queue: list[Assignment]
) -> None:
    page = sized_page(browser, session_for, "alice", 390, 844)
    page.goto(f"{live_server.url}/queue/")
    expect(page.locator("#queue tbody tr")).to_have_count(100)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.context.close()
