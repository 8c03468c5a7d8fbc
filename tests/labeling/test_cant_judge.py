"""Can't judge (`x` on the grading page): a reason stored apart from grades, never counted as one, and the
same save's other state, neither (what undo restores); the history of a document outlives its grade."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from golden_io import services as golden_services
from labeling import selectors, services
from labeling.models import (
    Assignment,
    Candidate,
    CantJudgeMark,
    FrozenLabel,
    Judgment,
    JudgmentEvent,
    LabelProposal,
)
from tests import factories

pytestmark = pytest.mark.django_db


def html_text(fragment: str) -> str:
    return re.sub(r"<[^>]+>", " ", fragment)


def _post(client: Client, assignment: Assignment, body: Any):
    return client.post(
        reverse("labeling:grades", args=[assignment.pk]),
        data=json.dumps(body),
        content_type="application/json",
    )


def _candidates(assignment: Assignment) -> list[Candidate]:
    return list(assignment.query.candidates.order_by("best_rank"))


def _save(
    assignment: Assignment, candidate: Candidate, grade: int | None, **fields: Any
) -> services.SubmitResult:
    return services.judgment_submit(
        assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=grade, **fields
    )


@pytest.fixture
def as_alice(client: Client, assignment: Assignment) -> Client:
    client.force_login(assignment.rater)
    return client


def test_x_stores_a_mark_with_its_reason_and_no_grade(as_alice: Client, assignment: Assignment) -> None:
    c = _candidates(assignment)[1]
    response = _post(
        as_alice,
        assignment,
        {"candidate": factories.token(assignment, c), "grade": None, "cant_judge": "foreign-language"},
    )
    assert response.status_code == 200
    assert response.json() == {
        "saved": True,
        "candidate": factories.token(assignment, c),
        "grade": None,
        "note": "",
        "changed": True,
        "graded": 0,
        "total": 5,
        "status": "open",
        "cant_judge": "foreign-language",
        "cant_judged": 1,
    }
    assert not Judgment.objects.exists()
    mark = CantJudgeMark.objects.get()
    assert (mark.assignment_id, mark.document_id, mark.reason) == (
        assignment.pk,
        c.document_id,
        "foreign-language",
    )
    event = JudgmentEvent.objects.get()
    assert (event.judgment_id, event.old_grade, event.new_grade, event.new_cant_judge) == (
        None,
        None,
        None,
        "foreign-language",
    )
    assert (event.assignment_id, event.document_id) == (assignment.pk, c.document_id)
    saved = as_alice.get(reverse("labeling:grades", args=[assignment.pk])).json()
    assert saved == {
        "status": "open",
        "grades": {},
        "cant_judge": {factories.token(assignment, c): {"reason": "foreign-language", "note": ""}},
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"grade": None, "cant_judge": "boring"},
            "cant_judge must be one of broken, foreign-language, needs-context",
        ),
        ({"grade": 2, "cant_judge": "broken"}, "graded or marked can't judge, not both"),
        ({"grade": None, "cant_judge": "broken", "undo": "yes"}, "undo must be true or false"),
        ({"cant_judge": "broken"}, "grade must be an integer, got None"),  # grade: null must be said
    ],
)
def test_a_malformed_mark_is_a_400_and_writes_nothing(
    as_alice: Client, assignment: Assignment, body: dict[str, Any], message: str
) -> None:
    response = _post(
        as_alice, assignment, {"candidate": factories.token(assignment, _candidates(assignment)[1]), **body}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "bad_request"
    assert message in response.json()["message"]
    assert not CantJudgeMark.objects.exists() and not JudgmentEvent.objects.exists()


def test_a_grade_replaces_a_mark_and_a_mark_a_grade_and_the_history_keeps_both(
    assignment: Assignment,
) -> None:
    c = _candidates(assignment)[2]
    _save(assignment, c, 2, note="close", time_spent_ms=1000)
    marked = _save(assignment, c, None, cant_judge="broken", note="404 now", time_spent_ms=500)
    assert (marked.grade, marked.cant_judge, marked.graded, marked.cant_judged) == (None, "broken", 0, 1)
    assert not Judgment.objects.exists()
    assert CantJudgeMark.objects.get().time_spent_ms == 1500  # the time on the document carries over
    regraded = _save(assignment, c, 1, time_spent_ms=250)
    assert (regraded.grade, regraded.cant_judge, regraded.graded, regraded.cant_judged) == (1, "", 1, 0)
    assert not CantJudgeMark.objects.exists()
    judgment = Judgment.objects.get()
    assert (judgment.grade, judgment.time_spent_ms) == (1, 1750)
    history = JudgmentEvent.objects.filter(assignment=assignment, document=c.document).order_by("id")
    assert [(e.old_state, e.new_state) for e in history] == [
        ("no grade", "2"),
        ("2", "can't judge (broken page)"),
        ("can't judge (broken page)", "1"),
    ]
    assert [e.judgment_id for e in history] == [None, None, judgment.pk]  # the first grade's row is gone


def test_a_save_without_grade_or_mark_leaves_neither_and_is_recorded_as_an_undo(
    assignment: Assignment,
) -> None:
    c = _candidates(assignment)[0]
    _save(assignment, c, 3)
    cleared = _save(assignment, c, None, undo=True)
    assert (cleared.grade, cleared.cant_judge, cleared.changed, cleared.graded) == (None, "", True, 0)
    assert not Judgment.objects.exists() and not CantJudgeMark.objects.exists()
    last = JudgmentEvent.objects.latest("id")
    assert (last.old_grade, last.new_grade, last.new_cant_judge, last.undo) == (3, None, "", True)
    again = _save(assignment, c, None)  # nothing to clear: no change, no event
    assert not again.changed
    assert JudgmentEvent.objects.count() == 2


def test_done_needs_every_document_graded_or_marked_and_then_locks_marks_too(
    as_alice: Client, assignment: Assignment
) -> None:
    candidates = _candidates(assignment)
    for c in candidates[:3]:
        _save(assignment, c, 1)
    _save(assignment, candidates[3], None, cant_judge="needs-context")
    refused = as_alice.post(reverse("labeling:done", args=[assignment.pk]))
    assert refused.status_code == 422
    assert refused.json()["message"] == (
        "3 of 5 graded, 1 can't judge: grade every document before marking the query done"
    )
    _save(assignment, candidates[4], None, cant_judge="broken")
    assert as_alice.post(reverse("labeling:done", args=[assignment.pk])).status_code == 200
    locked = _post(
        as_alice,
        assignment,
        {
            "candidate": factories.token(assignment, candidates[4]),
            "grade": None,
            "cant_judge": "needs-context",
        },
    )
    assert (locked.status_code, locked.json()["error"]) == (409, "done")
    cleared = _post(
        as_alice, assignment, {"candidate": factories.token(assignment, candidates[3]), "grade": None}
    )
    assert (cleared.status_code, cleared.json()["error"]) == (409, "done")
    graded = _post(
        as_alice, assignment, {"candidate": factories.token(assignment, candidates[3]), "grade": 2}
    )
    assert (graded.status_code, graded.json()["error"]) == (409, "done")
    # The same mark with a note still saves, as a grade's note does.
    noted = _post(
        as_alice,
        assignment,
        {
            "candidate": factories.token(assignment, candidates[4]),
            "grade": None,
            "cant_judge": "broken",
            "note": "500",
        },
    )
    assert noted.status_code == 200
    assert CantJudgeMark.objects.get(document=candidates[4].document).note == "500"


def test_a_grade_a_proposal_was_made_from_is_not_cleared_or_marked(
    assignment: Assignment, rita: User
) -> None:
    labeled = _candidates(assignment)[0]  # frozen 3
    for c in _candidates(assignment):
        _save(assignment, c, 0)
    services.assignment_done(assignment_id=assignment.pk, rater=assignment.rater)
    assert LabelProposal.objects.filter(status="pending").count() == 1
    services.assignment_reopen(assignment=assignment, by=rita)
    for grade, reason in ((None, "broken"), (None, "")):
        with pytest.raises(services.OnRecord):
            _save(assignment, labeled, grade, cant_judge=reason)
    assert Judgment.objects.get(document=labeled.document).grade == 0
    assert LabelProposal.objects.get().status == "pending"


def test_a_mark_answers_alike_on_a_labelled_and_an_unlabelled_document(
    as_alice: Client, assignment: Assignment
) -> None:
    labeled, unlabeled = _candidates(assignment)[:2]  # frozen 3; nothing frozen

    def answers(candidate: Candidate) -> list[tuple[int, str]]:
        out = []
        for body in ({"grade": None, "cant_judge": "broken"}, {"grade": 1}, {"grade": None}):
            response = _post(
                as_alice, assignment, {"candidate": factories.token(assignment, candidate), **body}
            )
            out.append(
                (response.status_code, json.dumps({**response.json(), "candidate": 0}, sort_keys=True))
            )
        return out

    assert answers(labeled) == answers(unlabeled)


def _dual_query_with_marks(golden_set: Any, alice: User, bob: User) -> tuple[Assignment, Assignment]:
    """alice and bob both grade a 6-document query; bob marks two documents can't judge instead."""
    query = factories.pooled_query(golden_set, 6)
    first = factories.AssignmentFactory.create(query=query, rater=alice)
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    candidates = list(query.candidates.order_by("best_rank"))
    for i, c in enumerate(candidates):
        _save(first, c, i % 4)
        if i < 2:
            _save(second, c, None, cant_judge="broken" if i else "foreign-language")
        else:
            _save(second, c, i % 4 if i != 3 else 0)
    FrozenLabel.objects.create(query=query, document=candidates[0].document, grade=1, version="v0")
    return first, second


def test_marks_never_count_as_grades_in_agreement_disputes_consolidation_or_freeze(
    golden_set: Any, alice: User, bob: User, rita: User
) -> None:
    first, second = _dual_query_with_marks(golden_set, alice, bob)
    services.assignment_done(assignment_id=first.pk, rater=alice)
    services.assignment_done(assignment_id=second.pk, rater=bob)  # runs the dispute check
    check = services.query_dispute_check(query_id=first.query_id)
    assert check is not None
    golden_services.golden_version_freeze(golden_set=golden_set, by=rita, quarantine_unresolved=True)

    def figures() -> tuple[Any, ...]:
        consolidated = selectors.labels_consolidated(golden_set=golden_set)
        return (
            sorted(selectors.ratings_list(golden_set=golden_set), key=repr),
            consolidated.labels,
            sorted(str(u) for u in consolidated.unresolved),
            json.dumps(
                selectors.agreement_dashboard_get(golden_set=golden_set).report.to_dict(), sort_keys=True
            ),
            services.query_dispute_check(query_id=first.query_id),  # the same input finds the same check
        )

    with_marks = figures()
    assert [r.rater for r in with_marks[0]].count("bob") == 4  # his two marks are no rating
    assert with_marks[4] == check
    CantJudgeMark.objects.all().delete()
    assert figures() == with_marks
    # The frozen version would be the same without the marks: nothing new to freeze.
    with pytest.raises(golden_services.FreezeUnchanged):
        golden_services.golden_version_freeze(golden_set=golden_set, by=rita, quarantine_unresolved=True)


def test_a_reviewer_sees_the_marks_with_their_reasons_and_the_history(
    client: Client, golden_set: Any, alice: User, bob: User, rita: User
) -> None:
    first, second = _dual_query_with_marks(golden_set, alice, bob)
    c0 = first.query.candidates.order_by("best_rank")[0]
    _save(second, c0, 2)  # bob grades the first document after all, then takes it back
    _save(second, c0, None, cant_judge="foreign-language", note="German only", undo=True)
    client.force_login(rita)
    page = html.unescape(
        client.get(reverse("labeling:query_review", args=[golden_set.slug, first.query_id])).content.decode()
    )
    row = page[page.index(f'data-doc="{c0.document.doc_id}"') :].split("</tr>")[0]
    text = " ".join(html_text(row).split())
    assert "bob (second): can't judge: foreign language — “German only” not a grade" in text
    assert "can't judge (foreign language) → 2" in text
    assert "2 → can't judge (foreign language) undo “German only”" in text
    assert "broken page" in page  # bob's other mark
