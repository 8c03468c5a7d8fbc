"""Disagreement to final label in a real browser against a real server: two raters grade one query by
keyboard and disagree by two grades on one document; the dispute check quarantines the query into shadow
and the document waits in the reviewer's queue; the reviewer sets the final grade with a rationale and the
consolidated label and its provenance change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from labeling.models import Adjudication, Assignment, Candidate, GoldenSet, Judgment, Query, TierMove
from labeling.selectors import FinalLabel, Unresolved, labels_consolidated
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Session = Callable[[BrowserContext, str], None]


def _grade_query_by_keyboard(
    page: Page, live_server: Any, assignment: Assignment, grades: dict[int, int]
) -> None:
    """Grade every candidate of the assignment with `grades[candidate id]`, in the rater's shuffled order,
    then mark the query done."""
    page.goto(f"{live_server.url}/assignments/{assignment.pk}/")
    items = page.locator(".candidate")
    expect(page.locator(".candidate.focused")).to_have_count(1)
    n = items.count()
    by_token = {factories.token(assignment, candidate): grade for candidate, grade in grades.items()}
    for i in range(n):
        focused = page.locator(".candidate.focused")
        grade = by_token[focused.get_attribute("data-candidate") or ""]
        page.keyboard.press(str(grade))
        expect(focused.locator(".save-state")).to_have_text("Saved")
        if i < n - 1:
            page.keyboard.press("j")
    expect(page.locator("#progress-text")).to_contain_text(f"{n} of {n} graded")
    page.keyboard.press("d")  # marks the query done
    expect(page.locator("#done-state")).to_contain_text("You marked this query done")


def _page_as(browser: Browser, session_for: Session, username: str) -> Page:
    context = browser.new_context()
    context.set_default_timeout(10_000)
    session_for(context, username)
    return context.new_page()


def test_a_two_grade_disagreement_is_quarantined_queued_and_resolved_by_the_reviewer(
    browser: Browser,
    live_server: Any,
    session_for: Session,
    golden_set: GoldenSet,
    alice: User,
    bob: User,
    rita: User,
) -> None:
    query = factories.pooled_query(golden_set, 4, external_id="q-88", text="cancel annual plan")
    candidates = list(query.candidates.order_by("best_rank"))
    target = candidates[0]
    first = factories.AssignmentFactory.create(query=query, rater=alice)
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    alice_grades = {c.pk: 1 for c in candidates} | {target.pk: 3}
    bob_grades = {c.pk: 1 for c in candidates}

    alice_page = _page_as(browser, session_for, "alice")
    _grade_query_by_keyboard(alice_page, live_server, first, alice_grades)
    assert Query.objects.get(pk=query.pk).tier == "core"  # the second rater has not finished
    bob_page = _page_as(browser, session_for, "bob")
    _grade_query_by_keyboard(bob_page, live_server, second, bob_grades)

    # The dispute check ran when bob marked his assignment done: the query is in shadow, with the reason.
    query.refresh_from_db()
    assert query.tier == "shadow" and "hard disagreement" in query.quarantine_reason
    assert TierMove.objects.get().by is None
    consolidated = labels_consolidated(golden_set=golden_set)
    items: list[FinalLabel | Unresolved] = [*consolidated.labels, *consolidated.unresolved]
    before = {(x.query_id, x.document_id): x for x in items}
    assert isinstance(before[(query.pk, target.document_id)], Unresolved)
    assert before[(query.pk, candidates[1].document_id)] == FinalLabel(
        query.pk, candidates[1].document_id, 1, "agreed", candidates[1].document.content_hash
    )

    # The reviewer finds it from the set page: in the disputed queries, the shadow tier and the documents.
    page = _page_as(browser, session_for, "rita")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/")
    page.get_by_role("link", name="Review queue").click()
    expect(page.locator("#disputed-queries tr[data-query='q-88']")).to_contain_text("shadow")
    expect(page.locator("#disputed-queries tr[data-query='q-88']")).to_contain_text("hard disagreement")
    expect(page.locator("#shadow tr[data-query='q-88']")).to_be_visible()
    row = page.locator(f"#needs-reviewer tr[data-doc='{target.document.doc_id}']")
    expect(row).to_contain_text("two grades disagree (1 vs 3)")
    row.get_by_role("link", name="Decide").click()

    # Side by side, without systems or ranks; the reviewer sets 2 with a rationale.
    article = page.locator(f"#d-{target.document_id}")
    expect(article.locator("td.rater-grade")).to_have_text(["3", "1"])
    expect(article.locator("td.final")).to_contain_text("a reviewer decides")
    assert "bm25" not in page.content()
    article.locator("input[name='grade'][value='2']").check()
    article.locator("textarea[name='rationale']").fill("covers cancelling, but not the annual refund")
    article.get_by_role("button", name="Set final grade").click()
    # Back at the top of the page: the message in view, nothing left to decide, the way back to core.
    expect(page.locator(".messages")).to_contain_text(
        f"{target.document.doc_id}: final grade 2 (adjudicated)"
    )
    expect(page.locator(".messages")).to_be_in_viewport()
    expect(page.locator("#to-decide")).to_contain_text("Nothing left for a reviewer to decide here")
    assert page.evaluate("window.scrollY") == 0
    article = page.locator(f"#d-{target.document_id}")
    expect(article.locator("td.final")).to_have_text("2 adjudicated")
    expect(article.locator(".adjudications")).to_contain_text(
        "rita set 2: “covers cancelling, but not the annual refund”"
    )

    # The consolidated label and its provenance changed; the raw grades did not.
    after = {(x.query_id, x.document_id): x for x in labels_consolidated(golden_set=golden_set).labels}
    assert after[(query.pk, target.document_id)] == FinalLabel(
        query.pk, target.document_id, 2, "adjudicated", target.document.content_hash
    )
    assert labels_consolidated(golden_set=golden_set).unresolved == []
    assert sorted(Judgment.objects.filter(document=target.document).values_list("grade", flat=True)) == [1, 3]
    adjudication = Adjudication.objects.get()
    assert (adjudication.reviewer, adjudication.grade) == (rita, 2)
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/queries/{query.pk}/")
    expect(page.locator(f"tr[data-doc='{target.document.doc_id}'] td.final")).to_have_text("2 adjudicated")

    # Nothing waits any more: back to core, recorded with who and why.
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/queries/{query.pk}/adjudicate/")
    page.locator("#return-to-core textarea[name='reason']").fill("resolved by adjudication")
    page.get_by_role("button", name="Return to core").click()
    expect(page.locator("#query-tier")).to_have_text("core")
    move = TierMove.objects.filter(by=rita).get()
    assert (move.from_tier, move.to_tier, move.reason) == ("shadow", "core", "resolved by adjudication")
    for p in (alice_page, bob_page, page):
        p.context.close()
    assert Candidate.objects.filter(query=query).count() == 4
