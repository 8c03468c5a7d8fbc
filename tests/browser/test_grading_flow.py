"""Where the grading page's words appear, and where the keys lead, in Chromium against a real server: what
it says of the query as a whole (a refused `d`, the warning of `n`) stands in a status line fixed at the
bottom of the screen, is announced, and goes once a save makes it stale; after `d` at the end of a long
list the grades to explain are in view with the first note focused, `Enter` saves each note and moves to
the next (`Shift+Enter` a new line); `p` undoes `n`, skipping done work the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from labeling.models import Assignment, Candidate, GoldenSet, Judgment
from tests import factories
from tests.browser.test_grading import _grade_focused, _open
from tests.browser.test_grading_keys import sized_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def _announced(page: Page, text: str) -> None:
    expect(page.locator("#announcer")).to_contain_text(text)


def _status(page: Page):
    return page.locator("#flow-message")


def test_a_refused_d_shows_in_the_status_line_in_view_and_goes_when_the_count_is_stale(
    browser: Browser, live_server: Any, session_for: Session, golden_set: GoldenSet, alice: User
) -> None:
    assignment = factories.AssignmentFactory.create(
        query=factories.pooled_query(golden_set, 5, text="cancel subscription"), rater=alice
    )
    page = sized_page(browser, session_for, "alice", 1366, 500)  # a short screen: the list runs below it
    try:
        _open(page, live_server, assignment)
        page.keyboard.press("d")
        expect(_status(page)).to_contain_text("Not marked done: 0 of 5 graded")
        expect(_status(page)).to_be_in_viewport()
        _announced(page, "Not marked done: 0 of 5 graded")
        # Graded to the end, scrolled down with the focus: the words went with the first save.
        for _ in range(5):
            _grade_focused(page, 2)
            expect(_status(page)).to_have_text("")
            page.keyboard.press("j")
        expect(_status(page)).to_be_hidden()
        expect(page.locator("#progress-text")).to_contain_text("every document done: press d")
        # The warning of n shows where the eyes are too, and a save clears it: n then warns again.
        page.keyboard.press("n")
        expect(_status(page)).to_contain_text("not marked done yet")
        expect(_status(page)).to_be_in_viewport()
        _grade_focused(page, 1)
        expect(_status(page)).to_be_hidden()
        page.keyboard.press("n")
        expect(_status(page)).to_contain_text("not marked done yet")
        assert page.url.endswith(f"/assignments/{assignment.pk}/")
    finally:
        page.context.close()


def test_after_d_at_the_end_of_a_long_list_the_first_note_to_write_is_in_view_and_focused(
    browser: Browser, live_server: Any, session_for: Session, golden_set: GoldenSet, alice: User
) -> None:
    query = factories.pooled_query(golden_set, 20, text="refund policy for annual plan")
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    candidates = list(Candidate.objects.filter(query=query).order_by("id"))
    for candidate in candidates[:3]:  # three frozen 3s the rater will grade 0: three grades to explain
        factories.FrozenLabelFactory.create(query=query, document=candidate.document, grade=3)
    page = sized_page(browser, session_for, "alice", 1366, 700)
    try:
        _open(page, live_server, assignment)
        order = [item.get_attribute("data-candidate") for item in page.locator(".candidate").all()]
        tokens = factories.tokens(assignment)
        for token in order:
            _grade_focused(page, 0 if tokens[token or ""] in candidates[:3] else 1)
            page.keyboard.press("j")
        assert page.evaluate("window.scrollY") > 2000  # the end of the list
        page.keyboard.press("d")
        panel = page.locator("#overturns")
        expect(panel).to_contain_text("3 grades to explain")
        expect(panel.locator("h2")).to_be_in_viewport()
        notes = panel.locator("textarea")
        expect(notes.nth(0)).to_be_focused()
        _announced(page, "3 grades to explain")
        # Enter saves and moves on; Shift+Enter starts a new line.
        page.keyboard.type("archived page")
        page.keyboard.press("Enter")
        expect(panel.locator(".overturn").nth(0).locator(".save-state")).to_have_text("Note saved")
        expect(notes.nth(1)).to_be_focused()
        page.keyboard.type("wrong product")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("an old plan")
        page.keyboard.press("Enter")
        expect(panel.locator(".overturn").nth(1).locator(".save-state")).to_have_text("Note saved")
        expect(notes.nth(2)).to_be_focused()
        saved = {j.note for j in Judgment.objects.filter(assignment=assignment, grade=0)}
        assert {"archived page", "wrong product\nan old plan"} <= saved
        # Esc goes back to the list, where the keys work again.
        page.keyboard.press("Escape")
        expect(page.locator(".candidate.focused")).to_be_focused()
    finally:
        page.context.close()


def test_p_undoes_n_skipping_done_work_the_same_way(
    page: Page, live_server: Any, session_for: Session, golden_set: GoldenSet, alice: User
) -> None:
    first, done, third = (
        factories.AssignmentFactory.create(
            query=factories.pooled_query(golden_set, 2, text=text), rater=alice
        )
        for text in ("cancel subscription", "update card", "invoice copy")
    )
    Assignment.objects.filter(pk=done.pk).update(status="done")
    session_for(page.context, "alice")
    _open(page, live_server, first)
    page.keyboard.press("n")
    page.keyboard.press("n")  # the second n leaves it unfinished
    page.wait_for_url(f"{live_server.url}/assignments/{third.pk}/")
    page.keyboard.press("p")
    page.wait_for_url(f"{live_server.url}/assignments/{first.pk}/")
    expect(page.locator("#query-text")).to_have_text("cancel subscription")
