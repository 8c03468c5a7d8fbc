"""My queue (search, filters by set and state, sorts, pages, all in the URL) and what a rater reaches: only
their own assignments; anyone else's answers exactly as one that does not exist."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, GoldenSet
from tests import factories

pytestmark = pytest.mark.django_db


ROW = re.compile(r'data-state="(\w+)">\s*<td><a href="[^"]+">([^<]+)</a>')


def _rows(client: Client, **params: str) -> list[tuple[str, str]]:
    """(query text, state) of each row the queue shows for these parameters."""
    body = client.get(reverse("labeling:queue"), params).content.decode()
    return [(text, state) for state, text in ROW.findall(body)]


@pytest.fixture
def world(golden_set: GoldenSet, alice: User, bob: User, rita: User) -> dict[str, Any]:
    """alice: four assignments in help-center (new, started, done, reopened) and one in a second set;
    bob: one of his own, in a third set alice never sees."""
    other = factories.GoldenSetFactory.create(slug="docs-site", name="Docs site", raters=[alice])
    hidden = factories.GoldenSetFactory.create(slug="secret-set", name="Secret set", raters=[bob])

    def held(gs: GoldenSet, text: str, rater: User, n: int = 2) -> Assignment:
        return factories.AssignmentFactory.create(query=factories.pooled_query(gs, n, text=text), rater=rater)

    new = held(golden_set, "refund policy", alice)
    started = held(golden_set, "cancel plan", alice)
    done = held(golden_set, "refund window", alice)
    reopened = held(golden_set, "invoice copy", alice)
    elsewhere = held(other, "api refund endpoint", alice)
    bobs = held(hidden, "refund secret", bob)
    first = started.query.candidates.first()
    assert first is not None
    services.judgment_submit(assignment_id=started.pk, rater=alice, candidate_id=first.pk, grade=1)
    for a in (done, reopened):
        for c in a.query.candidates.all():
            services.judgment_submit(assignment_id=a.pk, rater=alice, candidate_id=c.pk, grade=2)
        services.assignment_done(assignment_id=a.pk, rater=alice)
    services.assignment_reopen(assignment=reopened, by=rita)
    return {
        "new": new,
        "started": started,
        "done": done,
        "reopened": reopened,
        "elsewhere": elsewhere,
        "bobs": bobs,
    }


@pytest.fixture
def as_alice(client: Client, world: dict[str, Any], alice: User) -> Client:
    client.force_login(alice)
    return client


def test_the_queue_lists_the_raters_own_work_with_its_state(as_alice: Client) -> None:
    assert _rows(as_alice) == [
        ("refund policy", "new"),
        ("cancel plan", "started"),
        ("invoice copy", "reopened"),
        ("api refund endpoint", "new"),
        ("refund window", "done"),
    ]
    body = as_alice.get(reverse("labeling:queue")).content.decode()
    assert "refund secret" not in body and "Secret set" not in body  # bob's, in a set alice does not rate
    assert '<option value="docs-site">Docs site</option>' in body


@pytest.mark.parametrize(
    ("params", "texts"),
    [
        ({"q": "refund"}, ["refund policy", "api refund endpoint", "refund window"]),
        ({"q": "REFUND window"}, ["refund window"]),
        ({"set": "docs-site"}, ["api refund endpoint"]),
        (
            {"set": "secret-set"},
            ["refund policy", "cancel plan", "invoice copy", "api refund endpoint", "refund window"],
        ),
        ({"state": "new"}, ["refund policy", "api refund endpoint"]),
        ({"state": "started"}, ["cancel plan"]),
        ({"state": "reopened"}, ["invoice copy"]),
        ({"state": "done"}, ["refund window"]),
        ({"q": "refund", "set": "help-center", "state": "new"}, ["refund policy"]),
        (
            {"sort": "query"},
            ["api refund endpoint", "cancel plan", "invoice copy", "refund policy", "refund window"],
        ),
        (
            {"sort": "newest"},
            ["api refund endpoint", "invoice copy", "refund window", "cancel plan", "refund policy"],
        ),
    ],
)
def test_search_filters_and_sorts_come_from_the_url(
    as_alice: Client, params: dict[str, str], texts: list[str]
) -> None:
    # A set the rater does not rate is no choice: ignored, as an unknown one is.
    assert [text for text, _ in _rows(as_alice, **params)] == texts


def test_pages_keep_the_search_and_filters(as_alice: Client, golden_set: GoldenSet, alice: User) -> None:
    for i in range(105):
        factories.AssignmentFactory.create(
            query=factories.pooled_query(golden_set, 1, text=f"bulk refund {i:03}"), rater=alice
        )
    first = as_alice.get(reverse("labeling:queue"), {"q": "bulk", "set": "help-center"}).content.decode()
    assert "1–100 of 105 assignments (of 110)" in first
    assert 'href="?q=bulk&amp;set=help-center&amp;page=2#queue-list" rel="next"' in first
    second = as_alice.get(reverse("labeling:queue"), {"q": "bulk", "set": "help-center", "page": "2"})
    assert [t for t, _ in _rows(as_alice, q="bulk", set="help-center", page="2")] == [
        f"bulk refund {i:03}" for i in range(100, 105)
    ]
    assert 'value="bulk"' in second.content.decode()
    assert '<option value="help-center" selected>' in second.content.decode()


def _same_answer(response: Any, ghost: Any, pk: int, missing: int) -> int:
    """The two answers are the same, but for the id asked about and the CSRF token (masked afresh on
    every response). The ids are masked where they stand as numbers of their own, in both answers alike:
    whatever ids the run's earlier tests left (a small one is also a digit of "16x16" and may be a
    number on the page)."""
    ids = re.compile(rf"(?<![0-9])(?:{pk}|{missing})(?![0-9])")

    def text(r: Any) -> str:
        return ids.sub("<id>", re.sub(r"[A-Za-z0-9]{64}", "<token>", r.content.decode()))

    assert (response.status_code, text(response)) == (ghost.status_code, text(ghost))
    return int(response.status_code)


def test_another_raters_assignment_answers_as_one_that_does_not_exist(
    as_alice: Client, world: dict[str, Any]
) -> None:
    bobs: Assignment = world["bobs"]
    missing = (Assignment.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000
    candidate = bobs.query.candidates.first()
    assert candidate is not None
    body = json.dumps({"candidate": factories.token(bobs, candidate), "grade": 2})
    mark = json.dumps({"candidate": factories.token(bobs, candidate), "grade": None, "cant_judge": "broken"})
    for pk in (bobs.pk, missing):
        assert as_alice.get(reverse("labeling:grade", args=[pk])).status_code == 404
    checks = [
        lambda pk: as_alice.get(reverse("labeling:grade", args=[pk])),
        lambda pk: as_alice.get(reverse("labeling:grades", args=[pk])),
        lambda pk: as_alice.post(
            reverse("labeling:grades", args=[pk]), data=body, content_type="application/json"
        ),
        lambda pk: as_alice.post(
            reverse("labeling:grades", args=[pk]), data=mark, content_type="application/json"
        ),
        lambda pk: as_alice.post(reverse("labeling:done", args=[pk])),
    ]
    for check in checks:
        assert _same_answer(check(bobs.pk), check(missing), bobs.pk, missing) == 404
    # `n` and `p` from someone else's assignment go where they go from nowhere.
    assert (
        as_alice.get(reverse("labeling:queue_next"), {"after": bobs.pk})["Location"]
        == as_alice.get(reverse("labeling:queue_next"), {"after": missing})["Location"]
    )
    bobs.refresh_from_db()
    assert not bobs.judgments.exists() and not bobs.cant_judge_marks.exists() and bobs.status == "open"
