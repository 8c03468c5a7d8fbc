"""Choosing a calibration round's queries in Chromium: a search narrows the set's queries (by id, text or
stratum), each stratum's group takes all its shown queries at once, and the round starts with exactly the
ones chosen: no Ctrl-clicking through a list of 86."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling.models import CalibrationRound, GoldenSet
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def test_a_search_and_a_whole_stratum_choose_the_rounds_queries(
    page: Page, live_server: Any, session_for: Session, golden_set: GoldenSet, rita: User
) -> None:
    for i in range(12):
        factories.pooled_query(
            golden_set,
            2,
            external_id=f"q-{i:02}",
            text=f"refund case {i}" if i < 4 else f"login case {i}",
            stratum="billing" if i % 2 else "account",
        )
    session_for(page.context, "rita")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/calibration/")
    picker = page.locator("#query-picker")
    expect(picker.locator(".picker-group")).to_have_count(2)
    page.fill("#query-search", "refund")
    expect(picker.locator(".picker-item:visible")).to_have_count(4)
    billing = picker.locator(".picker-group[data-stratum='billing']")
    billing.locator(".pick-all").click()
    expect(page.locator("#picker-count")).to_have_text("2 queries chosen")  # q-01, q-03: refund and billing
    page.fill("#query-search", "q-10")
    picker.locator(".picker-item:visible input").check()
    expect(page.locator("#picker-count")).to_have_text("3 queries chosen")
    page.fill("#id_name", "spring")
    page.check("input[name=raters][value=alice]")
    page.check("input[name=raters][value=bob]")
    page.click("#start button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Round 'spring' started: 2 raters × 3 queries")
    chosen = CalibrationRound.objects.get().assignments.values_list("query__external_id", flat=True)
    assert set(chosen) == {"q-01", "q-03", "q-10"}
