"""Racing saves on the real database: threads hit judgment_submit at the same moment (each thread has its
own connection and transaction, as web workers do). No duplicate judgment, no lost history."""

from __future__ import annotations

import functools

import pytest
from django.contrib.auth.models import User

from labeling import services
from labeling.models import Assignment, Judgment
from tests import factories
from tests.support.threads import race

pytestmark = pytest.mark.django_db(transaction=True)


def test_simultaneous_saves_of_one_document_make_one_judgment_and_every_event(
    golden_set, alice: User
) -> None:
    query = factories.pooled_query(golden_set, 3)
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    grades = [0, 1, 2, 3, 0, 1, 2, 3]
    # Several rounds on several documents: a stale read shows up in some interleavings only.
    for candidate in query.candidates.all():
        for _ in range(2):
            save = [
                functools.partial(
                    services.judgment_submit,
                    assignment_id=assignment.pk,
                    rater=alice,
                    candidate_id=candidate.pk,
                    grade=g,
                    time_spent_ms=10,
                )
                for g in grades
            ]
            results = race(save)
            assert all(isinstance(r, services.SubmitResult) for r in results), results
        judgment = Judgment.objects.get(assignment=assignment, document=candidate.document)
        events = list(judgment.events.order_by("id").values_list("old_grade", "new_grade"))
        # The saves took turns: each event starts from the grade the previous one left...
        assert events[0][0] is None
        assert all(events[i][0] == events[i - 1][1] for i in range(1, len(events)))
        # ...the judgment holds the last one, and no save's time was lost.
        assert judgment.grade == events[-1][1]
        assert judgment.time_spent_ms == 10 * 2 * len(grades)
    assert Judgment.objects.count() == 3
    assignment.refresh_from_db()
    assert assignment.status == "open"  # every candidate graded; done only when the rater says so


def test_a_save_racing_a_reassignment_never_lands_after_it(golden_set, alice: User, bob: User) -> None:
    for _ in range(5):
        query = factories.pooled_query(golden_set, 2)
        assignment = factories.AssignmentFactory.create(query=query, rater=alice)
        candidate = query.candidates.first()
        assert candidate is not None
        save = functools.partial(
            services.judgment_submit,
            assignment_id=assignment.pk,
            rater=alice,
            candidate_id=candidate.pk,
            grade=2,
        )
        move = functools.partial(services.assignment_reassign, assignment=assignment, rater=bob)
        results = race([save, move])
        saved, moved = results
        assert isinstance(moved, Assignment), moved
        assignment.refresh_from_db()
        assert assignment.status == "reassigned"
        if isinstance(saved, services.SubmitResult):
            # The save won the lock: it happened before the reassignment, on alice's open assignment.
            assert saved.judgment_id is not None
            assert Judgment.objects.get(pk=saved.judgment_id).assignment_id == assignment.pk
        else:
            assert isinstance(saved, services.Reassigned)
            assert not Judgment.objects.filter(assignment=assignment).exists()
