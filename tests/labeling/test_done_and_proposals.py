"""Blind until done, overturns as proposals: marking a query done locks its grades and lists the grades
that overturn a frozen label; on single-rater work each becomes a proposal that changes no label (and no
freeze) until a reviewer of the set accepts it."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from golden_io.services import golden_version_freeze
from labeling import services
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    FrozenLabel,
    GoldenSet,
    Judgment,
    JudgmentEvent,
    LabelProposal,
)
from labeling.selectors import labels_consolidated
from tests import factories
from tests.support.evaluation import messages_text
from tests.support.forms import error_summary

pytestmark = pytest.mark.django_db


def _candidates(assignment: Assignment) -> list[Candidate]:
    return list(assignment.query.candidates.order_by("best_rank"))


def _grade(assignment: Assignment, candidate: Candidate, grade: int, note: str = "") -> services.SubmitResult:
    return services.judgment_submit(
        assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=grade, note=note
    )


def _grade_all(assignment: Assignment, grades: list[int]) -> None:
    for candidate, grade in zip(_candidates(assignment), grades, strict=True):
        _grade(assignment, candidate, grade)


def _post(client: Client, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def _label(golden_set: GoldenSet, candidate: Candidate) -> tuple[int, str]:
    for label in labels_consolidated(golden_set=golden_set).labels:
        if (label.query_id, label.document_id) == (candidate.query_id, candidate.document_id):
            return label.grade, label.method
    raise AssertionError("no label")


def _frozen_grade(version: Any, query_id: str, doc_id: str) -> int | None:
    for j in version.golden().query(query_id).judgments:
        if j.doc_id == doc_id:
            return int(j.grade)
    return None


@pytest.fixture
def as_alice(client: Client, assignment: Assignment) -> Client:
    client.force_login(assignment.rater)
    return client


# --- blind until done --------------------------------------------------------------------------------


def _answers(client: Client, assignment: Assignment, candidate: Candidate) -> list[tuple[int, str, tuple]]:
    """Every grade of the scale, then back to the first: status, body without the grade, the headers."""
    out = []
    for grade in (0, 1, 2, 3, 0):
        response = _post(
            client,
            reverse("labeling:grades", args=[assignment.pk]),
            {"candidate": factories.token(assignment, candidate), "grade": grade},
        )
        body = response.json()
        assert body.pop("grade") == grade
        body.pop("candidate")
        headers = tuple(sorted((k, v) for k, v in response.headers.items() if k.lower() != "content-length"))
        out.append((response.status_code, json.dumps(body, sort_keys=True), headers))
    return out


def test_a_rater_who_tries_every_grade_on_a_labelled_document_sees_the_same_answer_each_time(
    as_alice: Client, assignment: Assignment
) -> None:
    labeled, unlabeled = _candidates(assignment)[:2]  # frozen grade 3; nothing frozen
    on_labeled = _answers(as_alice, assignment, labeled)
    Judgment.objects.all().delete()
    on_unlabeled = _answers(as_alice, assignment, unlabeled)
    assert len(set(on_labeled)) == 1  # a first save and a change answer alike
    assert on_labeled == on_unlabeled
    assert all(status == 200 for status, _, _ in on_labeled)


def test_nothing_the_grading_page_or_its_endpoints_return_depends_on_the_frozen_labels(
    as_alice: Client, assignment: Assignment
) -> None:
    candidates = _candidates(assignment)
    _grade(assignment, candidates[0], 0)  # overturns the frozen 3

    def without_tokens(response: Any) -> str:
        # The CSRF token is masked afresh on every response; it says nothing of labels.
        return re.sub(r"[A-Za-z0-9]{64}", "<token>", response.content.decode())

    def snapshot() -> tuple[str, str, str]:
        page = without_tokens(as_alice.get(reverse("labeling:grade", args=[assignment.pk])))
        grades = without_tokens(as_alice.get(reverse("labeling:grades", args=[assignment.pk])))
        return page, grades, without_tokens(as_alice.get(reverse("labeling:queue")))

    with_label = snapshot()
    FrozenLabel.objects.all().delete()
    without = snapshot()
    assert with_label == without
    assert "golden label" not in with_label[0] and "overturn" not in with_label[0]


# --- marking done --------------------------------------------------------------------------------------


def test_marking_done_refuses_while_a_document_is_ungraded_whatever_the_labels(
    as_alice: Client, assignment: Assignment
) -> None:
    _grade(assignment, _candidates(assignment)[0], 0)
    response = _post(as_alice, reverse("labeling:done", args=[assignment.pk]), {})
    assert response.status_code == 422
    assert response.json() == {
        "error": "incomplete",
        "message": "1 of 5 graded: grade every document before marking the query done",
    }
    assert Assignment.objects.get(pk=assignment.pk).status == "open"
    assert not LabelProposal.objects.exists()


def test_marking_done_lists_the_overturns_asks_for_notes_and_locks_the_grades(
    as_alice: Client, assignment: Assignment
) -> None:
    candidates = _candidates(assignment)
    _grade_all(assignment, [0, 1, 1, 2, 2])  # the first overturns its frozen 3
    response = _post(as_alice, reverse("labeling:done", args=[assignment.pk]), {})
    assert response.status_code == 200
    data = response.json()
    assert (data["status"], data["already"], data["notes_missing"]) == ("done", False, 1)
    assert data["overturns"] == [
        {
            "candidate": factories.token(assignment, candidates[0]),
            "title": candidates[0].document.title,
            "grade": 0,
            "note": "",
        }
    ]
    page = as_alice.get(reverse("labeling:grade", args=[assignment.pk])).content.decode()
    assert 'id="overturns"' in page and "Note needed" in page and 'data-done="true"' in page

    # Locked: another grade is refused (a second tab too), nothing changes.
    grades_url = reverse("labeling:grades", args=[assignment.pk])
    second_tab = Client()
    second_tab.force_login(assignment.rater)
    events = JudgmentEvent.objects.count()
    for client in (as_alice, second_tab):
        refused = _post(
            client, grades_url, {"candidate": factories.token(assignment, candidates[1]), "grade": 3}
        )
        assert refused.status_code == 409
        assert refused.json() == {"error": "done", "message": services.LOCKED_MESSAGE}
    assert Judgment.objects.get(document=candidates[1].document).grade == 1
    assert JudgmentEvent.objects.count() == events

    # A note on the saved grade still saves, and becomes the proposal's note.
    noted = _post(
        as_alice,
        grades_url,
        {"candidate": factories.token(assignment, candidates[0]), "grade": 0, "note": "archived article"},
    )
    assert noted.status_code == 200 and noted.json()["note"] == "archived article"
    assert LabelProposal.objects.get().note == "archived article"
    again = _post(as_alice, reverse("labeling:done", args=[assignment.pk]), {}).json()
    assert (again["already"], again["notes_missing"]) == (True, 0)
    assert LabelProposal.objects.count() == 1  # marking done again proposes nothing new


def test_a_done_query_answers_409_to_a_grade_for_any_rater_state_not_only_overturns(
    assignment: Assignment, alice: User
) -> None:
    candidates = _candidates(assignment)
    _grade_all(assignment, [3, 1, 1, 2, 2])  # agrees with the frozen 3: no overturn at all
    result = services.assignment_done(assignment_id=assignment.pk, rater=alice)
    assert result.overturns == [] and result.proposed == 0
    with pytest.raises(services.Locked):
        _grade(assignment, candidates[0], 0)


def test_a_reviewer_reopens_a_done_query_and_a_regrade_withdraws_the_proposal(
    assignment: Assignment, alice: User, rita: User, client: Client
) -> None:
    candidates = _candidates(assignment)
    _grade_all(assignment, [0, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    proposal = LabelProposal.objects.get()
    client.force_login(rita)
    response = client.post(reverse("labeling:reopen", args=[assignment.pk]))
    assert response.status_code == 303
    assert Assignment.objects.get(pk=assignment.pk).status == "open"
    _grade(assignment, candidates[0], 1)  # another grade: the proposal of 0 no longer stands
    proposal.refresh_from_db()
    assert proposal.status == "withdrawn"
    done = services.assignment_done(assignment_id=assignment.pk, rater=alice)
    assert done.proposed == 1
    assert LabelProposal.objects.get(status="pending").to_grade == 1
    # Reopening what is not done is refused with a message, nothing changes.
    open_again = client.post(reverse("labeling:reopen", args=[assignment.pk]))
    client.post(reverse("labeling:reopen", args=[assignment.pk]))
    assert open_again.status_code == 303
    assert Assignment.objects.get(pk=assignment.pk).status == "open"


def test_reopening_what_is_not_done_says_why_and_changes_nothing(
    assignment: Assignment, alice: User, bob: User, rita: User, client: Client
) -> None:
    _grade(assignment, _candidates(assignment)[0], 2)
    client.force_login(rita)
    url = reverse("labeling:reopen", args=[assignment.pk])
    before = list(Assignment.objects.values_list("pk", "status", "completed", "reopened"))

    still_open = client.post(url, follow=True)

    assert messages_text(still_open) == [
        "alice's assignment of query q-0471 is still open (not marked done): nothing to reopen, their grades "
        "can still change"
    ]
    assert list(Assignment.objects.values_list("pk", "status", "completed", "reopened")) == before

    services.assignment_reassign(assignment=assignment, rater=bob)
    before = list(Assignment.objects.values_list("pk", "status", "completed", "reopened"))

    reassigned = client.post(url, follow=True)

    assert messages_text(reassigned) == [
        "alice's assignment of query q-0471 was reassigned; its primary work now goes to bob (open): "
        "nothing to reopen here"
    ]
    assert list(Assignment.objects.values_list("pk", "status", "completed", "reopened")) == before


def test_only_a_reviewer_of_the_set_can_reopen(assignment: Assignment, alice: User, bob: User) -> None:
    _grade_all(assignment, [3, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    other_reviewer = factories.UserFactory.create(username="otto", groups=["reviewers"])
    factories.GoldenSetFactory.create(slug="other", reviewers=[other_reviewer])
    for user in (alice, bob, other_reviewer):
        client = Client()
        client.force_login(user)
        assert client.post(reverse("labeling:reopen", args=[assignment.pk])).status_code == 404
    assert Assignment.objects.get(pk=assignment.pk).status == "done"


# --- proposals --------------------------------------------------------------------------------------


def test_a_single_raters_overturn_waits_for_a_reviewer_through_freezes_and_the_trail_names_both(
    golden_set: GoldenSet, assignment: Assignment, alice: User, rita: User
) -> None:
    labeled = _candidates(assignment)[0]
    v1 = golden_version_freeze(golden_set=golden_set, by=rita)
    assert _frozen_grade(v1, "q-0471", labeled.document.doc_id) == 3

    _grade(assignment, labeled, 0)  # still open, one of five graded: already held back
    assert _label(golden_set, labeled) == (3, "frozen")
    _grade_all(assignment, [0, 1, 1, 2, 2])
    _grade(assignment, labeled, 0, note="the refund policy moved to another page")
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    proposal = LabelProposal.objects.get()
    assert (proposal.from_grade, proposal.to_grade, proposal.rater, proposal.status) == (
        3,
        0,
        alice,
        "pending",
    )
    assert proposal.from_version == v1.name

    v2 = golden_version_freeze(golden_set=golden_set, by=rita)
    assert _frozen_grade(v2, "q-0471", labeled.document.doc_id) == 3
    assert v2.counts["pending_proposals"] == 1
    assert "1 proposed label change was pending review" in v2.notes
    out = io.StringIO()
    call_command("golden_diff", f"help-center@{v1.name}", f"help-center@{v2.name}", stdout=out)
    assert "! pending proposals (kept the earlier labels): old 0, new 1" in out.getvalue()

    services.proposal_decide(proposal=proposal, by=rita, accept=True, rationale="the page was archived")
    v3 = golden_version_freeze(golden_set=golden_set, by=rita)
    assert _frozen_grade(v3, "q-0471", labeled.document.doc_id) == 0
    assert v3.counts["pending_proposals"] == 0
    proposal.refresh_from_db()
    adjudication = Adjudication.objects.get()
    assert (proposal.status, proposal.decided_by, proposal.adjudication) == ("accepted", rita, adjudication)
    assert (adjudication.reviewer, adjudication.grade) == (rita, 0)
    assert "alice's proposed change 3 → 0" in adjudication.rationale
    assert "the page was archived" in adjudication.rationale
    event = JudgmentEvent.objects.filter(judgment=proposal.judgment).latest("id")
    assert (event.rater, event.new_grade) == (alice, 0)


def test_a_rejected_proposal_keeps_the_label_and_is_not_proposed_again(
    golden_set: GoldenSet, assignment: Assignment, alice: User, rita: User
) -> None:
    labeled = _candidates(assignment)[0]
    _grade_all(assignment, [0, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    services.proposal_decide(
        proposal=LabelProposal.objects.get(), by=rita, accept=False, rationale="rubric: 3"
    )
    assert _label(golden_set, labeled) == (3, "frozen")
    services.assignment_reopen(assignment=assignment, by=rita)
    assert services.assignment_done(assignment_id=assignment.pk, rater=alice).proposed == 0
    assert list(LabelProposal.objects.values_list("status", flat=True)) == ["rejected"]


def test_dual_labeled_work_makes_no_proposal_and_its_agreement_changes_the_label(
    golden_set: GoldenSet, assignment: Assignment, alice: User, bob: User
) -> None:
    second = factories.AssignmentFactory.create(query=assignment.query, rater=bob, kind="second")
    for a in (assignment, second):
        _grade_all(a, [1, 1, 1, 2, 2])  # both overturn the frozen 3 alike
        result = services.assignment_done(assignment_id=a.pk, rater=a.rater)
        assert len(result.overturns) == 1 and result.proposed == 0
    assert not LabelProposal.objects.exists()
    assert _label(golden_set, _candidates(assignment)[0]) == (1, "agreed")


def test_accepting_a_proposal_twice_is_a_worded_refusal_and_changes_nothing(
    assignment: Assignment, alice: User, rita: User, client: Client
) -> None:
    _grade_all(assignment, [0, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    proposal = LabelProposal.objects.get()
    client.force_login(rita)
    url = reverse("labeling:proposal_decide", args=["help-center", proposal.pk])
    first = client.post(url, {"decision": "accept", "rationale": "archived"}, follow=True)
    assert "accepted, final grade 0" in first.content.decode()
    second = client.post(url, {"decision": "accept", "rationale": "again"})
    # The page again (400): the proposal is decided, so its form is gone; the summary says why, unlinked.
    assert second.status_code == 400
    [(text, anchor)] = error_summary(second).entries
    assert re.fullmatch(r"proposal \d+ was already accepted by rita at [\d-]+ [\d:]+: nothing changed", text)
    assert anchor == ""
    assert Adjudication.objects.count() == 1
    with pytest.raises(services.ReviewError, match="already accepted"):
        services.proposal_decide(proposal=proposal, by=rita, accept=False, rationale="no")
    assert LabelProposal.objects.get().status == "accepted"


def test_a_decision_needs_a_rationale(
    assignment: Assignment, alice: User, rita: User, client: Client
) -> None:
    _grade_all(assignment, [0, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    proposal = LabelProposal.objects.get()
    client.force_login(rita)
    response = client.post(
        reverse("labeling:proposal_decide", args=["help-center", proposal.pk]),
        {"decision": "accept", "rationale": "  "},
    )
    assert response.status_code == 400
    assert error_summary(response).heading == "Nothing decided: 1 problem to fix"
    assert LabelProposal.objects.get().status == "pending" and not Adjudication.objects.exists()


def test_the_reviewer_decides_every_proposal_of_a_query_at_once(
    golden_set: GoldenSet, assignment: Assignment, alice: User, rita: User, client: Client
) -> None:
    candidates = _candidates(assignment)
    factories.FrozenLabelFactory.create(query=assignment.query, document=candidates[1].document, grade=0)
    _grade_all(assignment, [0, 3, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    assert LabelProposal.objects.filter(status="pending").count() == 2
    client.force_login(rita)
    page = client.get(reverse("labeling:proposals", args=["help-center"])).content.decode()
    assert page.count('class="proposal-form"') == 2 and "All 2 of q-0471" in page
    response = client.post(
        reverse("labeling:proposals_decide_query", args=["help-center", assignment.query.pk]),
        {"decision": "reject", "rationale": "the rubric says otherwise"},
        follow=True,
    )
    assert "q-0471: 2 proposals rejected." in response.content.decode()
    assert set(LabelProposal.objects.values_list("status", "rationale")) == {
        ("rejected", "the rubric says otherwise")
    }
    assert _label(golden_set, candidates[1]) == (0, "frozen")
    again = client.post(
        reverse("labeling:proposals_decide_query", args=["help-center", assignment.query.pk]),
        {"decision": "accept", "rationale": "changed my mind"},
        follow=True,
    )
    assert "has no pending proposals: nothing changed" in again.content.decode()
    assert not Adjudication.objects.exists()


def test_the_proposals_pages_answer_404_to_raters_outsiders_and_reviewers_of_other_sets(
    assignment: Assignment, alice: User, bob: User, charlie: User
) -> None:
    _grade_all(assignment, [0, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    proposal = LabelProposal.objects.get()
    other_reviewer = factories.UserFactory.create(username="otto", groups=["reviewers"])
    factories.GoldenSetFactory.create(slug="other", reviewers=[other_reviewer])
    urls = [
        ("get", reverse("labeling:proposals", args=["help-center"])),
        ("post", reverse("labeling:proposal_decide", args=["help-center", proposal.pk])),
        ("post", reverse("labeling:proposals_decide_query", args=["help-center", assignment.query.pk])),
        # The other set's reviewer names their own set: the proposal is still not theirs.
        ("post", reverse("labeling:proposal_decide", args=["other", proposal.pk])),
    ]
    for user in (alice, bob, charlie, other_reviewer):
        client = Client()
        client.force_login(user)
        for method, url in urls:
            response = getattr(client, method)(url, {"decision": "accept", "rationale": "x"})
            assert response.status_code == 404, (user.username, url)
    assert LabelProposal.objects.get().status == "pending" and not Adjudication.objects.exists()


def test_the_freeze_page_warns_of_pending_proposals(
    assignment: Assignment, alice: User, rita: User, client: Client
) -> None:
    _grade_all(assignment, [0, 1, 1, 2, 2])
    services.assignment_done(assignment_id=assignment.pk, rater=alice)
    client.force_login(rita)
    page = client.get(reverse("golden_io:freeze", args=["help-center"])).content.decode()
    assert "1 proposed label change is pending review" in page
