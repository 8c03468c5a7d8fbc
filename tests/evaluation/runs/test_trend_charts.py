"""Trend charts with the gate's frame of reference (assay.charts.trend_charts and the trend page): the
baseline in force drawn as a line, the set's budgets as the bands where the gate would warn and fail
against it, a y axis that starts at a round floor and says where, and every point a link to its run."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from assay.charts import axis_range, trend_charts
from evaluation.runs.services import budgets_set
from tests.support.evaluation import (
    Scene,
    logged_in,
)


def _point(run_id: int, value: float | None, verdict: str = "pass", **series: float) -> dict[str, Any]:
    label = f"run {run_id} engine"
    return {
        "run_id": run_id,
        "label": label,
        "golden_version": "v1",
        "verdict": verdict,
        "ndcg": value,
        **series,
    }


POINTS = [_point(1, 0.85, "none", empty_rate=0.0), _point(2, 0.80, "fail", empty_rate=0.10), _point(3, 0.835)]


def test_the_bands_lie_where_the_gate_warns_and_fails_against_the_baseline() -> None:
    (ndcg, empty) = trend_charts(
        POINTS,
        ["ndcg", "empty_rate"],
        baseline={"run_id": 1, "label": "run 1 engine", "ndcg": 0.85, "empty_rate": 0.0},
        budgets={"ndcg": (0.01, 0.025), "empty_rate": (0.005, 0.015)},
    )
    warn, fail = ndcg.bands
    assert (warn.kind, fail.kind) == ("warn", "fail")
    # nDCG worsens downwards: warn between 0.84 and 0.825, fail from 0.825 to the axis floor.
    assert ndcg.baseline is not None and ndcg.baseline.y < warn.y < fail.y
    assert warn.y + warn.height == pytest.approx(fail.y, abs=0.11)
    bottom = max(y for y, _ in ndcg.y_ticks)
    assert fail.y + fail.height == pytest.approx(bottom, abs=0.11)
    assert warn.title == "warn: the mean drops 0.01 or more from the baseline's 0.8500"
    by_run = {p.run_id: p for p in ndcg.points}
    assert warn.y < by_run[3].y < warn.y + warn.height  # 0.835: in the warn band
    assert by_run[2].y > fail.y  # 0.80: in the fail band
    assert by_run[1].baseline and by_run[1].y == ndcg.baseline.y
    # The empty rate worsens upwards: its fail band runs from 0.015 to the top of the axis.
    e_warn, e_fail = empty.bands
    assert e_fail.y < e_warn.y and e_fail.y == pytest.approx(min(y for y, _ in empty.y_ticks), abs=0.11)
    assert e_fail.title == "fail: the mean rises 0.015 or more from the baseline's 0.0000"


def test_without_a_baseline_or_a_budget_nothing_is_drawn_but_the_points() -> None:
    (chart,) = trend_charts(POINTS, ["ndcg"])
    assert chart.bands == [] and chart.baseline is None
    (chart,) = trend_charts(
        POINTS,
        ["ndcg"],
        baseline={"run_id": 1, "label": "run 1 engine", "ndcg": 0.85},
        budgets={"ndcg": (None, None)},
    )
    assert chart.bands == [] and chart.baseline is not None
    (chart,) = trend_charts(
        POINTS,
        ["ndcg"],
        baseline={"run_id": 1, "label": "run 1 engine", "ndcg": 0.85},
        budgets={"ndcg": (None, 0.1)},
    )
    assert [b.kind for b in chart.bands] == ["fail"]


@pytest.mark.parametrize(
    ("values", "floor", "ceiling"),
    [
        ([0.80, 0.85], 0.78, 0.86),
        ([0.0, 0.1], 0.0, 0.125),
        ([0.97, 1.0], 0.96, 1.0),
        ([0.5], 0.495, 0.505),
    ],
)
def test_the_axis_starts_at_a_round_floor_below_the_lowest_value(
    values: list[float], floor: float, ceiling: float
) -> None:
    low, high, step = axis_range(values)
    assert (low, high) == pytest.approx((floor, ceiling))
    assert low <= min(values) and high >= max(values)
    assert round(low / step, 6).is_integer() and round(high / step, 6).is_integer()


def test_the_axis_says_where_it_starts() -> None:
    (high, low) = trend_charts([_point(1, 0.85, empty_rate=0.0)], ["ndcg", "empty_rate"])
    assert high.axis_note == "y axis from 0.8450, not 0"
    assert low.axis_note == "y axis from 0"
    assert [text for _, text in high.y_ticks] == ["0.8450", "0.8500", "0.8550"]


@pytest.mark.django_db
def test_the_trend_page_draws_bands_the_baseline_and_links_to_every_run(scene: Scene, rita: User) -> None:
    budgets_set(golden_set=scene.golden_set, data={"ndcg": {"warn": 0.01, "fail": 0.02}}, by=rita)
    markup = logged_in(rita).get(f"/targets/{scene.target.pk}/trend/?set=help-center").content.decode()
    chart = markup[markup.index('id="chart-ndcg"') : markup.index('id="chart-mrr"')]
    assert re.findall(r'<rect class="band band-(\w+)" data-band="\w+"', chart) == ["warn", "fail"]
    assert "<title>warn: the mean drops 0.01 or more from the baseline" in chart
    assert f'<line class="baseline" data-run="{scene.baseline.pk}"' in chart
    # Said in the caption, where no value label of a point near the top can cover it.
    assert re.search(r'<span class="axis-note muted">y axis from 0\.\d{4}(, not 0)?</span>', chart)
    links = re.findall(r'<a href="/runs/(\d+)/" aria-label="run \d+', chart)
    assert links == [str(scene.baseline.pk), str(scene.current.pk)]
    assert 'class="baseline-point"' in chart
    # A series the budgets do not gate has the baseline but no band.
    judged = markup[markup.index('id="chart-judged_at_k"') :]
    judged = judged[: judged.index("</figure>")]
    assert "band-" not in judged and 'class="baseline"' in judged
