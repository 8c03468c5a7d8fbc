"""labeling.selectors.judge_items on the demo set, with more dual-labeled work, an adjudication, a
calibration round and gold items added through the services: the items and their consensus equal a
hand-written reading of the rows, and a judge built from the human grades (perfect) and from shifted
ones (biased) gets the figures scikit-learn and krippendorff give."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from assay.labels.judge_agreement import HumanPair, judge_agreement, judged_items
from assay.labels.judge_verdicts import QUALIFIED, qualification_verdicts
from labeling import services
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    FrozenLabel,
    GoldenSet,
    GoldItem,
    Judgment,
    Query,
)
from labeling.selectors.judge_items import (
    CALIBRATION,
    CALIBRATION_MEDIAN,
    DUAL,
    GOLD,
    JudgeItems,
    judge_figures_get,
    judge_items_get,
    judges_compare_get,
)

pytestmark = pytest.mark.django_db

LABELS = [0, 1, 2, 3]
Key = tuple[str, str]


def _grade_dual_queries(golden_set: GoldenSet, rng: random.Random) -> None:
    """The first and second rater grade every dual-labeled query the demo left ungraded: the frozen label
    (0 where none), the second rater one grade off on about one document in six."""
    for second in Assignment.objects.filter(query__golden_set=golden_set, kind=Assignment.Kind.SECOND):
        query = second.query
        if Judgment.objects.filter(assignment__query=query).exists():
            continue
        first = Assignment.objects.get(query=query, kind=Assignment.Kind.PRIMARY)
        frozen = dict(FrozenLabel.objects.filter(query=query).values_list("document_id", "grade"))
        for candidate in query.candidates.order_by("id"):
            grade = frozen.get(candidate.document_id, 0)
            other = min(3, max(0, grade + rng.choice([-1, 1]))) if rng.random() < 1 / 6 else grade
            for assignment, own in ((first, grade), (second, other)):
                services.judgment_submit(
                    assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=own
                )
        for assignment in (first, second):
            services.assignment_done(assignment_id=assignment.pk, rater=assignment.rater)


def _round(golden_set: GoldenSet, name: str, queries: list[Query], raters: list[str], grade: Any) -> None:
    """A calibration round on `queries`, every candidate graded by each rater: `grade(rater, candidate)`."""
    round_ = services.calibration_round_start(
        golden_set=golden_set,
        name=name,
        queries=queries,
        raters=list(User.objects.filter(username__in=raters)),
        by=User.objects.get(username="reviewer"),
    )
    for assignment in Assignment.objects.filter(calibration_round=round_).select_related("rater"):
        for candidate in assignment.query.candidates.order_by("id"):
            services.judgment_submit(
                assignment_id=assignment.pk,
                rater=assignment.rater,
                candidate_id=candidate.pk,
                grade=grade(assignment.rater.username, candidate),
            )


@pytest.fixture
def demo(demo_once: Path) -> GoldenSet:
    """The demo as demo_load leaves it, loaded once for the module (tests/support/demo_once.py)."""
    golden_set = GoldenSet.objects.get(slug="help-center")
    rng = random.Random(17)
    _grade_dual_queries(golden_set, rng)
    reviewer = User.objects.get(username="reviewer")
    # A reviewer settles the first disagreement still waiting.
    disagreeing = sorted(
        (j.assignment.query_id, j.document_id)
        for j in Judgment.objects.filter(assignment__kind=Assignment.Kind.SECOND).select_related("assignment")
        if Judgment.objects.filter(
            assignment__query_id=j.assignment.query_id,
            assignment__kind=Assignment.Kind.PRIMARY,
            document=j.document,
        )
        .exclude(grade=j.grade)
        .exists()
    )
    query_pk, document_pk = disagreeing[0]
    services.adjudication_create(
        query=Query.objects.get(pk=query_pk),
        document=Candidate.objects.get(query_id=query_pk, document_id=document_pk).document,
        reviewer=reviewer,
        grade=1,
        rationale="reads as partly relevant",
    )
    # Four raters grade three single-labeled queries in a calibration round, each leaning their own way.
    raters_group = Group.objects.get(name="raters")
    for name in ("rater3", "rater4"):
        user = User.objects.create_user(username=name, password="x")
        user.groups.add(raters_group)
        golden_set.raters.add(user)
    names = ["rater1", "rater2", "rater3", "rater4"]
    dual = set(Assignment.objects.filter(kind=Assignment.Kind.SECOND).values_list("query_id", flat=True))
    chosen = list(
        golden_set.queries.filter(status=Query.Status.ACTIVE, candidates__isnull=False)
        .exclude(pk__in=dual)
        .distinct()
        .order_by("external_id")[:3]
    )
    lean = {"rater1": 0, "rater2": 0, "rater3": 1, "rater4": -1}
    truth: dict[int, int] = {}

    def leaning(rater: str, candidate: Candidate) -> int:
        base = truth.setdefault(candidate.pk, rng.randint(0, 3))
        return min(3, max(0, base + lean[rater] + rng.choice([-1, 0, 0, 0, 1])))

    _round(golden_set, "before the push", chosen, names, leaning)
    # Gold: two documents of a query nobody graded, and one the dual raters disagree on (gold wins).
    ungraded = (
        golden_set.queries.filter(status=Query.Status.ACTIVE, candidates__isnull=False)
        .exclude(pk__in=dual)
        .exclude(pk__in=[q.pk for q in chosen])
        .distinct()
        .order_by("external_id")
        .first()
    )
    assert ungraded is not None
    for grade, candidate in zip((3, 0), ungraded.candidates.order_by("id")[:2], strict=True):
        services.gold_mark(query=ungraded, document=candidate.document, grade=grade, by=reviewer)
    query_pk, document_pk = disagreeing[-1]
    services.gold_mark(
        query=Query.objects.get(pk=query_pk),
        document=Candidate.objects.get(query_id=query_pk, document_id=document_pk).document,
        grade=2,
        by=reviewer,
    )
    return golden_set


def _by_hand(golden_set: GoldenSet) -> tuple[dict[Key, tuple[int, str]], dict[Key, str], list[HumanPair]]:
    """Straight from the rows: every labeled item's consensus and method, the rest's fate, the pairs."""
    active = Query.objects.filter(golden_set=golden_set, status=Query.Status.ACTIVE)
    everyday: dict[Key, dict[str, tuple[int, str]]] = defaultdict(dict)
    for q, d, rater, grade, kind in (
        Judgment.objects.filter(assignment__query__in=active, assignment__calibration_round__isnull=True)
        .exclude(assignment__status=Assignment.Status.REASSIGNED)
        .values_list(
            "assignment__query__external_id",
            "document__doc_id",
            "assignment__rater__username",
            "grade",
            "assignment__kind",
        )
    ):
        everyday[(q, d)][rater] = (grade, kind)
    calibration: dict[Key, dict[str, int]] = defaultdict(dict)
    for q, d, rater, grade in Judgment.objects.filter(
        assignment__query__in=active, assignment__calibration_round__isnull=False
    ).values_list(
        "assignment__query__external_id", "document__doc_id", "assignment__rater__username", "grade"
    ):
        calibration[(q, d)][rater] = grade
    gold = {
        (q, d): g
        for q, d, g in GoldItem.objects.filter(query__in=active).values_list(
            "query__external_id", "document__doc_id", "grade"
        )
    }
    adjudicated = {
        (q, d): g
        for q, d, g in Adjudication.objects.filter(query__in=active)
        .order_by("at", "id")
        .values_list("query__external_id", "document__doc_id", "grade")
    }
    labeled = {k for k, v in everyday.items() if len(v) >= 2} | set(calibration) | set(gold)
    consensus: dict[Key, tuple[int, str]] = {}
    fate: dict[Key, str] = {}
    for key in labeled:
        labeling = [g for g, kind in everyday.get(key, {}).values() if kind != Assignment.Kind.GOLD]
        round_grades = sorted(calibration.get(key, {}).values())
        if key in gold:
            consensus[key] = (gold[key], GOLD)
        elif key in adjudicated:
            consensus[key] = (adjudicated[key], "adjudicated")
        elif len(labeling) == 2 and labeling[0] == labeling[1]:
            consensus[key] = (labeling[0], "agreed")
        elif round_grades and round_grades[1] == round_grades[2]:  # four raters: the two middle grades
            consensus[key] = (round_grades[1], CALIBRATION_MEDIAN)
        else:
            fate[key] = "left out"
    pairs = []
    queries = {query.external_id: query for query in active}
    for key in sorted(labeled):
        query = queries[key[0]]
        for group in ({r: g for r, (g, _) in everyday.get(key, {}).items()}, calibration.get(key, {})):
            for a, b in itertools.combinations(sorted(group), 2):
                pairs.append(HumanPair(key[0], key[1], query.stratum, query.locale, group[a], group[b]))
    return consensus, fate, pairs


def test_the_items_and_their_consensus_are_what_the_rows_say(demo: GoldenSet) -> None:
    items = judge_items_get(golden_set=demo)
    consensus, left_out, pairs = _by_hand(demo)
    assert {
        (i.query_id, i.doc_id): (i.human, items.methods[(i.query_id, i.doc_id)]) for i in items.items
    } == consensus
    assert {(n.query_id, n.doc_id) for n in items.no_consensus} == set(left_out)
    assert sorted(items.pairs, key=repr) == sorted(pairs, key=repr)
    # The disputed items' pairs count for the humans: leaving them out would overstate their agreement.
    assert any(p.grade_a != p.grade_b and (p.query_id, p.doc_id) in left_out for p in items.pairs)
    # Every kind of item and consensus is there.
    assert {s for sources in items.sources.values() for s in sources} == {DUAL, CALIBRATION, GOLD}
    assert set(items.methods.values()) == {GOLD, "agreed", "adjudicated", CALIBRATION_MEDIAN}
    reasons = {n.reason for n in items.no_consensus}
    assert any("awaiting third rater" in r or "a reviewer decides" in r for r in reasons), reasons
    queries = {q.external_id: q for q in demo.queries.all()}
    for item in items.items:
        q = queries[item.query_id]
        assert (item.stratum, item.locale) == (q.stratum, q.locale)
        pk = items.pks[(item.query_id, item.doc_id)]
        assert pk == (q.pk, demo.documents.get(doc_id=item.doc_id).pk)
    assert len({i.query_id for i in items.items}) >= 10


def _grades(items: JudgeItems, shift: int = 0) -> dict[tuple[int, int], int | None]:
    return {items.pks[(i.query_id, i.doc_id)]: min(3, max(0, i.human + shift)) for i in items.items}


def _alpha(a: list[int], b: list[int]) -> float:
    return float(
        krippendorff.alpha(reliability_data=[a, b], level_of_measurement="ordinal", value_domain=LABELS)
    )


def test_a_perfect_and_a_biased_judge_on_the_demo(demo: GoldenSet) -> None:
    items = judge_items_get(golden_set=demo)
    human = [i.human for i in items.items]
    a, b = [p.grade_a for p in items.pairs], [p.grade_b for p in items.pairs]

    perfect = judge_figures_get(golden_set=demo, grades=_grades(items), items=items, n_resamples=300)
    j = perfect.figures.overall.judge
    assert (j.n_items, j.n_errors, perfect.n_not_graded, perfect.n_outside) == (len(human), 0, 0, 0)
    assert j.kappa_quadratic.value == j.kappa_unweighted.value == j.exact.value == 1.0
    assert j.bias.value == 0.0 and j.kappa_quadratic.interval == (1.0, 1.0)
    assert j.confusion == tuple(map(tuple, confusion_matrix(human, human, labels=LABELS).tolist()))
    h = perfect.figures.overall.humans
    assert h.n_pairs == len(items.pairs)
    assert h.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(a, b, labels=LABELS, weights="quadratic"), abs=1e-12
    )
    assert h.kappa_unweighted.value == pytest.approx(cohen_kappa_score(a, b, labels=LABELS), abs=1e-12)
    assert h.alpha.value == pytest.approx(_alpha(a, b), abs=1e-12)
    assert h.exact.value == pytest.approx(np.mean(np.array(a) == b), abs=1e-12)
    own = {(i.query_id, i.doc_id): i.human for i in items.items}
    assert perfect.figures == judge_agreement(judged_items(items.items, own), items.pairs, n_resamples=300)
    assert qualification_verdicts(perfect.figures).overall.verdict == QUALIFIED

    # A judge one grade higher than the humans, that failed on one item and skipped another, and graded
    # a (query, document) that is no item.
    grades = _grades(items, shift=1)
    keys = sorted(grades)
    grades[keys[0]] = None
    del grades[keys[1]]
    grades[(0, 0)] = 2
    biased = judge_figures_get(golden_set=demo, grades=grades, items=items, n_resamples=300)
    assert (biased.n_not_graded, biased.n_outside) == (1, 1)
    by_pk = {items.pks[(i.query_id, i.doc_id)]: i for i in items.items}
    graded = [(by_pk[k].human, g) for k, g in grades.items() if k in by_pk and g is not None]
    hs, js = [x for x, _ in graded], [y for _, y in graded]
    j = biased.figures.overall.judge
    assert (j.n_items, j.n_errors) == (len(items.items) - 2, 1)
    assert j.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(hs, js, labels=LABELS, weights="quadratic"), abs=1e-12
    )
    assert j.kappa_unweighted.value == pytest.approx(cohen_kappa_score(hs, js, labels=LABELS), abs=1e-12)
    assert j.alpha.value == pytest.approx(_alpha(hs, js), abs=1e-12)
    assert j.bias.value == pytest.approx(np.mean(np.array(js) - hs), abs=1e-12) and j.bias.value > 0  # type: ignore[operator]
    assert j.exact.value == pytest.approx(np.mean([x == 3 for x in hs]), abs=1e-12)  # only 3 stays 3
    assert j.within_1.value == 1.0
    assert j.confusion == tuple(map(tuple, confusion_matrix(hs, js, labels=LABELS).tolist()))
    for scope in biased.figures.strata:
        mine = [
            (by_pk[k].human, g)
            for k, g in grades.items()
            if k in by_pk and g is not None and by_pk[k].stratum == scope.name
        ]
        assert scope.judge.n_items == len(mine)

    compared = judges_compare_get(
        golden_set=demo, judges={"perfect": _grades(items), "biased": grades}, items=items
    )
    assert compared.n_common == len(items.items) - 2
    assert [c.name for c in compared.judges] == ["biased", "perfect"]
    assert compared.judges[1].figures.overall.judge.kappa_quadratic.value == 1.0


def test_a_set_with_nothing_labeled_has_no_items(demo: GoldenSet) -> None:
    Judgment.objects.all().delete()
    GoldItem.objects.all().delete()
    items = judge_items_get(golden_set=demo)
    assert items.items == () and items.pairs == ()
    figures = judge_figures_get(golden_set=demo, grades={}, items=items).figures
    assert figures.overall.judge.kappa_quadratic.value.reason == "no item graded by the judge"  # type: ignore[union-attr]


def test_the_items_are_read_in_a_fixed_number_of_queries(demo: GoldenSet) -> None:
    with CaptureQueriesContext(connection) as before:
        judge_items_get(golden_set=demo)
    # Another round on more queries, and more gold: as many statements as before.
    reviewer = User.objects.get(username="reviewer")
    more = list(
        demo.queries.filter(status=Query.Status.ACTIVE, candidates__isnull=False)
        .distinct()
        .order_by("-external_id")[:3]
    )
    _round(demo, "after the push", more, ["rater1", "rater2"], lambda rater, candidate: 1)
    for candidate in more[0].candidates.order_by("id")[:3]:
        services.gold_mark(query=more[0], document=candidate.document, grade=1, by=reviewer)
    with CaptureQueriesContext(connection) as after:
        items = judge_items_get(golden_set=demo)
    assert len(after.captured_queries) == len(before.captured_queries)
    assert {(i.query_id, i.doc_id) for i in items.items} >= {
        (more[0].external_id, c.document.doc_id) for c in more[0].candidates.order_by("id")[:3]
    }
