"""assay.labels.judge_agreement: every figure against scikit-learn and the krippendorff package, the
intervals against a plain loop over the same draws, hypothesis properties, the verdict rule at its
edges and the drift watch against a plain running computation."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from assay.golden.model import Scale
from assay.labels.agreement import AgreementInputError, Undefined, bootstrap_samples
from assay.labels.agreement_types import NOT_ENOUGH_DATA
from assay.labels.judge_agreement import (
    Estimate,
    HumanItem,
    HumanPair,
    JudgedItem,
    JudgeFigures,
    ScopeFigures,
    judge_agreement,
    judged_items,
    judges_compare,
)
from assay.labels.judge_verdicts import (
    FELL_BELOW,
    HOLDING,
    NOT_QUALIFIED,
    QUALIFIED,
    TOO_FEW_PAIRS,
    QualificationBar,
    drift_watch,
    qualification_verdicts,
)

LABELS = [0, 1, 2, 3]
STRATA = ["billing", "account", "developer"]
LOCALES = ["en-US", "de-DE"]


def _data(
    seed: int, n_queries: int = 24, docs: int = 5, error_rate: float = 0.05
) -> tuple[list[JudgedItem], list[HumanPair]]:
    rng = random.Random(seed)
    items, pairs = [], []
    for q in range(n_queries):
        stratum, locale = STRATA[q % 3], LOCALES[q % 2]
        for d in range(rng.randint(1, docs)):
            human = rng.randint(0, 3)
            judge = min(3, max(0, human + rng.choice([-1, 0, 0, 1]))) if rng.random() > error_rate else None
            items.append(JudgedItem(f"q{q:02}", f"d{d}", stratum, locale, human, judge))
            other = min(3, max(0, human + rng.choice([-1, 0, 0, 0, 1])))
            pairs.append(HumanPair(f"q{q:02}", f"d{d}", stratum, locale, human, other))
    return items, pairs


def _alpha(a: list[int], b: list[int]) -> float:
    return float(
        krippendorff.alpha(reliability_data=[a, b], level_of_measurement="ordinal", value_domain=LABELS)
    )


def _check_judge(figures: JudgeFigures, items: list[JudgedItem]) -> None:
    graded = [i for i in items if i.judge is not None]
    h = [i.human for i in graded]
    j = [i.judge for i in graded if i.judge is not None]
    assert figures.n_items == len(graded)
    assert figures.n_errors == len(items) - len(graded)
    assert figures.n_queries == len({i.query_id for i in graded})
    kq = cohen_kappa_score(h, j, labels=LABELS, weights="quadratic")
    ku = cohen_kappa_score(h, j, labels=LABELS)
    assert figures.kappa_quadratic.value == pytest.approx(kq, abs=1e-12)
    assert figures.kappa_unweighted.value == pytest.approx(ku, abs=1e-12)
    assert figures.alpha.value == pytest.approx(_alpha(h, j), abs=1e-12)
    assert figures.confusion == tuple(map(tuple, confusion_matrix(h, j, labels=LABELS).tolist()))
    diff = np.array(j) - np.array(h)
    assert figures.exact.value == pytest.approx(np.mean(diff == 0), abs=1e-12)
    assert figures.within_1.value == pytest.approx(np.mean(np.abs(diff) <= 1), abs=1e-12)
    assert figures.bias.value == pytest.approx(np.mean(diff), abs=1e-12)


def test_every_figure_equals_scikit_learn_and_krippendorff_overall_and_per_scope() -> None:
    items, pairs = _data(1)
    result = judge_agreement(items, pairs)
    _check_judge(result.overall.judge, items)
    assert [s.name for s in result.strata] == sorted(STRATA)
    assert [s.name for s in result.locales] == sorted(LOCALES)
    for scope in (*result.strata, *result.locales):
        field = scope.scope
        _check_judge(scope.judge, [i for i in items if getattr(i, field) == scope.name])
        mine = [p for p in pairs if getattr(p, field) == scope.name]
        a, b = [p.grade_a for p in mine], [p.grade_b for p in mine]
        humans = scope.humans
        assert humans.n_pairs == len(mine)
        assert humans.kappa_quadratic.value == pytest.approx(
            cohen_kappa_score(a, b, labels=LABELS, weights="quadratic"), abs=1e-12
        )
        assert humans.kappa_unweighted.value == pytest.approx(
            cohen_kappa_score(a, b, labels=LABELS), abs=1e-12
        )
        assert humans.alpha.value == pytest.approx(_alpha(a, b), abs=1e-12)
        assert humans.exact.value == pytest.approx(np.mean(np.array(a) == b), abs=1e-12)
        assert humans.within_1.value == pytest.approx(np.mean(np.abs(np.array(a) - b) <= 1), abs=1e-12)
    json.dumps(result.to_dict())  # JSON-ready


def test_intervals_are_the_percentiles_of_the_figures_over_resampled_whole_queries() -> None:
    items, pairs = _data(2, n_queries=12)
    n_resamples = 200
    result = judge_agreement(items, pairs, n_resamples=n_resamples, seed=7)
    graded = [i for i in items if i.judge is not None]
    queries = sorted({i.query_id for i in graded})
    by_query = {q: [i for i in graded if i.query_id == q] for q in queries}
    figures: dict[str, list[float]] = {"kappa_quadratic": [], "kappa_unweighted": [], "alpha": [], "bias": []}
    for draw in bootstrap_samples(len(queries), n_resamples=n_resamples, seed=7):
        rows = [i for qi in draw for i in by_query[queries[qi]]]
        h, j = [i.human for i in rows], [i.judge for i in rows]
        figures["kappa_quadratic"].append(cohen_kappa_score(h, j, labels=LABELS, weights="quadratic"))
        figures["kappa_unweighted"].append(cohen_kappa_score(h, j, labels=LABELS))
        figures["alpha"].append(_alpha(h, j))  # type: ignore[arg-type]
        figures["bias"].append(float(np.mean(np.array(j) - np.array(h))))
    for name, values in figures.items():
        expected = np.percentile(values, [2.5, 97.5])
        assert getattr(result.overall.judge, name).interval == pytest.approx(tuple(expected), abs=1e-12), name
    # The humans' over their own queries, the same way.
    pair_queries = sorted({p.query_id for p in pairs})
    pairs_of = {q: [p for p in pairs if p.query_id == q] for q in pair_queries}
    kappas, exact = [], []
    for draw in bootstrap_samples(len(pair_queries), n_resamples=n_resamples, seed=7):
        drawn = [p for qi in draw for p in pairs_of[pair_queries[qi]]]
        a, b = [p.grade_a for p in drawn], [p.grade_b for p in drawn]
        kappas.append(cohen_kappa_score(a, b, labels=LABELS, weights="quadratic"))
        exact.append(float(np.mean(np.array(a) == b)))
    humans = result.overall.humans
    assert humans.kappa_quadratic.interval == pytest.approx(
        tuple(np.percentile(kappas, [2.5, 97.5])), abs=1e-12
    )
    assert humans.exact.interval == pytest.approx(tuple(np.percentile(exact, [2.5, 97.5])), abs=1e-12)


@st.composite
def judged(draw: st.DrawFn, min_queries: int = 1) -> list[JudgedItem]:
    items = []
    for q in range(draw(st.integers(min_queries, 8))):
        for d in range(draw(st.integers(1, 4))):
            human = draw(st.integers(0, 3))
            judge = draw(st.one_of(st.none(), st.integers(0, 3)))
            items.append(JudgedItem(f"q{q}", f"d{d}", STRATA[q % 3], LOCALES[d % 2], human, judge))
    return items


def _perfect(items: list[JudgedItem]) -> list[JudgedItem]:
    return [dataclasses.replace(i, judge=i.human) for i in items]


@settings(max_examples=40, deadline=None)
@given(judged())
def test_a_judge_equal_to_the_consensus_has_kappa_1_and_bias_0(items: list[JudgedItem]) -> None:
    result = judge_agreement(_perfect(items), [], n_resamples=50)
    for scope in result.scopes:
        j = scope.judge
        assert j.bias.value == 0 and j.exact.value == 1 and j.within_1.value == 1
        confusion = np.array(j.confusion)
        assert np.array_equal(confusion, np.diag(np.diag(confusion)))
        for kappa in (j.kappa_quadratic.value, j.kappa_unweighted.value, j.alpha.value):
            assert isinstance(kappa, Undefined) or kappa == pytest.approx(1.0)
        used = set(np.flatnonzero(np.diag(np.array(j.confusion))).tolist())
        assert isinstance(j.kappa_quadratic.value, Undefined) == (len(used) < 2)


@settings(max_examples=40, deadline=None)
@given(judged())
def test_swapping_judge_and_consensus_keeps_the_kappas_and_negates_the_bias(items: list[JudgedItem]) -> None:
    graded = [i for i in items if i.judge is not None]
    swapped = [dataclasses.replace(i, human=i.judge, judge=i.human) for i in graded if i.judge is not None]
    a = judge_agreement(graded, [], n_resamples=50).overall.judge
    b = judge_agreement(swapped, [], n_resamples=50).overall.judge
    for name in ("kappa_unweighted", "kappa_quadratic", "alpha"):
        x, y = getattr(a, name).value, getattr(b, name).value
        assert x == y if isinstance(x, Undefined) else x == pytest.approx(y, abs=1e-12)
    if graded:
        assert a.bias.value == pytest.approx(-b.bias.value)  # type: ignore[operator]
        assert np.array_equal(np.array(a.confusion).T, np.array(b.confusion))


@settings(max_examples=40, deadline=None)
@given(judged(min_queries=5))
def test_intervals_contain_the_point_estimate(items: list[JudgedItem]) -> None:
    result = judge_agreement(items, [], n_resamples=300)
    for scope in result.scopes:
        for name in ("kappa_quadratic", "kappa_unweighted", "alpha", "exact", "within_1", "bias"):
            estimate: Estimate = getattr(scope.judge, name)
            if isinstance(estimate.interval, Undefined):
                continue
            assert not isinstance(estimate.value, Undefined)
            low, high = estimate.interval
            assert low - 1e-12 <= estimate.value <= high + 1e-12, (scope.name, name)


@settings(max_examples=25, deadline=None)
@given(judged(), st.randoms(use_true_random=False))
def test_deterministic_with_the_seed_and_whatever_the_order(
    items: list[JudgedItem], rnd: random.Random
) -> None:
    shuffled = list(items)
    rnd.shuffle(shuffled)
    a = judge_agreement(items, [], n_resamples=50, seed=3)
    assert a == judge_agreement(shuffled, [], n_resamples=50, seed=3)
    assert a.to_dict() == judge_agreement(items, [], n_resamples=50, seed=3).to_dict()


@settings(max_examples=40, deadline=None)
@given(judged())
def test_errors_are_counted_apart_never_as_grades(items: list[JudgedItem]) -> None:
    with_errors = judge_agreement(items, [], n_resamples=50)
    without = judge_agreement([i for i in items if i.judge is not None], [], n_resamples=50)
    for scope in with_errors.scopes:
        j = scope.judge
        mine = [i for i in items if scope.scope == "overall" or getattr(i, scope.scope) == scope.name]
        assert j.n_errors == sum(i.judge is None for i in mine)
        assert j.n_items == sum(i.judge is not None for i in mine) == sum(map(sum, j.confusion))
    assert dataclasses.replace(with_errors.overall.judge, n_errors=0) == without.overall.judge


def test_undefined_figures_carry_reasons() -> None:
    none = judge_agreement([JudgedItem("q1", "d1", "", "", 2, None)], [])
    j = none.overall.judge
    assert (j.n_items, j.n_errors) == (0, 1)
    for name in ("kappa_quadratic", "kappa_unweighted", "alpha", "exact", "within_1", "bias"):
        assert getattr(j, name) == Estimate(
            Undefined("no item graded by the judge"), Undefined("no item graded by the judge")
        )
    assert none.overall.humans.kappa_quadratic.value == Undefined("no human-human pairs")

    same = judge_agreement([JudgedItem("q1", "d1", "", "", 2, 2), JudgedItem("q2", "d1", "", "", 2, 2)], [])
    j = same.overall.judge
    assert j.kappa_quadratic.value == Undefined("every grade of the 2 items is 2, on both sides")
    assert j.kappa_quadratic.interval == j.kappa_quadratic.value
    assert j.alpha.value == Undefined("every grade is 2: alpha needs two or more grades in use")
    assert j.exact.value == 1.0 and j.exact.interval == (1.0, 1.0)

    one = judge_agreement([JudgedItem("q1", "d1", "", "", 2, 3), JudgedItem("q1", "d2", "", "", 0, 0)], [])
    j = one.overall.judge
    assert j.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score([2, 0], [3, 0], labels=LABELS, weights="quadratic")
    )
    assert j.kappa_quadratic.interval == Undefined(
        "one query only: resampling whole queries needs two or more"
    )
    assert one.to_dict()["overall"]["judge"]["kappa_quadratic"]["interval"] == {
        "undefined": True,
        "reason": "one query only: resampling whole queries needs two or more",
    }


def test_bad_input_is_refused_with_every_problem() -> None:
    with pytest.raises(AgreementInputError) as caught:
        judge_agreement(
            [
                JudgedItem("q1", "d1", "", "", 4, 1),
                JudgedItem("", "d2", "", "", 1, 5),
                JudgedItem("q1", "d3", "", "", 1, None),
            ],
            [HumanPair("q1", "d1", "", "", 1, -1)],
        )
    assert caught.value.errors == [
        "items[0].human: 4 is outside the scale 0..3",
        "items[1].query_id: '' is not a non-empty string",
        "items[1].judge: 5 is outside the scale 0..3",
        "human_pairs[0].grade_b: -1 is outside the scale 0..3",
    ]
    with pytest.raises(AgreementInputError, match=r"items\[1\]: \('q1', 'd1'\) already at items\[0\]"):
        judge_agreement([JudgedItem("q1", "d1", "", "", 1, 1), JudgedItem("q1", "d1", "", "", 2, 2)], [])


def test_another_scale_uses_its_full_range_as_labels() -> None:
    items = [
        JudgedItem(f"q{q}", "d", "", "", h, j) for q, (h, j) in enumerate([(1, 1), (3, 4), (4, 4), (2, 1)])
    ]
    j = judge_agreement(items, [], scale=Scale(0, 4)).overall.judge
    h, g = [i.human for i in items], [i.judge for i in items]
    assert j.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(h, g, labels=[0, 1, 2, 3, 4], weights="quadratic"), abs=1e-12
    )
    assert j.grades == (0, 1, 2, 3, 4)


def test_judges_compare_uses_only_the_items_every_judge_graded() -> None:
    items, pairs = _data(3, error_rate=0)
    human = [HumanItem(i.query_id, i.doc_id, i.stratum, i.locale, i.human) for i in items]
    keys = [(i.query_id, i.doc_id) for i in human]
    good: dict[tuple[str, str], int | None] = {(i.query_id, i.doc_id): i.human for i in human}
    shifted: dict[tuple[str, str], int | None] = {k: min(3, g + 1) for k, g in good.items() if g is not None}
    shifted[keys[0]] = None  # an error
    del shifted[keys[1]]  # no answer
    result = judges_compare(human, {"shifted": shifted, "good": good}, pairs, n_resamples=100)
    assert result.n_items == len(human) and result.n_common == len(human) - 2
    assert result.note == (
        f"on the {len(human) - 2} items every judge graded (2 of {len(human)} left out: a judge has no grade"
        " there, or answered with an error)"
    )
    assert [(c.name, c.n_errors, c.n_missing) for c in result.judges] == [("good", 0, 0), ("shifted", 1, 1)]
    common = human[2:]
    for compared in result.judges:
        grades = good if compared.name == "good" else shifted
        assert compared.figures == judge_agreement(judged_items(common, grades), pairs, n_resamples=100)
    assert result.judges[0].figures.overall.judge.kappa_quadratic.value == 1.0
    assert result.judges[1].figures.overall.judge.bias.value > 0  # type: ignore[operator]
    json.dumps(result.to_dict())


# --- the verdict ------------------------------------------------------------------------------------


def _scope(judge: Estimate, human: Estimate, n_judge: int = 20, n_human: int = 20) -> Any:
    items, pairs = _data(4)
    base = judge_agreement(items, pairs, n_resamples=20)
    overall: ScopeFigures = base.overall
    overall = dataclasses.replace(
        overall,
        judge=dataclasses.replace(overall.judge, kappa_quadratic=judge, n_queries=n_judge),
        humans=dataclasses.replace(overall.humans, kappa_quadratic=human, n_queries=n_human),
    )
    return dataclasses.replace(base, overall=overall, strata=(), locales=())


def test_the_verdict_rule_at_its_edges() -> None:
    human = Estimate(0.85, (0.8, 0.9))
    at_bar = qualification_verdicts(_scope(Estimate(0.82, (0.8, 0.84)), human)).overall
    assert at_bar.verdict == QUALIFIED and at_bar.bar == pytest.approx(0.8)
    assert at_bar.why == (
        "judge kappa's lower bound 0.800 >= bar 0.800"
        " = max(minimum 0.667, human-human kappa 0.850 - margin 0.050)"
    )
    below = qualification_verdicts(_scope(Estimate(0.75, (0.7, 0.7999)), human)).overall
    assert below.verdict == NOT_QUALIFIED
    assert below.why.startswith("judge kappa's upper bound 0.7999 < bar 0.800")
    spans = qualification_verdicts(_scope(Estimate(0.8, (0.75, 0.85)), human)).overall
    assert spans.verdict == NOT_ENOUGH_DATA and "[0.750, 0.850] spans the bar 0.800" in spans.why
    # The minimum holds when the humans agree little.
    low_humans = qualification_verdicts(
        _scope(Estimate(0.68, (0.66, 0.7)), Estimate(0.6, (0.5, 0.7)))
    ).overall
    assert low_humans.bar == pytest.approx(0.667) and low_humans.verdict == NOT_ENOUGH_DATA
    custom = QualificationBar(margin=0.1, min_kappa=0.5)
    assert (
        qualification_verdicts(
            _scope(Estimate(0.68, (0.66, 0.7)), Estimate(0.6, (0.5, 0.7))), custom
        ).overall.verdict
        == QUALIFIED
    )


def test_the_verdict_needs_enough_queries_and_defined_figures() -> None:
    human = Estimate(0.85, (0.8, 0.9))
    few = qualification_verdicts(_scope(Estimate(0.95, (0.9, 1.0)), human, n_judge=9)).overall
    assert (
        few.verdict == NOT_ENOUGH_DATA
        and few.why == "the judge kappa rests on 9 queries; a verdict needs >= 10"
    )
    few_h = qualification_verdicts(_scope(Estimate(0.95, (0.9, 1.0)), human, n_human=1)).overall
    assert few_h.why == "the human-human kappa rests on 1 query; a verdict needs >= 10"
    no_humans = qualification_verdicts(
        _scope(
            Estimate(0.95, (0.9, 1.0)),
            Estimate(Undefined("no human-human pairs"), Undefined("no human-human pairs")),
        )
    ).overall
    assert no_humans.verdict == NOT_ENOUGH_DATA
    assert no_humans.why == "no human-human kappa to compare with: no human-human pairs"
    undefined = Undefined("every grade of the 4 items is 2, on both sides")
    none = qualification_verdicts(_scope(Estimate(undefined, undefined), human)).overall
    assert none.why == "judge kappa undefined: every grade of the 4 items is 2, on both sides"
    with pytest.raises(ValueError, match="min_queries"):
        QualificationBar(min_queries=1)


def test_verdicts_per_stratum_and_locale_on_real_figures() -> None:
    items, pairs = _data(5, n_queries=60)
    perfect = judge_agreement(_perfect(items), pairs, n_resamples=200)
    verdicts = qualification_verdicts(perfect)
    assert [v.name for v in verdicts.strata] == sorted(STRATA)
    assert [v.name for v in verdicts.locales] == sorted(LOCALES)
    assert {v.verdict for v in (verdicts.overall, *verdicts.strata, *verdicts.locales)} == {QUALIFIED}
    # A judge that always says 0 does not qualify anywhere.
    zero = judge_agreement([dataclasses.replace(i, judge=0) for i in items], pairs, n_resamples=200)
    assert qualification_verdicts(zero).overall.verdict == NOT_QUALIFIED
    json.dumps(verdicts.to_dict())


# --- drift ------------------------------------------------------------------------------------------


def _plain_drift(
    pairs: list[tuple[int | None, int]], window: int | None, min_pairs: int, bar: float
) -> tuple[list[float], int | None]:
    graded = [(j, h) for j, h in pairs if j is not None]
    kappas, fell = [], None
    for n in range(1, len(graded) + 1):
        last = graded[max(0, n - window) if window else 0 : n]
        h, j = [x[1] for x in last], [x[0] for x in last]
        kappa = (
            cohen_kappa_score(h, j, labels=LABELS, weights="quadratic")
            if len(set(h) | set(j)) > 1
            else float("nan")
        )
        kappas.append(kappa)
        if fell is None and len(last) >= min_pairs and not np.isnan(kappa) and kappa < bar:
            fell = n
    return kappas, fell


def test_drift_watch_runs_a_window_and_falls_below_the_bar() -> None:
    rng = random.Random(6)
    # Good for 150 pairs, then the judge starts to guess.
    pairs: list[tuple[int | None, int]] = []
    for n in range(400):
        human = rng.randint(0, 3)
        judge = human if n < 150 or rng.random() < 0.3 else rng.randint(0, 3)
        pairs.append((None if n % 37 == 0 else judge, human))
    watch = drift_watch(pairs, bar=0.8, window=100, min_pairs=30)
    kappas, fell = _plain_drift(pairs, 100, 30, 0.8)
    assert watch.n_errors == sum(j is None for j, _ in pairs)
    assert watch.n_pairs == len(pairs) - watch.n_errors == len(watch.points)
    got = [p.kappa_quadratic for p in watch.points]
    assert all(
        isinstance(g, Undefined) if np.isnan(k) else g == pytest.approx(k, abs=1e-12)
        for g, k in zip(got, kappas, strict=True)
    )
    assert watch.fell_at == fell and fell is not None and fell > 140
    assert watch.status == FELL_BELOW and watch.below_now
    graded = [(j, h) for j, h in pairs if j is not None][-100:]
    assert watch.exact == pytest.approx(np.mean([j == h for j, h in graded]))
    assert watch.n_window == 100
    assert watch.why.startswith(
        f"the running kappa over the latest 100 pairs fell below the bar 0.800 at pair {fell}"
    )
    json.dumps(watch.to_dict())


def test_drift_watch_needs_min_pairs_before_it_can_fall_and_holds_otherwise() -> None:
    bad = [(0, 3), (3, 0), (1, 2), (2, 1)] * 5  # kappa far below any bar
    early = drift_watch(bad, bar=0.7, window=None, min_pairs=50)
    assert early.status == TOO_FEW_PAIRS and early.fell_at is None and not early.below_now
    assert early.why == "20 graded pairs in the window; the kappa can fall below the bar from 50 on"
    good = [(g, g) for g in [0, 1, 2, 3] * 20]
    holding = drift_watch(good, bar=0.7, window=None, min_pairs=50)
    assert holding.status == HOLDING and holding.kappa_quadratic == 1.0 and holding.exact == 1.0
    assert holding.why == "the running kappa over all pairs is 1.000 over 80 pairs, >= the bar 0.700"
    errors_only = drift_watch([(None, 2)] * 3, bar=0.7)
    assert errors_only.n_errors == 3 and errors_only.n_pairs == 0
    assert errors_only.kappa_quadratic == Undefined("no graded pair since qualification")
    with pytest.raises(AgreementInputError, match="must not exceed the window"):
        drift_watch(good, bar=0.7, window=10, min_pairs=50)
    with pytest.raises(AgreementInputError, match=r"pairs\[0\].human: 4 is outside"):
        drift_watch([(1, 4)], bar=0.7)


def test_the_worked_examples_of_the_docs() -> None:
    """docs/judge-qualification.md, "Worked example"."""
    pairs = [(0, 0), (1, 1), (2, 3), (3, 3), (1, 2), (0, 1), (2, 2), (3, 1)]
    items = [
        JudgedItem(f"q{i // 2 + 1}", f"d{i % 2 + 1}", "billing", "en-US", h, j)
        for i, (h, j) in enumerate(pairs)
    ]
    items.append(JudgedItem("q5", "d1", "billing", "en-US", 2, None))
    j = judge_agreement(items, []).overall.judge
    assert (j.n_items, j.n_queries, j.n_errors) == (8, 4, 1)
    assert j.confusion == ((1, 1, 0, 0), (0, 1, 1, 0), (0, 0, 1, 1), (0, 1, 0, 1))
    assert j.kappa_quadratic.value == pytest.approx(11 / 18) and j.kappa_unweighted.value == pytest.approx(
        1 / 3
    )
    assert round(j.alpha.value, 3) == 0.633  # type: ignore[arg-type]
    assert (j.exact.value, j.within_1.value, j.bias.value) == (0.5, 0.875, 0.125)
    assert tuple(round(x, 3) for x in j.kappa_quadratic.interval) == (-0.25, 0.947)  # type: ignore[union-attr]

    cycle = [0, 1, 2, 3, 1, 2]
    stream: list[tuple[int | None, int]] = [(g, g) for g in cycle] * 10 + [(None, 2)]
    stream += [(min(3, g + 1), g) for g in cycle] * 10
    watch = drift_watch(stream, bar=0.77, window=50, min_pairs=20)
    assert isinstance(watch.points[0].kappa_quadratic, Undefined)  # one pair, one grade
    assert all(p.kappa_quadratic == pytest.approx(1.0) for p in watch.points[1:60])
    assert round(watch.points[85].kappa_quadratic, 3) == 0.781 and watch.points[85].exact == 0.56  # type: ignore[arg-type]
    assert round(watch.points[86].kappa_quadratic, 3) == 0.763  # type: ignore[arg-type]
    assert (watch.status, watch.fell_at, watch.n_errors, watch.exact) == (FELL_BELOW, 87, 1, 0.16)
    assert watch.why == (
        "the running kappa over the latest 50 pairs fell below the bar 0.770 at pair 87;"
        " now 0.607 over 50 pairs"
    )


def test_the_humans_undefined_kappa_names_pairs() -> None:
    pairs = [HumanPair(f"q{q}", "d1", "", "", 1, 1) for q in range(3)]
    humans = judge_agreement([JudgedItem("q1", "d1", "", "", 1, 1)], pairs).overall.humans
    assert humans.kappa_unweighted.value == Undefined("every grade of the 3 pairs is 1, on both sides")
    assert humans.exact == Estimate(1.0, (1.0, 1.0))
