"""The metric table is the one list of metrics: the report's aggregates, the gate's rows and the budgets
follow it; and the one number formatter shows every value the same way (docs/metrics.md)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from assay.budgets import DEFAULT_BUDGETS, Budget
from assay.drift import compare, load_budgets
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.metric_table import (
    BY_KEY,
    GATED_METRICS,
    METRIC_KEYS,
    METRICS,
    UNDEFINED,
    WEIGHTED_METRICS,
    format_budget,
    format_number,
)
from assay.report import build_report
from assay.results import QueryResult


@pytest.mark.parametrize(
    ("value", "signed", "text"),
    [
        (0.123456, False, "0.1235"),
        (1, False, "1.0000"),
        (0.5, True, "+0.5000"),
        (-0.2, True, "-0.2000"),
        (-3e-17, True, "+0.0000"),  # float noise is no change
        (-0.00004, True, "+0.0000"),
    ],
)
def test_a_number_shows_four_decimals_and_a_change_its_sign(value: float, signed: bool, text: str) -> None:
    assert format_number(value, signed=signed) == text


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf, True, "0.5"])
def test_an_undefined_value_shows_as_the_one_dash(value: Any) -> None:
    assert format_number(value) == format_number(value, signed=True) == UNDEFINED == "—"


def test_a_budget_shows_both_levels_as_given_and_an_off_level_as_the_dash() -> None:
    assert format_budget(0.01, 0.025) == "0.01 / 0.025"
    assert format_budget(0.01, None) == "0.01 / —"
    assert format_budget(None, None) == ""


def test_every_metric_is_one_row_with_a_unique_key() -> None:
    assert len(set(METRIC_KEYS)) == len(METRICS)
    assert METRIC_KEYS == (
        "ndcg",
        "mrr",
        "precision_at_k",
        "empty_rate",
        "lt3_rate",
        "error_rate",
        "judged_at_k",
    )
    # A gated metric has a per-query field, so its change gets a paired interval on the report page.
    assert all(BY_KEY[key].per_query for key in GATED_METRICS)


def test_the_direction_says_which_change_is_worse() -> None:
    assert BY_KEY["ndcg"].worsening(0.8, 0.7) == pytest.approx(0.1)
    assert BY_KEY["empty_rate"].worsening(0.1, 0.2) == pytest.approx(0.1)
    assert (BY_KEY["ndcg"].worse_word, BY_KEY["lt3_rate"].worse_word) == ("drop", "rise")


def test_the_default_budgets_are_the_tables() -> None:
    assert dict(DEFAULT_BUDGETS) == {
        "ndcg": Budget(warn=0.01, fail=0.025),
        "mrr": Budget(warn=0.01, fail=0.03),
        "precision_at_k": Budget(warn=0.02, fail=0.04),
        "empty_rate": Budget(warn=0.005, fail=0.015),
        "lt3_rate": Budget(),
    }


GOLDEN = GoldenFile(
    version="v1",
    queries=(
        GoldenQuery("q-1", "one", (Judgment("d1", 3),)),
        GoldenQuery("q-2", "two", (Judgment("d2", 2),), tier="shadow"),
    ),
)


def test_the_report_and_the_gate_follow_the_table() -> None:
    report = build_report(GOLDEN, {"q-1": QueryResult("q-1", ("d1",)), "q-2": QueryResult("q-2", ())})
    for aggregate in (report["all"], *report["tiers"].values()):
        assert [key for key in aggregate if key not in ("n_queries", "weighted")] == list(METRIC_KEYS)
        assert tuple(aggregate["weighted"]) == WEIGHTED_METRICS
    assert all(key in report for key in METRIC_KEYS)
    gate = compare(report, report, load_budgets(None))
    assert tuple(gate.comparison["core"]) == METRIC_KEYS


def test_a_p_value_no_draw_reached_is_below_one_over_the_draws_never_zero() -> None:
    from assay.metric_table import UNDEFINED, format_p_value

    assert format_p_value(0.0) == "<0.001"
    assert format_p_value(0.001) == "0.001"
    assert format_p_value(0.1604) == "0.160"
    assert format_p_value(1.0) == "1.000"
    assert format_p_value(None) == UNDEFINED
