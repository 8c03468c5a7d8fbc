"""POST /assignments/<id>/grades/: every refusal has a clear status and message; saves are upserts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, Candidate, Judgment, JudgmentEvent
from tests import factories


def _post(client: Client, assignment: Assignment, body: Any, **extra: Any):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(
        reverse("labeling:grades", args=[assignment.pk]), data=data, content_type="application/json", **extra
    )


def _candidates(assignment: Assignment) -> list[Candidate]:
    return list(assignment.query.candidates.order_by("best_rank"))


@pytest.fixture
def as_alice(client: Client, assignment: Assignment) -> Client:
    client.force_login(assignment.rater)
    return client


def test_it_saves_and_reports_the_saved_grade(as_alice: Client, assignment: Assignment) -> None:
    c = _candidates(assignment)[1]
    response = _post(
        as_alice, assignment, {"candidate": factories.token(assignment, c), "grade": 2, "time_spent_ms": 1500}
    )
    assert response.status_code == 200
    assert response.json() == {
        "saved": True,
        "candidate": factories.token(assignment, c),
        "grade": 2,
        "note": "",
        "changed": True,
        "graded": 1,
        "total": 5,
        "status": "open",
    }
    assert Judgment.objects.get().time_spent_ms == 1500


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json", "the body must be JSON"),
        ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),  # a RecursionError before: a 500
        ('{"candidate": ' + "[" * 70 + "]" * 70 + "}", "nested deeper than 64 levels"),
        ([1, 2], "the body must be a JSON object"),
        ({"grade": 2}, "candidate must be the document's token from the grading page (text), got None"),
        # The candidate's database id is refused as any non-token is, however large (an OverflowError in
        # SQLite's driver before: a 500).
        ({"candidate": 7, "grade": 2}, "candidate must be the document's token from the grading page"),
        ({"candidate": 99999999999999999999999, "grade": 1}, "got 99999999999999999999999"),
        ({"candidate": "CANDIDATE", "grade": 99999999999999999999999}, "outside the scale 0..3"),
        ({"candidate": "CANDIDATE", "grade": "2"}, "grade must be an integer, got '2'"),
        ({"candidate": "CANDIDATE", "grade": True}, "grade must be an integer, got True"),
        ({"candidate": "CANDIDATE", "grade": 2.0}, "grade must be an integer, got 2.0"),
        ({"candidate": "CANDIDATE", "grade": 2, "note": 5}, "note must be text"),
        ({"candidate": "CANDIDATE", "grade": 2, "time_spent_ms": -4}, "time_spent_ms must be a non-negative"),
    ],
)
def test_it_refuses_a_malformed_body_with_400(
    as_alice: Client, assignment: Assignment, body: Any, message: str
) -> None:
    c = _candidates(assignment)[1]
    if isinstance(body, dict):
        body = {k: (factories.token(assignment, c) if v == "CANDIDATE" else v) for k, v in body.items()}
    response = _post(as_alice, assignment, body)
    assert response.status_code == 400
    assert response.json()["error"] in ("bad_request", "off_scale")
    assert message in response.json()["message"]
    assert not Judgment.objects.exists()


def test_it_refuses_a_grade_off_the_scale_with_400_naming_the_scale(
    as_alice: Client, assignment: Assignment
) -> None:
    candidate = factories.token(assignment, _candidates(assignment)[1])
    response = _post(as_alice, assignment, {"candidate": candidate, "grade": 5})
    assert response.status_code == 400
    assert response.json() == {"error": "off_scale", "message": "grade 5 is outside the scale 0..3"}
    assert not Judgment.objects.exists()


def test_it_refuses_a_document_outside_the_assignment_with_404(
    as_alice: Client, assignment: Assignment, golden_set
) -> None:
    elsewhere = factories.pooled_query(golden_set, 1).candidates.get()
    response = _post(as_alice, assignment, {"candidate": factories.token(assignment, elsewhere), "grade": 1})
    assert response.status_code == 404
    assert response.json()["message"] == services.NOT_IN_ASSIGNMENT
    assert not Judgment.objects.exists()


def test_it_refuses_a_stale_form_after_reassignment_with_409(
    as_alice: Client, assignment: Assignment, bob: User
) -> None:
    services.assignment_reassign(assignment=assignment, rater=bob)
    candidate = factories.token(assignment, _candidates(assignment)[1])
    response = _post(as_alice, assignment, {"candidate": candidate, "grade": 1})
    assert response.status_code == 409
    assert response.json() == {
        "error": "reassigned",
        "message": "this assignment was reassigned to another rater; your grade was not saved",
    }
    page = as_alice.get(reverse("labeling:grade", args=[assignment.pk]))
    assert page.status_code == 409
    assert b"reassigned to another rater" in page.content
    assert not Judgment.objects.exists()


def test_it_refuses_a_post_without_csrf_token_with_403(assignment: Assignment) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(assignment.rater)
    candidate = factories.token(assignment, _candidates(assignment)[1])
    response = _post(strict, assignment, {"candidate": candidate, "grade": 1})
    assert response.status_code == 403
    assert b"CSRF" in response.content
    assert not Judgment.objects.exists()
    # The same request with the token the page gets from its cookie goes through.
    strict.get(reverse("labeling:grade", args=[assignment.pk]))
    token = strict.cookies["csrftoken"].value
    ok = _post(strict, assignment, {"candidate": candidate, "grade": 1}, HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 200


def test_resending_the_same_grade_changes_nothing(as_alice: Client, assignment: Assignment) -> None:
    c = factories.token(assignment, _candidates(assignment)[2])
    first = _post(as_alice, assignment, {"candidate": c, "grade": 1})
    again = _post(as_alice, assignment, {"candidate": c, "grade": 1})
    assert first.json()["changed"] is True and again.json()["changed"] is False
    assert Judgment.objects.count() == 1 and JudgmentEvent.objects.count() == 1


def test_get_returns_only_the_raters_own_grades(as_alice: Client, assignment: Assignment, bob: User) -> None:
    c0, c1 = _candidates(assignment)[1:3]
    _post(as_alice, assignment, {"candidate": factories.token(assignment, c0), "grade": 2})
    bobs = factories.AssignmentFactory.create(query=assignment.query, rater=bob, kind="second")
    services.judgment_submit(assignment_id=bobs.pk, rater=bob, candidate_id=c1.pk, grade=0)
    response = as_alice.get(reverse("labeling:grades", args=[assignment.pk]))
    assert response.json() == {
        "status": "open",
        "grades": {factories.token(assignment, c0): {"grade": 2, "note": ""}},
    }


def test_only_get_and_post_are_allowed(as_alice: Client, assignment: Assignment) -> None:
    response = as_alice.put(reverse("labeling:grades", args=[assignment.pk]), data="{}")
    assert response.status_code == 405
