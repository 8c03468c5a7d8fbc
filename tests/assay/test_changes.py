"""One computation per change (assay.changes, docs/metrics.md "Changes"): the pairs, the change, its interval
and p-value describe the same queries, and count them as the report's means do."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.changes import Change, pair_scope, paired_change, paired_changes, report_seed
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.metric_table import METRIC_KEYS, WEIGHTED_METRICS
from assay.report import build_report
from assay.resampling import (
    DEFAULT_SEED,
    _SignFlips,
    bootstrap_means,
    percentile_interval,
    randomization_p_value,
)
from assay.results import QueryResult


def _row(qid: str, ndcg: float | None, **extra: Any) -> dict[str, Any]:
    row = {
        "id": qid,
        "ndcg": ndcg,
        "mrr": ndcg,
        "p_at_k": ndcg,
        "empty": ndcg == 0.0,
        "lt3": ndcg == 0.0,
        "judged_at_k": None if ndcg is None else 1.0,
        "error": None if ndcg is not None else "HTTP 500",
        "tier": "core",
        "expect_empty": False,
        "weight": 1.0,
    }
    row.update(extra)
    return row


def figures(change: Change) -> tuple[float, float, float, float, float]:
    """(baseline, current, delta, low, high) of a change whose every figure is defined."""
    values = (change.baseline, change.current, change.delta, change.low, change.high)
    assert all(v is not None for v in values), change
    return values  # type: ignore[return-value]


def _core(row: Any) -> bool:
    return row.get("tier", "core") == "core"


def test_the_pairs_are_the_core_queries_both_reports_counted_and_the_rest_is_named() -> None:
    baseline = [
        _row("q-1", 1.0),
        _row("q-2", 0.5),
        _row("q-3", 0.8),
        _row("q-4", 0.0, expect_empty=True),
        _row("q-5", 0.9, tier="shadow"),
        _row("q-6", 0.7),  # retired
        _row("q-8", None),  # errored in the baseline
    ]
    current = [
        _row("q-1", 0.0),  # -1.0
        _row("q-2", 0.75),  # +0.25
        _row("q-3", None),  # errored now
        _row("q-4", 0.0, expect_empty=True),  # out of the nDCG means, in the <3 rate
        _row("q-5", 0.1, tier="shadow"),  # not core
        _row("q-7", 0.3),  # new
        _row("q-8", 0.2),
    ]
    pairs = pair_scope(current, baseline, _core, METRIC_KEYS)
    ndcg = pairs.change("ndcg", seed=DEFAULT_SEED)

    assert ndcg.n == 2
    baseline_mean, current_mean, delta, low, high = figures(ndcg)
    assert delta == pytest.approx((-1.0 + 0.25) / 2)
    assert current_mean - baseline_mean == pytest.approx(delta)
    assert low <= delta <= high
    assert pairs.change("empty_rate", seed=1).n == 2
    assert pairs.change("lt3_rate", seed=1).n == 3  # q-4 counts in the <3 rate
    assert pairs.change("error_rate", seed=1).n == 5  # every common core query: q-1 q-2 q-3 q-4 q-8
    assert pairs.left_out.to_dict() == {
        "errored_baseline": ["q-8"],
        "errored_current": ["q-3"],
        "errored_both": [],
        "new": ["q-7"],
        "retired": ["q-6"],
    }
    assert "1 errored in the baseline (q-8)" in pairs.left_out.describe()


def test_without_common_queries_every_figure_is_undefined() -> None:
    change = pair_scope([_row("q-1", 0.5)], [_row("q-2", 0.5)], _core, METRIC_KEYS).change("ndcg", seed=1)
    assert (change.n, change.delta, change.low, change.p_value) == (0, None, None, None)


# --- properties --------------------------------------------------------------------------------------------

values = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
pair_lists = st.lists(
    st.tuples(values, values, st.floats(min_value=0.1, max_value=10.0)), min_size=1, max_size=60
)


@settings(max_examples=150, deadline=None)
@given(pairs=pair_lists, weighted=st.booleans(), seed=st.integers(min_value=0, max_value=2**31))
def test_the_interval_holds_the_change_and_n_is_the_pairs(
    pairs: list[Any], weighted: bool, seed: int
) -> None:
    change = paired_change(pairs, "ndcg", weighted=weighted, seed=seed)
    data = np.asarray(pairs)
    w = data[:, 2] if weighted else np.ones(len(pairs))
    assert change.n == len(pairs)
    baseline_mean, current_mean, delta, low, high = figures(change)
    assert delta == pytest.approx(float(((data[:, 1] - data[:, 0]) * w).sum() / w.sum()), abs=1e-12)
    assert current_mean - baseline_mean == pytest.approx(delta, abs=1e-12)
    assert low <= delta + 1e-12 and delta - 1e-12 <= high
    assert change.p_value is not None and 0.0 <= change.p_value <= 1.0
    # The same seed gives the same page.
    assert paired_change(pairs, "ndcg", weighted=weighted, seed=seed) == change


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=400), value=values, seed=st.integers(min_value=0, max_value=2**31)
)
def test_all_equal_pairs_change_nothing(n: int, value: float, seed: int) -> None:
    change = paired_change([(value, value, 1.0)] * n, "mrr", seed=seed)
    assert (change.delta, change.low, change.high, change.p_value, change.n) == (0.0, 0.0, 0.0, 1.0, n)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=300),
    drop=st.floats(min_value=0.01, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**31),
)
def test_one_changed_query_among_many(n: int, drop: float, seed: int) -> None:
    pairs = [(1.0, 1.0, 1.0)] * (n - 1) + [(1.0, 1.0 - drop, 1.0)]
    change = paired_change(pairs, "ndcg", seed=seed)
    assert change.n == n
    assert change.delta == pytest.approx(-drop / n)
    # The bootstrap draws the changed query 0, 1, 2... times: the interval runs from no change to a multiple
    # of the one change, and always holds the mean change.
    _, _, delta, low, high = figures(change)
    assert high == 0.0
    assert low <= delta < 0.0
    # A single change flipped in sign is as large as itself: no draw is less extreme, no evidence of a change.
    assert change.p_value == 1.0


@settings(max_examples=80, deadline=None)
@given(pairs=st.lists(st.tuples(values, values, st.just(1.0)), min_size=1, max_size=3))
def test_tiny_n_stays_consistent(pairs: list[Any]) -> None:
    change = paired_change(pairs, "ndcg", seed=3)
    deltas = [b - a for a, b, _ in pairs]
    assert change.n == len(pairs)
    _, _, delta, low, high = figures(change)
    assert min(deltas) - 1e-12 <= low <= delta + 1e-12 <= high + 2e-12
    assert high <= max(deltas) + 1e-12


def test_the_p_value_is_the_share_of_sign_flips_at_least_as_extreme() -> None:
    deltas = np.array([-0.3, -0.2, -0.25, -0.1, -0.4, -0.3, -0.2, -0.35])
    # Every change is a drop: only the all-same-sign flips are as extreme, 2 of 2^8.
    assert randomization_p_value(deltas, permutations=20_000) == pytest.approx(2 / 256, abs=0.005)
    assert randomization_p_value(np.array([0.1, -0.1]), permutations=1000) == 1.0


# --- the pairs count as the report's means --------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3),  # the grade of d
            st.integers(min_value=-1, max_value=4),  # where d comes back: -1 errored, 0 nothing returned
            st.booleans(),  # expect_empty
            st.floats(min_value=0.5, max_value=5.0),  # traffic weight
        ),
        min_size=1,
        max_size=25,
    )
)
def test_a_report_against_itself_pairs_exactly_the_queries_its_means_count(spec: list[Any]) -> None:
    queries, results = [], {}
    for i, (grade, where, empty, weight) in enumerate(spec):
        qid = f"q{i}"
        queries.append(
            GoldenQuery(
                id=qid, text=qid, judgments=(Judgment("d", grade),), expect_empty=empty, weight=weight
            )
        )
        if where < 0:
            results[qid] = QueryResult(query_id=qid, error="HTTP 500")
        else:
            results[qid] = QueryResult(
                query_id=qid, ids=tuple([f"x{j}" for j in range(where - 1)] + ["d"])[:where]
            )
    report = build_report(GoldenFile(version="v", queries=tuple(queries)), results)
    pairs = pair_scope(report["per_query"], report["per_query"], _core, METRIC_KEYS)
    core = report["tiers"]["core"]
    for metric in METRIC_KEYS:
        change = pairs.change(metric, seed=1, with_interval=False)
        assert change.n == core[metric]["n"], metric
        if core[metric]["value"] is None:
            assert change.current is None
        else:
            assert change.current == pytest.approx(core[metric]["value"], abs=1e-12), metric
            assert change.delta == 0.0
    for metric in WEIGHTED_METRICS:
        change = pairs.change(metric, weighted=True, seed=1, with_interval=False)
        expected = core["weighted"][metric]["value"]
        assert change.current == (None if expected is None else pytest.approx(expected, abs=1e-12)), metric


def test_the_seed_is_the_reports() -> None:
    assert report_seed({"ci": {"seed": 17, "ndcg": {"seed": 17}}}) == 17
    assert report_seed({"ci": {"ndcg": {"seed": 9}}}) == 9
    assert report_seed({}) == DEFAULT_SEED


@pytest.mark.parametrize("weighted", [False, True])
def test_a_change_of_nothing_is_what_the_draws_would_give(weighted: bool) -> None:
    """All-zero deltas skip the draws: the interval and p-value equal the ones the draws give."""
    pairs = [(v, v, w) for v, w in zip(np.linspace(0, 1, 57), np.linspace(0.5, 3, 57), strict=True)]
    change = paired_change(pairs, "ndcg", weighted=weighted, seed=11)
    deltas = np.zeros(57)
    weights = np.linspace(0.5, 3, 57) if weighted else None
    assert (change.low, change.high) == percentile_interval(bootstrap_means(deltas, weights, seed=11))
    assert change.p_value == randomization_p_value(deltas, weights, seed=11) == 1.0


@pytest.mark.parametrize("seed", [0, 5, DEFAULT_SEED + 1])
@pytest.mark.parametrize(("size", "rows"), [(1, [3, 1]), (7, [5, 2, 9]), (9_309, [3, 4]), (83_765, [2, 1])])
def test_the_sign_flips_are_the_ones_rng_choice_draws_batch_after_batch(
    seed: int, size: int, rows: list[int]
) -> None:
    """The randomization test's flips, made from the generator's raw words (1.0 for a +1 sign, 0.0 for a -1),
    are the very signs `rng.choice([-1.0, 1.0])` draws from the same seed, odd batches included (a word's
    half left over)."""
    rng = np.random.default_rng(seed)
    flips = _SignFlips(seed)
    for count in rows:
        expected = rng.choice(np.array([-1.0, 1.0]), size=(count, size))
        heads = np.empty((count, size))
        flips.draw(heads)
        assert np.array_equal(2.0 * heads - 1.0, expected)


def _plain_means(values: Any, weights: Any, seed: int, resamples: int = 1000) -> Any:
    """The bootstrap means the straightforward way: each resample's indices from `default_rng(seed)`, its
    (weighted) mean over the values drawn."""
    draws = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    if weights is None:
        return np.array([values[draw].mean() for draw in draws])
    return np.array([(values[draw] * weights[draw]).sum() / weights[draw].sum() for draw in draws])


def _plain_p_value(deltas: Any, weights: Any, seed: int, permutations: int = 1000) -> float:
    """The randomization p-value the straightforward way: signs from `rng.choice([-1.0, 1.0])` with
    `default_rng(seed + 1)`, the share of flipped means at least as large as the observed one."""
    w = np.ones_like(deltas) if weights is None else weights
    observed = abs((deltas * w).sum() / w.sum())
    signs = np.random.default_rng(seed + 1).choice(np.array([-1.0, 1.0]), size=(permutations, len(deltas)))
    flipped = np.abs((signs * deltas * w).sum(axis=1) / w.sum())
    return float((flipped >= observed - 1e-12).sum() / permutations)


def _close(found: Any, expected: Any, values: Any) -> bool:
    """Equal but for floating-point summation order: within 1e-12 of the largest value."""
    scale = max(1.0, float(np.abs(values).max()))
    return bool(np.all(np.abs(np.asarray(found) - np.asarray(expected)) <= 1e-12 * scale))


@settings(max_examples=60, deadline=None)
@given(pairs=pair_lists, weighted=st.booleans(), seed=st.integers(min_value=0, max_value=2**31))
def test_the_resamples_are_the_straightforward_ones(pairs: list[Any], weighted: bool, seed: int) -> None:
    """The same draws as the straightforward code, summed another way: the means equal its means within
    1e-12 of the largest value (floating-point summation order), the p-value equals its p-value exactly (a
    flip could only count otherwise if its mean lay within float noise of the observed one, less 1e-12)."""
    data = np.asarray(pairs)
    deltas, weights = data[:, 1] - data[:, 0], data[:, 2] if weighted else None
    means = bootstrap_means(deltas, weights, resamples=300, seed=seed)
    assert _close(means, _plain_means(deltas, weights, seed, 300), deltas)
    assert randomization_p_value(deltas, weights, permutations=300, seed=seed) == _plain_p_value(
        deltas, weights, seed, 300
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_changes_of_several_sizes_sharing_a_seed_are_the_straightforward_ones(weighted: bool) -> None:
    """Changes over scopes of several sizes (one pair to several matrix-product chunks and draw batches),
    resampled together with one seed: each interval is the straightforward bootstrap's within 1e-12 and each
    p-value the straightforward randomization test's."""
    rng = np.random.default_rng(8)
    wanted = []
    for size in (1, 2, 7, 300, 2_049, 5_003):
        for metric in ("ndcg", "mrr", "empty_rate"):
            before, after = rng.random(size), rng.random(size)
            if metric == "empty_rate":
                before, after = np.round(before), np.round(after)
            wanted.append((np.column_stack((before, after, rng.choice([0.5, 1.0, 2.5, 10.0], size))), metric))
    found = paired_changes([(pairs, metric, weighted) for pairs, metric in wanted], seed=21)
    for change, (pairs, _) in zip(found, wanted, strict=True):
        deltas, weights = pairs[:, 1] - pairs[:, 0], pairs[:, 2] if weighted else None
        low, high = percentile_interval(_plain_means(deltas, weights, 21))
        assert _close((change.low, change.high), (low, high), deltas), (change, low, high)
        assert change.p_value == _plain_p_value(deltas, weights, 21), change


@pytest.mark.parametrize("size", [1, 5, 2_050, 40_000])
def test_each_resampled_mean_is_the_exact_mean_of_its_draw_rounded_once(size: int) -> None:
    """Each resampled sum is exact, so a mean is the exact mean of the values drawn rounded once, whichever
    way it was added up (gathered or counted, on whichever thread): `math.fsum` over the draw, divided."""
    rng = np.random.default_rng(size)
    values = np.round((rng.random(size) - rng.random(size)) * 2**40) / 2**40  # no bit below 2^-40
    weights = rng.choice([0.5, 1.0, 2.5, 10.0], size)
    draws = np.random.default_rng(3).integers(0, size, size=(50, size))
    plain = [math.fsum(values[draw]) / size for draw in draws]
    weighted = [math.fsum(values[draw] * weights[draw]) / math.fsum(weights[draw]) for draw in draws]
    assert bootstrap_means(values, resamples=50, seed=3).tolist() == plain
    assert bootstrap_means(values, weights, resamples=50, seed=3).tolist() == weighted


@settings(max_examples=40, deadline=None)
@given(
    scopes=st.lists(st.tuples(pair_lists, st.booleans(), st.booleans()), min_size=1, max_size=6),
    seed=st.integers(min_value=0, max_value=2**31),
)
def test_changes_resampled_together_are_the_ones_each_gives_alone(
    scopes: list[tuple[list[Any], bool, bool]], seed: int
) -> None:
    """Changes over as many pairs share their draws: each is exactly the change computed on its own (its
    sums are exact, however many parts the group multiplies at once)."""
    wanted = [(pairs if not same else scopes[0][0], "ndcg", weighted) for pairs, weighted, same in scopes]
    for with_interval in (True, False):
        together = paired_changes(wanted, seed=seed, with_interval=with_interval)
        alone = [
            paired_change(pairs, metric, weighted=weighted, seed=seed, with_interval=with_interval)
            for pairs, metric, weighted in wanted
        ]
        assert together == alone
