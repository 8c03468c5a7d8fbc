"""Calibration rounds' statistics (assay/labels/calibration.py), no database: the figures against the
krippendorff package and scikit-learn on random 5-rater data, bias and median agreement against a plain
numpy computation and by hand, and the promotion rule."""

from __future__ import annotations

import itertools
import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assay.labels.agreement import AgreementInputError, Match, Rating, Undefined
from assay.labels.calibration import (
    CalibrationReport,
    UnitMedian,
    calibration_compute,
    calibration_promotion,
    unit_median,
)

RATERS = ["ann", "ben", "cai", "dee", "eli"]
SCALE = [0, 1, 2, 3]


def _random_round(seed: int, *, missing: float = 0.1) -> list[Rating]:
    """30 queries x 4 documents, 5 raters with their own leanings; some grades not given yet."""
    rng = random.Random(seed)
    lean = {"ann": 0, "ben": 0, "cai": 1, "dee": -1, "eli": 0}
    ratings = []
    for q in range(30):
        for d in range(4):
            truth = rng.randint(0, 3)
            for rater in RATERS:
                if rng.random() < missing:
                    continue
                grade = truth + lean[rater] + rng.choice([-1, 0, 0, 0, 1])
                ratings.append(Rating(f"q{q:02d}", f"d{d}", rater, min(3, max(0, grade)), 1000.0))
    return ratings


def _matrix(ratings: list[Rating]) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """raters x units, NaN where a rater gave no grade (the krippendorff package's reliability data)."""
    units = sorted({(r.query_id, r.doc_id) for r in ratings})
    col = {u: i for i, u in enumerate(units)}
    data = np.full((len(RATERS), len(units)), np.nan)
    for r in ratings:
        data[RATERS.index(r.rater), col[(r.query_id, r.doc_id)]] = r.grade
    return data, units


@pytest.fixture(scope="module")
def random_round() -> tuple[list[Rating], CalibrationReport]:
    ratings = _random_round(3)
    return ratings, calibration_compute(ratings, raters=RATERS, n_resamples=200)


def test_alpha_is_the_krippendorff_packages_on_every_rater(
    random_round: tuple[list[Rating], CalibrationReport],
) -> None:
    ratings, report = random_round
    data, _ = _matrix(ratings)
    package = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=SCALE)
    alpha = report.agreement.alpha
    assert isinstance(alpha.value, float)
    assert alpha.value == pytest.approx(package, abs=1e-12)
    # The interval spans 0.667, so the round's alpha has no reading yet (docs/agreement.md, "Readings").
    assert alpha.reading == "not enough data"
    assert "spans 0.667" in alpha.reading_why
    assert isinstance(alpha.interval, tuple)
    assert alpha.interval[0] <= alpha.value <= alpha.interval[1]
    # Every document with two or more of the five raters' grades is a unit.
    assert alpha.n_units == int(((~np.isnan(data)).sum(axis=0) >= 2).sum())
    assert alpha.n_queries == 30


def test_every_pair_has_scikit_learns_three_kappas(
    random_round: tuple[list[Rating], CalibrationReport],
) -> None:
    ratings, report = random_round
    data, _ = _matrix(ratings)
    assert [(p.rater_a, p.rater_b) for p in report.pairs] == list(itertools.combinations(RATERS, 2))
    for p in report.pairs:
        a, b = data[RATERS.index(p.rater_a)], data[RATERS.index(p.rater_b)]
        shared = ~np.isnan(a) & ~np.isnan(b)
        ga, gb = a[shared].astype(int), b[shared].astype(int)
        assert p.n_shared == int(shared.sum())
        assert p.kappa_quadratic == pytest.approx(
            cohen_kappa_score(ga, gb, labels=SCALE, weights="quadratic"), abs=1e-12
        )
        assert p.kappa_unweighted == pytest.approx(cohen_kappa_score(ga, gb, labels=SCALE), abs=1e-12)
        assert p.kappa_binary == pytest.approx(
            cohen_kappa_score((ga >= 2).astype(int), (gb >= 2).astype(int), labels=[0, 1]), abs=1e-12
        )
        assert p.exact == pytest.approx(float(np.mean(ga == gb)))
        matrix = report.kappa_matrix("unweighted")
        assert matrix[p.rater_a][p.rater_b] == matrix[p.rater_b][p.rater_a] == p.kappa_unweighted


def test_bias_and_median_agreement_equal_a_plain_numpy_computation(
    random_round: tuple[list[Rating], CalibrationReport],
) -> None:
    ratings, report = random_round
    data, _ = _matrix(ratings)
    for i, name in enumerate(RATERS):
        own = data[i]
        others = np.delete(data, i, axis=0)
        compared = ~np.isnan(own) & ((~np.isnan(others)).sum(axis=0) >= 1)
        mean_others = np.nanmean(others[:, compared], axis=0)
        median_others = np.nanmedian(others[:, compared], axis=0)
        distance = np.abs(own[compared] - median_others)
        figures = report.rater(name)
        assert figures.n_items == int((~np.isnan(own)).sum())
        assert figures.n_bias == figures.median.n == int(compared.sum())
        assert figures.bias == pytest.approx(float(np.mean(own[compared] - mean_others)), abs=1e-12)
        assert figures.median.exact == pytest.approx(float(np.mean(distance == 0)), abs=1e-12)
        assert figures.median.within_1 == pytest.approx(float(np.mean(distance <= 1)), abs=1e-12)
        assert figures.n_between == int((median_others != np.round(median_others)).sum())
    # The leanings show: cai grades high, dee low.
    assert report.rater("cai").bias > 0.5 and report.rater("dee").bias < -0.5  # type: ignore[operator]


def test_biases_add_up_to_zero_when_every_rater_grades_every_unit() -> None:
    report = calibration_compute(_random_round(5, missing=0.0), raters=RATERS, n_resamples=10)
    assert sum(r.bias for r in report.rater_figures) == pytest.approx(0, abs=1e-12)  # type: ignore[misc]


def test_bias_and_median_worked_by_hand() -> None:
    # Three raters, two documents:  d1: a 0, b 1, c 2   d2: a 1, b 1, c 3
    grades = {"d1": {"a": 0, "b": 1, "c": 2}, "d2": {"a": 1, "b": 1, "c": 3}}
    ratings = [Rating("q", d, r, g) for d, by in grades.items() for r, g in by.items()]
    report = calibration_compute(ratings, n_resamples=10)
    a, b, c = (report.rater(name) for name in "abc")
    # a: d1 0 - mean(1, 2) = -1.5; d2 1 - mean(1, 3) = -1; mean -1.25.
    # b: d1 1 - mean(0, 2) = 0; d2 1 - mean(1, 3) = -1; mean -0.5.
    # c: d1 2 - mean(0, 1) = 1.5; d2 3 - mean(1, 1) = 2; mean 1.75. The three add up to 0.
    assert (a.bias, b.bias, c.bias) == (-1.25, -0.5, 1.75)
    assert a.n_bias == b.n_bias == c.n_bias == 2
    # Against the others' median:
    # a: d1 median(1, 2) = 1.5, |0 - 1.5| = 1.5; d2 median(1, 3) = 2, |1 - 2| = 1 -> exact 0, within 1/2.
    # b: d1 median(0, 2) = 1, exact; d2 2 vs 1, within -> exact 1/2, within 2/2.
    # c: d1 median(0, 1) = 0.5, 1.5 away; d2 median(1, 1) = 1, 2 away -> exact 0, within 0.
    assert a.median == Match(2, 0.0, 0.5) and a.n_between == 1
    assert b.median == Match(2, 0.5, 1.0) and b.n_between == 0
    assert c.median == Match(2, 0.0, 0.0) and c.n_between == 1
    # The promotion rule: d1 0, 1, 2 -> 1; d2 1, 1, 3 -> 1 (a spread does not stop a median here).
    assert [(u.doc_id, u.grades, u.grade) for u in report.promotion.units] == [
        ("d1", (0, 1, 2), 1),
        ("d2", (1, 1, 3), 1),
    ]


def test_a_median_between_two_grades_is_within_one_of_both_and_exact_for_neither() -> None:
    # Five raters on one document: the others of e are 1, 1, 2, 2 (median 1.5).
    ratings = [Rating("q", "d", r, g) for r, g in zip("abcde", [1, 1, 2, 2, 2], strict=True)]
    report = calibration_compute(ratings, n_resamples=10)
    e = report.rater("e")
    assert e.median == Match(1, 0.0, 1.0) and e.n_between == 1
    # a's others are 1, 2, 2, 2: median 2, one away; b the same.
    assert report.rater("a").median == Match(1, 0.0, 1.0) and report.rater("a").n_between == 0
    # c's others are 1, 1, 2, 2 too.
    assert report.rater("c").median == Match(1, 0.0, 1.0)
    assert report.rater("e").bias == pytest.approx(2 - 1.5)


@pytest.mark.parametrize(
    ("grades", "median"),
    [
        ([2], 2),
        ([0, 3, 3], 3),
        ([1, 2, 2, 1, 2], 2),
        ([0, 1, 1, 3], 1),  # even count, equal middle grades
        ([1, 1, 2, 2], None),  # even count, middle grades differ: a tie
        ([3, 0], None),
        ([0, 0, 3, 3, 3, 2], None),
    ],
)
def test_the_promotion_median(grades: list[int], median: int | None) -> None:
    assert unit_median(grades) == median


def test_ties_are_listed_with_their_grades_for_a_reviewer() -> None:
    ratings = [Rating("q", "d1", r, g) for r, g in zip("abcd", [2, 1, 2, 1], strict=True)]
    ratings += [Rating("q", "d2", r, g) for r, g in zip("abcd", [2, 2, 2, 1], strict=True)]
    promotion = calibration_promotion(ratings)
    assert promotion.promotable == (UnitMedian("q", "d2", (1, 2, 2, 2), 2),)
    (tie,) = promotion.ties
    assert (tie.doc_id, tie.grades, tie.grade) == ("d1", (1, 1, 2, 2), None)
    assert tie.reason == "grades 1 vs 1 vs 2 vs 2 tie between 1 and 2: a reviewer decides"
    assert promotion.to_dict()["units"][0]["reason"] == tie.reason


def test_undefined_figures_say_why_and_are_never_zero() -> None:
    ratings = [Rating("q", "d1", "a", 2), Rating("q", "d1", "b", 2), Rating("q", "d2", "c", 1)]
    report = calibration_compute(ratings, raters=["a", "b", "c", "d"], n_resamples=10)
    c, d = report.rater("c"), report.rater("d")
    assert c.n_items == 1 and c.bias == Undefined("no item shared with another rater")
    assert c.median == Match(0, Undefined("no item shared with another rater"), c.median.within_1)
    assert (
        d.n_items == 0
        and d.bias == Undefined("no grades yet")
        and d.median.exact == Undefined("no grades yet")
    )
    # The pairs are every pair of the round, d included, with undefined figures where nothing is shared.
    assert len(report.pairs) == 6
    assert report.agreement.pair("a", "d").kappa_quadratic == Undefined("no shared items")
    assert report.kappa_matrix()["a"]["b"] == Undefined("both raters gave grade 2 to all 1 shared items")
    assert report.agreement.alpha.value == Undefined(
        "every pairable grade is 2: alpha needs two or more grades in use"
    )
    assert report.to_dict()["rater_figures"][3]["bias"] == {"undefined": True, "reason": "no grades yet"}


def test_a_rating_by_someone_outside_the_round_is_refused_with_its_place() -> None:
    with pytest.raises(AgreementInputError) as exc:
        calibration_compute([Rating("q", "d", "a", 1), Rating("q", "d", "zed", 1)], raters=["a", "b"])
    assert exc.value.errors == ["ratings[1].rater: 'zed' is not one of the round's raters"]
    with pytest.raises(AgreementInputError, match=r"ratings\[0\].grade: 7 is outside the scale"):
        calibration_compute([Rating("q", "d", "a", 7)], raters=["a", "b"])
