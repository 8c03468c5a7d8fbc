"""The SVG bar chart geometry and the figure filters the agreement pages use (no database)."""

from __future__ import annotations

import pytest

from assay.charts import PLOT_HEIGHT, TOP, bar_chart
from assay.labels.agreement import Undefined
from labeling.templatetags.display import figure, interval, seconds


def test_bars_scale_to_the_largest_count_and_carry_their_numbers() -> None:
    chart = bar_chart("Grades", {"0": 10, "1": 5, "2": 0, "3": 20})
    heights = [b.height for b in chart.bars]
    assert heights == [PLOT_HEIGHT / 2, PLOT_HEIGHT / 4, 0.0, PLOT_HEIGHT]
    assert [b.y + b.height for b in chart.bars] == [TOP + PLOT_HEIGHT] * 4  # all stand on the axis
    assert chart.axis_y == TOP + PLOT_HEIGHT and chart.total == 35
    assert [b.percent for b in chart.bars] == ["29%", "14%", "0%", "57%"]
    assert chart.summary == "Grades: 0: 10 (29%), 1: 5 (14%), 2: 0 (0%), 3: 20 (57%)"
    xs = [b.x for b in chart.bars]
    assert xs == sorted(xs) and len(set(xs)) == 4 and xs[-1] + chart.bars[-1].width < chart.width


def test_an_empty_chart_has_flat_bars_and_says_so() -> None:
    chart = bar_chart("Nothing yet", [("0", 0), ("1", 0)])
    assert [b.height for b in chart.bars] == [0.0, 0.0] and chart.total == 0
    assert bar_chart("None", {}).summary == "None: no data"


def test_it_refuses_negative_or_fractional_counts() -> None:
    with pytest.raises(ValueError, match="count for '1' must be an integer >= 0, got -2"):
        bar_chart("Grades", {"0": 1, "1": -2})
    with pytest.raises(ValueError, match=r"got 1\.5"):
        bar_chart("Grades", {"0": 1.5})  # type: ignore[dict-item]


def test_figures_show_undefined_with_the_reason_never_nan_or_minus_zero() -> None:
    assert figure(0.81234) == "0.812"
    assert figure(-1e-17) == "0.000"
    assert figure(Undefined("no shared items")) == '<span class="undefined">undefined: no shared items</span>'
    assert "undefined" in figure(float("nan"))
    assert interval((0.6571, 0.6689)) == "[0.657, 0.669]"
    assert "one query only" in interval(Undefined("one query only"))
    assert seconds(4200.0) == "4.2 s" and "no time recorded" in seconds(Undefined("no time recorded"))
