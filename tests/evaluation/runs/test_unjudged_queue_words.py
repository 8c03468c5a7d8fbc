""" "Queue them for rating" says what it did, including nothing (docs/runs.md, "Unjudged documents"): new
documents and reopened assignments counted; for a document already in its pool, what it waits for (a
reviewer's decision, a second or third rater's grade, an open assignment, a rater who finished without
grading it, nobody assigned, a label made since the version was frozen), with nothing changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from evaluation.runs.selectors import Waiting
from evaluation.runs.services import unjudged_queue
from labeling.models import Adjudication, Assignment, Candidate, Document, GoldenSet, Judgment, Query
from tests import factories
from tests.support.evaluation import (
    Scene,
    logged_in,
    messages_text,
)

pytestmark = pytest.mark.django_db

# The scene's current run has two unjudged documents in its top k, both of q-1: d3 (rank 1) and d9 (2).
DOCS = ("d3", "d9")


def _labeling(golden_set: GoldenSet, *, pooled: bool = True) -> tuple[Query, list[Document]]:
    query = factories.QueryFactory.create(golden_set=golden_set, external_id="q-1", text="query 1")
    docs = [factories.DocumentFactory.create(golden_set=golden_set, doc_id=d) for d in DOCS]
    if pooled:
        for doc in docs:
            factories.CandidateFactory.create(query=query, document=doc)
    return query, docs


def _assign(
    query: Query, rater: User, kind: str = "primary", *, done: bool = False, **fields: Any
) -> Assignment:
    status = Assignment.Status.DONE if done else Assignment.Status.OPEN
    return factories.AssignmentFactory.create(
        query=query,
        rater=rater,
        kind=kind,
        status=status,
        completed=timezone.now() if done else None,
        **fields,
    )


def _snapshot() -> tuple[Any, ...]:
    """Everything queueing could change that a document already in its pool must not: the pools'
    documents, the assignments (status, completion, reopen stamp), the grades and the decisions."""
    return (
        sorted(Candidate.objects.values_list("query_id", "document_id")),
        sorted(Assignment.objects.values_list("pk", "status", "completed", "reopened")),
        sorted(
            json.dumps([pk, grade, str(updated)])
            for pk, grade, updated in Judgment.objects.values_list("pk", "grade", "updated")
        ),
        Adjudication.objects.count(),
    )


def _queue(scene: Scene, rita: User) -> str:
    """The messages the reviewer reads after pressing the button, one a line."""
    response = logged_in(rita).post(f"/runs/{scene.current.pk}/unjudged/", follow=True)
    assert response.status_code == 200
    return "\n".join(messages_text(response))


NOTHING = (
    "Nothing was queued: the 2 unjudged documents the labeling set knows are all already in their pools, "
    "and no assignment was reopened."
)


def _disputed(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    """Dual work done, the two grades far apart, no third rater: a reviewer decides."""
    first, second = _assign(query, alice, done=True), _assign(query, bob, "second", done=True)
    for doc in docs:
        factories.grade(first, doc, 0)
        factories.grade(second, doc, 3)


def _second_pending(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    first = _assign(query, alice, done=True)
    _assign(query, bob, "second")
    for doc in docs:
        factories.grade(first, doc, 2)


def _third_pending(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    _disputed(query, docs, alice, bob)
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    third = _assign(query, carol, "third")
    third.scope.set(Candidate.objects.filter(query=query))


def _open(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    _assign(query, alice)


def _finished_without_grades(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    _assign(query, alice, done=True)


def _nobody(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    pass


def _labeled(query: Query, docs: list[Document], alice: User, bob: User) -> None:
    first = _assign(query, alice, done=True)
    for doc in docs:
        factories.grade(first, doc, 2)


Setup = Callable[[Query, list[Document], User, User], None]
CASES: list[tuple[Setup, Waiting, str]] = [
    (
        _disputed,
        Waiting.REVIEWER,
        "2 documents already in their pools wait for a reviewer's decision: "
        "decide them on the query page of q-1.",
    ),
    (
        _second_pending,
        Waiting.SECOND_RATER,
        "2 documents already in their pools wait for the second rater's grade, on q-1.",
    ),
    (
        _third_pending,
        Waiting.THIRD_RATER,
        "2 documents already in their pools have disagreeing grades and wait for a third rater's, on q-1.",
    ),
    (
        _open,
        Waiting.GRADING,
        "2 documents already in their pools are being graded on open assignments: q-1 by alice.",
    ),
    (
        _finished_without_grades,
        Waiting.SKIPPED,
        "2 documents already in their pools have no grade although every assignment covering them is done: "
        "reopen one on the set page (q-1).",
    ),
    (
        _nobody,
        Waiting.UNASSIGNED,
        "2 documents already in their pools have no rater: nobody is assigned q-1; "
        "assign raters on the set page.",
    ),
    (
        _labeled,
        Waiting.LABELED,
        "2 documents already in their pools are labeled since version {version} was frozen: "
        "freeze a new golden version to score them (q-1).",
    ),
]


@pytest.mark.parametrize(("setup", "state", "words"), CASES, ids=[c[1].value for c in CASES])
def test_documents_already_pooled_say_what_they_wait_for_and_nothing_changes(
    setup: Setup, state: Waiting, words: str, scene: Scene, rita: User, alice: User, bob: User
) -> None:
    query, docs = _labeling(scene.golden_set)
    setup(query, docs, alice, bob)
    before = _snapshot()

    text = _queue(scene, rita)

    assert NOTHING in text
    assert words.format(version=scene.version.name) in text
    assert "Queued" not in text
    assert _snapshot() == before


def test_the_outcome_classifies_each_document_for_other_clients(scene: Scene, alice: User, bob: User) -> None:
    query, docs = _labeling(scene.golden_set)
    _disputed(query, docs, alice, bob)

    outcome = unjudged_queue(run=scene.current)

    assert outcome.added == 0 and outcome.reopened == 0 and not outcome.new
    assert outcome.states == {("q-1", "d3"): Waiting.REVIEWER, ("q-1", "d9"): Waiting.REVIEWER}
    assert outcome.waiting(Waiting.REVIEWER) == {"q-1": ["d3", "d9"]}


def test_the_query_names_link_to_the_query_page(scene: Scene, rita: User, alice: User, bob: User) -> None:
    query, docs = _labeling(scene.golden_set)
    _disputed(query, docs, alice, bob)
    response = logged_in(rita).post(f"/runs/{scene.current.pk}/unjudged/", follow=True)
    assert f'<a href="/sets/help-center/queries/{query.pk}/">q-1</a>' in response.content.decode()


def test_new_documents_are_counted_with_the_assignments_they_reopened(
    scene: Scene, rita: User, alice: User
) -> None:
    query, _ = _labeling(scene.golden_set, pooled=False)
    finished = _assign(query, alice, done=True)

    text = _queue(scene, rita)

    assert (
        "Queued 2 documents for rating, new to the pools of q-1; "
        "reopened 1 finished assignment for their raters." in text
    )
    assert "2 documents added now are being graded on open assignments: q-1 by alice." in text
    finished.refresh_from_db()
    assert finished.status == Assignment.Status.OPEN and finished.reopened is not None
    assert Candidate.objects.filter(query=query).count() == 2


def test_a_second_press_says_it_did_nothing(scene: Scene, rita: User, alice: User) -> None:
    query, _ = _labeling(scene.golden_set, pooled=False)
    _assign(query, alice)
    assert "Queued 2 documents" in _queue(scene, rita)
    before = _snapshot()

    text = _queue(scene, rita)

    assert NOTHING in text and "are being graded on open assignments: q-1 by alice." in text
    assert _snapshot() == before


def test_with_no_known_document_it_says_nothing_was_queued(scene: Scene, rita: User) -> None:
    text = _queue(scene, rita)

    assert (
        "Nothing was queued: none of the run's unjudged documents is a document of a query of "
        "the labeling set." in text
    )
    assert "Not queries of the labeling set: q-1" in text
    assert not Candidate.objects.exists()
