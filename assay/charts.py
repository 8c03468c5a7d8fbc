"""Geometry for small server-rendered SVG charts (pure: no Django): bar charts of counts, and trend lines
of a target's runs. The template draws what this computes; every bar and point carries its number, so a
chart reads without hovering and without JavaScript."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.display import threshold
from assay.metric_table import Metric, format_number, series_label, series_metric

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


# The right margin holds the baseline line's "baseline" label, clear of the last point's value label.
TREND_CHART = {"width": 480, "height": 200, "left": 62, "right": 50, "top": 28, "bottom": 24}
TREND_CHART["plot_width"] = TREND_CHART["width"] - TREND_CHART["left"]
TREND_CHART["plot_right"] = TREND_CHART["width"] - TREND_CHART["right"]
VERDICT_COLOURS = {"pass": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "none": "#5b6577"}
LABEL_ALL_POINTS_UP_TO = 12
# Tick steps the y axis may take: a few round numbers apart, never more than MAX_TICKS intervals.
TICK_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0)
MAX_TICKS = 5


@dataclass
class TrendPoint:
    run_id: int
    x: float
    y: float
    value: str
    label: bool
    colour: str
    title: str
    baseline: bool = False  # the run is the baseline in force (drawn ringed)


@dataclass(frozen=True, slots=True)
class Band:
    """A budget band across the plot: where the gate would warn (`warn`) or fail (`fail`) against the
    baseline, from the baseline's mean and the set's budgets."""

    kind: str
    y: float
    height: float
    title: str


@dataclass(frozen=True, slots=True)
class BaselineLine:
    run_id: int
    label: str  # the run's label (`assay.display.run_label`)
    y: float
    value: str


@dataclass
class TrendChart:
    metric: str
    label: str
    lines: list[str]  # SVG polyline "x,y x,y" per golden version
    points: list[TrendPoint]
    y_ticks: list[tuple[float, str]]
    x_labels: list[tuple[float, str]]
    empty_why: str = ""
    bands: list[Band] = field(default_factory=list)
    baseline: BaselineLine | None = None
    axis_note: str = ""  # where the y axis starts, said in words ("y from 0.60, not 0")


def _step(low: float, high: float) -> float:
    span = high - low
    return next((s for s in TICK_STEPS if span / s <= MAX_TICKS), TICK_STEPS[-1])


def axis_range(values: Sequence[float]) -> tuple[float, float, float]:
    """(floor, ceiling, step) of a y axis showing `values`: a margin around them, rounded out to a
    round step, never below 0 and, for values on a 0 to 1 scale, never above 1."""
    low, high = min(values), max(values)
    margin = max((high - low) * 0.1, 0.005)
    low, high = max(0.0, low - margin), (min(1.0, high + margin) if high <= 1.0 else high + margin)
    step = _step(low, high)
    floor = max(0.0, math.floor(round(low / step, 9)) * step)
    ceiling = math.ceil(round(high / step, 9)) * step
    if max(values) <= 1.0:
        ceiling = min(1.0, ceiling)
    if ceiling <= floor:
        ceiling = floor + step
    return floor, ceiling, step


def _bands(
    metric: Metric | None, base: float, budget: tuple[float | None, float | None] | None
) -> list[tuple[str, float, float, float]]:
    """(kind, from, to, threshold) in metric values: the warn band between the two thresholds, the fail
    band beyond the fail threshold (open-ended: the caller clips it to the axis)."""
    if metric is None or budget is None:
        return []
    warn, fail = budget
    sign = -1.0 if metric.higher_is_better else 1.0  # the direction of worse
    far = sign * 1e9
    out = []
    if warn is not None:
        out.append(("warn", base + sign * warn, base + sign * fail if fail is not None else far, warn))
    if fail is not None:
        out.append(("fail", base + sign * fail, far, fail))
    return out


def trend_charts(
    points: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    *,
    baseline: Mapping[str, Any] | None = None,
    budgets: Mapping[str, tuple[float | None, float | None]] | None = None,
) -> list[TrendChart]:
    """One inline SVG chart per metric over a target's finished runs, oldest first (each point: `run_id`,
    `label` as `assay.display.run_label` names the run, `golden_version`, `verdict` and each series' value).
    The line breaks where the golden version changes (values under two versions are not comparable) and
    at undefined values; each point is coloured by the run's verdict, links to its run and is labelled
    with its value (all of them up to LABEL_ALL_POINTS_UP_TO runs, else the last and the extremes).

    `baseline` (the baseline in force: its point, `run_id`, `label` and each series' value) is drawn as
    a dashed line, and `budgets` (series -> (warn, fail), the set's) as the bands where the gate would
    warn and fail against it (measured from its mean: the gate compares over the queries both runs
    counted). The y axis starts at a round floor below what it shows, and `axis_note` says where."""
    c = TREND_CHART
    pad = 24  # keeps the first and last value labels clear of the axis labels
    inner_w = c["width"] - c["left"] - c["right"] - 2 * pad
    inner_h = c["height"] - c["top"] - c["bottom"]
    n = len(points)
    xs = [c["left"] + pad + (inner_w * (i / (n - 1)) if n > 1 else inner_w / 2) for i in range(n)]
    budgets = budgets or {}
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
        base = baseline.get(metric) if baseline is not None else None
        base = float(base) if isinstance(base, int | float) and math.isfinite(base) else None
        bands = _bands(shown, base, budgets.get(metric)) if base is not None else []
        # The axis shows every point, the baseline and the near edge of each band.
        low, high, step = axis_range(defined + ([base] if base is not None else []) + [b[1] for b in bands])

        def y_of(v: float, low: float = low, high: float = high) -> float:
            return c["top"] + inner_h * (1 - (v - low) / (high - low))

        def clip(v: float, low: float = low, high: float = high) -> float:
            return min(max(v, low), high)

        chart_points: list[TrendPoint] = []
        lines: list[str] = []
        segment: list[str] = []
        previous_version = None
        labelled = set()
        if n > LABEL_ALL_POINTS_UP_TO:
            indexed = [(float(v), i) for i, v in enumerate(values) if isinstance(v, int | float)]
            labelled = {min(indexed)[1], max(indexed)[1], indexed[-1][1]}
        base_run = baseline.get("run_id") if baseline is not None else None
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
            is_base = point["run_id"] == base_run
            chart_points.append(
                TrendPoint(
                    run_id=point["run_id"],
                    x=round(x, 1),
                    y=round(y, 1),
                    value=show(value),
                    label=n <= LABEL_ALL_POINTS_UP_TO or i in labelled,
                    colour=VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["none"]),
                    title=f"{point['label']}{', the baseline' if is_base else ''} (golden {version},"
                    f" verdict {verdict}): {show(value)}",
                    baseline=is_base,
                )
            )
        if len(segment) > 1:
            lines.append(" ".join(segment))
        ticks = []
        tick = low
        while tick <= high + step / 1000:
            ticks.append((round(y_of(tick), 1), show(tick)))
            tick += step
        step_x = max(1, n // 8)
        x_labels = [(round(xs[i], 1), f"#{points[i]['run_id']}") for i in range(0, n, step_x)]
        drawn_bands = []
        for kind, start, end, amount in bands:
            top, bottom = y_of(clip(max(start, end))), y_of(clip(min(start, end)))
            if bottom - top > 0.05:
                worse = "drops" if shown is not None and shown.higher_is_better else "rises"
                title = (
                    f"{kind}: the mean {worse} {threshold(amount)} or more from the baseline's {show(base)}"
                )
                drawn_bands.append(Band(kind, round(top, 1), round(bottom - top, 1), title))
        line = None
        if baseline is not None and base is not None and isinstance(base_run, int):
            line = BaselineLine(base_run, str(baseline["label"]), round(y_of(base), 1), show(base))
        note = f"y axis from {show(low)}, not 0" if low > 0 else "y axis from 0"
        charts.append(
            TrendChart(metric, label, lines, chart_points, ticks, x_labels, "", drawn_bands, line, note)
        )
    return charts
