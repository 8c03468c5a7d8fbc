"""Numbers in the labeling pages' addresses, forms and bodies: a character `isdigit()` takes but `int()`
does not (`²`), digits of another script (`٣`), a number past the id column's range, each a worded 4xx or
"no such ..." as for any unknown id, never a 500 (`assay.inputs`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, Judge, JudgeJob, Judgment
from tests import factories

HUGE = "99999999999999999999999"
BAD_IDS = ["²", "①", "٣", HUGE, "-1", "0", " 1", "1.0", "0x1", "1e3", "9" * 5000]


@pytest.fixture
def as_alice(client: Client, assignment: Assignment) -> Client:
    client.force_login(assignment.rater)
    return client


@pytest.mark.parametrize("after", BAD_IDS)
def test_next_after_something_that_is_not_an_id_is_a_worded_400(
    as_alice: Client, assignment: Assignment, after: str
) -> None:
    url = reverse("labeling:queue_next")
    page = as_alice.get(url, {"after": after})
    assert page.status_code == 400
    text = page.content.decode()
    assert "After must be an assignment id (a whole number from 1 to 9223372036854775807)" in text
    script = as_alice.get(url, {"after": after}, headers={"Accept": "application/json"})
    assert script.status_code == 400 and script.json()["error"] == "bad_request"
    assert script.json()["message"].startswith("After must be an assignment id")


def test_next_after_an_id_still_goes_on(as_alice: Client, assignment: Assignment) -> None:
    url = reverse("labeling:queue_next")
    grade_url = reverse("labeling:grade", args=[assignment.pk])
    for after in ("", "987654321", "9223372036854775807"):  # none, or no assignment of hers: her first
        response = as_alice.get(url, {"after": after} if after else {})
        assert (response.status_code, response["Location"]) == (302, grade_url), after
    # After her only open assignment: nothing left, back to the queue.
    response = as_alice.get(url, {"after": str(assignment.pk)})
    assert (response.status_code, response["Location"]) == (302, reverse("labeling:queue"))


def test_a_grade_for_a_candidate_number_past_any_column_is_a_worded_400(
    as_alice: Client, assignment: Assignment
) -> None:
    """The raw body of the finding: the SQLite driver's OverflowError was a 500."""
    url = reverse("labeling:grades", args=[assignment.pk])
    response = as_alice.post(
        url, data='{"candidate": ' + HUGE + ', "grade": 1}', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "bad_request",
        "message": f"candidate must be the document's token from the grading page (text), got {HUGE}",
    }
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("name", ["grade", "time_spent_ms"])
def test_other_numbers_of_the_grade_body_past_any_column_are_worded(
    as_alice: Client, assignment: Assignment, name: str
) -> None:
    candidate = assignment.query.candidates.order_by("best_rank").first()
    assert candidate is not None
    body = {"candidate": factories.token(assignment, candidate), "grade": 1, name: 10**30}
    response = as_alice.post(
        reverse("labeling:grades", args=[assignment.pk]),
        data=json.dumps(body),
        content_type="application/json",
    )
    if name == "grade":
        assert response.status_code == 400
        assert response.json()["message"] == f"grade {10**30} is outside the scale 0..3"
        assert not Judgment.objects.exists()
    else:  # one save counts at most ten minutes, whatever it says
        assert response.status_code == 200
        assert Judgment.objects.get().time_spent_ms == 10 * 60 * 1000


def test_an_assignment_number_past_the_id_column_is_no_such_assignment(as_alice: Client) -> None:
    for path in (f"/assignments/{HUGE}/", f"/assignments/{HUGE}/grades/"):
        assert as_alice.get(path).status_code == 404, path
    for path in (f"/assignments/{HUGE}/grades/", f"/assignments/{HUGE}/done/"):
        response = as_alice.post(
            path, data='{"candidate": "0123456789abcdef", "grade": 1}', content_type="application/json"
        )
        assert response.status_code == 404, path
        assert response.json() == {"error": "not_found", "message": "no such assignment"}


@pytest.mark.parametrize("previous", BAD_IDS)
def test_a_new_judge_from_something_that_is_not_an_id_is_a_worded_400(
    client: Client,
    judge: Judge,
    rita: User,
    previous: str,
) -> None:
    client.force_login(rita)
    response = client.get(reverse("labeling:judge_new", args=[judge.golden_set.slug]), {"from": previous})
    assert response.status_code == 400
    assert "From must be a judge&#x27;s id (a whole number from 1 to" in response.content.decode()
    ok = client.get(reverse("labeling:judge_new", args=[judge.golden_set.slug]), {"from": str(judge.pk)})
    assert ok.status_code == 200


def test_a_judge_job_over_queries_that_are_not_ids_leaves_them_out(
    client: Client,
    judge: Judge,
    assignment: Assignment,
    rita: User,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client.force_login(rita)
    url = reverse("labeling:judge_job_start", args=[judge.golden_set.slug, judge.pk])
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(url, {"queries": [*BAD_IDS, str(assignment.query.pk)]})
    assert response.status_code == 303
    assert JudgeJob.objects.get().total == 5  # the one real query's pool


def test_the_save_service_takes_an_id_past_the_column_as_no_such_candidate(assignment: Assignment) -> None:
    """Its other callers pass ids from the database; a number past the column is still no 500."""
    with pytest.raises(services.NotFound, match="not part of this assignment"):
        services.judgment_submit(
            assignment_id=assignment.pk, rater=assignment.rater, candidate_id=int(HUGE), grade=1
        )
    with pytest.raises(services.NotFound, match="no such assignment"):
        services.judgment_submit(assignment_id=int(HUGE), rater=assignment.rater, candidate_id=1, grade=1)
    assert not Judgment.objects.exists()
