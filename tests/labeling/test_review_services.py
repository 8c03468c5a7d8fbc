"""Adjudications, gold items, re-judgments and the content hash a grade is given on."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from labeling import services
from labeling.models import (
    Adjudication,
    Assignment,
    Document,
    GoldenSet,
    GoldItem,
    Judgment,
    JudgmentEvent,
    Query,
)
from labeling.selectors import FinalLabel, labels_consolidated
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def query(golden_set: GoldenSet) -> Query:
    return factories.pooled_query(golden_set, 3, external_id="q-1")


def _doc(query: Query, rank: int = 1) -> Document:
    return query.candidates.get(best_rank=rank).document


# --- adjudication -------------------------------------------------------------------------------


def test_an_adjudication_is_a_row_of_its_own_and_becomes_the_final_label(
    query: Query, alice: User, bob: User, rita: User
) -> None:
    doc = _doc(query)
    for rater, value in ((alice, 0), (bob, 3)):
        factories.grade(factories.AssignmentFactory.create(query=query, rater=rater), doc, value)
    adjudication = services.adjudication_create(
        query=query, document=doc, reviewer=rita, grade=2, rationale="  the article answers half of it "
    )
    assert (adjudication.grade, adjudication.rationale, adjudication.reviewer) == (
        2,
        "the article answers half of it",
        rita,
    )
    assert adjudication.content_hash == doc.content_hash and adjudication.at is not None
    assert sorted(Judgment.objects.values_list("grade", flat=True)) == [0, 3]  # never changed
    assert labels_consolidated(golden_set=query.golden_set).labels == [
        FinalLabel(query.pk, doc.pk, 2, "adjudicated", doc.content_hash)
    ]


@pytest.mark.parametrize(
    ("grade", "rationale", "message"),
    [
        (4, "why", "grade: 4 is outside the scale 0..3"),
        (2, " ", "rationale: say why"),
        (2, "x" * 2001, "rationale: longer than 2000 characters"),
    ],
)
def test_it_refuses_an_adjudication_off_the_scale_or_without_a_rationale(
    query: Query, rita: User, grade: int, rationale: str, message: str
) -> None:
    with pytest.raises(services.ReviewError, match=message):
        services.adjudication_create(
            query=query, document=_doc(query), reviewer=rita, grade=grade, rationale=rationale
        )
    assert not Adjudication.objects.exists()


def test_it_refuses_to_adjudicate_a_document_outside_the_pool_or_a_retired_query(
    query: Query, golden_set: GoldenSet, rita: User
) -> None:
    stranger = factories.DocumentFactory.create(golden_set=golden_set, doc_id="doc-x")
    with pytest.raises(services.ReviewError, match="doc-x is not in the pool of query q-1"):
        services.adjudication_create(query=query, document=stranger, reviewer=rita, grade=1, rationale="r")
    services.query_retire(query=query, by=rita, reason="gone")
    with pytest.raises(services.ReviewError, match="retired"):
        services.adjudication_create(query=query, document=_doc(query), reviewer=rita, grade=1, rationale="r")
    assert not Adjudication.objects.exists()


# --- gold items ---------------------------------------------------------------------------------


def test_marking_gold_mixes_the_item_into_the_queues_of_raters_without_the_query(
    query: Query, golden_set: GoldenSet, alice: User, bob: User, rita: User
) -> None:
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    golden_set.raters.add(carol)
    primary = factories.AssignmentFactory.create(query=query, rater=alice)
    item = services.gold_mark(query=query, document=_doc(query, 2), grade=3, by=rita)

    assert (item.grade, item.by) == (3, rita)
    gold = Assignment.objects.filter(kind="gold").order_by("rater__username")
    assert [a.rater.username for a in gold] == ["bob", "carol"]  # alice meets it in her own pool
    assert all(list(a.scope.all()) == [query.candidates.get(best_rank=2)] for a in gold)
    assert Assignment.objects.get(pk=primary.pk).kind == "primary"
    # Marking a second item extends the gold assignments instead of adding more; a new answer replaces.
    services.gold_mark(query=query, document=_doc(query, 3), grade=0, by=rita)
    services.gold_mark(query=query, document=_doc(query, 2), grade=2, by=rita)
    assert Assignment.objects.filter(kind="gold").count() == 2
    assert all(a.scope.count() == 2 for a in Assignment.objects.filter(kind="gold"))
    assert dict(GoldItem.objects.values_list("document__doc_id", "grade")) == {
        _doc(query, 2).doc_id: 2,
        _doc(query, 3).doc_id: 0,
    }


def test_a_rater_grading_a_gold_item_sees_an_ordinary_candidate_and_it_makes_no_label(
    query: Query, alice: User, bob: User, rita: User
) -> None:
    factories.AssignmentFactory.create(query=query, rater=alice)
    services.gold_mark(query=query, document=_doc(query), grade=3, by=rita)
    gold = Assignment.objects.get(kind="gold", rater=bob)
    candidate = query.candidates.get(best_rank=1)
    services.judgment_submit(assignment_id=gold.pk, rater=bob, candidate_id=candidate.pk, grade=1)
    assert (
        services.assignment_done(assignment_id=gold.pk, rater=bob).overturns == []
    )  # gold checks make no label
    assert labels_consolidated(golden_set=query.golden_set).labels == []


def test_unmarking_gold_takes_ungraded_items_out_of_gold_assignments(
    query: Query, alice: User, bob: User, rita: User
) -> None:
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    query.golden_set.raters.add(carol)
    factories.AssignmentFactory.create(query=query, rater=alice)
    services.gold_mark(query=query, document=_doc(query), grade=3, by=rita)
    bob_gold = Assignment.objects.get(kind="gold", rater=bob)
    services.judgment_submit(
        assignment_id=bob_gold.pk, rater=bob, candidate_id=query.candidates.get(best_rank=1).pk, grade=2
    )
    assert services.gold_unmark(query=query, document=_doc(query)) is True
    assert not GoldItem.objects.exists()
    # carol had not graded it: her emptied gold assignment is gone; bob's grade stays with his.
    assert list(Assignment.objects.filter(kind="gold").values_list("rater__username", flat=True)) == ["bob"]
    assert Judgment.objects.get(assignment=bob_gold).grade == 2
    assert services.gold_unmark(query=query, document=_doc(query)) is False


def test_gold_items_wait_until_their_query_has_its_primary_rater(
    query: Query, golden_set: GoldenSet, rita: User
) -> None:
    services.gold_mark(query=query, document=_doc(query), grade=3, by=rita)
    assert not Assignment.objects.exists()  # otherwise nobody would be left to grade the query itself
    report = services.assignments_create(golden_set=golden_set)
    assert (report.primary, report.gold) == (1, 1)
    primary = Assignment.objects.get(kind="primary")
    assert Assignment.objects.get(kind="gold").rater != primary.rater


def test_it_refuses_a_gold_item_outside_the_pool_or_off_the_scale(
    query: Query, golden_set: GoldenSet, rita: User
) -> None:
    stranger = factories.DocumentFactory.create(golden_set=golden_set, doc_id="doc-x")
    with pytest.raises(services.ReviewError, match="doc-x is not in the pool"):
        services.gold_mark(query=query, document=stranger, grade=1, by=rita)
    with pytest.raises(services.ReviewError, match=r"grade: -1 is outside the scale 0\.\.3"):
        services.gold_mark(query=query, document=_doc(query), grade=-1, by=rita)
    assert not GoldItem.objects.exists() and not Assignment.objects.exists()


def test_assigning_queries_also_mixes_in_gold_items_for_raters_added_later(
    query: Query, golden_set: GoldenSet, rita: User
) -> None:
    services.assignments_create(golden_set=golden_set)
    services.gold_mark(query=query, document=_doc(query), grade=3, by=rita)
    before = Assignment.objects.filter(kind="gold").count()
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    golden_set.raters.add(carol)
    report = services.assignments_create(golden_set=golden_set)
    assert report.gold == 1
    assert report.summary() == "0 primary, 1 gold-item and 0 second assignment"
    assert Assignment.objects.filter(kind="gold").count() == before + 1
    assert Assignment.objects.get(kind="gold", rater=carol).scope.count() == 1


# --- re-judgments and content hashes ------------------------------------------------------------


def test_a_rejudge_assignment_is_scoped_and_never_goes_to_someone_who_held_the_query(
    query: Query, alice: User, bob: User
) -> None:
    factories.AssignmentFactory.create(query=query, rater=alice)
    docs = [_doc(query, 1), _doc(query, 3)]
    rejudge = services.assignment_rejudge_create(query=query, rater=bob, documents=docs)
    assert rejudge.kind == "rejudge"
    assert {c.document for c in rejudge.scope.all()} == set(docs)
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    with pytest.raises(services.AssignmentError, match="has held query q-1"):
        services.assignment_rejudge_create(query=query, rater=alice, documents=docs)
    stranger = factories.DocumentFactory.create(golden_set=query.golden_set, doc_id="doc-x")
    with pytest.raises(services.AssignmentError, match="not in the pool of query q-1: doc-x"):
        services.assignment_rejudge_create(query=query, rater=carol, documents=[stranger])


def test_a_save_records_the_content_hash_it_was_given_on(assignment: Assignment, alice: User) -> None:
    candidate = assignment.query.candidates.order_by("best_rank").last()
    assert candidate is not None
    doc = candidate.document
    services.judgment_submit(assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=1)
    first_hash = doc.content_hash
    doc.title = "Changed title"
    doc.save()
    assert doc.content_hash != first_hash
    services.judgment_submit(assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=2)
    assert Judgment.objects.get(document=doc).content_hash == doc.content_hash
    assert list(JudgmentEvent.objects.order_by("id").values_list("new_grade", "content_hash")) == [
        (1, first_hash),
        (2, doc.content_hash),
    ]
