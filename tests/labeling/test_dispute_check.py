"""The dispute check in the app: it runs when both raters of a dual-labeled query have marked it done,
quarantines disputed core queries into shadow, sends disagreeing documents to a third rater who is
neither of the first two, and does nothing new when run again on the same grades."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User

from labeling import services
from labeling.models import Assignment, Candidate, DisputeCheck, GoldenSet, Query, TierMove
from labeling.selectors import Unresolved, labels_consolidated
from tests import factories

pytestmark = pytest.mark.django_db


@dataclass
class Scene:
    query: Query
    candidates: list[Candidate]  # by best rank
    first: Assignment
    second: Assignment


@pytest.fixture
def carol(golden_set: GoldenSet) -> User:
    user = factories.UserFactory.create(username="carol", groups=["raters"])
    golden_set.raters.add(user)
    return user


def _scene(golden_set: GoldenSet, alice: User, bob: User, n: int, **query_fields: object) -> Scene:
    query = factories.pooled_query(golden_set, n, external_id="q-1", **query_fields)
    return Scene(
        query,
        list(query.candidates.order_by("best_rank")),
        factories.AssignmentFactory.create(query=query, rater=alice, kind="primary"),
        factories.AssignmentFactory.create(query=query, rater=bob, kind="second"),
    )


def _grade_all(scene: Scene, rater: User, grades: Sequence[int]) -> None:
    assignment = scene.first if rater == scene.first.rater else scene.second
    for candidate, value in zip(scene.candidates, grades, strict=True):
        services.judgment_submit(
            assignment_id=assignment.pk, rater=rater, candidate_id=candidate.pk, grade=value
        )
    services.assignment_done(assignment_id=assignment.pk, rater=rater)


def _counts() -> tuple[int, int, int]:
    return DisputeCheck.objects.count(), TierMove.objects.count(), Assignment.objects.count()


def test_it_quarantines_a_hard_disagreement_when_the_dual_assignment_completes(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    scene = _scene(golden_set, alice, bob, 3)
    _grade_all(scene, alice, [1, 2, 0])
    assert not DisputeCheck.objects.exists()  # the second rater has not finished
    _grade_all(scene, bob, [3, 2, 0])

    check = DisputeCheck.objects.get()
    assert check.disputed
    assert check.reasons == [
        f"hard disagreement and relevance flip on {scene.candidates[0].document.doc_id}: 1 vs 3"
        " (relevant from grade 2)"
    ]
    query = Query.objects.get(pk=scene.query.pk)
    assert query.tier == "shadow" and query.quarantine_reason.startswith("disputed: hard disagreement")
    move = TierMove.objects.get()
    assert (move.by, move.from_tier, move.to_tier) == (None, "core", "shadow")
    third = Assignment.objects.get(kind="third")
    assert third.rater == carol and third.status == "open"
    assert list(third.scope.all()) == [scene.candidates[0]]
    assert check.actions == ["moved to shadow", "third rater carol: 1 document"]


def test_running_the_check_again_creates_nothing(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    scene = _scene(golden_set, alice, bob, 2)
    _grade_all(scene, alice, [0, 1])
    _grade_all(scene, bob, [2, 1])
    before = _counts()
    first = DisputeCheck.objects.get()

    assert services.query_dispute_check(query_id=scene.query.pk) == first
    assert services.disputes_check_all(golden_set=golden_set) == 0
    # A save that changes nothing about the grades (a note) finds the same decision too.
    services.judgment_submit(
        assignment_id=scene.second.pk, rater=bob, candidate_id=scene.candidates[1].pk, grade=1, note="sure"
    )
    assert _counts() == before


def test_the_third_rater_is_never_one_of_the_first_two_even_when_they_are_idle(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    dave = factories.UserFactory.create(username="dave", groups=["raters"])
    golden_set.raters.add(dave)
    # carol is busier than dave; alice and bob have nothing open at all once they finish.
    for _ in range(2):
        factories.AssignmentFactory.create(
            query=factories.QueryFactory.create(golden_set=golden_set), rater=carol
        )
    scene = _scene(golden_set, alice, bob, 1)
    _grade_all(scene, alice, [0])
    _grade_all(scene, bob, [1])
    third = Assignment.objects.get(kind="third")
    assert third.rater == dave


def test_with_nobody_left_the_disagreement_goes_to_the_reviewers(
    golden_set: GoldenSet, alice: User, bob: User
) -> None:
    scene = _scene(golden_set, alice, bob, 1)
    _grade_all(scene, alice, [0])
    _grade_all(scene, bob, [3])
    assert not Assignment.objects.filter(kind="third").exists()
    check = DisputeCheck.objects.get()
    assert check.actions[-1] == (
        "no third rater available (every rater of the set has held the query):"
        " 1 document goes to the reviewers"
    )
    [unresolved] = labels_consolidated(golden_set=golden_set).unresolved
    assert isinstance(unresolved, Unresolved) and unresolved.awaiting == "reviewer"


def test_a_quarrel_outside_the_top_k_goes_to_a_third_rater_without_disputing_the_query(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    golden_set.k = 2
    golden_set.save()
    scene = _scene(golden_set, alice, bob, 3)  # ranks 1, 2, 3: the third is outside the top 2
    _grade_all(scene, alice, [2, 2, 0])
    _grade_all(scene, bob, [2, 2, 3])
    check = DisputeCheck.objects.get()
    assert not check.disputed and Query.objects.get(pk=scene.query.pk).tier == "core"
    assert list(Assignment.objects.get(kind="third").scope.all()) == [scene.candidates[2]]


def test_an_unranked_candidate_counts_as_a_top_result(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    golden_set.k = 1
    golden_set.save()
    scene = _scene(golden_set, alice, bob, 2)
    Candidate.objects.filter(pk=scene.candidates[1].pk).update(best_rank=None)
    _grade_all(scene, alice, [2, 0])
    _grade_all(scene, bob, [2, 2])
    assert DisputeCheck.objects.get().disputed


def _one_apart(equal: int, differ: int) -> tuple[list[int], list[int]]:
    """Grades 0/1 only (never across the cutoff 2, never two apart): only the query-level rules can fire."""
    return [0] * (equal + differ), [0] * equal + [1] * differ


@pytest.mark.parametrize(
    ("equal", "differ", "disputed"),
    [
        (11, 9, False),  # exact 11/20 = 0.55 and MAD 9/20 = 0.45: at both thresholds, not disputed
        (10, 10, True),  # exact 0.5 < 0.55 and MAD 0.5 > 0.45
        (1, 3, False),  # exact 0.25, MAD 0.75, but only 4 dual-labeled documents: document rules only
        (2, 3, True),  # the same shape with 5 documents: the query rules apply
    ],
)
def test_it_applies_the_query_level_thresholds_at_and_around_them(
    golden_set: GoldenSet, alice: User, bob: User, carol: User, equal: int, differ: int, disputed: bool
) -> None:
    scene = _scene(golden_set, alice, bob, equal + differ)
    a, b = _one_apart(equal, differ)
    _grade_all(scene, alice, a)
    _grade_all(scene, bob, b)
    check = DisputeCheck.objects.get()
    assert check.disputed is disputed, check.reasons
    assert Query.objects.get(pk=scene.query.pk).tier == ("shadow" if disputed else "core")
    assert len(check.disagreeing) == differ  # each goes to the third rater either way
    assert Assignment.objects.get(kind="third").scope.count() == differ


def test_it_reads_the_golden_sets_own_thresholds(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    services.golden_set_thresholds_set(golden_set=golden_set, thresholds={"min_exact": 0.5, "max_mad": 0.5})
    scene = _scene(golden_set, alice, bob, 20)
    a, b = _one_apart(10, 10)
    _grade_all(scene, alice, a)
    _grade_all(scene, bob, b)
    assert not DisputeCheck.objects.get().disputed  # 0.5 is at both of this set's thresholds


def test_a_hard_threshold_of_three_lets_a_two_grade_gap_below_the_cutoff_pass(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    golden_set.relevant_min_grade = 3
    golden_set.hard_diff = 3
    golden_set.save()
    scene = _scene(golden_set, alice, bob, 1)
    _grade_all(scene, alice, [0])
    _grade_all(scene, bob, [2])
    assert not DisputeCheck.objects.get().disputed


def test_it_refuses_bad_thresholds_and_keeps_the_old_ones(golden_set: GoldenSet) -> None:
    with pytest.raises(services.ReviewError, match=r"min_exact: 1\.5 must be a number from 0 to 1"):
        services.golden_set_thresholds_set(golden_set=golden_set, thresholds={"min_exact": 1.5})
    with pytest.raises(services.ReviewError, match="unknown keys"):
        services.golden_set_thresholds_set(golden_set=golden_set, thresholds={"min_kappa": 0.4})
    golden_set.refresh_from_db()
    assert golden_set.min_exact == 0.55


def test_a_disputed_challenge_query_stays_in_its_tier(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    scene = _scene(golden_set, alice, bob, 1, tier="challenge")
    _grade_all(scene, alice, [0])
    _grade_all(scene, bob, [3])
    assert DisputeCheck.objects.get().disputed
    assert Query.objects.get(pk=scene.query.pk).tier == "challenge" and not TierMove.objects.exists()


def test_a_regrade_after_a_reopen_is_checked_again_when_marked_done_and_extends_the_third_assignment(
    golden_set: GoldenSet, alice: User, bob: User, carol: User, rita: User
) -> None:
    scene = _scene(golden_set, alice, bob, 2)
    _grade_all(scene, alice, [1, 1])
    _grade_all(scene, bob, [1, 2])
    third = Assignment.objects.get(kind="third")
    assert list(third.scope.all()) == [scene.candidates[1]]
    with pytest.raises(services.Locked):  # done: locked until a reviewer reopens it
        services.judgment_submit(
            assignment_id=scene.second.pk, rater=bob, candidate_id=scene.candidates[0].pk, grade=0
        )
    services.assignment_reopen(assignment=scene.second, by=rita)
    services.judgment_submit(
        assignment_id=scene.second.pk, rater=bob, candidate_id=scene.candidates[0].pk, grade=0
    )
    assert DisputeCheck.objects.count() == 1  # not done again yet: nothing checked
    services.assignment_done(assignment_id=scene.second.pk, rater=bob)
    assert DisputeCheck.objects.count() == 2
    assert set(third.scope.all()) == set(scene.candidates)
    assert Assignment.objects.filter(kind="third").count() == 1


def test_a_reassigned_dual_assignment_complete_on_arrival_is_checked_once_its_rater_marks_it_done(
    golden_set: GoldenSet, alice: User, bob: User, carol: User
) -> None:
    scene = _scene(golden_set, alice, bob, 1)
    _grade_all(scene, alice, [0])
    # carol graded this query before (an earlier second assignment, since reassigned to bob) ...
    earlier = factories.AssignmentFactory.create(
        query=scene.query, rater=carol, kind="second", status="reassigned"
    )
    factories.grade(earlier, scene.candidates[0].document, 3)
    # ... and gets it back: her work is complete at once, open until she says she is done.
    back = services.assignment_reassign(assignment=scene.second, rater=carol)
    assert back.status == "open" and not DisputeCheck.objects.exists()
    services.assignment_done(assignment_id=back.pk, rater=carol)
    assert DisputeCheck.objects.get().disputed
