"""The geometry of an experiment's charts (assay/sweep_charts.py): a line for a grid of one parameter, a
heat map for two, nothing for a list of configurations or three parameters."""

from __future__ import annotations

from typing import Any

from assay.sweep_charts import grid_axes, sweep_heat, sweep_line


def _sweep(
    grids: list[dict[str, Any]], values: list[float | None], confirmed: set[int], winner: int
) -> dict[str, Any]:
    configs = [
        {"grid": g, "tuning": {"ndcg": v}, "holdout": {"ndcg": v} if i in confirmed else None}
        for i, (g, v) in enumerate(zip(grids, values, strict=True))
    ]
    return {
        "metric": "ndcg",
        "configs": configs,
        "baseline": {"tuning": {"ndcg": 0.5}},
        "winner": {"grid": grids[winner]},
    }


def test_a_one_parameter_grid_is_a_line_over_its_values_in_grid_order() -> None:
    grid = {"params": {"title_weight": [0.5, 3, 12]}}
    sweep = _sweep([{"title_weight": w} for w in (0.5, 3, 12)], [0.6, 0.9, 0.7], {1, 2}, 1)
    line = sweep_line(sweep, grid)
    assert line is not None and sweep_heat(sweep, grid) is None
    assert [p.label for p in line.points] == ["0.5", "3", "12"]
    xs = [p.x for p in line.points]
    assert xs == sorted(xs) and len(line.held) == 2
    highest = min(line.points, key=lambda p: p.y)  # SVG's y grows downwards
    assert highest.label == "3" and highest.winner and highest.value == "0.9000"
    assert line.baseline_y is not None and line.baseline_value == "0.5000"
    assert line.axis_note.startswith("y axis from")


def test_a_two_parameter_grid_is_a_heat_map_rows_by_the_first() -> None:
    grid = {"params": {"a": [1, 2], "b": ["x", "y", "z"]}}
    grids = [{"a": a, "b": b} for a in (1, 2) for b in ("x", "y", "z")]
    values = [0.1, 0.2, 0.3, 0.4, 0.5, None]
    heat = sweep_heat(_sweep(grids, values, {4}, 4), grid)
    assert heat is not None and sweep_line(_sweep(grids, values, {4}, 4), grid) is None
    assert [label for _, label in heat.row_labels] == ["1", "2"]
    assert [label for _, label in heat.col_labels] == ["x", "y", "z"]
    cells = heat.cells
    assert (cells[0].x, cells[0].y) < (cells[1].x, cells[1].y) and cells[3].y > cells[0].y
    assert cells[0].fill == "#eff6ff" and cells[4].fill == "#1d4ed8" and cells[4].dark  # lowest, highest
    assert cells[4].winner and cells[4].confirmed and not cells[0].winner
    assert cells[5].value == "—" and "0.1000" in heat.scale_note and "0.5000" in heat.scale_note


def test_no_chart_for_a_list_or_three_parameters() -> None:
    listed = {"configs": [{"a": 1}, {"a": 2}]}
    three = {"params": {"a": [1], "b": [2], "c": [3]}}
    assert grid_axes(listed) == [] and len(grid_axes(three)) == 3
    sweep = _sweep([{"a": 1}, {"a": 2}], [0.1, 0.2], set(), 1)
    assert sweep_line(sweep, listed) is None and sweep_heat(sweep, listed) is None
