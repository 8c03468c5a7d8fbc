"""The rater's grading workflow in a real browser against a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page, expect

from labeling.models import Assignment, Candidate, GoldenSet, Judgment, JudgmentEvent, LabelProposal
from labeling.selectors import shuffle_key
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


def _grades_shown(page: Page, assignment: Assignment) -> dict[int, str]:
    """The grade each candidate (by id, read back from the page's tokens) shows."""
    by_token = factories.tokens(assignment)
    return {
        by_token[item.get_attribute("data-candidate") or ""].pk: item.get_attribute("data-grade") or ""
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
        token = page.locator(".candidate.focused").get_attribute("data-candidate") or ""
        wanted[factories.tokens(work["alice"])[token].pk] = str(grade)
        _grade_focused(page, grade)
        if i < n - 1:
            page.keyboard.press("j")
    expect(page.locator("#progress-text")).to_contain_text("6 of 6 graded")
    page.reload()
    expect(page.locator("#progress-text")).to_contain_text("6 of 6 graded")
    assert _grades_shown(page, work["alice"]) == wanted
    saved = {
        c.pk: str(Judgment.objects.get(assignment=work["alice"], document=c.document).grade)
        for c in Candidate.objects.filter(query=work["alice"].query)
    }
    assert saved == wanted
    work["alice"].refresh_from_db()
    assert work["alice"].status == "open"  # graded, not yet marked done
    assert all(j.time_spent_ms > 0 for j in Judgment.objects.all())  # looked at before graded
    page.keyboard.press("d")  # marks it done: the page comes back locked
    expect(page.locator("#done-state")).to_contain_text("You marked this query done")
    expect(page.locator(".grade-btn:not([disabled])")).to_have_count(0)
    work["alice"].refresh_from_db()
    assert work["alice"].status == "done"
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
    first_doc = factories.tokens(assignment)[
        _items(tab1).nth(0).get_attribute("data-candidate") or ""
    ].document
    assert judgments.get(document=first_doc).grade in (1, 3)
    # Each tab, reloaded, shows everything saved from both.
    expected = {
        c.pk: str(judgments.get(document=c.document).grade) if judgments.filter(document=c.document) else ""
        for c in Candidate.objects.filter(query=assignment.query)
    }
    for tab in (tab1, tab2):
        tab.reload()
        expect(tab.locator("#progress-text")).to_contain_text("3 of 6 graded")
        assert _grades_shown(tab, assignment) == expected


def _keyed_titles(assignment: Assignment) -> list[str]:
    """The titles in the blind order `labeling.selectors.shuffle_key` gives this assignment's rater."""
    candidates = Candidate.objects.filter(query=assignment.query).select_related("document")
    ordered = sorted(
        candidates,
        key=lambda c: shuffle_key(
            rater_id=assignment.rater_id, query_id=assignment.query_id, candidate_id=c.pk
        ),
    )
    return [c.document.title for c in ordered]


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
    # Each page shows its rater's own keyed order (two random orders of 6 agree once in 720: the page is
    # checked against the order each rater's key gives, not against the other page).
    assert alice_order == _keyed_titles(work["alice"]) and bob_order == _keyed_titles(work["bob"])
    assert set(_grades_shown(bob_page, work["bob"]).values()) == {""}
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


def test_every_grade_key_answers_alike_on_a_labelled_document_and_done_asks_for_the_overturn_note(
    page: Page, live_server: Any, session_for: Session, work: dict[str, Assignment]
) -> None:
    assignment = work["alice"]
    work["bob"].delete()  # alice is the query's only rater: her overturn is a proposal for a reviewer
    candidates = list(Candidate.objects.filter(query=assignment.query).order_by("id"))
    labeled = candidates[0]
    factories.FrozenLabelFactory.create(query=assignment.query, document=labeled.document, grade=2)
    session_for(page.context, "alice")
    _open(page, live_server, assignment)
    ids = [x for x in (i.get_attribute("data-candidate") for i in _items(page).all()) if x]
    for _ in range(ids.index(factories.token(assignment, labeled))):
        page.keyboard.press("j")
    item = page.locator(f"#c-{factories.token(assignment, labeled)}")
    expect(item).to_have_class("candidate focused")
    # Blind: every key saves at once and answers the same, whatever the frozen label (2) says.
    answers = []
    for grade in (0, 1, 2, 3, 0):
        with page.expect_response(
            lambda r: r.url.endswith("/grades/") and r.request.method == "POST"
        ) as info:
            page.keyboard.press(str(grade))
        response = info.value
        body = response.json()
        answers.append((response.status, {k: v for k, v in body.items() if k != "grade"}, body["grade"]))
        expect(item.locator(".save-state")).to_have_text("Saved")
        expect(item.locator(".note-form")).to_be_hidden()
    assert {(status, str(sorted(rest.items()))) for status, rest, _ in answers} == {
        (200, str(sorted(answers[0][1].items())))
    }
    assert [g for _, _, g in answers] == [0, 1, 2, 3, 0]
    assert "golden label" not in page.content()
    # Leaving the query unfinished warns once.
    page.keyboard.press("n")
    expect(page.locator("#flow-message")).to_contain_text("not marked done")
    assert page.url.endswith(f"/assignments/{assignment.pk}/")
    # Marking done with documents ungraded is refused; grade the rest, then d locks and lists the overturn.
    page.keyboard.press("d")
    expect(page.locator("#flow-message")).to_contain_text("1 of 6 graded")
    for other in candidates[1:]:
        other_item = page.locator(f"#c-{factories.token(assignment, other)}")
        other_item.locator(".grade-btn[data-grade='1']").click()
        expect(other_item.locator(".save-state")).to_have_text("Saved")
    page.keyboard.press("d")
    overturns = page.locator("#overturns .overturn")
    expect(overturns).to_have_count(1)
    expect(overturns.first).to_have_attribute("data-candidate", factories.token(assignment, labeled))
    expect(overturns.first.locator(".save-state")).to_have_text("Note needed")
    overturns.first.locator("textarea").fill("archived page, wrong product")
    overturns.first.locator("button[type=submit]").click()
    expect(overturns.first.locator(".save-state")).to_have_text("Note saved")
    judgment = Judgment.objects.get(assignment=assignment, document=labeled.document)
    assert (judgment.grade, judgment.note) == (0, "archived page, wrong product")
    proposal = LabelProposal.objects.get()
    assert (proposal.from_grade, proposal.to_grade, proposal.note) == (2, 0, "archived page, wrong product")
    # Locked: a grade key changes nothing now.
    item.click()
    page.keyboard.press("3")
    expect(item.locator(".save-state")).to_contain_text("Locked")
    assert Judgment.objects.get(pk=judgment.pk).grade == 0


def test_marking_done_while_the_server_is_busy_says_so_and_marks_it_done_after_the_wait(
    page: Page, live_server: Any, login: Login, work: dict[str, Assignment]
) -> None:
    assignment = work["alice_next"]
    for candidate in Candidate.objects.filter(query=assignment.query):
        factories.JudgmentFactory.create(assignment=assignment, document=candidate.document, grade=1)
    login(page, "alice")
    _open(page, live_server, assignment)
    # The first "done" finds the database locked (SQLite, docs/deployment.md): 503 with Retry-After.
    answered: list[int] = []

    def busy_once(route: Any) -> None:
        if not answered:
            answered.append(503)
            route.fulfill(
                status=503,
                headers={"Retry-After": "1", "Content-Type": "application/json"},
                body='{"error": "busy", "message": "the database is busy"}',
            )
        else:
            answered.append(0)
            route.continue_()

    page.route(f"**/assignments/{assignment.pk}/done/", busy_once)
    page.keyboard.press("d")
    expect(page.locator("#flow-message")).to_contain_text("the server is busy. Trying again in 1 s")
    # The wait, the second request and the reload: more than expect's 5 s on a loaded test machine.
    expect(page.locator("#mark-done")).to_have_count(0, timeout=30_000)  # the page reloaded, done
    assert answered == [503, 0]
    assignment.refresh_from_db()
    assert assignment.status == "done"
