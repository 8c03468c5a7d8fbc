"""Geometry for small server-rendered SVG charts (pure: no Django): bar charts of counts, and trend lines
of a target's runs. The template draws what this computes; every bar and point carries its number, so a
chart reads without hovering and without JavaScript."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.metric_table import format_number, series_label, series_metric

BAR_WIDTH = 34
GAP = 14
PLOT_HEIGHT = 110
TOP = 18  # room for the value above the tallest bar
BOTTOM = 22  # room for the category label under the axis
LEFT = 8


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: int
    share: float  # of the chart's total, 0 when the total is 0
    x: int
    y: float
    width: int
    height: float

    # SVG coordinates as text: templates would localise a float (a decimal comma in some locales).
    @property
    def svg_x(self) -> str:
        return f"{self.x}"

    @property
    def svg_y(self) -> str:
        return f"{self.y:.1f}"

    @property
    def svg_height(self) -> str:
        return f"{self.height:.1f}"

    @property
    def svg_center(self) -> str:
        return f"{self.x + self.width / 2:.1f}"

    @property
    def svg_value_y(self) -> str:
        return f"{self.y - 4:.1f}"

    @property
    def percent(self) -> str:
        return f"{self.share:.0%}"


@dataclass(frozen=True, slots=True)
class BarChart:
    title: str
    bars: tuple[Bar, ...]
    total: int
    width: int
    height: int
    axis_y: int  # where the baseline is drawn

    @property
    def svg_label_y(self) -> str:
        return f"{self.height - 6}"

    @property
    def summary(self) -> str:
        """The chart as text, for screen readers (the SVG's <title>/<desc>)."""
        parts = ", ".join(f"{b.label}: {b.value} ({b.percent})" for b in self.bars)
        return f"{self.title}: {parts}" if self.bars else f"{self.title}: no data"


def bar_chart(title: str, counts: Mapping[str, int] | Sequence[tuple[str, int]]) -> BarChart:
    """Vertical bars, one per category in the given order, scaled to the largest count."""
    items = list(counts.items()) if isinstance(counts, Mapping) else list(counts)
    for label, value in items:
        if type(value) is not int or value < 0:
            raise ValueError(
                f"bar_chart {title!r}: count for {label!r} must be an integer >= 0, got {value!r}"
            )
    total = sum(v for _, v in items)
    peak = max((v for _, v in items), default=0)
    bars = []
    for i, (label, value) in enumerate(items):
        height = PLOT_HEIGHT * value / peak if peak else 0.0
        bars.append(
            Bar(
                label=str(label),
                value=value,
                share=value / total if total else 0.0,
                x=LEFT + i * (BAR_WIDTH + GAP),
                y=TOP + PLOT_HEIGHT - height,
                width=BAR_WIDTH,
                height=height,
            )
        )
    width = LEFT * 2 + max(1, len(items)) * (BAR_WIDTH + GAP) - GAP
    return BarChart(
        title=title,
        bars=tuple(bars),
        total=total,
        width=width,
        height=TOP + PLOT_HEIGHT + BOTTOM,
        axis_y=TOP + PLOT_HEIGHT,
    )


# ------------------------------------------------------------------------------------- trend lines


TREND_CHART = {"width": 480, "height": 200, "left": 62, "right": 28, "top": 28, "bottom": 24}
VERDICT_COLOURS = {"pass": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "none": "#5b6577"}
LABEL_ALL_POINTS_UP_TO = 12


@dataclass
class TrendPoint:
    run_id: int
    x: float
    y: float
    value: str
    label: bool
    colour: str
    title: str


@dataclass
class TrendChart:
    metric: str
    label: str
    lines: list[str]  # SVG polyline "x,y x,y" per golden version
    points: list[TrendPoint]
    y_ticks: list[tuple[float, str]]
    x_labels: list[tuple[float, str]]
    empty_why: str = ""


def trend_charts(points: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> list[TrendChart]:
    """One inline SVG chart per metric over a target's finished runs, oldest first. The line breaks where
    the golden version changes (values under two versions are not comparable) and at undefined values;
    each point is coloured by the run's verdict and labelled with its value (all of them up to
    LABEL_ALL_POINTS_UP_TO runs, else the last and the extremes)."""
    c = TREND_CHART
    pad = 24  # keeps the first and last value labels clear of the axis labels
    inner_w = c["width"] - c["left"] - c["right"] - 2 * pad
    inner_h = c["height"] - c["top"] - c["bottom"]
    n = len(points)
    xs = [c["left"] + pad + (inner_w * (i / (n - 1)) if n > 1 else inner_w / 2) for i in range(n)]
    charts = []
    for metric in metrics:
        label = series_label(metric)
        shown = series_metric(metric)
        show = shown.format if shown is not None else format_number
        values = [p.get(metric) for p in points]
        defined = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
        if not defined:
            charts.append(TrendChart(metric, label, [], [], [], [], "no defined value yet"))
            continue
        low, high = min(defined), max(defined)
        margin = max((high - low) * 0.1, 0.005)
        low, high = max(0.0, low - margin), min(1.0, high + margin) if high <= 1.0 else high + margin

        def y_of(v: float, low: float = low, high: float = high) -> float:
            return c["top"] + inner_h * (1 - (v - low) / (high - low if high > low else 1.0))

        chart_points: list[TrendPoint] = []
        lines: list[str] = []
        segment: list[str] = []
        previous_version = None
        labelled = set()
        if n > LABEL_ALL_POINTS_UP_TO:
            indexed = [(float(v), i) for i, v in enumerate(values) if isinstance(v, int | float)]
            labelled = {min(indexed)[1], max(indexed)[1], indexed[-1][1]}
        for i, (point, value) in enumerate(zip(points, values, strict=True)):
            version = point["golden_version"]
            if (value is None or version != previous_version) and len(segment) > 1:
                lines.append(" ".join(segment))
            if value is None or version != previous_version:
                segment = []
            previous_version = version
            if not isinstance(value, int | float):
                continue
            x, y = xs[i], y_of(float(value))
            segment.append(f"{x:.1f},{y:.1f}")
            verdict = point.get("verdict") or "none"
            chart_points.append(
                TrendPoint(
                    run_id=point["run_id"],
                    x=round(x, 1),
                    y=round(y, 1),
                    value=show(value),
                    label=n <= LABEL_ALL_POINTS_UP_TO or i in labelled,
                    colour=VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["none"]),
                    title=f"run {point['run_id']} (golden {version}, verdict {verdict}): {show(value)}",
                )
            )
        if len(segment) > 1:
            lines.append(" ".join(segment))
        ticks = [(round(y_of(v), 1), show(v)) for v in (low, (low + high) / 2, high)]
        step = max(1, n // 8)
        x_labels = [(round(xs[i], 1), f"#{points[i]['run_id']}") for i in range(0, n, step)]
        charts.append(TrendChart(metric, label, lines, chart_points, ticks, x_labels))
    return charts
