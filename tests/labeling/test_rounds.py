"""Calibration rounds on the Django side (labeling/services/calibration.py and selectors/calibration.py, the
round pages): starting one, grading it through the ordinary grading page and endpoint, its figures over the
round only, promotion, access; and the demo with five raters graded over HTTP, its page's figures checked
against the krippendorff package and scikit-learn."""

from __future__ import annotations

import io
import itertools
import json
import random
import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from assay.labels.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, Rating, bootstrap_samples
from assay.labels.calibration import calibration_compute
from labeling import selectors, services
from labeling.models import Adjudication, Assignment, CalibrationRound, Candidate, GoldenSet, Judgment, Query
from labeling.selectors import agreement_dashboard_get, labels_consolidated, ratings_list
from tests import factories
from tests.support.forms import error_summary

pytestmark = pytest.mark.django_db


@pytest.fixture
def carol(db: None) -> User:
    return factories.UserFactory.create(username="carol", groups=["raters"])


@dataclass
class Setup:
    golden_set: GoldenSet
    q1: Query  # three candidates
    q2: Query  # two candidates
    retired: Query
    no_pool: Query
    raters: list[User]


@pytest.fixture
def setup(golden_set: GoldenSet, alice: User, bob: User, carol: User) -> Setup:
    golden_set.raters.add(carol)
    q1 = factories.pooled_query(golden_set, 3, external_id="q-1", text="cancel my plan")
    q2 = factories.pooled_query(golden_set, 2, external_id="q-2", text="change billing email")
    retired = factories.pooled_query(golden_set, 2, external_id="q-3", status=Query.Status.RETIRED)
    no_pool = factories.QueryFactory.create(golden_set=golden_set, external_id="q-4")
    return Setup(golden_set, q1, q2, retired, no_pool, [alice, bob, carol])


def _start(s: Setup, rita: User, name: str = "spring", **kwargs: Any) -> CalibrationRound:
    return services.calibration_round_start(
        golden_set=s.golden_set,
        name=name,
        queries=kwargs.get("queries", [s.q1, s.q2]),
        raters=kwargs.get("raters", s.raters),
        by=rita,
    )


def _docs(query: Query) -> list[Candidate]:
    return list(query.candidates.select_related("document").order_by("best_rank"))


def _grade(round_: CalibrationRound, grades: dict[tuple[str, str], list[int]]) -> None:
    """grades[(rater, query external id)] = one grade per candidate in rank order, saved by the service."""
    for (username, external_id), values in grades.items():
        assignment = Assignment.objects.get(
            calibration_round=round_, rater__username=username, query__external_id=external_id
        )
        for candidate, value in zip(_docs(assignment.query), values, strict=False):
            services.judgment_submit(
                assignment_id=assignment.pk,
                rater=assignment.rater,
                candidate_id=candidate.pk,
                grade=value,
                note="calibration",
            )


# alice 0 1 2 | 3 3   bob 1 1 2 | 3 2   carol 2 1 3 | 2 2
GRADES = {
    ("alice", "q-1"): [0, 1, 2],
    ("alice", "q-2"): [3, 3],
    ("bob", "q-1"): [1, 1, 2],
    ("bob", "q-2"): [3, 2],
    ("carol", "q-1"): [2, 1, 3],
    ("carol", "q-2"): [2, 2],
}


def _writes() -> tuple[int, int, int, int]:
    return (
        CalibrationRound.objects.count(),
        Assignment.objects.count(),
        Adjudication.objects.count(),
        Judgment.objects.count(),
    )


# --- starting a round --------------------------------------------------------------------------------


def test_a_round_gives_every_rater_every_query_with_the_whole_pool(setup: Setup, rita: User) -> None:
    round_ = _start(setup, rita)
    assert (round_.name, round_.created_by, round_.golden_set) == ("spring", rita, setup.golden_set)
    assert round_.promoted_at is None and round_.promoted_by is None
    made = list(Assignment.objects.filter(calibration_round=round_).order_by("query__external_id", "rater"))
    assert sorted((a.query.external_id, a.rater.username) for a in made) == sorted(
        itertools.product(["q-1", "q-2"], ["alice", "bob", "carol"])
    )
    assert {a.kind for a in made} == {Assignment.Kind.CALIBRATION}
    assert {a.status for a in made} == {Assignment.Status.OPEN}
    assert not any(a.scope.exists() for a in made)


def test_a_rater_who_holds_the_query_already_gets_it_again_for_the_round(
    setup: Setup, rita: User, alice: User
) -> None:
    everyday = factories.AssignmentFactory.create(query=setup.q1, rater=alice)
    round_ = _start(setup, rita)
    assert Assignment.objects.filter(query=setup.q1, rater=alice).count() == 2
    assert Assignment.objects.get(query=setup.q1, rater=alice, calibration_round=round_) != everyday


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"name": "  "}, "name: give the round a name"),
        ({"name": "x" * 201}, "name: longer than 200 characters"),
        ({"raters": "one"}, "raters: a calibration round needs two or more raters, got 1"),
        ({"raters": "none"}, "raters: a calibration round needs two or more raters, got 0"),
        ({"raters": "outsider"}, "raters: dave is not a rater of golden set help-center"),
        ({"queries": "none"}, "queries: choose at least one query"),
        ({"queries": "retired"}, "queries: q-3 is retired: a round grades active queries only"),
        ({"queries": "no_pool"}, "queries: q-4 has no candidate pool yet: nothing to grade"),
        ({"queries": "other_set"}, "is not a query of golden set help-center"),
    ],
)
def test_a_round_is_refused_with_the_problem_and_nothing_written(
    setup: Setup, rita: User, change: dict[str, str], problem: str
) -> None:
    dave = factories.UserFactory.create(username="dave", groups=["raters"])
    other = factories.pooled_query(factories.GoldenSetFactory.create(), 2, external_id="elsewhere")
    raters = {"one": setup.raters[:1], "none": [], "outsider": [*setup.raters, dave]}
    queries = {
        "none": [],
        "retired": [setup.q1, setup.retired],
        "no_pool": [setup.no_pool],
        "other_set": [other],
    }
    before = _writes()
    with pytest.raises(services.CalibrationError) as exc:
        _start(
            setup,
            rita,
            name=change.get("name", "spring"),
            raters=raters.get(change.get("raters", ""), setup.raters),
            queries=queries.get(change.get("queries", ""), [setup.q1]),
        )
    assert any(problem in p for p in exc.value.problems), exc.value.problems
    assert _writes() == before


def test_every_problem_is_named_at_once_and_a_taken_name_is_refused(setup: Setup, rita: User) -> None:
    _start(setup, rita)
    before = _writes()
    with pytest.raises(services.CalibrationError) as exc:
        _start(setup, rita, raters=setup.raters[:1], queries=[setup.retired, setup.no_pool])
    assert exc.value.problems == [
        "name: golden set help-center already has a round named 'spring'",
        "raters: a calibration round needs two or more raters, got 1 (agreement is between raters)",
        "queries: q-3 is retired: a round grades active queries only",
        "queries: q-4 has no candidate pool yet: nothing to grade",
    ]
    assert _writes() == before


# --- grading it ----------------------------------------------------------------------------------------


def test_raters_grade_the_round_on_the_ordinary_pages_and_see_nobody_elses_grades(
    setup: Setup, rita: User, alice: User, client: Client
) -> None:
    round_ = _start(setup, rita)
    _grade(round_, {("bob", "q-1"): [3, 3, 3], ("carol", "q-1"): [0, 0, 0]})
    Judgment.objects.filter(assignment__rater__username="bob").update(note="BOBS-SECRET-NOTE")
    mine = Assignment.objects.get(calibration_round=round_, rater=alice, query=setup.q1)
    client.force_login(alice)
    queue = client.get(reverse("labeling:queue"))
    assert reverse("labeling:grade", args=[mine.pk]) in queue.content.decode()
    page = client.get(reverse("labeling:grade", args=[mine.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "cancel my plan" in body
    for hidden in ("BOBS-SECRET-NOTE", "bob", "carol", "spring", "calibration"):
        assert hidden not in body, hidden
    assert 'data-grade=""' in body  # alice has graded nothing: no one else's grade fills her page
    candidate = _docs(setup.q1)[0]
    saved = client.post(
        reverse("labeling:grades", args=[mine.pk]),
        data=json.dumps({"candidate": factories.token(mine, candidate), "grade": 2}),
        content_type="application/json",
    )
    assert saved.status_code == 200, saved.content
    assert saved.json()["graded"] == 1 and saved.json()["total"] == 3
    assert client.get(reverse("labeling:grades", args=[mine.pk])).json()["grades"] == {
        factories.token(mine, candidate): {"grade": 2, "note": ""}
    }
    # Someone else's round assignment is a 404 like any other.
    bobs = Assignment.objects.get(calibration_round=round_, rater__username="bob", query=setup.q1)
    assert client.get(reverse("labeling:grade", args=[bobs.pk])).status_code == 404


def test_the_figures_cover_the_rounds_grades_only_whatever_the_status(
    setup: Setup, rita: User, alice: User, bob: User
) -> None:
    # Everyday work on the same query, graded very differently: it must not reach the round.
    for rater, kind in ((alice, "primary"), (bob, "second")):
        everyday = factories.AssignmentFactory.create(query=setup.q1, rater=rater, kind=kind)
        for candidate in _docs(setup.q1):
            factories.grade(everyday, candidate.document, 0)
    round_ = _start(setup, rita)
    _grade(round_, GRADES)
    # alice marks her two queries done (grades locked); the figures read every grade all the same.
    for assignment in Assignment.objects.filter(calibration_round=round_, rater=alice):
        done = services.assignment_done(assignment_id=assignment.pk, rater=alice)
        assert done.status == Assignment.Status.DONE and done.overturns == [] and done.proposed == 0
    expected = [
        Rating(q, c.document.doc_id, rater, g)
        for (rater, q), values in GRADES.items()
        for c, g in zip(_docs(Query.objects.get(external_id=q)), values, strict=True)
    ]
    got = selectors.calibration_round_ratings(round=round_)
    assert sorted((r.query_id, r.doc_id, r.rater, r.grade) for r in got) == sorted(
        (r.query_id, r.doc_id, r.rater, r.grade) for r in expected
    )
    page = selectors.calibration_round_get(round=round_)
    assert page.report is not None and page.problem is None
    direct = calibration_compute(expected, raters=["alice", "bob", "carol"])
    assert page.report.agreement.alpha == direct.agreement.alpha
    assert page.report.rater_figures == direct.rater_figures
    assert page.pairs == direct.pairs
    assert page.n_grades == 15
    assert [(p.rater, p.graded, p.total, p.done, p.open) for p in page.progress] == [
        ("alice", 5, 5, 2, 0),
        ("bob", 5, 5, 0, 2),
        ("carol", 5, 5, 0, 2),
    ]
    # alice: q-1 0-1.5, 1-1, 2-2.5; q-2 3-2.5, 3-2 -> (-1.5 + 0 - 0.5 + 0.5 + 1) / 5 = -0.1
    assert page.report.rater("alice").bias == pytest.approx(-0.1)
    # Units: q-1 (0,1,2) 1, (1,1,1) 1, (2,2,3) 2; q-2 (2,3,3) 3, (2,2,3) 2: no tie.
    assert page.promotable == 5 and page.ties == []


def test_a_round_changes_no_label_and_no_everyday_figure_until_promoted(
    setup: Setup, rita: User, alice: User
) -> None:
    everyday = factories.AssignmentFactory.create(query=setup.q1, rater=alice)
    for candidate in _docs(setup.q1):
        factories.grade(everyday, candidate.document, 1)
    labels, everyday_ratings = (
        labels_consolidated(golden_set=setup.golden_set),
        ratings_list(golden_set=setup.golden_set),
    )
    round_ = _start(setup, rita)
    _grade(round_, GRADES)
    assert labels_consolidated(golden_set=setup.golden_set) == labels
    assert ratings_list(golden_set=setup.golden_set) == everyday_ratings


# --- promotion -----------------------------------------------------------------------------------------


def test_promotion_makes_the_medians_the_final_labels_and_leaves_ties_to_a_reviewer(
    setup: Setup, rita: User, alice: User, bob: User, carol: User
) -> None:
    dave = factories.UserFactory.create(username="dave", groups=["raters"])
    setup.golden_set.raters.add(dave)
    round_ = _start(setup, rita, raters=[alice, bob, carol, dave])
    # q-1: (0,1,1,2) median 1; (1,1,2,2) a tie; (2,2,3,3) a tie. q-2: (3,3,3,2) 3; only alice on the second.
    _grade(
        round_,
        {
            ("alice", "q-1"): [0, 1, 2],
            ("bob", "q-1"): [1, 1, 2],
            ("carol", "q-1"): [1, 2, 3],
            ("dave", "q-1"): [2, 2, 3],
            ("alice", "q-2"): [3, 1],
            ("bob", "q-2"): [3],
            ("carol", "q-2"): [3],
            ("dave", "q-2"): [2],
        },
    )
    q1, q2 = _docs(setup.q1), _docs(setup.q2)
    result = services.calibration_round_promote(round=round_, by=rita)
    assert [(a.query.external_id, a.document.doc_id, a.grade, a.reviewer) for a in result.adjudications] == [
        ("q-1", q1[0].document.doc_id, 1, rita),
        ("q-2", q2[0].document.doc_id, 3, rita),
        ("q-2", q2[1].document.doc_id, 1, rita),
    ]
    assert result.adjudications[0].rationale == "calibration round spring: median of 0, 1, 1, 2 (4 raters)"
    assert result.adjudications[2].rationale == "calibration round spring: median of 1 (1 rater)"
    assert [(t.doc_id, t.grades) for t in result.ties] == [
        (q1[1].document.doc_id, (1, 1, 2, 2)),
        (q1[2].document.doc_id, (2, 2, 3, 3)),
    ]
    round_.refresh_from_db()
    assert round_.promoted_by == rita and round_.promoted_at is not None
    finals = {
        (label.query_id, label.document_id): (label.grade, label.method)
        for label in labels_consolidated(golden_set=setup.golden_set).labels
    }
    assert finals == {
        (setup.q1.pk, q1[0].document_id): (1, "adjudicated"),
        (setup.q2.pk, q2[0].document_id): (3, "adjudicated"),
        (setup.q2.pk, q2[1].document_id): (1, "adjudicated"),
    }

    before = _writes()
    with pytest.raises(services.CalibrationError) as exc:
        services.calibration_round_promote(round=round_, by=alice)
    (problem,) = exc.value.problems
    assert re.fullmatch(r"already promoted by rita at \d{4}-\d\d-\d\d \d\d:\d\d: nothing changed", problem)
    assert _writes() == before


def test_a_round_without_grades_or_with_only_ties_is_not_promoted(setup: Setup, rita: User) -> None:
    round_ = _start(setup, rita, queries=[setup.q2], raters=setup.raters[:2])
    with pytest.raises(services.CalibrationError, match="the round has no grades yet: nothing to promote"):
        services.calibration_round_promote(round=round_, by=rita)
    _grade(round_, {("alice", "q-2"): [1, 2], ("bob", "q-2"): [2, 3]})
    with pytest.raises(services.CalibrationError, match="every graded document is a tie"):
        services.calibration_round_promote(round=round_, by=rita)
    round_.refresh_from_db()
    assert round_.promoted_at is None and not Adjudication.objects.exists()


def test_a_query_retired_since_the_round_started_is_skipped_and_said_so(setup: Setup, rita: User) -> None:
    round_ = _start(setup, rita)
    _grade(round_, GRADES)
    services.query_retire(query=setup.q2, by=rita, reason="out of scope now")
    result = services.calibration_round_promote(round=round_, by=rita)
    assert {a.query for a in result.adjudications} == {setup.q1}
    assert len(result.skipped) == 2 and all("query q-2 is retired, no label" in s for s in result.skipped)


# --- pages -------------------------------------------------------------------------------------------


def _text(html: bytes) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html.decode())))


def _section(html: str, element_id: str) -> str:
    start = html.index(f'id="{element_id}"')
    return html[start : html.find("</section>", start)]


def test_a_reviewer_starts_a_round_from_the_page_and_sees_it_measured(
    setup: Setup, rita: User, client: Client
) -> None:
    client.force_login(rita)
    url = reverse("labeling:calibration_list", args=["help-center"])
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert 'value="q-1"' in body and 'value="q-3"' not in body  # active queries only
    assert 'value="carol"' in body and "No calibration rounds yet." in body

    refused = client.post(url, {"name": "", "queries": ["q-1", "q-4"], "raters": ["alice"]})
    assert refused.status_code == 400
    summary = error_summary(refused)  # each problem linked to its field: the name, the picker, the boxes
    assert summary.heading == "Round not started: 3 problems to fix"
    assert sorted(summary.entries) == [
        ("name: give the round a name (it is quoted in every grade it promotes)", "id_name"),
        ("queries: q-4 has no candidate pool yet: nothing to grade", "query-picker"),
        (
            "raters: a calibration round needs two or more raters, got 1 (agreement is between raters)",
            "id_raters_0",
        ),
    ]
    assert not CalibrationRound.objects.exists()
    tampered = client.post(url, {"name": "x", "queries": ["nope"], "raters": ["alice", "ghost"]})
    assert tampered.status_code == 400
    assert "queries: nope is not a query of golden set help-center" in error_summary(tampered).texts
    assert "raters: there is no user ghost" in _text(tampered.content)

    started = client.post(
        url, {"name": "spring", "queries": ["q-1", "q-2"], "raters": ["alice", "bob", "carol"]}, follow=True
    )
    round_ = CalibrationRound.objects.get()
    assert started.redirect_chain == [
        (reverse("labeling:calibration_round", args=["help-center", round_.pk]), 303)
    ]
    assert "Round 'spring' started: 3 raters × 2 queries" in _text(started.content)
    # Nothing graded yet: the figures say why they are undefined.
    assert "undefined: no document has two or more grades" in _text(started.content)
    assert "undefined: no grades yet" in _text(started.content)
    _grade(round_, GRADES)

    detail = client.get(reverse("labeling:calibration_round", args=["help-center", round_.pk]))
    html = detail.content.decode()
    report = selectors.calibration_round_get(round=round_).report
    assert report is not None
    alpha = report.agreement.alpha.value
    assert isinstance(alpha, float)
    assert f'<span data-figure="alpha">{alpha:.3f}</span>' in html
    assert "median of the round&#x27;s grades; a tie of an even count is left to a reviewer" in html
    promote = _section(html, "promote")
    assert 'name="csrfmiddlewaretoken"' in promote
    assert reverse("labeling:calibration_promote", args=["help-center", round_.pk]) in promote
    raters = _section(html, "raters")
    assert '<tr data-rater="alice">' in raters and '<span data-figure="bias">-0.100</span>' in raters
    assert len(re.findall(r"<tr data-pair=", _section(html, "kappa"))) == 3

    agreement = client.get(reverse("labeling:agreement", args=["help-center"])).content.decode()
    assert reverse("labeling:calibration_round", args=["help-center", round_.pk]) in _section(
        agreement, "calibration"
    )

    done = client.post(reverse("labeling:calibration_promote", args=["help-center", round_.pk]), follow=True)
    assert "Promoted 5 median grades of round 'spring' as adjudications" in _text(done.content)
    again = client.post(reverse("labeling:calibration_promote", args=["help-center", round_.pk]), follow=True)
    assert again.status_code == 200
    assert "Not promoted: already promoted by rita at" in _text(again.content)
    assert Adjudication.objects.count() == 5


@pytest.mark.parametrize("who", ["other-reviewer", "alice", "charlie"])
def test_everyone_but_the_sets_reviewers_gets_404_on_every_round_page(
    setup: Setup, rita: User, charlie: User, client: Client, who: str
) -> None:
    round_ = _start(setup, rita)
    _grade(round_, GRADES)
    if who == "other-reviewer":
        user = factories.UserFactory.create(username="otto", groups=["reviewers"])
        factories.GoldenSetFactory.create(slug="other", reviewers=[user])
    else:
        user = User.objects.get(username=who)
    client.force_login(user)
    list_url = reverse("labeling:calibration_list", args=["help-center"])
    before = _writes()
    requests = [
        client.get(list_url),
        client.post(list_url, {"name": "x", "queries": ["q-1"], "raters": ["alice", "bob"]}),
        client.get(reverse("labeling:calibration_round", args=["help-center", round_.pk])),
        client.post(reverse("labeling:calibration_promote", args=["help-center", round_.pk])),
    ]
    assert [r.status_code for r in requests] == [404] * 4
    assert _writes() == before
    round_.refresh_from_db()
    assert round_.promoted_at is None


def test_a_round_of_another_set_is_404_and_an_admin_reaches_every_round(
    setup: Setup, rita: User, client: Client
) -> None:
    round_ = _start(setup, rita)
    factories.GoldenSetFactory.create(slug="other", reviewers=[rita])
    client.force_login(rita)
    assert client.get(reverse("labeling:calibration_round", args=["other", round_.pk])).status_code == 404
    admin = factories.UserFactory.create(username="root", groups=["admins"])
    client.force_login(admin)
    assert (
        client.get(reverse("labeling:calibration_round", args=["help-center", round_.pk])).status_code == 200
    )
    assert client.get(reverse("labeling:calibration_list", args=["help-center"])).status_code == 200


# --- the demo, five raters, graded over HTTP ------------------------------------------------------------


def _figure(value: float) -> str:
    """As the pages print a figure (labeling_tags.figure)."""
    return f"{round(value, 3) + 0.0:.3f}"


def _grade_over_http(user: User, round_: CalibrationRound, choose: Any) -> dict[tuple[str, str], int]:
    """Grade every candidate of the user's round assignments through the queue, the grading page and
    the grades endpoint, with CSRF checks on; returns (query, doc id) -> grade."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    queue = client.get(reverse("labeling:queue")).content.decode()
    given: dict[tuple[str, str], int] = {}
    mine = Assignment.objects.filter(calibration_round=round_, rater=user).select_related("query")
    others = [
        u
        for u in round_.assignments.values_list("rater__username", flat=True).distinct()
        if u != user.username
    ]
    for assignment in mine:
        url = reverse("labeling:grade", args=[assignment.pk])
        assert url in queue
        page = client.get(url).content.decode()
        assert not any(f">{name}<" in page or f" {name} " in page for name in others)
        token = client.cookies["csrftoken"].value
        doc_of = {
            factories.token(assignment, pk): doc_id
            for pk, doc_id in Candidate.objects.filter(query=assignment.query).values_list(
                "pk", "document__doc_id"
            )
        }
        ids = re.findall(r'data-candidate="([0-9a-f]+)"', page)
        assert sorted(ids) == sorted(doc_of)
        for candidate_id in ids:
            key = (assignment.query.external_id, doc_of[candidate_id])
            grade = choose(user.username, key)
            response = client.post(
                reverse("labeling:grades", args=[assignment.pk]),
                data=json.dumps({"candidate": candidate_id, "grade": grade, "note": "calibration round"}),
                content_type="application/json",
                HTTP_X_CSRFTOKEN=token,
            )
            assert response.status_code == 200, response.content
            given[key] = grade
    return given


def test_the_demo_with_five_raters_measures_the_round_as_the_packages_do(
    tmp_path: Path, settings: Any, client: Client
) -> None:
    settings.VAR_DIR = tmp_path  # demo_load keeps the demo logins there
    call_command("demo_load", stdout=io.StringIO())
    golden_set = GoldenSet.objects.get(slug="help-center")
    reviewer = User.objects.get(username="reviewer")
    raters_group = Group.objects.get(name="raters")
    for name in ("rater3", "rater4", "rater5"):
        user = User.objects.create_user(username=name, password="x")
        user.groups.add(raters_group)
        golden_set.raters.add(user)
    names = ["rater1", "rater2", "rater3", "rater4", "rater5"]
    labels_before = labels_consolidated(golden_set=golden_set)
    ratings_before = ratings_list(golden_set=golden_set)
    alpha_before = agreement_dashboard_get(golden_set=golden_set).report.alpha

    chosen = list(
        golden_set.queries.filter(status=Query.Status.ACTIVE, candidates__isnull=False)
        .distinct()
        .order_by("external_id")
        .values_list("external_id", flat=True)[:4]
    )
    client.force_login(reviewer)
    started = client.post(
        reverse("labeling:calibration_list", args=["help-center"]),
        {"name": "demo calibration", "queries": chosen, "raters": names},
    )
    assert started.status_code == 303, _text(started.content)
    round_ = CalibrationRound.objects.get(golden_set=golden_set, name="demo calibration")

    # Each rater leans their own way around a shared "true" grade per document.
    rng = random.Random(11)
    truth: dict[tuple[str, str], int] = {}
    lean = {"rater1": 0, "rater2": 0, "rater3": 1, "rater4": -1, "rater5": 0}

    def choose(rater: str, key: tuple[str, str]) -> int:
        base = truth.setdefault(key, rng.randint(0, 3))
        return min(3, max(0, base + lean[rater] + rng.choice([-1, 0, 0, 0, 0, 1])))

    grades: dict[str, dict[tuple[str, str], int]] = {
        name: _grade_over_http(User.objects.get(username=name), round_, choose) for name in names
    }

    # Independently, from the grades as sent: raters x documents.
    units = sorted(grades["rater1"])
    assert all(sorted(g) == units for g in grades.values())
    data = np.array([[grades[name][u] for u in units] for name in names], dtype=float)
    alpha = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
    )
    # The interval: the same draws over whole queries, the package called on each resample.
    queries = sorted({q for q, _ in units})
    columns = {q: [i for i, u in enumerate(units) if u[0] == q] for q in queries}
    resampled = [
        krippendorff.alpha(
            reliability_data=data[:, [i for qi in draw for i in columns[queries[qi]]]],
            level_of_measurement="ordinal",
            value_domain=[0, 1, 2, 3],
        )
        for draw in bootstrap_samples(len(queries), n_resamples=DEFAULT_RESAMPLES, seed=DEFAULT_SEED)
    ]
    low, high = np.percentile([a for a in resampled if not np.isnan(a)], [2.5, 97.5])

    page = client.get(reverse("labeling:calibration_round", args=["help-center", round_.pk]))
    html = page.content.decode()
    report = selectors.calibration_round_get(round=round_).report
    assert report is not None
    assert report.agreement.alpha.value == pytest.approx(alpha, abs=1e-12)
    assert report.agreement.alpha.interval == pytest.approx((low, high), abs=1e-12)
    assert f'<span data-figure="alpha">{_figure(alpha)}</span>' in html
    assert f'<span data-figure="interval">[{_figure(low)}, {_figure(high)}]</span>' in html
    assert f'data-figure="reading">{report.agreement.alpha.reading}<' in html

    kappa = _section(html, "kappa")
    for a, b in itertools.combinations(names, 2):
        ga, gb = data[names.index(a)].astype(int), data[names.index(b)].astype(int)
        row = kappa[kappa.index(f'<tr data-pair="{a}|{b}">') :].split("</tr>")[0]
        expected = {
            "kappa_quadratic": cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="quadratic"),
            "kappa_unweighted": cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3]),
            "kappa_binary": cohen_kappa_score((ga >= 2).astype(int), (gb >= 2).astype(int), labels=[0, 1]),
            "exact": float(np.mean(ga == gb)),
        }
        for figure, value in expected.items():
            assert f'data-figure="{figure}">{_figure(value)}<' in row, (a, b, figure)
            assert getattr(report.agreement.pair(a, b), figure) == pytest.approx(value, abs=1e-12)
        assert f'data-figure="n_shared">{len(units)}<' in row

    table = _section(html, "raters")
    for i, name in enumerate(names):
        others = np.delete(data, i, axis=0)
        bias = float(np.mean(data[i] - others.mean(axis=0)))
        distance = np.abs(data[i] - np.median(others, axis=0))
        exact, within = float(np.mean(distance == 0)), float(np.mean(distance <= 1))
        row = table[table.index(f'<tr data-rater="{name}">') :].split("</tr>")[0]
        assert f'<span data-figure="bias">{_figure(bias)}</span> ({len(units)})' in row
        assert f'<td class="num median">{_figure(exact)} · {_figure(within)} ({len(units)})</td>' in row
        assert report.rater(name).bias == pytest.approx(bias, abs=1e-12)
    assert report.rater("rater3").bias > 0 > report.rater("rater4").bias  # type: ignore[operator]

    # Nothing everyday moved: labels, the everyday ratings and their alpha.
    assert labels_consolidated(golden_set=golden_set) == labels_before
    assert ratings_list(golden_set=golden_set) == ratings_before
    assert agreement_dashboard_get(golden_set=golden_set).report.alpha == alpha_before

    promoted = client.post(reverse("labeling:calibration_promote", args=["help-center", round_.pk]))
    assert promoted.status_code == 303
    medians = {u: np.sort(data[:, j]) for j, u in enumerate(units)}
    promotable = {u: int(g[2]) for u, g in medians.items()}  # five grades: always a median
    doc_pk = dict(golden_set.documents.values_list("doc_id", "pk"))
    query_pk = dict(golden_set.queries.values_list("external_id", "pk"))
    after = {
        (label.query_id, label.document_id): label
        for label in labels_consolidated(golden_set=golden_set).labels
    }
    for (q, d), grade in promotable.items():
        label = after[(query_pk[q], doc_pk[d])]
        assert (label.grade, label.method) == (grade, "adjudicated")
    untouched = {
        (label.query_id, label.document_id): label
        for label in labels_before.labels
        if label.query_id not in {query_pk[q] for q in queries}
    }
    assert all(after[key] == label for key, label in untouched.items())
    assert ratings_list(golden_set=golden_set) == ratings_before
    assert Adjudication.objects.filter(
        rationale__startswith="calibration round demo calibration: median of "
    ).count() == len(units)
