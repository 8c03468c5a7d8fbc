"""The report page's display rules, without a database: 4 decimals, never NaN, "—" with why; trend
charts break lines where values are not comparable; parameter overrides typed as KEY=VALUE lines. (The
paired intervals' counting is tests/assay/test_drift_intervals.py.)"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.charts import trend_charts
from evaluation.runs.forms import parse_param_lines
from evaluation.runs.numbers_page import num


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


def _point(run_id: int, version: str, value: float | None, verdict: str = "pass") -> dict[str, Any]:
    return {
        "run_id": run_id,
        "label": f"run {run_id} engine",
        "golden_version": version,
        "verdict": verdict,
        "ndcg": value,
    }


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
        ("k=[[", {"k": "[["}, []),  # not JSON: the text as typed
        (
            "k=" + "[" * 70 + "]" * 70,
            {},
            ["params line 1: k: nested deeper than 64 levels of arrays or objects"],
        ),
        ("k=" + "9" * 5000, {}, ["params line 1: k: a number is too long to read"]),
    ],
)
def test_param_lines_read_json_values_and_name_bad_lines(
    text: str, params: dict[str, Any], problems: list[str]
) -> None:
    assert parse_param_lines(text) == (params, problems)


_PIECES = st.sampled_from(["k=", "\n", "{", "[" * 3000, "]", "9" * 4400, '"', "=", " ", "true", "a"])


@given(st.lists(_PIECES | st.text(max_size=10), max_size=12).map("".join))
def test_param_lines_never_raise_whatever_is_typed(text: str) -> None:
    """The property behind the run and schedule forms: any text is params or worded problems."""
    params, problems = parse_param_lines(text)
    assert isinstance(params, dict) and all(isinstance(p, str) and p.startswith("params") for p in problems)
