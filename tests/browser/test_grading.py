"""The rater's grading workflow in a real browser against a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling.models import Assignment, Candidate, GoldenSet, Judgment, JudgmentEvent
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Login = Callable[[Page, str], None]
Session = Callable[[BrowserContext, str], None]


@pytest.fixture
def work(golden_set: GoldenSet, alice: User, bob: User) -> dict[str, Assignment]:
    """alice and bob both hold one 6-document query (no frozen labels); alice has a second query."""
    query = factories.pooled_query(golden_set, 6, text="cancel subscription", filters={"product": "billing"})
    later = factories.pooled_query(golden_set, 2, text="update card")
    return {
        "alice": factories.AssignmentFactory.create(query=query, rater=alice),
        "bob": factories.AssignmentFactory.create(query=query, rater=bob, kind="second"),
        "alice_next": factories.AssignmentFactory.create(query=later, rater=alice),
    }


def _open(page: Page, live_server: Any, assignment: Assignment) -> None:
    page.goto(f"{live_server.url}/assignments/{assignment.pk}/")
    expect(page.locator(".candidate.focused")).to_have_count(1)


def _items(page: Page):
    return page.locator(".candidate")


def _grade_focused(page: Page, grade: int) -> None:
    focused = page.locator(".candidate.focused")
    page.keyboard.press(str(grade))
    expect(focused.locator(".save-state")).to_have_text("Saved")
    expect(focused).to_have_attribute("data-grade", str(grade))


def _grades_shown(page: Page) -> dict[int, str]:
    return {
        int(item.get_attribute("data-candidate") or 0): item.get_attribute("data-grade") or ""
        for item in _items(page).all()
    }


def test_a_rater_grades_a_whole_query_by_keyboard_and_finds_every_grade_after_reload(
    page: Page, live_server: Any, login: Login, work: dict[str, Assignment]
) -> None:
    login(page, "alice")
    _open(page, live_server, work["alice"])
    n = _items(page).count()
    assert n == 6
    wanted = {}
    for i in range(n):
        grade = (i * 5) % 4  # 0, 1, 2, 3, 0, 1
        wanted[int(page.locator(".candidate.focused").get_attribute("data-candidate") or 0)] = str(grade)
        _grade_focused(page, grade)
        if i < n - 1:
            page.keyboard.press("j")
    expect(page.locator("#progress-text")).to_contain_text("6 of 6 graded")
    page.reload()
    expect(page.locator("#progress-text")).to_contain_text("6 of 6 graded")
    assert _grades_shown(page) == wanted
    saved = {
        c.pk: str(Judgment.objects.get(assignment=work["alice"], document=c.document).grade)
        for c in Candidate.objects.filter(query=work["alice"].query)
    }
    assert saved == wanted
    work["alice"].refresh_from_db()
    assert work["alice"].status == "done"
    assert all(j.time_spent_ms > 0 for j in Judgment.objects.all())  # looked at before graded
    # n goes to the next query in the queue, still without the mouse.
    page.keyboard.press("n")
    page.wait_for_url(f"{live_server.url}/assignments/{work['alice_next'].pk}/")
    expect(page.locator("#query-text")).to_have_text("update card")


def test_k_moves_back_and_help_opens_with_question_mark(
    page: Page, live_server: Any, session_for: Session, work: dict[str, Assignment]
) -> None:
    session_for(page.context, "alice")
    _open(page, live_server, work["alice"])
    first = _items(page).nth(0)
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("k")
    expect(first).to_have_class("candidate focused")
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("2")  # keys do not grade behind the help
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    assert not Judgment.objects.exists()
    first.locator(".grade-btn[data-grade='1']").click()  # the mouse works too
    expect(first.locator(".save-state")).to_have_text("Saved")
    assert Judgment.objects.get().grade == 1


def test_two_tabs_lose_nothing_and_duplicate_nothing(
    context: BrowserContext, live_server: Any, session_for: Session, work: dict[str, Assignment]
) -> None:
    session_for(context, "alice")
    tab1 = context.new_page()
    tab2 = context.new_page()
    _open(tab1, live_server, work["alice"])
    _open(tab2, live_server, work["alice"])
    # Both tabs grade the first document at the same moment, then each grades a different one.
    tab1.keyboard.press("1")
    tab2.keyboard.press("3")
    for tab in (tab1, tab2):
        expect(tab.locator(".candidate.focused .save-state")).to_have_text("Saved")
    tab1.keyboard.press("j")
    _grade_focused(tab1, 2)
    for _ in range(2):
        tab2.keyboard.press("j")
    _grade_focused(tab2, 0)
    assignment = work["alice"]
    judgments = Judgment.objects.filter(assignment=assignment)
    assert judgments.count() == 3
    assert JudgmentEvent.objects.filter(judgment__assignment=assignment).count() == 4
    first_doc = Candidate.objects.get(
        pk=int(_items(tab1).nth(0).get_attribute("data-candidate") or 0)
    ).document
    assert judgments.get(document=first_doc).grade in (1, 3)
    # Each tab, reloaded, shows everything saved from both.
    expected = {
        c.pk: str(judgments.get(document=c.document).grade) if judgments.filter(document=c.document) else ""
        for c in Candidate.objects.filter(query=assignment.query)
    }
    for tab in (tab1, tab2):
        tab.reload()
        expect(tab.locator("#progress-text")).to_contain_text("3 of 6 graded")
        assert _grades_shown(tab) == expected


def test_a_second_rater_sees_another_order_and_none_of_the_first_raters_grades(
    browser: Any, live_server: Any, session_for: Session, work: dict[str, Assignment]
) -> None:
    alice_page = browser.new_context().new_page()
    session_for(alice_page.context, "alice")
    _open(alice_page, live_server, work["alice"])
    for _ in range(3):
        _grade_focused(alice_page, 3)
        alice_page.keyboard.press("j")
    alice_order = [t.strip() for t in alice_page.locator(".doc-title").all_inner_texts()]
    bob_page = browser.new_context().new_page()
    session_for(bob_page.context, "bob")
    _open(bob_page, live_server, work["bob"])
    bob_order = [t.strip() for t in bob_page.locator(".doc-title").all_inner_texts()]
    assert sorted(bob_order) == sorted(alice_order)
    assert bob_order != alice_order
    assert set(_grades_shown(bob_page).values()) == {""}
    expect(bob_page.locator(".grade-btn.selected")).to_have_count(0)
    expect(bob_page.locator(".save-state.saved")).to_have_count(0)
    expect(bob_page.locator("#progress-text")).to_contain_text("0 of 6 graded")
    alice_page.context.close()
    bob_page.context.close()


def test_a_rater_opening_another_raters_assignment_gets_404(
    page: Page, live_server: Any, session_for: Session, work: dict[str, Assignment]
) -> None:
    session_for(page.context, "bob")
    response = page.goto(f"{live_server.url}/assignments/{work['alice'].pk}/")
    assert response is not None and response.status == 404
    api = page.request.get(f"{live_server.url}/assignments/{work['alice'].pk}/grades/")
    assert api.status == 404


def test_the_note_prompt_appears_only_when_a_grade_overturns_the_frozen_label(
    page: Page, live_server: Any, session_for: Session, work: dict[str, Assignment]
) -> None:
    assignment = work["alice"]
    labeled = Candidate.objects.filter(query=assignment.query).order_by("id").first()
    assert labeled is not None
    factories.FrozenLabelFactory.create(query=assignment.query, document=labeled.document, grade=2)
    session_for(page.context, "alice")
    _open(page, live_server, assignment)
    ids = [int(x) for x in (i.get_attribute("data-candidate") for i in _items(page).all()) if x]
    for _ in range(ids.index(labeled.pk)):
        page.keyboard.press("j")
    item = page.locator(f"#c-{labeled.pk}")
    expect(item).to_have_class("candidate focused")
    note = item.locator(".note-form")
    _grade_focused(page, 2)  # agrees with the frozen label: no prompt
    expect(note).to_be_hidden()
    page.keyboard.press("0")  # overturns it: the prompt opens, nothing saved yet
    expect(note).to_be_visible()
    expect(item.locator(".save-state")).to_have_text("Not saved yet: add a note")
    expect(note.locator("textarea")).to_be_focused()
    assert Judgment.objects.get().grade == 2
    page.keyboard.type("archived page, wrong product")
    page.keyboard.press("Enter")
    expect(item.locator(".save-state")).to_have_text("Saved")
    expect(note).to_be_hidden()
    expect(item.locator(".own-note")).to_contain_text("archived page, wrong product")
    judgment = Judgment.objects.get()
    assert (judgment.grade, judgment.note) == (0, "archived page, wrong product")
    # A document without a frozen label never asks.
    page.keyboard.press("j" if ids.index(labeled.pk) < len(ids) - 1 else "k")
    _grade_focused(page, 0)
    expect(page.locator(".note-form:visible")).to_have_count(0)
