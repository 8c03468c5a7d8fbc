"""Geometry for small server-rendered SVG bar charts (pure: no Django). The template draws what this
computes; every bar carries its number, so the chart reads without hovering and without JavaScript."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
