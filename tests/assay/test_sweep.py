"""`assay sweep`'s pure parts: the split, Holm's adjustment and the grid (assay/experiment.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.experiment import MAX_CONFIGS, SweepError, parse_grid, split_queries
from assay.golden.model import GoldenQuery
from assay.resampling import holm

STRATA = st.sampled_from([None, "billing", "account", "docs"])
TIERS = st.sampled_from(["core", "core", "core", "shadow", "challenge"])


@st.composite
def query_sets(draw: st.DrawFn) -> list[GoldenQuery]:
    count = draw(st.integers(min_value=4, max_value=60))
    return [
        GoldenQuery(id=f"q-{i}", text=f"text {i}", stratum=draw(STRATA), tier=draw(TIERS))
        for i in range(count)
    ]


@settings(max_examples=80, deadline=None)
@given(queries=query_sets(), fraction=st.floats(min_value=0.05, max_value=0.95), seed=st.integers(0, 2**32))
def test_the_split_is_deterministic_disjoint_covering_and_stratified(
    queries: list[GoldenQuery], fraction: float, seed: int
) -> None:
    try:
        split = split_queries(queries, fraction, seed)
    except SweepError as exc:
        # Only when rounding leaves a part empty, which the error says.
        assert "part is empty" in str(exc)
        return
    core = [q for q in queries if q.tier == "core"]
    # Disjoint, and together exactly the core queries (no shadow or challenge query).
    assert not set(split.tuning) & set(split.holdout)
    assert sorted(split.tuning + split.holdout) == sorted(q.id for q in core)
    # The same seed and file give the same split, whatever order the file lists its queries in.
    assert split_queries(queries, fraction, seed) == split
    again = split_queries(list(reversed(queries)), fraction, seed)
    assert set(again.tuning) == set(split.tuning)
    # Each stratum in the same proportion, rounded per stratum (halves up).
    for stratum in {q.stratum for q in core}:
        ids = {q.id for q in core if q.stratum == stratum}
        expected = math.floor(fraction * len(ids) + 0.5)
        assert len(ids & set(split.tuning)) == expected
        assert split.strata[stratum or ""] == (expected, len(ids) - expected)


def test_another_seed_gives_another_split() -> None:
    queries = [GoldenQuery(id=f"q-{i}", text="t") for i in range(40)]
    splits = {split_queries(queries, 0.7, seed).tuning for seed in range(5)}
    assert len(splits) == 5
    assert all(len(tuning) == 28 for tuning in splits)


def test_a_split_that_leaves_a_part_empty_is_refused() -> None:
    with pytest.raises(SweepError, match="held-out part is empty"):
        split_queries([GoldenQuery(id="a", text="t"), GoldenQuery(id="b", text="t", stratum="x")], 0.7, 1)
    with pytest.raises(SweepError, match="between 0 and 1"):
        split_queries([GoldenQuery(id="a", text="t")], 1.0, 1)


def test_holm_against_values_computed_by_hand() -> None:
    # m = 3 known p-values: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised to the 0.06 before
    # it (step-down: never below a smaller p-value's adjustment). None stays None and does not count.
    adjusted = holm([0.01, 0.04, 0.03, None])
    assert adjusted[0] == pytest.approx(0.03)
    assert adjusted[1] == pytest.approx(0.06)
    assert adjusted[2] == pytest.approx(0.06)
    assert adjusted[3] is None
    # Capped at 1: 0.5 x 2 = 1.0, then 0.6 x 1 raised to 1.0.
    assert holm([0.6, 0.5]) == [1.0, 1.0]
    # Four: 0.001 x 4, 0.02 x 3, 0.03 x 2, 0.5 x 1.
    assert holm([0.5, 0.03, 0.001, 0.02]) == pytest.approx([0.5, 0.06, 0.004, 0.06])
    assert holm([]) == []


def test_a_grid_of_params_is_the_cartesian_product_first_name_slowest() -> None:
    grid = parse_grid({"params": {"w": [1, 2], "msm": [1, 2, 3]}})
    assert grid == [
        {"w": 1, "msm": 1}, {"w": 1, "msm": 2}, {"w": 1, "msm": 3},
        {"w": 2, "msm": 1}, {"w": 2, "msm": 2}, {"w": 2, "msm": 3},
    ]  # fmt: skip
    assert parse_grid({"configs": [{"w": 1}, {}]}) == [{"w": 1}, {}]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"params": {"w": list(range(MAX_CONFIGS + 1))}}, "501 configurations (501); at most 500"),
        ({"params": {"a": list(range(30)), "b": list(range(20))}}, "600 configurations (30 x 20)"),
        ({"configs": [{"w": i} for i in range(MAX_CONFIGS + 1)]}, "501 configurations; at most 500"),
        ({"params": {"w": []}}, '"params.w": an empty list of values'),
        ({"params": {"w": 3}}, '"params.w": expected a list'),
        ({"configs": []}, "non-empty list"),
        ({"configs": [3]}, '"configs" item 1: expected an object'),
        ([1, 2], "expected a JSON object"),
        ({"params": {"w": [1]}, "configs": [{}]}, "exactly one of"),
        ({"params": {"w": [1]}, "extra": 1}, "unknown field 'extra'"),
    ],
)
def test_a_bad_grid_is_refused_naming_the_problem(data: object, said: str) -> None:
    with pytest.raises(SweepError) as caught:
        parse_grid(data)
    assert said in str(caught.value)
