"""A long list in a real browser: the set page's search, filters and sort go into the URL, the pages keep
them, the back button brings the previous page and its controls back, and on the review queue one list's
pages leave the other lists as they were."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling import lists
from labeling.models import GoldenSet
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def _query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_search_filters_sort_and_pages_keep_their_state_in_the_url(
    page: Page,
    context: BrowserContext,
    live_server: Any,
    session_for: Session,
    golden_set: GoldenSet,
    rita: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lists, "PER_PAGE", 10)  # read when a list without a size of its own is asked for
    for i in range(45):
        factories.QueryFactory.create(
            golden_set=golden_set,
            external_id=f"q-{i:03d}",
            text=f"refund {i}" if i % 2 else f"login {i}",
            tier="shadow" if i % 5 == 0 else "core",
            stratum="billing",
        )
    session_for(context, "rita")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/")
    controls = page.get_by_role("search", name="Queries: search, filter and sort")
    controls.get_by_label("Search").fill("refund")
    controls.get_by_label("Tier").select_option("core")
    controls.get_by_label("Sort").select_option("new")
    controls.get_by_role("button", name="Show").click()

    page.wait_for_url(re.compile(r"q=refund"))
    state = _query(page)
    assert (state["q"], state["tier"], state["sort"]) == (["refund"], ["core"], ["new"])
    summary = page.locator("#queries .list-summary").first
    expect(summary).to_have_text("1–10 of 18 queries (of 45)")  # odd ids not divisible by 5
    rows = page.locator("#queries tbody tr td:first-child a")
    expect(rows.first).to_have_text("q-043")

    page.locator("#queries nav.pager").first.get_by_role("link", name="next →").click()
    page.wait_for_url(re.compile(r"page=2"))
    state = _query(page)
    assert state["q"] == ["refund"] and state["tier"] == ["core"] and state["sort"] == ["new"]
    expect(summary).to_have_text("11–18 of 18 queries (of 45)")
    expect(controls.get_by_label("Search")).to_have_value("refund")
    expect(controls.get_by_label("Tier")).to_have_value("core")
    expect(controls.get_by_label("Sort")).to_have_value("new")
    expect(page.locator("#queries .pager .current").first).to_have_text("2")

    page.go_back()
    page.wait_for_url(lambda url: "page=2" not in url)
    expect(summary).to_have_text("1–10 of 18 queries (of 45)")
    expect(controls.get_by_label("Search")).to_have_value("refund")

    # A new search starts again at page 1; clearing drops search and filters, and nothing else.
    page.locator("#queries nav.pager").first.get_by_role("link", name="page 2").click()
    page.wait_for_url(re.compile(r"page=2"))
    controls.get_by_label("Search").fill("refund 1")
    controls.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"q=refund\+1"))
    assert "page" not in _query(page)
    controls.get_by_role("link", name="Clear search and filters").click()
    page.wait_for_url(lambda url: "q=" not in url)
    assert _query(page).get("sort") == ["new"]
    expect(summary).to_have_text("1–10 of 45 queries")
