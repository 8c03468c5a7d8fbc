"""The grading service: upsert, history, voluntary notes, refusals, progress."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from labeling import services
from labeling.models import Assignment, Candidate, Judgment, JudgmentEvent
from tests import factories


def _candidates(assignment: Assignment) -> list[Candidate]:
    return list(assignment.query.candidates.order_by("best_rank"))


def _submit(
    assignment: Assignment, rater: User, candidate: Candidate, grade: int, **kw
) -> services.SubmitResult:
    return services.judgment_submit(
        assignment_id=assignment.pk, rater=rater, candidate_id=candidate.pk, grade=grade, **kw
    )


def test_it_saves_a_grade_once_and_records_the_history(assignment: Assignment, alice: User) -> None:
    c = _candidates(assignment)[1]  # no frozen label
    first = _submit(assignment, alice, c, 1, time_spent_ms=1200)
    again = _submit(assignment, alice, c, 1, time_spent_ms=300)
    changed = _submit(assignment, alice, c, 2, time_spent_ms=500)
    judgment = Judgment.objects.get()
    assert (first.created, again.created, changed.created) == (True, False, False)
    assert (first.changed, again.changed, changed.changed) == (True, False, True)
    assert judgment.grade == 2
    assert judgment.time_spent_ms == 2000
    events = list(
        JudgmentEvent.objects.values_list("rater__username", "old_grade", "new_grade", "time_spent_ms")
    )
    assert events == [("alice", None, 1, 1200), ("alice", 1, 2, 500)]


def test_every_grade_on_the_scale_saves_whatever_the_frozen_label_says(
    assignment: Assignment, alice: User
) -> None:
    labeled = _candidates(assignment)[0]  # frozen grade 3
    answers = [_submit(assignment, alice, labeled, g) for g in (0, 1, 2, 3, 0)]
    assert [a.grade for a in answers] == [0, 1, 2, 3, 0]
    assert all(a.changed for a in answers)
    assert Judgment.objects.get().grade == 0
    saved = _submit(assignment, alice, labeled, 1, note="outdated: the policy changed in May")
    assert saved.note == "outdated: the policy changed in May"  # a voluntary note, kept with its grade
    assert JudgmentEvent.objects.filter(note__startswith="outdated").count() == 1


def test_it_clears_the_note_when_the_grade_returns_to_the_label(assignment: Assignment, alice: User) -> None:
    labeled = _candidates(assignment)[0]
    _submit(assignment, alice, labeled, 0, note="wrong product")
    back = _submit(assignment, alice, labeled, 3)
    assert back.note == ""
    assert list(JudgmentEvent.objects.values_list("note", flat=True)) == ["wrong product", ""]


def test_it_refuses_a_grade_off_the_scale(assignment: Assignment, alice: User) -> None:
    with pytest.raises(services.OffScale, match=r"grade 4 is outside the scale 0\.\.3"):
        _submit(assignment, alice, _candidates(assignment)[1], 4)
    with pytest.raises(services.OffScale):
        _submit(assignment, alice, _candidates(assignment)[1], -1)
    assert not Judgment.objects.exists()


def test_it_refuses_a_candidate_of_another_query(assignment: Assignment, alice: User, golden_set) -> None:
    other = factories.pooled_query(golden_set, 1)
    with pytest.raises(services.NotFound, match="not part of this assignment"):
        _submit(assignment, alice, other.candidates.get(), 2)
    assert not Judgment.objects.exists()


def test_it_refuses_another_raters_assignment(assignment: Assignment, bob: User) -> None:
    with pytest.raises(services.NotFound):
        _submit(assignment, bob, _candidates(assignment)[1], 2)
    assert not Judgment.objects.exists()


def test_it_refuses_a_stale_assignment_after_reassignment(
    assignment: Assignment, alice: User, bob: User
) -> None:
    new = services.assignment_reassign(assignment=assignment, rater=bob)
    with pytest.raises(services.Reassigned, match="reassigned to another rater; your grade was not saved"):
        _submit(assignment, alice, _candidates(assignment)[1], 2)
    saved = _submit(new, bob, _candidates(assignment)[1], 2)
    assert saved.judgment_id is not None
    assert Judgment.objects.get(pk=saved.judgment_id).assignment == new
    assert Judgment.objects.count() == 1


def test_grading_every_candidate_leaves_the_query_open_until_the_rater_marks_it_done(
    assignment: Assignment, alice: User
) -> None:
    candidates = _candidates(assignment)
    results = [_submit(assignment, alice, c, 3) for c in candidates]
    assert [r.graded for r in results] == [1, 2, 3, 4, 5]
    assert {r.status for r in results} == {"open"}
    done = services.assignment_done(assignment_id=assignment.pk, rater=alice)
    assert done.status == "done" and not done.already
    assignment.refresh_from_db()
    assert assignment.status == "done" and assignment.completed is not None


def test_it_caps_the_time_counted_for_one_save(assignment: Assignment, alice: User) -> None:
    result = _submit(assignment, alice, _candidates(assignment)[1], 2, time_spent_ms=8 * 3600 * 1000)
    assert result.time_spent_ms == services.MAX_TIME_PER_SAVE_MS


def test_a_third_rater_grades_only_the_scoped_candidates(assignment: Assignment, bob: User) -> None:
    candidates = _candidates(assignment)
    third = factories.AssignmentFactory.create(query=assignment.query, rater=bob, kind="third")
    third.scope.set(candidates[:2])
    done = [_submit(third, bob, c, 3) for c in candidates[:2]]
    assert (done[-1].graded, done[-1].total, done[-1].status) == (2, 2, "open")
    assert services.assignment_done(assignment_id=third.pk, rater=bob).status == "done"
    with pytest.raises(services.NotFound):
        _submit(third, bob, candidates[3], 1)
