"""A qualified judge's labels in `labels_consolidated`: they fill only pool pairs no human labeled in any
way, only where the judge's label counts (labeling.selectors.judge_scope), and never in the readings of the
humans' work (agreement, disputes, a judge's human consensus)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from labeling.models import Document, GoldenSet, GoldItem, JudgeQualification, Query
from labeling.selectors import FinalLabel, labels_consolidated
from labeling.selectors.labels import JUDGE
from tests import factories
from tests.support.judge_labels import label, make_judge, qualify

pytestmark = pytest.mark.django_db


def _labels(golden_set: GoldenSet, *, judges: bool = True) -> dict[tuple[int, int], FinalLabel]:
    result = labels_consolidated(golden_set=golden_set, judges=judges)
    return {(f.query_id, f.document_id): f for f in result.labels}


@pytest.fixture
def query(golden_set: GoldenSet) -> Query:
    return factories.pooled_query(golden_set, 5, stratum="billing", locale="en-US")


@pytest.fixture
def docs(query: Query) -> list[Document]:
    return [c.document for c in query.candidates.order_by("best_rank")]


def test_a_counted_judge_label_fills_only_the_pairs_no_human_labeled(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    for doc in docs:
        label(judge, query, doc, 1)
    assignment = factories.AssignmentFactory.create(query=query, rater=alice, status="done")
    factories.grade(assignment, docs[0], 3)  # judged
    factories.AdjudicationFactory.create(query=query, document=docs[1], reviewer=rita, grade=2)  # adjudicated
    factories.FrozenLabelFactory.create(query=query, document=docs[2], grade=0)  # frozen by humans
    GoldItem.objects.create(query=query, document=docs[3], grade=3, by=rita)  # gold
    assert all(f.source == "human" for f in _labels(golden_set).values())  # not qualified: nothing fills

    qualify(judge, rita)
    labels = _labels(golden_set)
    assert labels[(query.pk, docs[0].pk)] == FinalLabel(query.pk, docs[0].pk, 3, "single")
    assert labels[(query.pk, docs[1].pk)].method == "adjudicated"
    assert labels[(query.pk, docs[1].pk)].grade == 2
    assert labels[(query.pk, docs[2].pk)] == FinalLabel(query.pk, docs[2].pk, 0, "frozen")
    assert (query.pk, docs[3].pk) not in labels  # a gold item is a human's answer: never the judge's
    assert labels[(query.pk, docs[4].pk)] == FinalLabel(
        query.pk, docs[4].pk, 1, JUDGE, None, JUDGE, judge.pk, judge.name
    )
    # The readings of the humans' work ask for no fill-ins.
    assert (query.pk, docs[4].pk) not in _labels(golden_set, judges=False)


def test_an_unresolved_human_pair_stays_unresolved(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, bob: User, rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    label(judge, query, docs[0], 1)
    qualify(judge, rita)
    first = factories.AssignmentFactory.create(query=query, rater=alice, kind="primary")
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    factories.grade(first, docs[0], 0)
    factories.grade(second, docs[0], 3)
    result = labels_consolidated(golden_set=golden_set)
    assert [(u.query_id, u.document_id) for u in result.unresolved] == [(query.pk, docs[0].pk)]
    assert result.labels == []


def test_out_of_scope_suspended_changed_or_off_the_pool_labels_fill_nothing(
    golden_set: GoldenSet, query: Query, docs: list[Document], rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    for doc in docs[:2]:
        label(judge, query, doc, 2)
    outside = factories.DocumentFactory.create(golden_set=golden_set)  # a judge label off the pool
    label(judge, query, outside, 2)
    qualification = qualify(judge, rita, strata=["docs"])
    assert _labels(golden_set) == {}  # out of scope
    qualify(judge, rita, locales=["en-US"])
    assert set(_labels(golden_set)) == {(query.pk, docs[0].pk), (query.pk, docs[1].pk)}
    docs[0].title = "changed since the judge graded it"
    docs[0].save()
    assert set(_labels(golden_set)) == {(query.pk, docs[1].pk)}
    JudgeQualification.objects.update(status=JudgeQualification.Status.SUSPENDED)
    assert qualification.judge.qualifications.filter(status="active").count() == 0
    assert _labels(golden_set) == {}


def test_a_frozen_judge_label_gives_way_to_humans_and_to_the_judge_counted_now(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    for doc, grade in zip(docs[:2], (0, 3), strict=True):
        factories.FrozenLabelFactory.create(
            query=query, document=doc, grade=grade, source="judge", judge=judge, judge_name=judge.name
        )
    carried = _labels(golden_set)  # nothing counts now: the frozen judge labels carry over, still judge's
    assert carried[(query.pk, docs[0].pk)] == FinalLabel(
        query.pk, docs[0].pk, 0, "frozen", None, JUDGE, judge.pk, judge.name
    )
    label(judge, query, docs[0], 2)
    qualify(judge, rita)
    assignment = factories.AssignmentFactory.create(query=query, rater=alice, status="done")
    factories.grade(assignment, docs[1], 1)  # one rater's grade: no proposal against a judge's label
    labels = _labels(golden_set)
    assert labels[(query.pk, docs[0].pk)] == FinalLabel(
        query.pk, docs[0].pk, 2, JUDGE, None, JUDGE, judge.pk, judge.name
    )
    assert labels[(query.pk, docs[1].pk)] == FinalLabel(query.pk, docs[1].pk, 1, "single")


def test_limited_to_queries_and_documents(
    golden_set: GoldenSet, query: Query, docs: list[Document], rita: User
) -> None:
    other = factories.pooled_query(golden_set, 1)
    judge = make_judge(golden_set, "m1")
    label(judge, query, docs[0], 2)
    label(judge, query, docs[1], 2)
    label(judge, other, other.candidates.get().document, 2)
    qualify(judge, rita)
    only = labels_consolidated(golden_set=golden_set, query_ids=[query.pk], document_ids=[docs[1].pk])
    assert [(f.query_id, f.document_id) for f in only.labels] == [(query.pk, docs[1].pk)]
    retired = labels_consolidated(golden_set=golden_set, query_ids=[other.pk])
    assert len(retired.labels) == 1
    other.status = Query.Status.RETIRED
    other.save()
    assert labels_consolidated(golden_set=golden_set, query_ids=[other.pk]).labels == []


def test_a_grade_on_work_not_marked_done_leaves_the_pair_to_the_judge_until_it_is_done(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, rita: User
) -> None:
    judge = make_judge(golden_set, "m1")
    label(judge, query, docs[0], 1)
    qualify(judge, rita)
    assignment = factories.AssignmentFactory.create(query=query, rater=alice)
    factories.grade(assignment, docs[0], 3)  # one rater's work in progress: it counts for nothing yet

    result = labels_consolidated(golden_set=golden_set)
    assert [(f.document_id, f.grade, f.source) for f in result.labels] == [(docs[0].pk, 1, JUDGE)]
    assert [(n.document_id, n.grades, n.label) for n in result.not_done] == [(docs[0].pk, (3,), 1)]

    assignment.status = "done"
    assignment.save(update_fields=["status"])

    assert _labels(golden_set)[(query.pk, docs[0].pk)] == FinalLabel(query.pk, docs[0].pk, 3, "single")
