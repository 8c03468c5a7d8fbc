"""Readings on the pages: the agreement page and a calibration round's page read alpha and kappa from their
intervals with the set's thresholds, shown beside the reading; the thresholds form takes them and names
bad ones (docs/agreement.md, "Readings")."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from labeling import selectors, services
from labeling.forms import ThresholdsForm
from labeling.models import Assignment, GoldenSet
from labeling.selectors import agreement_dashboard_get
from tests import factories
from tests.support.forms import error_summary

pytestmark = pytest.mark.django_db

# Per query, (alice's, bob's) grades on its documents: they agree everywhere but on one document, two grades
# apart. Alpha is 0.904; resamples that draw that query often are far lower: the interval is (0.577, 1.0).
GRADES = [
    [(3, 3), (1, 1)],
    [(0, 0), (2, 2)],
    [(3, 3)],
    [(1, 1), (0, 0)],
    [(2, 2), (3, 3)],
    [(0, 0)],
    [(2, 0), (1, 1)],
    [(2, 2), (1, 1)],
    [(1, 1)],
    [(3, 3), (0, 0)],
    [(2, 2)],
]


@pytest.fixture
def reviewer(client: Client, rita: User) -> Client:
    client.force_login(rita)
    return client


@pytest.fixture
def graded(golden_set: GoldenSet, alice: User, bob: User) -> GoldenSet:
    """Alice (primary) and Bob (second) grade every document of GRADES' queries."""
    for i, rows in enumerate(GRADES):
        query = factories.pooled_query(golden_set, len(rows), external_id=f"q-{i:02d}")
        first = factories.AssignmentFactory.create(query=query, rater=alice)
        second = factories.AssignmentFactory.create(query=query, rater=bob, kind=Assignment.Kind.SECOND)
        for candidate, (a, b) in zip(query.candidates.order_by("best_rank"), rows, strict=True):
            factories.grade(first, candidate.document, a)
            factories.grade(second, candidate.document, b)
    return golden_set


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def _section(html: bytes, element_id: str) -> str:
    body = html.decode()
    start = body.index(f'id="{element_id}"')
    return _text(body[start : body.find("</section>", start)])


def _reading_badges(html: bytes, element_id: str) -> list[str]:
    body = html.decode()
    start = body.index(f'id="{element_id}"')
    return re.findall(r'data-figure="reading">([^<]+)<', body[start : body.find("</section>", start)])


def test_a_high_alpha_with_a_wide_interval_is_not_read_as_reliable(
    graded: GoldenSet, reviewer: Client
) -> None:
    alpha = agreement_dashboard_get(golden_set=graded).report.alpha
    assert isinstance(alpha.value, float) and isinstance(alpha.interval, tuple)
    low, high = alpha.interval
    # The case the point value alone read as "reliable": above 0.800, with a lower bound far below 0.667.
    assert alpha.value >= 0.8 and low < 0.667 <= high
    assert alpha.n_queries == len(GRADES) >= graded.min_pairable_units

    page = reviewer.get(reverse("labeling:agreement", args=[graded.slug]))
    assert page.status_code == 200
    assert _reading_badges(page.content, "alpha") == ["not enough data"]
    text = _section(page.content, "alpha")
    assert (
        f"{alpha.value:.3f} not enough data (interval [{low:.3f}, {high:.3f}] spans 0.667: tentative needs a"
        " lower bound >= 0.667, unreliable an upper bound < 0.667)"
    ) in text
    assert "reliable (" not in text
    # The set's thresholds beside the reading.
    assert "lower bound ≥ 0.800 reliable; ≥ 0.667 tentative" in text
    assert "fewer than 10 queries to resample, not enough data" in text
    # The pair's quadratic kappa is read the same way, on the queries the two share.
    kappa = _section(page.content, "kappa")
    assert "alice · bob" in kappa and f"({len(GRADES)}) not enough data (interval [" in kappa


def test_the_sets_thresholds_change_the_reading_on_the_page(graded: GoldenSet, reviewer: Client) -> None:
    low = agreement_dashboard_get(golden_set=graded).report.alpha.interval[0]  # type: ignore[index]
    url = reverse("labeling:thresholds", args=[graded.slug])
    tentative = round(low - 0.05, 3)
    form = {
        "hard_diff": 2,
        "min_dual_docs": 5,
        "min_exact": 0.55,
        "max_mad": 0.45,
        "reliable_min": 0.95,
        "tentative_min": tentative,
        "min_pairable_units": 11,
    }
    saved = reviewer.post(url, form, follow=True)
    assert "Thresholds saved" in _text(saved.content.decode())
    graded.refresh_from_db()
    assert (graded.reliable_min, graded.tentative_min, graded.min_pairable_units) == (0.95, tentative, 11)
    page = reviewer.get(reverse("labeling:agreement", args=[graded.slug]))
    assert _reading_badges(page.content, "alpha") == ["tentative"]
    text = _section(page.content, "alpha")
    assert f"tentative (lower bound {low:.3f} >= {tentative:.3f}; reliable needs >= 0.950)" in text
    assert f"lower bound ≥ 0.950 reliable; ≥ {tentative:.3f} tentative" in text
    # One more query than the set has: no reading at all.
    reviewer.post(url, {**form, "min_pairable_units": 12})
    page = reviewer.get(reverse("labeling:agreement", args=[graded.slug]))
    assert "not enough data (11 queries with pairable grades; a reading needs >= 12)" in _section(
        page.content, "alpha"
    )


def test_a_calibration_round_reads_with_the_sets_thresholds(
    golden_set: GoldenSet, alice: User, bob: User, rita: User, reviewer: Client
) -> None:
    golden_set.reliable_min, golden_set.tentative_min, golden_set.min_pairable_units = 0.9, 0.5, 2
    golden_set.save()
    queries = [factories.pooled_query(golden_set, 2, external_id=f"q-{i}") for i in range(3)]
    round_ = services.calibration_round_start(
        golden_set=golden_set,
        name="spring",
        queries=queries,
        raters=[alice, bob],
        by=rita,
    )
    grades = {"alice": [3, 0, 1, 2, 0, 3], "bob": [3, 0, 1, 2, 1, 3]}
    for rater, values in grades.items():
        cells = [
            (a, c.document)
            for a in Assignment.objects.filter(calibration_round=round_, rater__username=rater).order_by(
                "query__external_id"
            )
            for c in a.query.candidates.order_by("best_rank")
        ]
        for (assignment, document), value in zip(cells, values, strict=True):
            factories.grade(assignment, document, value)
    page = reviewer.get(reverse("labeling:calibration_round", args=[golden_set.slug, round_.pk]))
    assert page.status_code == 200
    alpha = selectors.calibration_round_get(round=round_).report.agreement.alpha  # type: ignore[union-attr]
    assert alpha.thresholds == golden_set.reading_thresholds
    text = _section(page.content, "alpha")
    assert f"{alpha.reading} ({alpha.reading_why})" in text
    assert "lower bound ≥ 0.900 reliable; ≥ 0.500 tentative" in text
    assert "fewer than 2 queries to resample" in text
    assert _reading_badges(page.content, "kappa") == [
        selectors.calibration_round_get(round=round_).pairs[0].kappa_quadratic_reading
    ]


GOOD = {
    "hard_diff": 2,
    "min_dual_docs": 5,
    "min_exact": 0.55,
    "max_mad": 0.45,
    "reliable_min": 0.8,
    "tentative_min": 0.667,
    "min_pairable_units": 10,
}


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        ({}, {}),
        ({"reliable_min": 1, "tentative_min": 1, "min_pairable_units": 2}, {}),
        ({"tentative_min": 0}, {"tentative_min": "0.0 must be above 0"}),
        ({"tentative_min": -0.2}, {"tentative_min": "-0.2 must be above 0"}),
        ({"tentative_min": 0.9}, {"tentative_min": "0.9 must not be above reliable_min (0.8)"}),
        ({"reliable_min": 1.2, "tentative_min": 0.9}, {"reliable_min": "1.2 must be at most 1"}),
        ({"min_pairable_units": 1}, {"min_pairable_units": "1 must be a whole number of at least 2"}),
        ({"min_pairable_units": 2.5}, {"min_pairable_units": "Enter a whole number."}),
        ({"reliable_min": "high"}, {"reliable_min": "Enter a number."}),
        ({"tentative_min": ""}, {"tentative_min": "This field is required."}),
    ],
)
def test_the_thresholds_form_takes_the_reading_thresholds_and_words_every_bad_one(
    changes: dict[str, object], errors: dict[str, str]
) -> None:
    form = ThresholdsForm({**GOOD, **changes})
    assert form.is_valid() is not errors
    for field, message in errors.items():
        assert any(message in e for e in form.errors[field]), form.errors


def test_bad_reading_thresholds_are_named_and_change_nothing(golden_set: GoldenSet, reviewer: Client) -> None:
    url = reverse("labeling:thresholds", args=[golden_set.slug])
    bad = reviewer.post(url, {**GOOD, "hard_diff": 3, "tentative_min": 0.9, "min_pairable_units": 1})
    assert bad.status_code == 400  # the page again, the thresholds as sent, each mistake at its field
    summary = error_summary(bad)
    assert summary.heading == "Thresholds not changed: 2 problems to fix"
    assert [anchor for _, anchor in summary.entries] == ["id_tentative_min", "id_min_pairable_units"]
    text = " ".join(summary.texts)
    assert "0.9 must not be above reliable_min (0.8)" in text
    assert "1 must be a whole number of at least 2" in text
    golden_set.refresh_from_db()
    assert (golden_set.hard_diff, golden_set.tentative_min, golden_set.min_pairable_units) == (2, 0.667, 10)


def test_an_outsider_or_a_rater_cannot_change_the_thresholds(
    golden_set: GoldenSet, client: Client, alice: User, charlie: User
) -> None:
    for user in (alice, charlie):
        client.force_login(user)
        response = client.post(
            reverse("labeling:thresholds", args=[golden_set.slug]), {**GOOD, "reliable_min": 0.9}
        )
        assert response.status_code == 404
    golden_set.refresh_from_db()
    assert golden_set.reliable_min == 0.8


def test_the_admin_form_refuses_thresholds_the_readings_cannot_use(golden_set: GoldenSet) -> None:
    golden_set.reliable_min, golden_set.tentative_min, golden_set.min_pairable_units = 0.7, 0.75, 0
    with pytest.raises(ValidationError) as caught:
        golden_set.full_clean()
    assert caught.value.message_dict["tentative_min"] == ["0.75 must not be above reliable_min (0.7)"]
    assert "must be a whole number of at least 2" in caught.value.message_dict["min_pairable_units"][0]
