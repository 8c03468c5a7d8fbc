"""Every key of the grading page without a mouse, in Chromium against a real server: grades, x (can't
judge with a reason), u (undo, through the same save), c (the note), p and n (previous and next query,
n warning once), ? (the help naming every key); what a screen reader is told (the live region); the
progress strip; the rubric beside the list on a wide screen and folded on a narrow one; long texts that
fold with "more"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling.models import Assignment, Candidate, CantJudgeMark, GoldenSet, Judgment, JudgmentEvent
from tests import factories
from tests.browser.test_grading import _grade_focused, _open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
LONG = "A long snippet that goes on. " * 40
REASONS = ["broken", "foreign-language", "needs-context"]


@pytest.fixture
def queue(golden_set: GoldenSet, alice: User) -> list[Assignment]:
    """alice's queue, oldest first: a 4-document query (one document with a long snippet), then two more."""
    first = factories.pooled_query(golden_set, 4, text="cancel subscription")
    for i, candidate in enumerate(Candidate.objects.filter(query=first).order_by("id")):
        candidate.document.snippet = LONG if i == 0 else "short"
        candidate.document.save()
    return [
        factories.AssignmentFactory.create(query=first, rater=alice),
        factories.AssignmentFactory.create(
            query=factories.pooled_query(golden_set, 2, text="update card"), rater=alice
        ),
        factories.AssignmentFactory.create(
            query=factories.pooled_query(golden_set, 2, text="invoice copy"), rater=alice
        ),
    ]


@pytest.fixture
def alice_page(page: Page, session_for: Session, queue: list[Assignment]) -> Page:
    session_for(page.context, "alice")
    return page


def sized_page(browser: Any, session_for: Session, username: str, width: int, height: int = 900) -> Page:
    """A page of its own browser context, logged in, with a viewport of this size (close its context)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    session_for(context, username)
    return context.new_page()


def _focused(page: Page):
    return page.locator(".candidate.focused")


def _focused_candidate(page: Page, assignment: Assignment) -> Candidate:
    """The focused document's candidate, from the token the page names it by."""
    return factories.tokens(assignment)[_focused(page).get_attribute("data-candidate") or ""]


def _announced(page: Page, text: str) -> None:
    expect(page.locator("#announcer")).to_contain_text(text)


def _mark(page: Page, reason: str) -> None:
    """x on the focused document, then the reason by arrows (the first is checked) and Enter."""
    page.keyboard.press("x")
    for _ in range(REASONS.index(reason)):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(_focused(page)).to_have_attribute("data-cant-judge", reason)


def test_x_marks_the_focused_document_cant_judge_with_a_reason_chosen_by_keyboard(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[0])
    candidate = _focused_candidate(page, queue[0])
    page.keyboard.press("x")
    form = _focused(page).locator(".cj-form")
    expect(form).to_be_visible()
    expect(form.locator("input[value='broken']")).to_be_focused()
    _announced(page, "choose a reason")
    page.keyboard.press("ArrowDown")  # the radio group: foreign language
    expect(form.locator("input[value='foreign-language']")).to_be_checked()
    page.keyboard.press("Enter")
    item = page.locator(f"#c-{factories.token(queue[0], candidate)}")
    expect(item.locator(".cj-state")).to_have_text("Can't judge: foreign language")
    expect(item).to_have_attribute("data-cant-judge", "foreign-language")
    expect(form).to_be_hidden()
    expect(page.locator("#progress-text")).to_contain_text("0 of 4 graded, 1 can't judge")
    _announced(page, "Saved can't judge (foreign language)")
    mark = CantJudgeMark.objects.get()
    assert (mark.document_id, mark.reason) == (candidate.document_id, "foreign-language")
    assert not Judgment.objects.exists()
    # A grade replaces the mark; Escape leaves an opened reason unsaved.
    page.keyboard.press("2")
    expect(item.locator(".cj-state")).to_have_text("")
    expect(item).to_have_attribute("data-grade", "2")
    assert not CantJudgeMark.objects.exists() and Judgment.objects.get().grade == 2
    page.keyboard.press("x")
    page.keyboard.press("Escape")
    expect(form).to_be_hidden()
    expect(item).to_have_attribute("data-grade", "2")
    assert not CantJudgeMark.objects.exists()


def test_u_undoes_each_change_of_this_page_through_the_save_and_the_history_records_it(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[0])
    page.keyboard.press("u")
    _announced(page, "Nothing to undo")
    first = _focused_candidate(page, queue[0])
    _grade_focused(page, 1)
    _grade_focused(page, 3)
    page.keyboard.press("j")
    second = _focused_candidate(page, queue[0])
    _mark(page, "broken")
    # Undo, newest first: the mark goes (back to no grade), then 3 back to 1, then 1 back to nothing.
    page.keyboard.press("u")
    expect(page.locator(f"#c-{factories.token(queue[0], second)}")).to_have_attribute("data-cant-judge", "")
    _announced(page, "is back to no grade")
    assert not CantJudgeMark.objects.exists()
    page.keyboard.press("u")
    expect(page.locator(f"#c-{factories.token(queue[0], first)}")).to_have_attribute("data-grade", "1")
    expect(page.locator(f"#c-{factories.token(queue[0], first)}")).to_have_class(
        "candidate graded focused"
    )  # focus went back to it
    _announced(page, "is back to grade 1")
    assert Judgment.objects.get().grade == 1
    page.keyboard.press("u")
    expect(page.locator(f"#c-{factories.token(queue[0], first)}")).to_have_attribute("data-grade", "")
    expect(page.locator("#progress-text")).to_contain_text("0 of 4 graded")
    assert not Judgment.objects.exists()
    history = JudgmentEvent.objects.order_by("id")
    assert [(e.old_state, e.new_state, e.undo) for e in history] == [
        ("no grade", "1", False),
        ("1", "3", False),
        ("no grade", "can't judge (broken page)", False),
        ("can't judge (broken page)", "no grade", True),
        ("3", "1", True),
        ("1", "no grade", True),
    ]
    # A grade replaced by can't judge comes back with u.
    _grade_focused(page, 0)
    _mark(page, "needs-context")
    page.keyboard.press("u")
    expect(page.locator(f"#c-{factories.token(queue[0], first)}")).to_have_attribute("data-grade", "0")
    expect(page.locator(f"#c-{factories.token(queue[0], first)}")).to_have_attribute("data-cant-judge", "")
    assert Judgment.objects.get().grade == 0 and not CantJudgeMark.objects.exists()


def test_c_opens_the_focused_documents_note_and_enter_saves_it_with_the_grade(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[0])
    page.keyboard.press("c")  # nothing to attach a note to yet
    expect(_focused(page).locator(".save-state")).to_contain_text("Grade it")
    _grade_focused(page, 2)
    page.keyboard.press("c")
    area = _focused(page).locator(".note-form textarea")
    expect(area).to_be_focused()
    page.keyboard.type("covers annual plans only")
    page.keyboard.press("Enter")
    expect(_focused(page).locator(".own-note")).to_contain_text("covers annual plans only")
    _announced(page, "Saved grade 2 with your note")
    assert (Judgment.objects.get().grade, Judgment.objects.get().note) == (2, "covers annual plans only")
    # On a document marked can't judge the note goes with the mark.
    page.keyboard.press("j")
    _mark(page, "broken")
    page.keyboard.press("c")
    page.keyboard.type("404 since Monday")
    page.keyboard.press("Enter")
    expect(_focused(page).locator(".own-note")).to_contain_text("404 since Monday")
    assert CantJudgeMark.objects.get().note == "404 since Monday"


def test_n_warns_once_then_goes_on_and_p_comes_back(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[1])
    page.keyboard.press("p")
    page.wait_for_url(f"{live_server.url}/assignments/{queue[0].pk}/")
    expect(page.locator("#query-text")).to_have_text("cancel subscription")
    _grade_focused(page, 1)
    page.keyboard.press("n")
    expect(page.locator("#flow-message")).to_contain_text("not marked done yet")
    _announced(page, "not marked done yet")
    assert page.url.endswith(f"/assignments/{queue[0].pk}/")
    page.keyboard.press("n")
    page.wait_for_url(f"{live_server.url}/assignments/{queue[1].pk}/")
    expect(page.locator("#query-text")).to_have_text("update card")


def test_a_query_with_documents_marked_cant_judge_is_marked_done_by_keyboard(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[1])
    _grade_focused(page, 3)
    page.keyboard.press("j")
    _mark(page, "broken")
    expect(page.locator("#progress-text")).to_contain_text(
        "1 of 2 graded, 1 can't judge — every document done"
    )
    page.keyboard.press("d")
    expect(page.locator("#done-state")).to_contain_text("You marked this query done")
    queue[1].refresh_from_db()
    assert queue[1].status == "done"
    page.keyboard.press("x")  # locked now
    expect(page.locator(".candidate.focused .save-state")).to_contain_text("Locked")
    assert CantJudgeMark.objects.count() == 1


def test_the_help_and_the_page_name_every_key(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[0])
    keys_line = page.locator("#keys-line")
    for key in ("0", "3", "x", "u", "c", "j", "k", "d", "p", "n", "?"):
        expect(keys_line.locator("kbd", has_text=key).first).to_be_visible()
    page.keyboard.press("?")
    help_ = page.locator("#help")
    expect(help_).to_be_visible()
    for text in ("can't judge", "undo your last", "open the note", "previous open query", "warns once"):
        expect(help_).to_contain_text(text)
    page.keyboard.press("Escape")
    expect(help_).to_be_hidden()


def test_the_progress_strip_counts_this_query_today_and_the_queue(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    other = queue[2]
    for candidate in Candidate.objects.filter(query=other.query):
        factories.JudgmentFactory.create(assignment=other, document=candidate.document, grade=1)
    other.status = "done"
    other.save()
    _open(page, live_server, queue[0])
    expect(page.locator("#queue-counts")).to_have_text("1 done · 2 remaining")
    expect(page.locator("#today-count")).to_have_text("0 documents")
    expect(page.locator("#pace")).to_have_text("no pace before the first document")
    _grade_focused(page, 2)
    expect(page.locator("#today-count")).to_have_text("1 document")
    _grade_focused(page, 3)  # the same document again: still one
    expect(page.locator("#today-count")).to_have_text("1 document")
    page.keyboard.press("j")
    _grade_focused(page, 0)
    page.keyboard.press("j")
    _grade_focused(page, 1)
    expect(page.locator("#today-count")).to_have_text("3 documents")
    expect(page.locator("#progress-text")).to_contain_text("3 of 4 graded")
    page.reload()
    expect(page.locator("#today-count")).to_have_text("3 documents")
    expect(page.locator("#pace")).to_contain_text("s per document (median)")


def test_the_rubric_sits_open_beside_the_list_when_wide_and_folded_when_narrow(
    browser: Any, live_server: Any, session_for: Session, queue: list[Assignment]
) -> None:
    page = sized_page(browser, session_for, "alice", 1280)
    _open(page, live_server, queue[0])
    panel = page.locator("#rubric-panel")
    expect(panel).to_have_attribute("open", "")
    expect(panel.locator(".rubric-examples").first).to_have_attribute("open", "")
    rubric_box = page.locator("aside.rubric").bounding_box()
    list_box = page.locator("#candidates").bounding_box()
    assert rubric_box and list_box and rubric_box["x"] > list_box["x"] + list_box["width"] - 1  # beside
    page.context.close()
    page = sized_page(browser, session_for, "alice", 390, 844)
    _open(page, live_server, queue[0])
    panel = page.locator("#rubric-panel")
    expect(panel).not_to_have_attribute("open", "")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    panel.locator(":scope > summary").focus()
    page.keyboard.press("Enter")  # opens by keyboard
    expect(panel).to_have_attribute("open", "")
    expect(panel).to_contain_text("Examples")
    page.context.close()


def test_a_long_snippet_folds_with_more_and_unfolds(
    alice_page: Page, live_server: Any, queue: list[Assignment]
) -> None:
    page = alice_page
    _open(page, live_server, queue[0])
    snippet = page.locator(".doc-snippet", has_text="A long snippet")
    expect(snippet).to_have_class("doc-snippet foldable folded")
    toggle = page.locator(".fold-toggle").first
    expect(toggle).to_have_text("more")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    folded = snippet.bounding_box()
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_text("less")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    unfolded = snippet.bounding_box()
    assert folded and unfolded and unfolded["height"] > folded["height"]
    expect(page.locator(".doc-snippet", has_text="short").first).not_to_have_class(
        "doc-snippet foldable folded"
    )
