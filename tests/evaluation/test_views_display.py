"""The report page's display rules, without a database: 4 decimals, never NaN, "—" with why; the paired
intervals count queries as METRICS.md counts them; trend charts break lines where values are not
comparable; parameter overrides typed as KEY=VALUE lines."""

from __future__ import annotations

import math
from typing import Any

import pytest

from evaluation.views import num, paired_intervals, parse_param_lines, trend_charts


@pytest.mark.parametrize(
    ("value", "signed", "text"),
    [
        (0.123456, False, "0.1235"),
        (0.5, True, "+0.5000"),
        (-3e-17, True, "+0.0000"),
        (-0.00004, True, "+0.0000"),
        (-0.2, True, "-0.2000"),
        (1, False, "1.0000"),
    ],
)
def test_numbers_show_four_decimals(value: float, signed: bool, text: str) -> None:
    assert num(value, signed=signed).text == text


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf, True, "0.5"])
def test_undefined_values_show_a_dash_with_the_reason(value: Any) -> None:
    shown = num(value, why="every query errored")
    assert (shown.text, shown.why, shown.undefined) == ("—", "every query errored", True)


def _row(qid: str, ndcg: float | None, **extra: Any) -> dict[str, Any]:
    row = {
        "id": qid,
        "ndcg": ndcg,
        "mrr": ndcg,
        "p_at_k": ndcg,
        "empty": ndcg == 0.0,
        "lt3": ndcg == 0.0,
        "error": None if ndcg is not None else "HTTP 500",
        "tier": "core",
        "expect_empty": False,
    }
    row.update(extra)
    return row


def test_paired_intervals_cover_the_core_queries_both_runs_scored() -> None:
    baseline = [
        _row("q-1", 1.0),
        _row("q-2", 0.5),
        _row("q-3", 0.8),
        _row("q-4", 0.0, expect_empty=True),
        _row("q-5", 0.9, tier="shadow"),
        _row("q-6", 0.7),
    ]
    current = [
        _row("q-1", 0.0),  # -1.0
        _row("q-2", 0.75),  # +0.25
        _row("q-3", None),  # errored now: left out
        _row("q-4", 0.0, expect_empty=True),  # out of the nDCG means, in the <3 rate
        _row("q-5", 0.1, tier="shadow"),  # not core
        _row("q-7", 0.3),  # not in the baseline
    ]
    intervals = paired_intervals(current, baseline)

    assert intervals["ndcg"]["n"] == 2
    assert intervals["ndcg"]["mean"] == pytest.approx((-1.0 + 0.25) / 2)
    assert intervals["ndcg"]["low"] <= intervals["ndcg"]["mean"] <= intervals["ndcg"]["high"]
    assert intervals["empty_rate"]["n"] == 2 and intervals["empty_rate"]["mean"] == pytest.approx(0.5)
    assert intervals["lt3_rate"]["n"] == 3  # q-4 counts in the <3 rate
    assert set(intervals) == {"ndcg", "mrr", "precision_at_k", "empty_rate", "lt3_rate"}


def test_paired_intervals_without_common_queries_are_undefined() -> None:
    intervals = paired_intervals([_row("q-1", 0.5)], [_row("q-2", 0.5)])
    assert intervals["ndcg"]["n"] == 0 and intervals["ndcg"]["low"] is None


def _point(run_id: int, version: str, value: float | None, verdict: str = "pass") -> dict[str, Any]:
    return {"run_id": run_id, "golden_version": version, "verdict": verdict, "ndcg": value}


def test_a_trend_line_breaks_at_a_new_golden_version_and_at_undefined_values() -> None:
    points = [
        _point(1, "v1", 0.80),
        _point(2, "v1", 0.82),
        _point(3, "v2", 0.70, "fail"),
        _point(4, "v2", None),
        _point(5, "v2", 0.75),
        _point(6, "v2", 0.76),
    ]
    (chart,) = trend_charts(points, ["ndcg"])
    assert len(chart.lines) == 2  # 1-2 under v1, 5-6 under v2; 3 stands alone, 4 is undefined
    assert [p.run_id for p in chart.points] == [1, 2, 3, 5, 6]
    assert [p.value for p in chart.points] == ["0.8000", "0.8200", "0.7000", "0.7500", "0.7600"]
    assert all(p.label for p in chart.points)
    assert chart.points[2].colour == "#cf222e"
    # Higher values are drawn higher up.
    assert chart.points[1].y < chart.points[0].y < chart.points[2].y


def test_a_long_trend_labels_the_last_point_and_the_extremes() -> None:
    points = [_point(i, "v1", 0.5 + (i % 5) / 100) for i in range(1, 21)]
    points[7]["ndcg"] = 0.99
    (chart,) = trend_charts(points, ["ndcg"])
    assert sorted(p.run_id for p in chart.points if p.label) == [5, 8, 20]


def test_a_metric_without_any_value_says_so() -> None:
    (chart,) = trend_charts([_point(1, "v1", None)], ["ndcg"])
    assert chart.empty_why == "no defined value yet" and chart.points == []


@pytest.mark.parametrize(
    ("text", "params", "problems"),
    [
        ("", {}, []),
        ("rewrite=true\nsize = 3\nmode=fast\n\n", {"rewrite": True, "size": 3, "mode": "fast"}, []),
        ('{"rewrite": true, "boost": [1, 2]}', {"rewrite": True, "boost": [1, 2]}, []),
        ("=1", {}, ["params line 1: expected KEY=VALUE, got '=1'"]),
        ("[1]", {}, ["params line 1: expected KEY=VALUE, got '[1]'"]),
    ],
)
def test_param_lines_read_json_values_and_name_bad_lines(
    text: str, params: dict[str, Any], problems: list[str]
) -> None:
    assert parse_param_lines(text) == (params, problems)
