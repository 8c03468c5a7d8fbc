"""Readings of alpha and kappa from their intervals (docs/agreement.md, "Readings"), their thresholds, and
the quadratic kappa's bootstrap interval against a plain loop over scikit-learn (no database)."""

from __future__ import annotations

import math
import random
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from assay.labels.agreement import (
    AgreementInputError,
    Rating,
    ReadingThresholds,
    Undefined,
    agreement_compute,
    bootstrap_samples,
    figure_reading,
)

DEFAULTS = ReadingThresholds()  # 0.800, 0.667, 10 queries


def _read(
    interval: tuple[float, float] | Undefined,
    *,
    value: float | Undefined = 0.9,
    n_queries: int = 10,
    thresholds: ReadingThresholds = DEFAULTS,
) -> tuple[str, str]:
    return figure_reading(value, interval, n_queries, thresholds, queries_with="pairable grades")


@pytest.mark.parametrize(
    ("interval", "reading", "why"),
    [
        ((0.8, 1.0), "reliable", "lower bound 0.800 >= 0.800"),
        ((0.7999, 1.0), "tentative", "lower bound 0.7999 >= 0.667; reliable needs >= 0.800"),
        ((0.712, 0.95), "tentative", "lower bound 0.712 >= 0.667; reliable needs >= 0.800"),
        ((0.667, 0.9), "tentative", "lower bound 0.667 >= 0.667; reliable needs >= 0.800"),
        (
            (0.6669, 0.9),
            "not enough data",
            "interval [0.6669, 0.900] spans 0.667: tentative needs a lower bound >= 0.667,"
            " unreliable an upper bound < 0.667",
        ),
        ((0.2, 0.6669), "unreliable", "upper bound 0.6669 < 0.667"),
        ((-0.3, 0.1), "unreliable", "upper bound 0.100 < 0.667"),
        # An upper bound exactly at the limit is not below it: the interval still reaches "tentative".
        ((0.2, 0.667), "not enough data", None),
        # The agreement page's old case: alpha 0.913 read "reliable" on its value alone.
        ((0.238, 1.0), "not enough data", None),
    ],
)
def test_it_reads_the_interval_at_each_threshold(
    interval: tuple[float, float], reading: str, why: str | None
) -> None:
    got_reading, got_why = _read(interval, value=0.913)
    assert got_reading == reading
    if why is not None:
        assert got_why == why
    if reading == "not enough data":
        assert re.fullmatch(r"interval \[\S+, \S+\] spans 0\.667: tentative needs .*", got_why)


def test_it_wants_enough_queries_before_any_reading() -> None:
    assert _read((0.9, 1.0), n_queries=10)[0] == "reliable"
    assert _read((0.9, 1.0), n_queries=9) == (
        "not enough data",
        "9 queries with pairable grades; a reading needs >= 10",
    )
    assert _read((0.9, 1.0), n_queries=1)[1] == "1 query with pairable grades; a reading needs >= 10"
    assert _read((0.9, 1.0), n_queries=3, thresholds=ReadingThresholds(min_pairable_units=3))[0] == "reliable"


def test_it_has_no_reading_for_an_undefined_value_or_interval() -> None:
    none = Undefined("no document has two or more grades")
    assert _read(none, value=none) == ("not enough data", "undefined: no document has two or more grades")
    assert _read(Undefined("every resample has all its grades in one category")) == (
        "not enough data",
        "no interval: every resample has all its grades in one category",
    )


def test_it_reads_against_the_sets_own_thresholds() -> None:
    strict = ReadingThresholds(reliable_min=0.9, tentative_min=0.75, min_pairable_units=2)
    assert _read((0.85, 0.95), n_queries=2, thresholds=strict) == (
        "tentative",
        "lower bound 0.850 >= 0.750; reliable needs >= 0.900",
    )
    assert _read((0.6675, 0.9), thresholds=ReadingThresholds(tentative_min=0.6675))[1] == (
        "lower bound 0.6675 >= 0.6675; reliable needs >= 0.800"
    )


@settings(max_examples=300, deadline=None)
@given(
    low=st.floats(-1, 1),
    width=st.floats(0, 2),
    tentative=st.floats(0.01, 1),
    gap=st.floats(0, 1),
)
def test_the_reading_follows_the_rule_and_its_shown_bounds_compare_as_the_real_ones(
    low: float, width: float, tentative: float, gap: float
) -> None:
    high = min(1.0, low + width)
    t = ReadingThresholds(reliable_min=min(1.0, tentative + gap), tentative_min=tentative)
    reading, why = _read((low, high), thresholds=t)
    expected = (
        "reliable"
        if low >= t.reliable_min
        else "tentative"
        if low >= t.tentative_min
        else "unreliable"
        if high < t.tentative_min
        else "not enough data"
    )
    assert reading == expected
    # Whatever the rounding, a shown bound never seems to reach a threshold it misses, or the reverse.
    numbers = [float(x) for x in re.findall(r"(?:bound |\[|, )(-?\d+\.\d+)", why)]
    if reading == "not enough data":
        shown = [(numbers[0], low), (numbers[1], high)]
    else:
        shown = [(numbers[0], high if reading == "unreliable" else low)]
    for number, real in shown:
        for limit in (t.tentative_min, t.reliable_min):
            assert (number >= limit) == (real >= limit), why


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"tentative_min": 0.0}, "tentative_min", "0.0 must be above 0"),
        ({"tentative_min": 0.85}, "tentative_min", "0.85 must not be above reliable_min (0.8)"),
        ({"reliable_min": 1.5}, "reliable_min", "1.5 must be at most 1"),
        ({"reliable_min": math.nan}, "reliable_min", "nan must be a number"),
        ({"tentative_min": True}, "tentative_min", "True must be a number"),
        ({"min_pairable_units": 1}, "min_pairable_units", "1 must be a whole number of at least 2"),
        ({"min_pairable_units": 2.0}, "min_pairable_units", "2.0 must be a whole number of at least 2"),
    ],
)
def test_it_refuses_thresholds_it_cannot_read_with(
    values: dict[str, object], field: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{field}: {message}")):
        ReadingThresholds(**values)  # type: ignore[arg-type]


def test_it_takes_thresholds_at_their_limits() -> None:
    assert ReadingThresholds(reliable_min=1.0, tentative_min=1.0, min_pairable_units=2).tentative_min == 1.0
    assert ReadingThresholds(reliable_min=0.5, tentative_min=0.5).reliable_min == 0.5


def _dual(n_queries: int, *, disagree_every: int, seed: int = 3) -> list[Rating]:
    """Two raters on two documents per query, agreeing except on every `disagree_every`-th document."""
    rng = random.Random(seed)
    out = []
    for q in range(n_queries):
        for d in range(2):
            grade = rng.randint(0, 3)
            other = grade if (2 * q + d) % disagree_every else (grade + 2) % 4
            out += [Rating(f"q{q:02d}", f"d{d}", "alice", grade), Rating(f"q{q:02d}", f"d{d}", "bob", other)]
    return out


def test_the_report_reads_alpha_and_kappa_with_the_thresholds_passed_in() -> None:
    ratings = _dual(40, disagree_every=20)
    report = agreement_compute(ratings, n_resamples=300)
    pair = report.pair("alice", "bob")
    assert report.alpha.n_queries == pair.n_queries == 40
    assert isinstance(report.alpha.interval, tuple) and isinstance(pair.kappa_quadratic_interval, tuple)
    assert (
        report.alpha.reading
        == figure_reading(
            report.alpha.value, report.alpha.interval, 40, DEFAULTS, queries_with="pairable grades"
        )[0]
    )
    assert (
        pair.kappa_quadratic_reading
        == figure_reading(
            pair.kappa_quadratic, pair.kappa_quadratic_interval, 40, DEFAULTS, queries_with="shared items"
        )[0]
    )
    # Fewer queries resampled than the set asks for: no reading, whatever the interval.
    strict = agreement_compute(
        ratings, n_resamples=300, reading_thresholds=ReadingThresholds(min_pairable_units=41)
    )
    assert strict.alpha.reading == strict.pair("alice", "bob").kappa_quadratic_reading == "not enough data"
    assert strict.alpha.reading_why == "40 queries with pairable grades; a reading needs >= 41"
    assert strict.pair("bob", "alice").kappa_quadratic_reading_why == (
        "40 queries with shared items; a reading needs >= 41"
    )
    data = strict.to_dict()
    expected = {"reliable_min": 0.8, "tentative_min": 0.667, "min_pairable_units": 41}
    assert data["alpha"]["reading"] == "not enough data"
    assert data["alpha"]["thresholds"] == data["pairs"][0]["thresholds"] == expected
    assert data["pairs"][0]["kappa_quadratic_reading"] == "not enough data"


def test_raters_without_a_shared_item_have_no_kappa_reading() -> None:
    ratings = [*_dual(3, disagree_every=5), Rating("q09", "d9", "carol", 1)]
    pair = agreement_compute(ratings, n_resamples=10).pair("alice", "carol")
    assert (pair.n_queries, pair.kappa_quadratic_reading) == (0, "not enough data")
    assert pair.kappa_quadratic_interval == Undefined("no shared items")


def test_it_refuses_reading_thresholds_of_another_type() -> None:
    with pytest.raises(AgreementInputError, match="reading_thresholds"):
        agreement_compute([], reading_thresholds={"reliable_min": 0.8})  # type: ignore[arg-type]


def test_the_kappa_interval_equals_a_loop_over_scikit_learn_with_the_same_draws() -> None:
    rng = random.Random(5)
    ratings = []
    for q in range(30):
        for d in range(rng.randint(1, 4)):
            truth = rng.randint(0, 3)
            for rater in ("ann", "ben", "cat"):
                if rng.random() < 0.7:
                    ratings.append(
                        Rating(f"q{q:02d}", f"d{d}", rater, min(3, max(0, truth + rng.choice([-1, 0, 0, 1]))))
                    )
    report = agreement_compute(ratings, n_resamples=200, seed=17)
    grades = {(r.query_id, r.doc_id, r.rater): r.grade for r in ratings}
    for pair in report.pairs:
        # Independently: per shared query (in id order) the two raters' grades on its shared documents.
        shared: dict[str, list[tuple[int, int]]] = {}
        for (query_id, doc_id, rater), value in sorted(grades.items()):
            if rater == pair.rater_a and (query_id, doc_id, pair.rater_b) in grades:
                shared.setdefault(query_id, []).append((value, grades[(query_id, doc_id, pair.rater_b)]))
        queries = sorted(shared)
        kappas = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a resample with one grade for both is NaN there
            for draw in bootstrap_samples(len(queries), n_resamples=200, seed=17):
                rows = [row for i in draw for row in shared[queries[i]]]
                a, b = [x for x, _ in rows], [y for _, y in rows]
                kappas.append(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"))
        finite = [k for k in kappas if not math.isnan(k)]
        assert pair.n_queries == len(queries)
        assert pair.kappa_quadratic_interval == pytest.approx(
            tuple(np.percentile(finite, [2.5, 97.5])), abs=1e-12
        )
