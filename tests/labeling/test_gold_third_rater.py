"""A disputed query with gold items: the raters who only checked its gold items are free to be its third
rater (never one of the first two). Their gold-check grades stay gold checks; their grades on the
disputed documents are the third grades."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from labeling import services
from labeling.models import Assignment, Candidate, DisputeCheck, GoldenSet, Query
from labeling.selectors import (
    FinalLabel,
    Unresolved,
    adjudication_page_get,
    agreement_dashboard_get,
    grading_page_get,
    labels_consolidated,
    review_queue_get,
)
from tests import factories
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@dataclass
class Scene:
    query: Query
    candidates: list[Candidate]  # by best rank; the last one is the gold item
    first: Assignment
    second: Assignment
    carol: User
    dave: User

    @property
    def gold(self) -> Candidate:
        return self.candidates[-1]

    def grade(self, assignment: Assignment, candidate: Candidate, value: int) -> None:
        services.judgment_submit(
            assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=value
        )

    def done(self, assignment: Assignment) -> None:
        services.assignment_done(assignment_id=assignment.pk, rater=assignment.rater)

    def label(self, candidate: Candidate) -> FinalLabel | Unresolved:
        consolidated = labels_consolidated(golden_set=self.query.golden_set)
        every: list[FinalLabel | Unresolved] = [*consolidated.labels, *consolidated.unresolved]
        found = [x for x in every if (x.query_id, x.document_id) == (self.query.pk, candidate.document_id)]
        assert len(found) == 1
        return found[0]


@pytest.fixture
def scene(golden_set: GoldenSet, alice: User, bob: User, rita: User) -> Scene:
    """alice (first) and bob (second) rate a three-document query whose third document is a gold item
    (answer 2); carol and dave, the set's other raters, hold only gold assignments on it."""
    carol = factories.UserFactory.create(username="carol", groups=["raters"])
    dave = factories.UserFactory.create(username="dave", groups=["raters"])
    golden_set.raters.add(carol, dave)
    query = factories.pooled_query(golden_set, 3, external_id="q-1")
    candidates = list(query.candidates.order_by("best_rank"))
    first = factories.AssignmentFactory.create(query=query, rater=alice, kind="primary")
    second = factories.AssignmentFactory.create(query=query, rater=bob, kind="second")
    services.gold_mark(query=query, document=candidates[-1].document, grade=2, by=rita)
    assert set(Assignment.objects.filter(kind="gold").values_list("rater__username", flat=True)) == {
        "carol",
        "dave",
    }
    return Scene(query, candidates, first, second, carol, dave)


def _dispute_the_first_document(scene: Scene) -> None:
    """alice and bob agree on documents 2 and 3 (grade 2) and disagree on document 1 (1 vs 2: a flip)."""
    for assignment, grades in ((scene.first, [1, 2, 2]), (scene.second, [2, 2, 2])):
        for candidate, value in zip(scene.candidates, grades, strict=True):
            scene.grade(assignment, candidate, value)
        scene.done(assignment)


def test_a_gold_checker_becomes_the_third_rater_and_their_gold_grade_stays_a_gold_check(
    scene: Scene, alice: User, bob: User
) -> None:
    carol_gold = Assignment.objects.get(rater=scene.carol)
    scene.grade(carol_gold, scene.gold, 0)  # a wrong answer on the gold item: carol is done, dave is not
    scene.done(carol_gold)
    assert Assignment.objects.get(pk=carol_gold.pk).status == "done"
    n_assignments = Assignment.objects.count()

    _dispute_the_first_document(scene)

    check = DisputeCheck.objects.get()
    assert check.disputed and check.actions == ["moved to shadow", "third rater carol: 1 document"]
    third = Assignment.objects.get(kind="third")
    # carol's own row became the third assignment (the least loaded: her gold work was done).
    assert third.pk == carol_gold.pk and Assignment.objects.count() == n_assignments
    assert third.rater not in (alice, bob)
    assert set(third.scope.all()) == {scene.gold, scene.candidates[0]}
    # Reopened: the disputed document is still to grade.
    assert (third.status, third.completed) == ("open", None)
    assert services.assignment_progress(assignment=third) == (1, 2)
    awaiting = scene.label(scene.candidates[0])
    assert isinstance(awaiting, Unresolved) and awaiting.awaiting == "third_rater"
    queue = review_queue_get(golden_set=scene.query.golden_set)
    assert [i.document for i in queue.awaiting_third] == [scene.candidates[0].document]
    assert queue.needs_reviewer == []

    # Her 0 on the gold item makes no label: alice's and bob's 2s are agreed (0, 2, 2 would need a
    # reviewer), and the reviewer's page shows no third grade there.
    gold_label = scene.label(scene.gold)
    assert isinstance(gold_label, FinalLabel) and (gold_label.grade, gold_label.method) == (2, "agreed")
    page = adjudication_page_get(query=scene.query)
    third_column = page.columns.index("Third rater")
    rows = {row.document.pk: row for row in page.rows}
    assert rows[scene.gold.document_id].grades[third_column] is None
    # ... but it still counts as her agreement with the gold items.
    figures = {r.rater: r for r in agreement_dashboard_get(golden_set=scene.query.golden_set).report.raters}
    assert figures["carol"].gold.n == 1 and figures["carol"].gold.exact == 0.0

    scene.grade(third, scene.candidates[0], 2)
    scene.done(third)

    assert Assignment.objects.get(pk=third.pk).status == "done"
    assert scene.label(scene.candidates[0]) == FinalLabel(
        scene.query.pk,
        scene.candidates[0].document_id,
        2,
        "median",
        scene.candidates[0].document.content_hash,
    )
    assert scene.label(scene.gold) == gold_label
    queue = review_queue_get(golden_set=scene.query.golden_set)
    assert (queue.needs_reviewer, queue.awaiting_third) == ([], [])
    page = adjudication_page_get(query=scene.query)
    rows = {row.document.pk: row for row in page.rows}
    assert rows[scene.candidates[0].document_id].grades[third_column].grade == 2  # type: ignore[union-attr]
    assert figures["carol"].gold.n == 1  # the figure above, unchanged by the third grade
    after = {r.rater: r for r in agreement_dashboard_get(golden_set=scene.query.golden_set).report.raters}
    assert after["carol"].gold.n == 1 and after["carol"].n_items == 2


def test_an_ungraded_gold_item_stays_in_the_third_raters_scope_and_the_page_gives_nothing_away(
    scene: Scene, alice: User, bob: User
) -> None:
    _dispute_the_first_document(scene)  # neither carol nor dave has graded the gold item: carol (lower id)

    third = Assignment.objects.get(kind="third")
    assert third.rater == scene.carol
    assert Assignment.objects.filter(kind="gold").get().rater == scene.dave
    assert set(third.scope.all()) == {scene.gold, scene.candidates[0]}
    page = grading_page_get(assignment=third)
    assert {item.candidate_id for item in page.items} == {scene.gold.pk, scene.candidates[0].pk}
    client = Client()
    client.login(username="carol", password=PASSWORD)
    html = client.get(reverse("labeling:grade", args=[third.pk])).content.decode().lower()
    queue_html = client.get(reverse("labeling:queue")).content.decode().lower()
    for text in (html, queue_html):
        # "golden label" is the page's note prompt, shown to everyone; "gold" alone would give it away.
        for pattern in (r"\bgold\b", r"third", r"disput", r"shadow", r"known answer", r"agree"):
            assert not re.search(pattern, text), pattern

    scene.grade(third, scene.candidates[0], 2)
    assert Assignment.objects.get(pk=third.pk).status == "open"  # the gold item is still to grade
    label = scene.label(scene.candidates[0])
    assert isinstance(label, FinalLabel) and (label.grade, label.method) == (2, "median")
    scene.grade(third, scene.gold, 3)
    scene.done(third)
    assert Assignment.objects.get(pk=third.pk).status == "done"
    gold_label = scene.label(scene.gold)
    assert isinstance(gold_label, FinalLabel) and (gold_label.grade, gold_label.method) == (2, "agreed")


def test_a_gold_checker_holding_a_disputed_document_as_gold_is_not_the_third_rater(
    scene: Scene,
) -> None:
    # alice and bob disagree on the gold item itself: carol and dave hold it as gold, so nobody is left.
    for assignment, grades in ((scene.first, [2, 2, 0]), (scene.second, [2, 2, 3])):
        for candidate, value in zip(scene.candidates, grades, strict=True):
            scene.grade(assignment, candidate, value)
        scene.done(assignment)
    assert not Assignment.objects.filter(kind="third").exists()
    assert set(Assignment.objects.filter(kind="gold").values_list("rater__username", flat=True)) == {
        "carol",
        "dave",
    }
    assert DisputeCheck.objects.get().actions[-1].startswith("no third rater available")
    label = scene.label(scene.gold)
    assert isinstance(label, Unresolved) and label.awaiting == "reviewer"


def test_a_rater_new_to_the_query_and_a_gold_checker_are_chosen_alike_by_load(
    scene: Scene, golden_set: GoldenSet
) -> None:
    erin = factories.UserFactory.create(username="erin", groups=["raters"])
    golden_set.raters.add(erin)
    other = factories.QueryFactory.create(golden_set=golden_set)
    factories.AssignmentFactory.create(query=other, rater=erin)  # erin has open work elsewhere
    for rater in (scene.carol, scene.dave):  # and the gold checkers have done theirs
        scene.grade(Assignment.objects.get(rater=rater, query=scene.query), scene.gold, 2)
        scene.done(Assignment.objects.get(rater=rater, query=scene.query))

    _dispute_the_first_document(scene)

    third = Assignment.objects.get(kind="third")
    assert (
        third.rater == scene.carol and not Assignment.objects.filter(rater=erin, query=scene.query).exists()
    )


def test_unmarking_a_gold_item_takes_it_out_of_a_third_raters_scope_unless_it_is_disputed(
    scene: Scene,
) -> None:
    _dispute_the_first_document(scene)
    third = Assignment.objects.get(kind="third")

    assert services.gold_unmark(query=scene.query, document=scene.gold.document)

    assert list(third.scope.all()) == [scene.candidates[0]]
    assert services.assignment_progress(assignment=third) == (0, 1)
