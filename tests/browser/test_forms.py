"""Forms in Chromium (static/js/forms.js): a form sent back with mistakes moves focus to the summary of
them at the top, and each of its links moves focus to the field to fix; the study form's raters start
ticked, and "none" and "select all" change them all at once. A page's small form refused on a phone
(labeling/inline_forms.py): the summary is on screen at once, its link brings the error beside the form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from labeling import services
from labeling.models import Adjudication, GoldenSet, LabelProposal, Query
from tests import factories
from tests.browser.test_accessibility import axe_violations, described

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def _focused_id(page: Page) -> str:
    return str(page.evaluate("document.activeElement && document.activeElement.id"))


def test_the_summary_takes_focus_and_each_link_takes_it_to_its_field(
    page: Page, live_server: Any, session_for: Session, golden_set: GoldenSet, rita: User
) -> None:
    session_for(page.context, "rita")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/studies/new/")
    raters = page.locator("input[name=raters]")
    expect(raters).to_have_count(2)
    for box in raters.all():
        expect(box).to_be_checked()  # the set's raters, every one ticked to begin with
    page.click("#id_raters .check-all-none button[data-check=none]")
    for box in raters.all():
        expect(box).not_to_be_checked()
    page.click("#id_raters .check-all-none button[data-check=all]")
    for box in raters.all():
        expect(box).to_be_checked()
    page.click("#id_raters .check-all-none button[data-check=none]")
    page.click("#study-form button[type=submit]")

    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    expect(summary.locator("h2")).to_have_text("2 problems to fix")
    assert not (found := axe_violations(page)), described(found)  # the summary, the marked fields
    summary.get_by_role("link", name="Raters: This field is required.").click()
    assert _focused_id(page) == "id_raters_0"
    summary.get_by_role("link", name="choose run A and run B").click()
    assert _focused_id(page) == "id_run_a"
    expect(page.locator("label[for=id_run_a]")).to_be_in_viewport()


def test_the_login_page_says_what_is_wrong_and_where(page: Page, live_server: Any, rita: User) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", "not the password")
    page.keyboard.press("Enter")
    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    assert not (found := axe_violations(page)), described(found)
    summary.locator("a").click()
    assert _focused_id(page) == "id_username"


# A phone's screen: a small form far down a long page, refused, must not leave its error out of sight.
WIDTH, HEIGHT = 390, 844


def _graded_query(golden_set: GoldenSet, alice: User, documents: int) -> Query:
    """A query of `documents` documents alice graded and marked done against frozen labels she disagrees
    with on the first two: two proposals, and every document on the adjudication page."""
    query = factories.pooled_query(golden_set, documents, external_id="q-12", text="refund an annual plan")
    candidates = list(query.candidates.order_by("best_rank"))
    for candidate, frozen in zip(candidates[:2], (3, 0), strict=True):
        factories.FrozenLabelFactory.create(query=query, document=candidate.document, grade=frozen)
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    for i, candidate in enumerate(candidates):
        grade = {0: 0, 1: 3}.get(i, 1)
        services.judgment_submit(
            assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=grade
        )
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    return query


def _refused_in_sight(page: Page, heading: str, field: str) -> None:
    """After the refusal: the summary at the top has focus and is on screen; its link takes focus to the
    field, whose error is on screen beside it."""
    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    expect(summary).to_be_in_viewport()
    expect(summary.locator("h2")).to_have_text(f"{heading}: 1 problem to fix")
    summary.locator("a").click()
    assert _focused_id(page) == field
    expect(page.locator(f"#{field}_error")).to_be_in_viewport()
    expect(page.locator(f"#{field}_error")).to_have_text("This field is required.")


def test_a_refused_final_grade_far_down_a_phone_page_is_said_at_the_top_and_beside_it(
    browser: Browser, live_server: Any, session_for: Session, golden_set: GoldenSet, alice: User, rita: User
) -> None:
    query = _graded_query(golden_set, alice, 12)
    document = query.candidates.order_by("best_rank").last().document  # type: ignore[union-attr]
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    session_for(context, "rita")
    page = context.new_page()
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/queries/{query.pk}/adjudicate/")
    page.locator("#agreed > summary").click()
    card = page.locator(f"#d-{document.pk}")
    card.locator("input[name=grade][value='2']").check()
    card.locator("textarea[name=rationale]").fill("   ")  # passes the browser's check, not the server's
    card.get_by_role("button", name="Set final grade").click()

    _refused_in_sight(page, "Not saved", f"adjudication-{document.pk}-rationale")
    # What was chosen is still chosen; nothing was saved.
    expect(page.locator(f"#d-{document.pk} input[name=grade][value='2']")).to_be_checked()
    assert not Adjudication.objects.exists()
    assert not (found := axe_violations(page)), described(found)
    context.close()


def test_a_refused_proposal_decision_on_a_phone_is_said_at_the_top_and_beside_it(
    browser: Browser, live_server: Any, session_for: Session, golden_set: GoldenSet, alice: User, rita: User
) -> None:
    query = _graded_query(golden_set, alice, 3)
    proposal = LabelProposal.objects.filter(query=query).order_by("pk").last()
    assert proposal is not None
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    session_for(context, "rita")
    page = context.new_page()
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/proposals/")
    row = page.locator(f"#p-{proposal.pk}")
    row.locator("textarea[name=rationale]").fill("  ")
    row.get_by_role("button", name="Reject").click()

    _refused_in_sight(page, "Nothing decided", f"proposal-{proposal.pk}-rationale")
    assert LabelProposal.objects.get(pk=proposal.pk).status == LabelProposal.Status.PENDING
    context.close()
