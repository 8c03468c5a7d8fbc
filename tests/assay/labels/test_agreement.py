"""Agreement statistics against published worked examples and hand-computed cases (no database)."""

from __future__ import annotations

import json
import math
import random
import warnings
from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from assay.golden.model import Scale
from assay.labels.agreement import (
    AgreementInputError,
    Match,
    Rating,
    Undefined,
    agreement_compute,
    bootstrap_samples,
    query_agreement,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12 units,
# values 1..5, None where an observer gave no value. Published: nominal 0.743, ordinal 0.815,
# interval 0.849.
KA_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}
KA_SCALE = Scale(1, 5)


def _ka_reliability_data() -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in KA_2011.values()], dtype=float)


def _ka_ratings(one_query_per_unit: bool) -> list[Rating]:
    return [
        Rating(f"q{u:02d}" if one_query_per_unit else "q", f"u{u:02d}", rater, grade)
        for rater, row in KA_2011.items()
        for u, grade in enumerate(row)
        if grade is not None
    ]


def _pairs(rows: list[tuple[int, int]], a: str = "A", b: str = "B") -> list[Rating]:
    """Two raters grading the same documents of one query: rows are (grade of a, grade of b)."""
    out = []
    for i, (ga, gb) in enumerate(rows):
        out += [Rating("q", f"d{i:03d}", a, ga), Rating("q", f"d{i:03d}", b, gb)]
    return out


def test_it_transcribes_the_published_reliability_data_exactly() -> None:
    # The package reproduces the paper's nominal and interval figures on this transcription, so the
    # ordinal check below runs on the published data, not a typo of it.
    data = _ka_reliability_data()
    assert round(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), 3) == 0.743
    assert round(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), 3) == 0.849


@pytest.mark.parametrize("one_query_per_unit", [True, False])
def test_it_reproduces_the_published_ordinal_alpha(one_query_per_unit: bool) -> None:
    report = agreement_compute(
        _ka_ratings(one_query_per_unit), scale=KA_SCALE, relevant_min_grade=3, n_resamples=200
    )
    package = krippendorff.alpha(
        reliability_data=_ka_reliability_data(), level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert isinstance(report.alpha.value, float)
    assert round(report.alpha.value, 3) == 0.815
    assert report.alpha.value == pytest.approx(package, abs=1e-12)
    # 0.815 is above 0.800, but 11 units (or one query) cannot say so: the interval decides the reading.
    assert report.alpha.reading == "not enough data"
    # Unit 12 has a single value: it is not pairable. 11 units, 3+4+4+4+4+4+4+4+4+3+2 values.
    assert report.alpha.n_units == 11
    assert report.alpha.n_pairable == 40


def test_it_reports_no_interval_when_there_is_one_query_to_resample() -> None:
    report = agreement_compute(_ka_ratings(False), scale=KA_SCALE, relevant_min_grade=3, n_resamples=50)
    assert isinstance(report.alpha.interval, Undefined)
    assert "one query" in report.alpha.interval.reason
    assert report.alpha.n_queries == 1


def test_its_bootstrap_interval_equals_a_loop_over_the_package_with_the_same_draws() -> None:
    rng = random.Random(7)
    raters = ["r1", "r2", "r3", "r4"]
    ratings = []
    for q in range(25):
        for d in range(rng.randint(1, 6)):
            truth = rng.randint(0, 3)
            for rater in rng.sample(raters, rng.choice([1, 2, 2, 3])):
                grade = min(3, max(0, truth + rng.choice([-1, 0, 0, 1])))
                ratings.append(Rating(f"q{q:02d}", f"d{d}", rater, grade))
    report = agreement_compute(ratings, n_resamples=300, seed=11)

    # Independently: the resampled population is the queries with a pairable unit, in id order.
    units: dict[str, dict[str, dict[str, int]]] = {}
    for r in ratings:
        units.setdefault(r.query_id, {}).setdefault(r.doc_id, {})[r.rater] = r.grade
    columns = {
        q: [[docs[d].get(rater, np.nan) for rater in raters] for d in sorted(docs) if len(docs[d]) >= 2]
        for q, docs in sorted(units.items())
    }
    population = [q for q, cols in columns.items() if cols]
    alphas = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-one-grade resample is NaN there
        for draw in bootstrap_samples(len(population), n_resamples=300, seed=11):
            data = np.array([col for i in draw for col in columns[population[i]]], dtype=float).T
            alphas.append(
                krippendorff.alpha(
                    reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
                )
            )
    finite = np.array([a for a in alphas if not math.isnan(a)])
    low, high = np.percentile(finite, [2.5, 97.5])
    assert report.alpha.n_queries == len(population)
    assert report.alpha.n_resamples_undefined == len(alphas) - len(finite)
    assert report.alpha.interval == pytest.approx((low, high), abs=1e-12)
    assert isinstance(report.alpha.interval, tuple) and isinstance(report.alpha.value, float)
    assert report.alpha.interval[0] <= report.alpha.value <= report.alpha.interval[1]


def test_it_reproduces_the_wikipedia_kappa_of_0_4() -> None:
    # en.wikipedia.org/wiki/Cohen's_kappa, worked example: 50 proposals, both yes 20, A yes B no 5,
    # A no B yes 10, both no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    rows = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    pair = agreement_compute(_pairs(rows), scale=Scale(0, 1), relevant_min_grade=1, n_resamples=10).pair(
        "A", "B"
    )
    assert pair.n_shared == 50
    assert pair.kappa_unweighted == pytest.approx(0.4, abs=1e-12)
    # On two grades the quadratic weights are the unweighted ones, and the cutoff changes nothing.
    assert pair.kappa_quadratic == pytest.approx(0.4, abs=1e-12)
    assert pair.kappa_binary == pytest.approx(0.4, abs=1e-12)
    assert pair.exact == pytest.approx(0.7)
    assert pair.distribution_a == {0: 25, 1: 25}
    assert pair.distribution_b == {0: 20, 1: 30}


def test_it_computes_a_weighted_kappa_worked_by_hand() -> None:
    rows = [(0, 0), (1, 1), (2, 3), (3, 3), (1, 2), (0, 1), (2, 2), (3, 1)]
    pair = agreement_compute(_pairs(rows), n_resamples=10).pair("A", "B")
    # Observed squared differences: 0+0+1+0+1+1+0+4 = 7 over 8 items.
    # A's grades are uniform (1/4 each); B's are 0:1/8, 1:3/8, 2:2/8, 3:2/8. Expected squared
    # difference = sum_j p_B(j) * mean_i (i - j)^2 = (1*3.5 + 3*1.5 + 2*1.5 + 2*3.5) / 8 = 18/8.
    quadratic = 1 - Fraction(7, 8) / Fraction(18, 8)  # 11/18
    # Unweighted: p_o = 4/8, p_e = sum_k 1/4 * p_B(k) = 1/4, kappa = (1/2 - 1/4) / (3/4) = 1/3.
    unweighted = (Fraction(1, 2) - Fraction(1, 4)) / (1 - Fraction(1, 4))
    # Binary at 2: A 0,0,1,1,0,0,1,1 vs B 0,0,1,1,1,0,1,0: p_o = 6/8, p_e = 1/2, kappa = 1/2.
    binary = (Fraction(6, 8) - Fraction(1, 2)) / (1 - Fraction(1, 2))
    assert pair.kappa_quadratic == pytest.approx(float(quadratic), abs=1e-12)
    assert pair.kappa_unweighted == pytest.approx(float(unweighted), abs=1e-12)
    assert pair.kappa_binary == pytest.approx(float(binary), abs=1e-12)
    assert pair.exact == 0.5
    assert pair.within_1 == 7 / 8


def test_it_passes_the_full_scale_so_an_unused_grade_still_weighs() -> None:
    # Nobody used grade 2: without `labels`, scikit-learn would treat 1 -> 3 as one step, not two.
    rows = [(0, 0), (1, 3), (3, 3), (3, 1), (1, 1), (0, 1)]
    pair = agreement_compute(_pairs(rows), n_resamples=10).pair("A", "B")
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    with_labels = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic")
    without_labels = cohen_kappa_score(a, b, weights="quadratic")
    assert with_labels != pytest.approx(without_labels, abs=1e-3)
    assert pair.kappa_quadratic == pytest.approx(with_labels, abs=1e-12)


def test_it_reports_kappa_and_alpha_undefined_when_everything_is_one_grade() -> None:
    report = agreement_compute(_pairs([(2, 2)] * 6), n_resamples=10)
    pair = report.pair("A", "B")
    for figure in (pair.kappa_quadratic, pair.kappa_unweighted):
        assert figure == Undefined("both raters gave grade 2 to all 6 shared items")
    assert isinstance(pair.kappa_binary, Undefined)
    assert "one side of the cutoff 2 (relevant)" in pair.kappa_binary.reason
    assert pair.exact == 1.0  # agreement itself is defined and perfect
    assert report.alpha.value == Undefined("every pairable grade is 2: alpha needs two or more grades in use")
    assert isinstance(report.alpha.interval, Undefined)
    assert report.alpha.reading == "not enough data"
    assert report.alpha.reading_why == f"undefined: {report.alpha.value.reason}"
    # The package agrees that there is no number here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(
            krippendorff.alpha(
                reliability_data=[[2] * 6, [2] * 6], level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
            )
        )
    with pytest.warns(Warning):
        assert math.isnan(cohen_kappa_score([2] * 6, [2] * 6, labels=[0, 1, 2, 3]))


def test_it_keeps_binary_kappa_defined_when_graded_kappa_is() -> None:
    # Both raters use only grades 0 and 1: on the binary cutoff everything is "not relevant".
    report = agreement_compute(_pairs([(0, 1), (1, 1), (0, 0), (1, 0)]), n_resamples=10)
    pair = report.pair("A", "B")
    assert isinstance(pair.kappa_quadratic, float)
    assert pair.kappa_binary == Undefined(
        "both raters put all 4 shared items on one side of the cutoff 2 (not relevant)"
    )


def test_it_reports_raters_without_overlap_as_undefined_not_zero() -> None:
    ratings = [Rating("q", "d1", "A", 1), Rating("q", "d2", "B", 3), Rating("q", "d3", "C", 2)]
    report = agreement_compute(ratings, n_resamples=10)
    assert report.pairs == ()
    pair = report.pair("B", "A")
    assert (pair.rater_a, pair.rater_b, pair.n_shared) == ("B", "A", 0)
    assert pair.kappa_quadratic == pair.exact == Undefined("no shared items")
    assert report.kappa_matrix()["A"]["C"] == Undefined("no shared items")
    assert report.alpha.value == Undefined("no document has two or more grades")
    query = report.queries[0]
    assert (query.n_docs, query.n_dual) == (3, 0)
    assert query.exact == query.mad == Undefined("no dual-labeled documents")
    assert report.raters[0].peers.exact == Undefined("no item shared with another rater")


def test_it_leaves_single_graded_documents_out_of_pairwise_figures() -> None:
    ratings = [*_pairs([(0, 1), (2, 2)]), Rating("q", "solo", "A", 3), Rating("q2", "x", "B", 0)]
    report = agreement_compute(ratings, n_resamples=10)
    q = next(q for q in report.queries if q.query_id == "q")
    assert (q.n_docs, q.n_dual, q.n_pairs, q.exact, q.mad) == (3, 2, 2, 0.5, 0.5)
    assert report.alpha.n_units == 2
    assert report.pair("A", "B").n_shared == 2
    assert {r.rater: r.n_items for r in report.raters} == {"A": 3, "B": 3}


def test_it_lists_each_querys_hard_disagreements_and_flips() -> None:
    rows = [(0, 3), (1, 2), (0, 1), (2, 3), (2, 2), (1, 3)]
    query = agreement_compute(_pairs(rows), n_resamples=10).queries[0]
    assert query.n_exact == 1 and query.exact == 1 / 6
    assert query.mad == (3 + 1 + 1 + 1 + 0 + 2) / 6
    assert [(d.doc_id, d.grades) for d in query.hard_disagreements] == [("d000", (0, 3)), ("d005", (1, 3))]
    assert [d.doc_id for d in query.relevance_flips] == ["d000", "d001", "d005"]
    assert [d.doc_id for d in query.disagreements] == ["d000", "d001", "d002", "d003", "d005"]


def test_it_counts_every_pair_of_a_document_with_three_grades() -> None:
    report = agreement_compute(
        [Rating("q", "d", "A", 0), Rating("q", "d", "B", 1), Rating("q", "d", "C", 1)], n_resamples=10
    )
    query = report.queries[0]
    # Pairs (0,1), (0,1), (1,1): one of three equal, differences 1+1+0.
    assert (query.n_pairs, query.n_exact, query.abs_diff_sum) == (3, 1, 2)
    assert query.disagreements[0].grades == (0, 1, 1)
    assert query == query_agreement("q", {"d": [1, 0, 1]})
    assert [(p.rater_a, p.rater_b) for p in report.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]


def test_it_computes_rater_times_distributions_gold_and_consensus() -> None:
    ratings = [
        Rating("q", "d1", "A", 3, time_ms=1000),
        Rating("q", "d2", "A", 1, time_ms=3000),
        Rating("q", "d3", "A", 0, time_ms=2000.5),
        Rating("q", "d4", "A", 2),
        Rating("q", "d1", "B", 1),
        Rating("q", "d4", "C", 2),
    ]
    gold = {("q", "d1"): 3, ("q", "d2"): 3, ("q", "d3"): 1, ("q", "unrated"): 0}
    final = {("q", "d1"): 3, ("q", "d4"): 2}
    report = agreement_compute(ratings, gold=gold, final=final, n_resamples=10)
    a, b, c = report.raters
    assert (a.rater, a.n_items, a.median_time_ms) == ("A", 4, 2000.5)
    assert a.distribution == {0: 1, 1: 1, 2: 1, 3: 1}
    # Gold: d1 3 vs 3 exact; d2 1 vs 3 off by two; d3 0 vs 1 within one. B gave the gold-3 d1 a 1.
    assert (a.gold.n, a.gold.exact, a.gold.within_1) == (3, 1 / 3, 2 / 3)
    assert (b.gold.n, b.gold.exact, b.gold.within_1) == (1, 0.0, 0.0)
    assert c.gold == Match(0, Undefined("no gold item rated"), Undefined("no gold item rated"))
    assert (a.consensus.n, a.consensus.exact) == (2, 1.0)
    assert (b.consensus.n, b.consensus.exact, b.consensus.within_1) == (1, 0.0, 0.0)
    assert b.median_time_ms == Undefined("no time recorded")
    # A met B on d1 (3 vs 1) and C on d4 (2 vs 2).
    assert (a.peers.n, a.peers.exact, a.peers.within_1) == (2, 0.5, 0.5)
    assert (c.peers.n, c.peers.exact) == (1, 1.0)


def test_it_does_not_depend_on_the_order_of_the_ratings() -> None:
    rng = random.Random(3)
    ratings = [
        Rating(f"q{rng.randint(0, 5)}", f"d{d}", rater, rng.randint(0, 3), time_ms=rng.randint(1, 99))
        for d in range(40)
        for rater in rng.sample(["x", "y", "z", "w"], 2)
    ]
    ratings = list({(r.query_id, r.doc_id, r.rater): r for r in ratings}.values())
    shuffled = ratings[:]
    rng.shuffle(shuffled)
    assert (
        agreement_compute(ratings, n_resamples=50).to_dict()
        == agreement_compute(shuffled, n_resamples=50).to_dict()
    )


def test_its_dict_form_is_json_without_nan() -> None:
    ratings = [Rating("q", "d1", "A", 2), Rating("q", "d1", "B", 2), Rating("r", "d9", "C", 0)]
    data = agreement_compute(ratings, n_resamples=10).to_dict()
    text = json.dumps(data, allow_nan=False)
    assert '"undefined": true' in text
    assert data["alpha"]["value"]["reason"].startswith("every pairable grade is 2")
    assert data["pairs"][0]["distribution_a"] == {"0": 0, "1": 0, "2": 1, "3": 0}
    assert data["queries"][0]["exact"] == 1.0
    assert data["scale"] == {"min": 0, "max": 3}


def test_it_computes_nothing_from_no_ratings() -> None:
    report = agreement_compute([], n_resamples=10)
    assert report.alpha.value == Undefined("no document has two or more grades")
    assert report.raters == report.pairs == report.queries == ()


def test_it_names_every_bad_rating_at_once() -> None:
    ratings = [
        Rating("q", "d", "A", 4),
        Rating("q", "d", "B", True),
        Rating("q", "", "C", 1),
        Rating("q", "d", "D", 1, time_ms=-5),
        Rating("q", "d", "E", 1, time_ms=float("nan")),
    ]
    with pytest.raises(AgreementInputError) as caught:
        agreement_compute(ratings)
    assert caught.value.errors == [
        "ratings[2].doc_id: '' is not a non-empty string",
        "ratings[0].grade: 4 is outside the scale 0..3",
        "ratings[1].grade: True is not an integer grade",
        "ratings[3].time_ms: -5 must be a finite number >= 0",
        "ratings[4].time_ms: nan must be a finite number >= 0",
    ]


def test_it_refuses_two_grades_from_one_rater_on_one_item() -> None:
    ratings = [Rating("q", "d", "A", 1), Rating("q", "e", "A", 1), Rating("q", "d", "A", 2)]
    with pytest.raises(
        AgreementInputError, match=r"ratings\[2\]: rater 'A' already graded \('q', 'd'\) at ratings\[0\]"
    ):
        agreement_compute(ratings)


def test_it_names_bad_gold_final_and_settings() -> None:
    with pytest.raises(AgreementInputError) as caught:
        agreement_compute(
            [Rating("q", "d", "A", 1)],
            gold={("q", "d"): 9, "q-d": 1},  # type: ignore[dict-item]
            final={("q", "d"): -1},
        )
    assert caught.value.errors == [
        "gold[('q', 'd')]: 9 is outside the scale 0..3",
        "gold['q-d']: the key must be a (query_id, doc_id) pair",
        "final[('q', 'd')]: -1 is outside the scale 0..3",
    ]
    with pytest.raises(AgreementInputError) as caught:
        agreement_compute([], relevant_min_grade=0, hard_diff=0, n_resamples=0, confidence=1.0)
    assert caught.value.errors == [
        "relevant_min_grade: 0 must be an integer in 1..3 so that grades exist on both sides of the cutoff",
        "hard_diff: 0 must be a positive integer",
        "n_resamples: 0 must be a positive integer",
        "confidence: 1.0 must be strictly between 0 and 1",
    ]
    with pytest.raises(AgreementInputError, match=r"scale: 2\.\.2 must be integers with at least two grades"):
        agreement_compute([], scale=Scale(2, 2))
    with pytest.raises(AgreementInputError, match=r"ratings\[0\]: \('q', 'd', 'A', 1\) is not a Rating"):
        agreement_compute([("q", "d", "A", 1)])  # type: ignore[list-item]


def test_query_agreement_names_bad_grades_by_document() -> None:
    with pytest.raises(AgreementInputError) as caught:
        query_agreement("q", {"d1": [1, 7], "d2": ["2"]})  # type: ignore[list-item]
    assert caught.value.errors == [
        "grades['d1'][1]: 7 is outside the scale 0..3",
        "grades['d2'][0]: '2' is not an integer grade",
    ]


def test_it_refuses_to_pair_a_rater_with_themselves() -> None:
    report = agreement_compute(_pairs([(1, 1)]), n_resamples=10)
    with pytest.raises(ValueError, match="pair: 'A' twice"):
        report.pair("A", "A")
