"""Geometry of a sweep's charts (pure: no Django), drawn server-side as SVG by the experiment page as
the trend page draws `assay.charts`: a line of the metric against the parameter for a sweep of one
parameter, and a heat map of it over the two parameters of a sweep of two. Every point and cell carries
its number, so a chart reads without hovering and without JavaScript."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.charts import TREND_CHART, axis_range
from assay.metric_table import format_number

SWEEP_CHART = dict(TREND_CHART)
HEAT_CELL_W = 64
HEAT_CELL_H = 30
HEAT_LEFT = 70  # room for the row parameter's values
HEAT_TOP = 34  # room for the column parameter's name and values


def grid_axes(grid: object) -> list[tuple[str, list[Any]]]:
    """The parameters a `{"params": ...}` grid varies and their values (in the grid's order); [] for a
    `{"configs": [...]}` list, which has no axes to draw."""
    params = grid.get("params") if isinstance(grid, Mapping) else None
    if not isinstance(params, Mapping):
        return []
    return [(str(name), list(values)) for name, values in params.items()]


def winner_grid(sweep: Mapping[str, Any]) -> dict[str, Any] | None:
    """The winner's own values, None when no configuration beat the baseline (docs/experiments.md)."""
    winner = sweep.get("winner")
    return dict(winner["grid"]) if winner else None


def _judged(part: Mapping[str, Any] | None) -> str:
    """A point's judged@k, for its tooltip: what share of the top k its value is measured on."""
    value = _value(part, "judged_at_k")
    return "" if value is None else f", judged@k {format_number(value)}"


def _value(part: Mapping[str, Any] | None, metric: str) -> float | None:
    value = part.get(metric) if part else None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


@dataclass
class LinePoint:
    x: float
    y: float
    value: str
    label: str  # the parameter's value
    title: str
    winner: bool = False
    confirmed: bool = False


@dataclass
class SweepLine:
    param: str
    metric: str
    polyline: str
    points: list[LinePoint]
    held: list[LinePoint]  # the confirmed configurations' held-out values
    y_ticks: list[tuple[float, str]]
    baseline_y: float | None
    baseline_value: str
    axis_note: str
    chart: dict[str, int] = field(default_factory=lambda: SWEEP_CHART)


def sweep_line(sweep: Mapping[str, Any], grid: object) -> SweepLine | None:
    """The tuning value of each configuration of a one-parameter sweep against the parameter (in the
    grid's order, evenly spaced: a value need not be a number), the baseline as a dashed line, and the
    confirmed configurations' held-out values as hollow points; None for any other sweep."""
    axes = grid_axes(grid)
    if len(axes) != 1:
        return None
    (param, values), metric = axes[0], str(sweep["metric"])
    configs = sweep["configs"]
    tuned = [_value(c["tuning"], metric) for c in configs]
    held = [_value(c["holdout"], metric) for c in configs]
    base = _value(sweep["baseline"]["tuning"], metric)
    defined = [v for v in (*tuned, *held, base) if v is not None]
    if not defined:
        return None
    low, high, step = axis_range(defined)
    c = SWEEP_CHART
    pad = 24
    inner_w = c["width"] - c["left"] - c["right"] - 2 * pad
    inner_h = c["height"] - c["top"] - c["bottom"]
    n = len(values)

    def x_of(i: int) -> float:
        return round(c["left"] + pad + (inner_w * i / (n - 1) if n > 1 else inner_w / 2), 1)

    def y_of(v: float) -> float:
        return round(c["top"] + inner_h * (1 - (v - low) / (high - low)), 1)

    winner = winner_grid(sweep)
    points, held_points = [], []
    for i, (value, config) in enumerate(zip(values, configs, strict=True)):
        shown = f"{param}={value}"
        is_winner = config["grid"] == winner
        tuned_value, held_value = tuned[i], held[i]
        if tuned_value is not None:
            points.append(
                LinePoint(x_of(i), y_of(tuned_value), format_number(tuned_value), str(value),
                          f"{shown}: {format_number(tuned_value)} on the tuning queries"
                          f"{_judged(config['tuning'])}", is_winner,
                          held_value is not None)
            )  # fmt: skip
        if held_value is not None:
            held_points.append(
                LinePoint(x_of(i), y_of(held_value), format_number(held_value), str(value),
                          f"{shown}: {format_number(held_value)} held out{_judged(config['holdout'])}",
                          is_winner, True)
            )  # fmt: skip
    ticks = []
    tick = low
    while tick <= high + step / 1000:
        ticks.append((y_of(tick), format_number(tick)))
        tick += step
    return SweepLine(
        param=param,
        metric=metric,
        polyline=" ".join(f"{p.x},{p.y}" for p in points),
        points=points,
        held=held_points,
        y_ticks=ticks,
        baseline_y=None if base is None else y_of(base),
        baseline_value="" if base is None else format_number(base),
        axis_note=f"y axis from {format_number(low)}, not 0" if low > 0 else "y axis from 0",
    )


@dataclass
class HeatCell:
    x: int
    y: int
    value: str
    fill: str
    title: str
    winner: bool
    confirmed: bool
    dark: bool  # the text is drawn light on a dark cell


@dataclass
class SweepHeat:
    rows_param: str
    cols_param: str
    metric: str
    cells: list[HeatCell]
    row_labels: list[tuple[int, str]]
    col_labels: list[tuple[int, str]]
    width: int
    height: int
    scale_note: str
    cell_w: int = HEAT_CELL_W
    cell_h: int = HEAT_CELL_H


def _shade(share: float) -> tuple[str, bool]:
    """A blue from pale (the lowest value) to deep (the highest)."""
    light, deep = (239, 246, 255), (29, 78, 216)
    rgb = [round(a + (b - a) * share) for a, b in zip(light, deep, strict=True)]
    return "#{:02x}{:02x}{:02x}".format(*rgb), share > 0.55


def sweep_heat(sweep: Mapping[str, Any], grid: object) -> SweepHeat | None:
    """The tuning value of each configuration of a two-parameter sweep as a cell, the first parameter's
    values down the rows (it varies slowest in the grid) and the second's across, shaded from the lowest
    value to the highest; the winner outlined, the confirmed configurations marked. None for any other
    sweep."""
    axes = grid_axes(grid)
    if len(axes) != 2:
        return None
    (rows_param, rows), (cols_param, cols) = axes
    metric = str(sweep["metric"])
    configs = sweep["configs"]
    values = [_value(c["tuning"], metric) for c in configs]
    defined = [v for v in values if v is not None]
    low, high = (min(defined), max(defined)) if defined else (0.0, 0.0)
    winner = winner_grid(sweep)
    cells = []
    for i, config in enumerate(configs):
        r, k = divmod(i, len(cols))
        value = values[i]
        share = 0.0 if value is None or high == low else (value - low) / (high - low)
        fill, dark = _shade(share) if value is not None else ("#f3f4f6", False)
        shown = format_number(value) if value is not None else "—"
        title = (
            f"{rows_param}={rows[r]}, {cols_param}={cols[k]}: {shown} on the tuning queries"
            f"{_judged(config['tuning'])}"
        )
        cells.append(
            HeatCell(HEAT_LEFT + k * HEAT_CELL_W, HEAT_TOP + r * HEAT_CELL_H, shown, fill, title,
                     config["grid"] == winner, config["holdout"] is not None, dark)
        )  # fmt: skip
    return SweepHeat(
        rows_param=rows_param,
        cols_param=cols_param,
        metric=metric,
        cells=cells,
        row_labels=[(HEAT_TOP + r * HEAT_CELL_H + HEAT_CELL_H // 2, str(v)) for r, v in enumerate(rows)],
        col_labels=[(HEAT_LEFT + k * HEAT_CELL_W + HEAT_CELL_W // 2, str(v)) for k, v in enumerate(cols)],
        width=HEAT_LEFT + len(cols) * HEAT_CELL_W + 4,
        height=HEAT_TOP + len(rows) * HEAT_CELL_H + 4,
        scale_note=f"shaded from {format_number(low)} (palest) to {format_number(high)} (deepest)",
    )
