"""The vectorized paths of assay.labels.agreement equal the plain definitions on random data (hypothesis):
alpha equals the krippendorff package, every kappa equals scikit-learn's `cohen_kappa_score` with the
full scale as `labels` (undefined exactly where scikit-learn warns), per-query figures equal
`query_agreement`, per-rater figures equal straightforward loops."""

from __future__ import annotations

import itertools
import math
import statistics
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from assay.golden.model import Scale
from assay.labels.agreement import (
    AgreementReport,
    Rating,
    Undefined,
    agreement_compute,
    query_agreement,
)
from assay.labels.agreement_alpha import alpha_from_coincidences

RATERS = ["ann", "ben", "cat", "dan"]


@st.composite
def golden_sets(draw: st.DrawFn) -> tuple[list[Rating], Scale, int]:
    top = draw(st.sampled_from([1, 2, 3, 4]))
    scale = Scale(0, top)
    cutoff = draw(st.integers(1, top))
    ratings = []
    for q in range(draw(st.integers(1, 4))):
        for d in range(draw(st.integers(1, 5))):
            raters = draw(st.lists(st.sampled_from(RATERS), min_size=1, max_size=4, unique=True))
            for rater in raters:
                time_ms = draw(st.none() | st.integers(0, 10_000))
                ratings.append(Rating(f"q{q}", f"d{d}", rater, draw(st.integers(0, top)), time_ms))
    return ratings, scale, cutoff


def _sklearn_kappa(a: list[int], b: list[int], labels: list[int], weights: str | None) -> float | None:
    """scikit-learn's kappa, None where it declares it undefined."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = cohen_kappa_score(a, b, labels=labels, weights=weights)
    if any(issubclass(w.category, UndefinedMetricWarning) for w in caught):
        assert math.isnan(value)
        return None
    return float(value)


def _same(ours: float | Undefined, theirs: float | None) -> bool:
    if theirs is None:
        return isinstance(ours, Undefined)
    return isinstance(ours, float) and ours == pytest.approx(theirs, abs=1e-12)


def _report(ratings: list[Rating], scale: Scale, cutoff: int) -> AgreementReport:
    return agreement_compute(ratings, scale=scale, relevant_min_grade=cutoff, n_resamples=20)


@settings(max_examples=100, deadline=None)
@given(golden_sets())
def test_alpha_equals_the_krippendorff_package(data: tuple[list[Rating], Scale, int]) -> None:
    ratings, scale, cutoff = data
    report = _report(ratings, scale, cutoff)
    units = sorted({(r.query_id, r.doc_id) for r in ratings})
    matrix = np.full((len(RATERS), len(units)), np.nan)
    for r in ratings:
        matrix[RATERS.index(r.rater), units.index((r.query_id, r.doc_id))] = r.grade
    if (np.sum(~np.isnan(matrix), axis=0) < 2).all():
        assert report.alpha.value == Undefined("no document has two or more grades")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = krippendorff.alpha(
            reliability_data=matrix, level_of_measurement="ordinal", value_domain=list(range(scale.max + 1))
        )
    if math.isnan(theirs):
        assert isinstance(report.alpha.value, Undefined)
    else:
        assert report.alpha.value == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda v: st.lists(st.lists(st.integers(0, 3), min_size=v, max_size=v), min_size=1, max_size=12)
    )
)
def test_the_bootstraps_batched_alpha_equals_the_package(rows: list[list[int]]) -> None:
    """The interval's resamples use `alpha_from_coincidences` (batched); it must be the package's alpha."""
    counts = np.array([r for r in rows if sum(r) >= 2] or [[0] * len(rows[0])], dtype=np.int64)
    counts = counts[counts.sum(axis=1) >= 2]
    if not len(counts) or np.count_nonzero(counts.sum(axis=0)) < 2:
        return
    v = counts.shape[1]
    m = counts.sum(axis=1)
    o = (
        (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v)) / (m - 1)[:, None, None]
    ).sum(0)
    ours = float(alpha_from_coincidences(o.reshape(1, v * v), v)[0])
    theirs = krippendorff.alpha(
        value_counts=counts, value_domain=list(range(v)), level_of_measurement="ordinal"
    )
    assert ours == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(golden_sets())
def test_every_pair_equals_scikit_learn_and_plain_counts(data: tuple[list[Rating], Scale, int]) -> None:
    ratings, scale, cutoff = data
    report = _report(ratings, scale, cutoff)
    grades = {(r.rater, r.query_id, r.doc_id): r.grade for r in ratings}
    labels = list(range(scale.min, scale.max + 1))
    present = sorted({r.rater for r in ratings})
    for a, b in itertools.combinations(present, 2):
        shared = sorted(
            {(q, d) for (x, q, d) in grades if x == a} & {(q, d) for (x, q, d) in grades if x == b}
        )
        pair = report.pair(a, b)
        assert pair.n_shared == len(shared)
        assert (pair in report.pairs) == bool(shared)
        if not shared:
            assert pair.kappa_quadratic == pair.exact == Undefined("no shared items")
            continue
        ga = [grades[(a, *item)] for item in shared]
        gb = [grades[(b, *item)] for item in shared]
        assert _same(pair.kappa_quadratic, _sklearn_kappa(ga, gb, labels, "quadratic"))
        assert _same(pair.kappa_unweighted, _sklearn_kappa(ga, gb, labels, None))
        binary_a = [int(g >= cutoff) for g in ga]
        binary_b = [int(g >= cutoff) for g in gb]
        assert _same(pair.kappa_binary, _sklearn_kappa(binary_a, binary_b, [0, 1], None))
        assert pair.exact == sum(x == y for x, y in zip(ga, gb, strict=True)) / len(shared)
        assert pair.within_1 == sum(abs(x - y) <= 1 for x, y in zip(ga, gb, strict=True)) / len(shared)
        assert pair.distribution_a == {g: ga.count(g) for g in labels}
        assert pair.distribution_b == {g: gb.count(g) for g in labels}


@settings(max_examples=100, deadline=None)
@given(golden_sets())
def test_every_query_equals_the_plain_definition(data: tuple[list[Rating], Scale, int]) -> None:
    ratings, scale, cutoff = data
    report = _report(ratings, scale, cutoff)
    by_query: dict[str, dict[str, list[int]]] = {}
    for r in ratings:
        by_query.setdefault(r.query_id, {}).setdefault(r.doc_id, []).append(r.grade)
    assert [q.query_id for q in report.queries] == sorted(by_query)
    for query in report.queries:
        assert query == query_agreement(
            query.query_id, by_query[query.query_id], relevant_min_grade=cutoff, scale=scale
        )


@settings(max_examples=100, deadline=None)
@given(golden_sets(), st.data())
def test_every_rater_equals_plain_loops(data: tuple[list[Rating], Scale, int], draw: st.DataObject) -> None:
    ratings, scale, cutoff = data
    items = sorted({(r.query_id, r.doc_id) for r in ratings})
    gold = {item: draw.draw(st.integers(scale.min, scale.max)) for item in items if draw.draw(st.booleans())}
    report = agreement_compute(ratings, scale=scale, relevant_min_grade=cutoff, gold=gold, n_resamples=20)
    for figures in report.raters:
        mine = [r for r in ratings if r.rater == figures.rater]
        assert figures.n_items == len(mine)
        assert figures.distribution == {g: sum(r.grade == g for r in mine) for g in range(scale.max + 1)}
        times = [r.time_ms for r in mine if r.time_ms is not None]
        assert figures.median_time_ms == (
            statistics.median(times) if times else Undefined("no time recorded")
        )
        checked = [(r.grade, gold[(r.query_id, r.doc_id)]) for r in mine if (r.query_id, r.doc_id) in gold]
        assert figures.gold.n == len(checked)
        if checked:
            assert figures.gold.exact == sum(g == t for g, t in checked) / len(checked)
            assert figures.gold.within_1 == sum(abs(g - t) <= 1 for g, t in checked) / len(checked)
        peers = [
            (r.grade, other.grade)
            for r in mine
            for other in ratings
            if other.rater != r.rater and (other.query_id, other.doc_id) == (r.query_id, r.doc_id)
        ]
        assert figures.peers.n == len(peers)
        if peers:
            assert figures.peers.exact == sum(g == o for g, o in peers) / len(peers)
