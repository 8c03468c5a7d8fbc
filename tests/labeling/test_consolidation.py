"""`labels_consolidated`: per judged (query, document) the final grade and how it was reached, or why not.

Judgments are written with factories here (no service runs, so no completion or dispute check interferes);
the dispute check's own effects are tested in test_dispute_check.py.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from labeling.models import Assignment, Document, GoldenSet, Judgment, Query
from labeling.selectors import FinalLabel, NotDone, Unresolved, labels_consolidated
from tests import factories

pytestmark = pytest.mark.django_db


@dataclass
class Dual:
    query: Query
    docs: list[Document]
    first: Assignment
    second: Assignment


@pytest.fixture
def carol(db: None) -> User:
    return factories.UserFactory.create(username="carol", groups=["raters"])


@pytest.fixture
def dual(golden_set: GoldenSet, alice: User, bob: User) -> Dual:
    query = factories.pooled_query(golden_set, 4, external_id="q-1")
    docs = [c.document for c in query.candidates.order_by("best_rank")]
    first = factories.AssignmentFactory.create(query=query, rater=alice, kind="primary")
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    return Dual(query, docs, first, second)


def _by_pair(golden_set: GoldenSet) -> dict[tuple[int, int], FinalLabel | Unresolved]:
    result = labels_consolidated(golden_set=golden_set)
    pairs: dict[tuple[int, int], FinalLabel | Unresolved] = {}
    items: list[FinalLabel | Unresolved] = [*result.labels, *result.unresolved]
    for item in items:
        assert (item.query_id, item.document_id) not in pairs
        pairs[(item.query_id, item.document_id)] = item
    return pairs


def _label(golden_set: GoldenSet, query: Query, doc: Document) -> FinalLabel | Unresolved:
    return _by_pair(golden_set)[(query.pk, doc.pk)]


def _done(*assignments: Assignment) -> None:
    for a in assignments:
        a.status = Assignment.Status.DONE
        a.save(update_fields=["status"])


def test_it_carries_over_frozen_labels_nothing_was_judged_for(golden_set: GoldenSet) -> None:
    query = factories.pooled_query(golden_set, 3)
    docs = [c.document for c in query.candidates.all()]
    factories.FrozenLabelFactory.create(query=query, document=docs[0], grade=3)
    factories.FrozenLabelFactory.create(query=query, document=docs[1], grade=0)

    result = labels_consolidated(golden_set=golden_set)

    assert result.labels == [
        FinalLabel(query.pk, docs[0].pk, 3, "frozen"),
        FinalLabel(query.pk, docs[1].pk, 0, "frozen"),
    ]  # the unjudged third candidate is neither a label nor unresolved
    assert result.unresolved == []


def test_a_single_raters_overturn_keeps_the_frozen_label_until_a_reviewer_accepts_it(
    golden_set: GoldenSet, alice: User, rita: User
) -> None:
    query = factories.pooled_query(golden_set, 2)
    doc = query.candidates.first().document  # type: ignore[union-attr]
    factories.FrozenLabelFactory.create(query=query, document=doc, grade=3)
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    factories.grade(assignment, doc, 1, content_hash="h-judged")

    assert _label(golden_set, query, doc) == FinalLabel(query.pk, doc.pk, 3, "frozen", None)
    factories.AdjudicationFactory.create(query=query, document=doc, reviewer=rita, grade=1)
    assert _label(golden_set, query, doc).method == "adjudicated"  # type: ignore[union-attr]
    assert _label(golden_set, query, doc).grade == 1  # type: ignore[union-attr]


def test_a_single_raters_grade_where_nothing_was_frozen_is_the_label(
    golden_set: GoldenSet, alice: User
) -> None:
    query = factories.pooled_query(golden_set, 2)
    doc = query.candidates.first().document  # type: ignore[union-attr]
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    factories.grade(assignment, doc, 1, content_hash="h-judged")
    # Not marked done: work in progress is neither a label nor unresolved, it is listed as not done.
    result = labels_consolidated(golden_set=golden_set)
    assert (result.labels, result.unresolved) == ([], [])
    assert result.not_done == [NotDone(query.pk, doc.pk, (1,), None)]

    _done(assignment)

    assert _label(golden_set, query, doc) == FinalLabel(query.pk, doc.pk, 1, "single", "h-judged")
    assert labels_consolidated(golden_set=golden_set).not_done == []


def test_a_dual_sampled_document_with_one_grade_awaits_the_second_rater(dual: Dual) -> None:
    factories.grade(dual.first, dual.docs[0], 2)
    label = _label(dual.query.golden_set, dual.query, dual.docs[0])
    assert isinstance(label, Unresolved)
    assert label.awaiting == "second_rater" and "awaiting second rater" in label.reason


def test_equal_grades_are_agreed(dual: Dual) -> None:
    factories.grade(dual.first, dual.docs[0], 2, content_hash="h")
    factories.grade(dual.second, dual.docs[0], 2, content_hash="h")
    assert _label(dual.query.golden_set, dual.query, dual.docs[0]) == FinalLabel(
        dual.query.pk, dual.docs[0].pk, 2, "agreed", "h"
    )


def test_two_different_grades_await_a_third_rater_while_the_dual_work_goes_on(dual: Dual) -> None:
    factories.grade(dual.first, dual.docs[0], 1)
    factories.grade(dual.second, dual.docs[0], 2)
    label = _label(dual.query.golden_set, dual.query, dual.docs[0])
    assert label == Unresolved(
        dual.query.pk, dual.docs[0].pk, "two grades disagree (1 vs 2): awaiting third rater", "third_rater"
    )


def test_with_the_dual_work_done_and_no_third_rater_a_reviewer_decides(dual: Dual) -> None:
    factories.grade(dual.first, dual.docs[0], 1)
    factories.grade(dual.second, dual.docs[0], 2)
    _done(dual.first, dual.second)
    label = _label(dual.query.golden_set, dual.query, dual.docs[0])
    assert isinstance(label, Unresolved)
    assert label.awaiting == "reviewer"
    assert label.reason == "two grades disagree (1 vs 2): no third rater is available, a reviewer decides"


def test_a_third_assignment_covering_the_document_keeps_it_waiting_for_the_third_rater(
    dual: Dual, carol: User
) -> None:
    factories.grade(dual.first, dual.docs[0], 1)
    factories.grade(dual.second, dual.docs[0], 2)
    _done(dual.first, dual.second)
    third = factories.AssignmentFactory.create(query=dual.query, rater=carol, kind="third")
    third.scope.set(dual.query.candidates.filter(document=dual.docs[0]))
    assert _label(dual.query.golden_set, dual.query, dual.docs[0]).awaiting == "third_rater"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ((1, 2, 2), (2, "median")),
        ((1, 2, 1), (1, "median")),
        ((0, 2, 1), (None, "reviewer")),  # two apart: a reviewer even with a median
        ((0, 3, 0), (None, "reviewer")),  # two agree, but 3 apart
    ],
)
def test_three_grades_give_the_median_unless_they_are_two_or_more_apart(
    dual: Dual, carol: User, grades: tuple[int, int, int], expected: tuple[int | None, str]
) -> None:
    third = factories.AssignmentFactory.create(query=dual.query, rater=carol, kind="third")
    for assignment, value in zip((dual.first, dual.second, third), grades, strict=True):
        factories.grade(assignment, dual.docs[0], value)
    label = _label(dual.query.golden_set, dual.query, dual.docs[0])
    if expected[0] is None:
        assert isinstance(label, Unresolved) and label.awaiting == expected[1]
        assert "a reviewer decides" in label.reason
    else:
        assert label == FinalLabel(dual.query.pk, dual.docs[0].pk, expected[0], expected[1])


def test_an_adjudication_decides_and_the_newest_one_counts(dual: Dual, rita: User) -> None:
    factories.grade(dual.first, dual.docs[0], 0)
    factories.grade(dual.second, dual.docs[0], 3)
    factories.AdjudicationFactory.create(
        query=dual.query, document=dual.docs[0], reviewer=rita, grade=1, content_hash="old"
    )
    factories.AdjudicationFactory.create(
        query=dual.query, document=dual.docs[0], reviewer=rita, grade=3, content_hash="h-adj"
    )
    assert _label(dual.query.golden_set, dual.query, dual.docs[0]) == FinalLabel(
        dual.query.pk, dual.docs[0].pk, 3, "adjudicated", "h-adj"
    )
    assert Judgment.objects.filter(document=dual.docs[0]).count() == 2  # the raw grades are still there


def test_retired_queries_are_left_out(dual: Dual) -> None:
    factories.grade(dual.first, dual.docs[0], 2)
    factories.FrozenLabelFactory.create(query=dual.query, document=dual.docs[1], grade=1)
    Query.objects.filter(pk=dual.query.pk).update(status=Query.Status.RETIRED)
    result = labels_consolidated(golden_set=dual.query.golden_set)
    assert (result.labels, result.unresolved) == ([], [])


def test_reassigned_work_and_gold_checks_make_no_label(golden_set: GoldenSet, alice: User, bob: User) -> None:
    query = factories.pooled_query(golden_set, 2)
    doc = query.candidates.first().document  # type: ignore[union-attr]
    gone = factories.AssignmentFactory.create(query=query, rater=alice, status="reassigned")
    factories.grade(gone, doc, 0)
    gold = factories.AssignmentFactory.create(query=query, rater=bob, kind="gold")
    factories.grade(gold, doc, 1)
    assert labels_consolidated(golden_set=golden_set).labels == []
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    live = factories.AssignmentFactory.create(query=query, rater=carol, status="done")
    factories.grade(live, doc, 3)
    assert labels_consolidated(golden_set=golden_set).labels == [FinalLabel(query.pk, doc.pk, 3, "single")]


def test_a_rejudgment_replaces_the_earlier_grades_and_outdates_an_older_adjudication(
    dual: Dual, carol: User, rita: User
) -> None:
    doc = dual.docs[0]
    factories.grade(dual.first, doc, 0, content_hash="v1")
    factories.grade(dual.second, doc, 3, content_hash="v1")
    adjudication = factories.AdjudicationFactory.create(
        query=dual.query, document=doc, reviewer=rita, grade=1
    )
    rejudge = factories.AssignmentFactory.create(query=dual.query, rater=carol, kind="rejudge")
    rejudge.scope.set(dual.query.candidates.filter(document=doc))
    factories.grade(rejudge, doc, 2, content_hash="v2")
    # The adjudication was made before the re-judgment (on the old content): the new grade stands alone,
    # once the re-judgment is marked done; until then it counts for nothing and the adjudication stands.
    Judgment.objects.filter(assignment=rejudge).update(updated=adjudication.at + dt.timedelta(seconds=5))
    assert _label(dual.query.golden_set, dual.query, doc) == FinalLabel(
        dual.query.pk, doc.pk, 1, "adjudicated"
    )
    _done(rejudge)
    assert _label(dual.query.golden_set, dual.query, doc) == FinalLabel(
        dual.query.pk, doc.pk, 2, "single", "v2"
    )
    later = factories.AdjudicationFactory.create(query=dual.query, document=doc, reviewer=rita, grade=3)
    assert later.at > adjudication.at
    type(later).objects.filter(pk=later.pk).update(at=timezone.now() + dt.timedelta(minutes=1))
    assert _label(dual.query.golden_set, dual.query, doc) == FinalLabel(
        dual.query.pk, doc.pk, 3, "adjudicated"
    )


def test_grades_given_on_different_content_carry_the_earliest_hash(dual: Dual) -> None:
    doc = dual.docs[0]
    factories.grade(dual.first, doc, 2, content_hash="before")
    factories.grade(dual.second, doc, 2, content_hash="after")
    first = Judgment.objects.get(assignment=dual.first)
    Judgment.objects.filter(assignment=dual.second).update(updated=first.updated + dt.timedelta(hours=1))
    label = _label(dual.query.golden_set, dual.query, doc)
    assert isinstance(label, FinalLabel) and label.content_hash == "before"


def test_a_grade_off_the_current_scale_is_unresolved_with_the_reason(dual: Dual) -> None:
    factories.grade(dual.first, dual.docs[0], 5)
    factories.grade(dual.second, dual.docs[0], 5)
    label = _label(dual.query.golden_set, dual.query, dual.docs[0])
    assert isinstance(label, Unresolved) and label.awaiting == "reviewer"
    assert "is not a grade on 0..3" in label.reason


def test_it_can_be_limited_to_some_queries(dual: Dual, golden_set: GoldenSet) -> None:
    other = factories.pooled_query(golden_set, 1)
    factories.FrozenLabelFactory.create(query=other, document=other.candidates.get().document, grade=2)
    factories.grade(dual.first, dual.docs[0], 2)
    only = labels_consolidated(golden_set=golden_set, query_ids=[other.pk])
    assert [(label.query_id, label.method) for label in only.labels] == [(other.pk, "frozen")]
    assert only.unresolved == []
