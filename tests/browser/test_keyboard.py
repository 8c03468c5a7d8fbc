"""The rater pages' one keyboard language (labeling/keyboard.py, docs/labeling.md "Keyboard") in Chromium
against a real server, on every rater page with keys: the grading page of an everyday assignment, the
same page for a calibration round's assignment, and the side-by-side page.

Every key of the table is pressed on each page in the table's order: a key the page uses does what its
row says there (the checks below are named by the row's action, so a key shared by two pages is checked
for the same meaning on both), and a key the page does not use changes nothing (the page's inputs,
grades, focus, words, address and the database stay as they were). `?` opens the help, which lists
exactly the page's keys; axe-core finds no violation with it open; `Esc` closes it. Leaving each page
with an unsaved choice, by its next-query key, by a link and by closing the tab, warns once; the second
attempt goes. On a phone the line of keys rests and the help fits the screen."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Dialog, Page, expect

from evaluation.models import StudyTask
from evaluation.studies.services import StudySpec, study_create
from labeling import services
from labeling.keyboard import DIGITS, GRADING, KEYS, SXS, Key, PageKeys, page_keys
from labeling.models import Assignment, CantJudgeMark, GoldenSet, Judgment, JudgmentEvent, Query
from tests import factories
from tests.browser.test_accessibility import axe_violations, described
from tests.support.studies import two_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]
PAGE_KINDS = ("everyday grading", "calibration round", "side by side")
FOCUSED = re.compile(r"\bfocused\b")


@dataclass
class RaterPage:
    """One rater page open in the browser: its kind, its address, its keys (from the table) and the
    assignment or study task it shows."""

    kind: str
    page: Page
    url: str
    keys: PageKeys
    assignment: Assignment | None = None
    task: StudyTask | None = None

    def reopen(self) -> None:
        self.page.goto(self.url)
        self.page.wait_for_function("window.AssayKeys !== undefined")
        if self.assignment is not None:
            expect(self.page.locator(".candidate.focused")).to_have_count(1)


@pytest.fixture
def work(golden_set: GoldenSet, alice: User, bob: User, rita: User) -> dict[str, Any]:
    """alice's everyday queue (two queries of three documents), her assignment of a calibration round
    (a third query, with bob), and her task of a side-by-side study."""
    everyday = [
        factories.AssignmentFactory.create(
            query=factories.pooled_query(golden_set, 3, text=text), rater=alice
        )
        for text in ("cancel subscription", "update card")
    ]
    round_query = factories.pooled_query(golden_set, 3, text="invoice copy")
    round_ = services.calibration_round_start(
        golden_set=golden_set, name="spring", queries=[round_query], raters=[alice, bob], by=rita
    )
    calibration = Assignment.objects.get(calibration_round=round_, rater=alice)
    run_a, run_b = two_runs(golden_set, 3)
    study = study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=[alice], seed=1, answers_per_query=1), by=rita
    )
    task = StudyTask.objects.filter(study=study).order_by("token").first()
    return {"everyday": everyday[1], "calibration": calibration, "task": task}


def _open(
    browser: Browser, live_server: Any, session_for: Session, work: dict[str, Any], kind: str
) -> RaterPage:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    session_for(context, "alice")
    page = context.new_page()
    if kind == "side by side":
        task = work["task"]
        url = f"{live_server.url}/sxs/{task.token}/"
        opened = RaterPage(kind, page, url, page_keys(SXS, [*range(1, 8)]))
        opened.task = task
    else:
        assignment = work["everyday" if kind == "everyday grading" else "calibration"]
        scale = list(assignment.query.golden_set.rubric.scale)
        url = f"{live_server.url}/assignments/{assignment.pk}/"
        opened = RaterPage(kind, page, url, page_keys(GRADING, scale))
        opened.assignment = assignment
    opened.reopen()
    return opened


@pytest.fixture
def rater_page(
    browser: Browser, live_server: Any, session_for: Session, work: dict[str, Any], kind: str
) -> Iterator[RaterPage]:
    """alice's page of the test's kind, in a browser context of its own (closed after the test)."""
    rp = _open(browser, live_server, session_for, work, kind)
    yield rp
    rp.page.context.close()


# --- what the page shows and holds, for "changes nothing" ------------------------------------------------

SHOWN = """() => {
  const all = (selector, read) => Array.from(document.querySelectorAll(selector)).map(read);
  const focused = document.querySelector(".candidate.focused");
  const active = document.activeElement;
  return [
    all("input, textarea", i => [i.name, i.value, i.checked, i.disabled]),
    all(".candidate", c => [c.dataset.grade, c.dataset.cantJudge, c.dataset.note]),
    all(".note-form, .cj-form", f => f.hidden),
    active ? active.id || active.tagName : "",
    focused ? focused.id : "",
    (document.getElementById("flow-message") || document.getElementById("sxs-message")).textContent,
    document.getElementById("help").open,
  ];
}"""


def _snapshot(rp: RaterPage) -> tuple[Any, ...]:
    """Everything a key could change: the page's inputs, grades and marks, open prompts, focus, words and
    address, the help, and the database rows a key could write."""
    shown = rp.page.evaluate(SHOWN)
    if rp.task is not None:
        rp.task.refresh_from_db()
        stored: tuple[Any, ...] = (rp.task.revision, rp.task.preference, rp.task.reasons)
    else:
        stored = (Judgment.objects.count(), CantJudgeMark.objects.count(), JudgmentEvent.objects.count())
    return (rp.page.url, shown, stored)


def _blur(page: Page) -> None:
    page.evaluate("document.activeElement && document.activeElement.blur()")


# --- each action's meaning, on the pages that use it -------------------------------------------------------


def _focused(rp: RaterPage):
    return rp.page.locator(".candidate.focused")


def _focused_document(rp: RaterPage) -> int:
    assert rp.assignment is not None
    token = _focused(rp).get_attribute("data-candidate") or ""
    return factories.tokens(rp.assignment)[token].document_id


def _focus_item(rp: RaterPage, index: int) -> None:
    item = rp.page.locator(".candidate").nth(index)
    item.locator(".doc-title").click()
    expect(item).to_have_class(FOCUSED)


def _answer(rp: RaterPage, key: str, arg: int) -> None:
    """The digits answer: a grade of the highlighted document, saved; a point of the scale, chosen."""
    page = rp.page
    if rp.task is not None:
        page.keyboard.press(key)
        expect(page.locator("input[name=preference]").nth(arg - 1)).to_be_checked()
        return
    page.keyboard.press(key)
    expect(_focused(rp)).to_have_attribute("data-grade", key)
    expect(_focused(rp).locator(".save-state")).to_have_text("Saved")
    assert Judgment.objects.get(assignment=rp.assignment, document_id=_focused_document(rp)).grade == arg


def _move(step: int) -> Callable[[RaterPage, str, Any], None]:
    def check(rp: RaterPage, key: str, arg: Any) -> None:
        start = 0 if step > 0 else 1
        _focus_item(rp, start)
        rp.page.keyboard.press(key)
        expect(rp.page.locator(".candidate").nth(start + step)).to_have_class(FOCUSED)

    return check


def _cant_judge(rp: RaterPage, key: str, arg: Any) -> None:
    _focus_item(rp, 1)
    rp.page.keyboard.press(key)
    form = _focused(rp).locator(".cj-form")
    expect(form.locator("input[value='broken']")).to_be_focused()
    rp.page.keyboard.press("ArrowDown")
    rp.page.keyboard.press("Enter")
    expect(_focused(rp)).to_have_attribute("data-cant-judge", "foreign-language")
    assert CantJudgeMark.objects.get(assignment=rp.assignment).reason == "foreign-language"


def _note(rp: RaterPage, key: str, arg: Any) -> None:
    """The note key goes to the note: the highlighted document's (graded first), or the answer's."""
    page = rp.page
    if rp.task is not None:
        _blur(page)
        page.keyboard.press(key)
        expect(page.locator("#sxs-note")).to_be_focused()
        page.keyboard.type("R has the refund page first")
        page.keyboard.press("Escape")  # leaves the note, keeps its words
        expect(page.locator("#sxs-note")).not_to_be_focused()
        expect(page.locator("#sxs-note")).to_have_value("R has the refund page first")
        return
    _focus_item(rp, 0)
    page.keyboard.press(key)
    expect(_focused(rp).locator(".note-form textarea")).to_be_focused()
    page.keyboard.press("Escape")  # cancels: nothing saved
    expect(_focused(rp).locator(".note-form")).to_be_hidden()


def _toggle(selector: Callable[[Any], str]) -> Callable[[RaterPage, str, Any], None]:
    def check(rp: RaterPage, key: str, arg: Any) -> None:
        box = rp.page.locator(selector(arg))
        before = box.is_checked()
        _blur(rp.page)
        rp.page.keyboard.press(key)
        expect(box).to_be_checked(checked=not before)

    return check


def _undo(rp: RaterPage, key: str, arg: Any) -> None:
    """Undo takes back the last change: a grade back to what it was; a submitted answer back to open."""
    page = rp.page
    if rp.task is not None:
        page.locator("#sxs-submit").click()
        expect(page.locator("#sxs-message")).to_contain_text("Answered.")
        page.keyboard.press(key)
        expect(page.locator("#sxs-message")).to_contain_text("Undone")
        rp.task.refresh_from_db()
        assert rp.task.answered_at is None
        return
    _focus_item(rp, 0)
    before = _focused(rp).get_attribute("data-grade") or ""
    page.keyboard.press("0" if before != "0" else "1")
    expect(_focused(rp)).not_to_have_attribute("data-grade", before)
    page.keyboard.press(key)
    expect(_focused(rp)).to_have_attribute("data-grade", before)
    expect(_focused(rp).locator(".save-state")).to_have_text("Saved")
    assert JudgmentEvent.objects.filter(assignment=rp.assignment).order_by("id").last().undo  # type: ignore[union-attr]


def _submit(rp: RaterPage, key: str, arg: Any) -> None:
    """Enter submits what is chosen: the open note (grading), the answer (side by side)."""
    page = rp.page
    if rp.task is not None:
        _blur(page)
        page.keyboard.press(key)
        expect(page.locator("#sxs-message")).to_contain_text("Answered.")
        rp.task.refresh_from_db()
        assert rp.task.answered_at is not None and rp.task.note == "R has the refund page first"
        return
    _focus_item(rp, 0)
    page.keyboard.press("c")
    page.keyboard.type("covers annual plans only")
    page.keyboard.press(key)
    expect(_focused(rp).locator(".own-note")).to_contain_text("covers annual plans only")
    judgment = Judgment.objects.get(assignment=rp.assignment, document_id=_focused_document(rp))
    assert judgment.note == "covers annual plans only"


def _done(rp: RaterPage, key: str, arg: Any) -> None:
    page = rp.page
    for index in range(page.locator(".candidate").count()):
        item = page.locator(".candidate").nth(index)
        if not item.get_attribute("data-grade") and not item.get_attribute("data-cant-judge"):
            _focus_item(rp, index)
            page.keyboard.press("2")
            expect(item).to_have_attribute("data-grade", "2")
    page.keyboard.press(key)
    expect(page.locator("#done-state")).to_contain_text("You marked this query done")
    assert rp.assignment is not None
    rp.assignment.refresh_from_db()
    assert rp.assignment.status == Assignment.Status.DONE
    expect(page.locator(".candidate.focused")).to_have_count(1)


def _goes_elsewhere(rp: RaterPage, key: str, arg: Any) -> None:
    """The previous and next query keys leave for another query (nothing unsaved here: at once)."""
    _blur(rp.page)
    rp.page.keyboard.press(key)
    rp.page.wait_for_url(lambda url: url != rp.url)
    rp.reopen()


def _help(rp: RaterPage, key: str, arg: Any) -> None:
    """? opens the help, listing exactly the page's keys; behind it no key acts; ? again closes it."""
    page = rp.page
    dialog = page.locator("#help")
    _blur(page)
    page.keyboard.press(key)
    expect(dialog).to_be_visible()
    assert dialog.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.action)") == [
        row.action for row in rp.keys.rows
    ]
    for row in rp.keys.rows:
        expect(dialog.locator(f"tr[data-action='{row.action}']").first).to_contain_text(row.does)
    violations = axe_violations(page)
    assert not violations, described(violations)
    before = _snapshot(rp)
    page.keyboard.press(rp.keys.digits[0])  # behind the help nothing acts
    assert _snapshot(rp) == before
    page.keyboard.press(key)
    expect(dialog).to_be_hidden()


def _close(rp: RaterPage, key: str, arg: Any) -> None:
    """Esc closes the help (and the focus goes back where it was)."""
    page = rp.page
    if rp.assignment is not None:
        _focus_item(rp, 0)
        page.locator(".candidate.focused").focus()
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press(key)
    expect(page.locator("#help")).to_be_hidden()
    if rp.assignment is not None:
        expect(page.locator(".candidate.focused")).to_be_focused()


MEANINGS: dict[str, Callable[[RaterPage, str, Any], None]] = {
    "answer": _answer,
    "next_item": _move(+1),
    "previous_item": _move(-1),
    "cant_judge": _cant_judge,
    "note": _note,
    "reason": _toggle(lambda tag: f"input[name=reasons][value='{tag}']"),
    "junk_left": _toggle(lambda _: "#junk-left"),
    "junk_right": _toggle(lambda _: "#junk-right"),
    "undo": _undo,
    "submit": _submit,
    "done": _done,
    "previous_query": _goes_elsewhere,
    "next_query": _goes_elsewhere,
    "help": _help,
    "close": _close,
}


def _pressed(key: Key, keys: PageKeys) -> list[str]:
    """The keys of a row as pressed on a page: the page's own digits for the answer row (which every
    rater page uses)."""
    return keys.digits if key.keys == (DIGITS,) else list(key.keys)


def test_every_action_of_the_table_has_its_check() -> None:
    assert {key.action for key in KEYS} == set(MEANINGS)


@pytest.mark.parametrize("kind", PAGE_KINDS)
def test_every_key_means_what_the_table_says_on_every_rater_page(
    rater_page: RaterPage, live_server: Any, kind: str
) -> None:
    rp = rater_page
    page_name = SXS if rp.task is not None else GRADING
    helped = [row.action for row in rp.keys.rows]
    assert helped == [key.action for key in KEYS if page_name in key.does]
    pressed: set[str] = set()
    for key in KEYS:
        used = page_name in key.does
        for k in _pressed(key, rp.keys):
            if used:
                action, arg = rp.keys.keymap[k]
                MEANINGS[action](rp, k, arg)
                pressed.add(k)
            else:
                _blur(rp.page)
                before = _snapshot(rp)
                rp.page.keyboard.press(k)
                rp.page.wait_for_timeout(150)  # a key that did act would have shown by now
                assert _snapshot(rp) == before, f"{k!r} is not used on the {kind} page, yet it acted"
    assert pressed == set(rp.keys.keymap)


# --- leaving with an unsaved choice ------------------------------------------------------------------------


def _unsaved_choice(rp: RaterPage) -> None:
    """A choice not saved: a point of the scale not submitted; a grade the server refused (the query was
    retired meanwhile, a real 409)."""
    page = rp.page
    if rp.task is not None:
        page.keyboard.press("6")
        expect(page.locator("input[name=preference]").nth(5)).to_be_checked()
        return
    assert rp.assignment is not None
    Query.objects.filter(pk=rp.assignment.query_id).update(status=Query.Status.RETIRED)
    page.keyboard.press("2")
    expect(_focused(rp).locator(".save-state")).to_contain_text("Not saved")


def _dialogs(page: Page) -> list[str]:
    """The types of the dialogs the page opens from now on, each dismissed (beforeunload: stay)."""
    asked: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", dismiss)
    return asked


def _said(rp: RaterPage):
    return rp.page.locator("#sxs-message" if rp.task is not None else "#flow-message")


@pytest.mark.parametrize("kind", PAGE_KINDS)
def test_leaving_with_an_unsaved_choice_warns_once_by_key_link_or_closing_the_tab(
    rater_page: RaterPage, live_server: Any, kind: str
) -> None:
    rp = rater_page
    page = rp.page
    # By the next-query key: warned, still here; again: gone.
    _unsaved_choice(rp)
    _blur(page)
    page.keyboard.press("n")
    expect(_said(rp)).to_contain_text("not submitted" if rp.task else "not saved")
    assert page.url == rp.url
    page.keyboard.press("n")
    page.wait_for_url(lambda url: url != rp.url)
    if rp.assignment is not None:  # the query comes back for the rest
        Query.objects.filter(pk=rp.assignment.query_id).update(status=Query.Status.ACTIVE)

    # By a link (the top bar's "My queue"): warned once, then gone.
    rp.reopen()
    _unsaved_choice(rp)
    link = page.locator("header.topbar a", has_text="My queue")
    link.click()
    expect(_said(rp)).to_contain_text("not submitted" if rp.task else "not saved")
    assert page.url == rp.url
    link.click()
    page.wait_for_url(f"{live_server.url}/queue/")
    if rp.assignment is not None:
        Query.objects.filter(pk=rp.assignment.query_id).update(status=Query.Status.ACTIVE)

    # Closing the tab: the browser asks once (beforeunload); kept, the page says why; closing again goes.
    rp.reopen()
    _unsaved_choice(rp)
    asked = _dialogs(page)
    with page.expect_event("dialog"):
        page.close(run_before_unload=True)
    expect(_said(rp)).to_contain_text("not submitted" if rp.task else "not saved")
    assert asked == ["beforeunload"] and not page.is_closed()
    with page.expect_event("close"):
        page.close(run_before_unload=True)
    assert asked == ["beforeunload"]


@pytest.mark.parametrize("kind", PAGE_KINDS)
def test_nothing_unsaved_leaves_at_once(rater_page: RaterPage, live_server: Any, kind: str) -> None:
    """No warning where nothing would be lost: an answer submitted, a grading page whose grades are saved
    (the grading page's next-query key still says once that the query is not marked done)."""
    rp = rater_page
    page = rp.page
    if rp.task is not None:
        page.keyboard.press("3")
        _blur(page)
        page.keyboard.press("Enter")
        expect(_said(rp)).to_contain_text("Answered.")
    else:
        page.keyboard.press("1")
        expect(_focused(rp).locator(".save-state")).to_have_text("Saved")
    asked = _dialogs(page)
    page.locator("header.topbar a", has_text="My queue").click()
    page.wait_for_url(f"{live_server.url}/queue/")
    assert asked == []


@pytest.mark.parametrize("kind", ["everyday grading", "side by side"])
def test_on_a_phone_the_line_of_keys_rests_and_the_help_fits(
    rater_page: RaterPage, live_server: Any, kind: str
) -> None:
    rp = rater_page
    page = rp.page
    expect(page.locator("#keys-line")).to_be_visible()
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("#keys-line")).to_be_hidden()
    page.keyboard.press("?")
    box = page.locator("#help").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    expect(page.locator("#help-close")).to_be_focused()
    violations = axe_violations(page)
    assert not violations, described(violations)
