"""Every labeling view and endpoint against the rater (alice), the second rater (bob), the reviewer of
the set (rita), an outsider (charlie), a reviewer of another set, and anonymous visitors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from labeling.models import Adjudication, Assignment, DisputeCheck, GoldenSet, GoldItem, TierMove
from tests import factories

OK, REDIRECT, SEE_OTHER, FORBIDDEN, NOT_FOUND = 200, 302, 303, 403, 404
WRITES = (Adjudication, TierMove, GoldItem, DisputeCheck)


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    url: Callable[[Assignment], str]
    expected: dict[str, int]  # user -> status
    data: Callable[[Assignment], dict] | None = None
    json_body: Callable[[Assignment], dict] | None = None


def _doc_upload(_: Assignment) -> dict:
    line = json.dumps({"id": "new-doc", "title": "A new article"}).encode()
    return {"file": SimpleUploadedFile("docs.jsonl", line)}


def _slug(a: Assignment) -> str:
    return a.query.golden_set.slug


def _first_doc(a: Assignment) -> int:
    candidate = a.query.candidates.order_by("best_rank").first()
    assert candidate is not None
    return candidate.document_id


# Reviewer pages answer 404 to raters and outsiders (nothing about a set is confirmed to them).
REVIEWER_ONLY = {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": OK, "charlie": NOT_FOUND}
REVIEWER_ONLY_POST = {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": SEE_OTHER, "charlie": NOT_FOUND}


CASES = [
    Case(
        "queue",
        "get",
        lambda a: reverse("labeling:queue"),
        {"alice": OK, "bob": OK, "rita": FORBIDDEN, "charlie": FORBIDDEN},
    ),
    Case(
        "queue_next",
        "get",
        lambda a: reverse("labeling:queue_next"),
        {"alice": REDIRECT, "bob": REDIRECT, "rita": FORBIDDEN, "charlie": FORBIDDEN},
    ),
    Case(
        "grade page",
        "get",
        lambda a: reverse("labeling:grade", args=[a.pk]),
        {"alice": OK, "bob": NOT_FOUND, "rita": NOT_FOUND, "charlie": NOT_FOUND},
    ),
    Case(
        "grades get",
        "get",
        lambda a: reverse("labeling:grades", args=[a.pk]),
        {"alice": OK, "bob": NOT_FOUND, "rita": NOT_FOUND, "charlie": NOT_FOUND},
    ),
    Case(
        "grades post",
        "post",
        lambda a: reverse("labeling:grades", args=[a.pk]),
        {"alice": OK, "bob": NOT_FOUND, "rita": NOT_FOUND, "charlie": NOT_FOUND},
        json_body=lambda a: {
            "candidate": factories.token(a, a.query.candidates.order_by("best_rank")[1]),
            "grade": 2,
        },
    ),
    Case(
        "reassign",
        "post",
        lambda a: reverse("labeling:reassign", args=[a.pk]),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": SEE_OTHER, "charlie": NOT_FOUND},
        data=lambda a: {"rater": User.objects.get(username="bob").pk},
    ),
    Case(
        "set list",
        "get",
        lambda a: reverse("labeling:set_list"),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": OK, "charlie": NOT_FOUND},
    ),
    Case(
        "set detail",
        "get",
        lambda a: reverse("labeling:set_detail", args=[_slug(a)]),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": OK, "charlie": NOT_FOUND},
    ),
    Case(
        "query review",
        "get",
        lambda a: reverse("labeling:query_review", args=[_slug(a), a.query.pk]),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": OK, "charlie": NOT_FOUND},
    ),
    Case(
        "import page",
        "get",
        lambda a: reverse("labeling:import", args=[_slug(a)]),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": OK, "charlie": NOT_FOUND},
    ),
    Case(
        "import upload",
        "post",
        lambda a: reverse("labeling:import_upload", args=[_slug(a), "documents"]),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": OK, "charlie": NOT_FOUND},
        data=_doc_upload,
    ),
    Case(
        "assign",
        "post",
        lambda a: reverse("labeling:assign", args=[_slug(a)]),
        {"alice": NOT_FOUND, "bob": NOT_FOUND, "rita": REDIRECT, "charlie": NOT_FOUND},
    ),
    Case(
        "agreement dashboard",
        "get",
        lambda a: reverse("labeling:agreement", args=[_slug(a)]),
        REVIEWER_ONLY,
    ),
    Case(
        "thresholds",
        "post",
        lambda a: reverse("labeling:thresholds", args=[_slug(a)]),
        REVIEWER_ONLY_POST,
        data=lambda a: {
            "hard_diff": 2,
            "min_dual_docs": 5,
            "min_exact": 0.6,
            "max_mad": 0.45,
            "reliable_min": 0.8,
            "tentative_min": 0.667,
            "min_pairable_units": 10,
        },
    ),
    Case(
        "review queue",
        "get",
        lambda a: reverse("labeling:disputes", args=[_slug(a)]),
        REVIEWER_ONLY,
    ),
    Case(
        "check disputes",
        "post",
        lambda a: reverse("labeling:disputes_check", args=[_slug(a)]),
        REVIEWER_ONLY_POST,
    ),
    Case(
        "adjudication page",
        "get",
        lambda a: reverse("labeling:adjudicate", args=[_slug(a), a.query.pk]),
        REVIEWER_ONLY,
    ),
    Case(
        "adjudicate",
        "post",
        lambda a: reverse("labeling:adjudication_add", args=[_slug(a), a.query.pk]),
        REVIEWER_ONLY_POST,
        data=lambda a: {"document": _first_doc(a), "grade": 2, "rationale": "fits grade 2"},
    ),
    Case(
        "move tier",
        "post",
        lambda a: reverse("labeling:tier_move", args=[_slug(a), a.query.pk]),
        REVIEWER_ONLY_POST,
        data=lambda a: {"tier": "shadow", "reason": "ambiguous"},
    ),
    Case(
        "retire",
        "post",
        lambda a: reverse("labeling:retire", args=[_slug(a), a.query.pk]),
        REVIEWER_ONLY_POST,
        data=lambda a: {"reason": "duplicate"},
    ),
    Case(
        "gold",
        "post",
        lambda a: reverse("labeling:gold", args=[_slug(a), a.query.pk]),
        REVIEWER_ONLY_POST,
        data=lambda a: {"document": _first_doc(a), "grade": 3},
    ),
]


def _request(client: Client, case: Case, assignment: Assignment):
    url = case.url(assignment)
    if case.method == "get":
        return client.get(url)
    if case.json_body is not None:
        return client.post(url, data=json.dumps(case.json_body(assignment)), content_type="application/json")
    return client.post(url, data=case.data(assignment) if case.data else {})


@pytest.mark.parametrize("user", ["alice", "bob", "rita", "charlie"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_view_answers_each_role_as_designed(
    case: Case, user: str, assignment: Assignment, charlie: User, client: Client
) -> None:
    client.force_login(User.objects.get(username=user))
    response = _request(client, case, assignment)
    assert response.status_code == case.expected[user], response.content[:300]


POSTS = [c for c in CASES if c.method == "post" and c.expected["rita"] == SEE_OTHER]


@pytest.mark.parametrize("user", ["alice", "bob", "charlie"])
@pytest.mark.parametrize("case", POSTS, ids=[c.name for c in POSTS])
def test_a_refused_reviewer_action_writes_nothing(
    case: Case, user: str, assignment: Assignment, charlie: User, client: Client
) -> None:
    query = assignment.query
    client.force_login(User.objects.get(username=user))
    assert _request(client, case, assignment).status_code == NOT_FOUND
    assert [m.objects.count() for m in WRITES] == [0] * len(WRITES)
    query.refresh_from_db()
    assert (query.tier, query.status) == ("core", "active")
    assert not Assignment.objects.exclude(pk=assignment.pk).exists()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_anonymous_visitors_are_sent_to_the_login_page(
    case: Case, assignment: Assignment, client: Client
) -> None:
    response = _request(client, case, assignment)
    assert response.status_code == REDIRECT
    assert response["Location"].startswith(reverse("login"))


REVIEWER_CASES = [
    c for c in CASES if c.expected["rita"] in (OK, REDIRECT, SEE_OTHER) and c.name != "set list"
]


@pytest.mark.parametrize("case", REVIEWER_CASES, ids=[c.name for c in REVIEWER_CASES])
def test_a_reviewer_of_another_set_gets_404(case: Case, assignment: Assignment, client: Client) -> None:
    other = factories.UserFactory.create(username="rex", groups=["reviewers"])
    factories.GoldenSetFactory.create(slug="other", reviewers=[other])
    client.force_login(other)
    assert _request(client, case, assignment).status_code == NOT_FOUND


@pytest.mark.parametrize("case", REVIEWER_CASES, ids=[c.name for c in REVIEWER_CASES])
def test_an_admin_reaches_every_set(case: Case, assignment: Assignment, client: Client) -> None:
    admin = factories.UserFactory.create(username="ada", groups=["admins"])
    client.force_login(admin)
    assert _request(client, case, assignment).status_code == case.expected["rita"]


def test_the_set_list_shows_a_reviewer_only_their_sets(
    golden_set: GoldenSet, rita: User, client: Client
) -> None:
    factories.GoldenSetFactory.create(slug="not-ritas", name="Not Ritas")
    client.force_login(rita)
    body = client.get(reverse("labeling:set_list")).content.decode()
    assert golden_set.name in body and "Not Ritas" not in body


def test_nav_and_home_follow_the_role(
    assignment: Assignment, rita: User, charlie: User, client: Client
) -> None:
    alice = assignment.rater
    client.force_login(alice)
    home = client.get("/").content.decode()
    assert "My queue" in home and "Golden sets" not in home
    assert reverse("labeling:grade", args=[assignment.pk]) in home  # "Start grading"
    client.force_login(rita)
    home = client.get("/").content.decode()
    assert "Golden sets" in home and "My queue" not in home and assignment.query.golden_set.name in home
    client.force_login(charlie)
    home = client.get("/").content.decode()
    assert "no role yet" in home and "My queue" not in home and "Golden sets" not in home


def test_health_needs_no_login(client: Client, db: None) -> None:
    assert client.get("/health/").status_code == OK


def test_the_second_rater_on_the_same_query_reaches_only_their_own_assignment(
    assignment: Assignment, bob: User, client: Client
) -> None:
    """bob holds the second assignment on alice's query: the same pool, yet her assignment, its grades and
    its judgments stay a 404 to him, and his own page and endpoint show none of her grades or notes."""
    alice = assignment.rater
    bobs = factories.AssignmentFactory.create(query=assignment.query, rater=bob, kind="second")
    candidate = assignment.query.candidates.order_by("best_rank")[1]
    client.force_login(alice)
    grades_url = reverse("labeling:grades", args=[assignment.pk])
    body = json.dumps(
        {"candidate": factories.token(assignment, candidate), "grade": 2, "note": "alice-only note"}
    )
    assert client.post(grades_url, data=body, content_type="application/json").status_code == OK

    client.force_login(bob)
    assert client.get(reverse("labeling:grade", args=[assignment.pk])).status_code == NOT_FOUND
    assert client.get(grades_url).status_code == NOT_FOUND
    refused = client.post(
        grades_url,
        data=json.dumps({"candidate": factories.token(assignment, candidate), "grade": 0}),
        content_type="application/json",
    )
    assert (refused.status_code, refused.json()) == (
        NOT_FOUND,
        {"error": "not_found", "message": "no such assignment"},
    )
    assert list(assignment.judgments.values_list("grade", "note")) == [(2, "alice-only note")]
    page = client.get(reverse("labeling:grade", args=[bobs.pk])).content.decode()
    assert "alice" not in page and "0 of 5 graded" in page
    assert set(re.findall(r'data-grade="(\d*)" data-note', page)) == {""}  # nothing pre-graded
    assert client.get(reverse("labeling:grades", args=[bobs.pk])).json() == {"status": "open", "grades": {}}
