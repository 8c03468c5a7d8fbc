"""The targets table is rendered from the figures its sections saved (made-up figures here: the benchmarks
themselves are never run by the tests), and says which targets are met."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from benchmarks import _report
from benchmarks.bench_targets import POSTGRES, SQLITE, render

LOAD = [0.5, 0.4, 0.3]


def _stacks(entry: dict[str, Any]) -> dict[str, Any]:
    return {SQLITE: entry, POSTGRES: entry}


def figures(finalize_s: float, judge_s: float) -> dict[str, Any]:
    run = {"wall": 0.25, "queued": 0.01, "search": 0.15, "finalize": 0.05}
    job = {"wall": judge_s, "queued": 0.01, "judging": judge_s - 0.01, "chunks_ms": 50.0, "total": 123}
    return {
        "demo_run": _stacks(
            {"runs": [run] * 5, "page": {"now": [0.4] * 5}, "load_before": LOAD, "load_after": LOAD}
        ),
        "judge_job": _stacks({"jobs": [job] * 5, "own": [0.05] * 5, "load_before": LOAD, "load_after": LOAD}),
        "run_2000": {"celery": [{"wall": 2.1}] * 5, "assay": [2.0] * 5, "load": [LOAD, LOAD]},
        "finalize": {
            "alone": [finalize_s] * 5,
            "against": [finalize_s * 2] * 5,
            "steps": {"result rows read": 0.2},
            "load": [LOAD, LOAD],
        },
    }


def test_the_table_says_which_targets_are_met() -> None:
    text = render(figures(finalize_s=1.0, judge_s=0.08))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.rsplit("|", 2)[1].strip() for row in rows] == ["yes"] * 5
    assert "0.40 s (verdict written 0.25 s)" in rows[0]
    assert "1.05x" in rows[2]
    assert "123 pairs" in rows[4]
    assert "result rows read 0.20" in text


def test_a_target_missed_is_said_so() -> None:
    text = render(figures(finalize_s=2.0, judge_s=0.2))
    assert "| without a baseline; not against one |" in text
    assert "| no |" in text  # the judge job at 4x the stand-in's own time


def test_figures_of_an_earlier_run_are_not_read(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_report, "FIGURES", tmp_path)
    _report.save_figures("finalize", {"alone": [1.0]})
    monkeypatch.setitem(os.environ, _report.STARTED, str(time.time() + 60))
    assert _report.figures_of("finalize") is None
    monkeypatch.setitem(os.environ, _report.STARTED, str(time.time() - 60))
    assert _report.figures_of("finalize") == {"alone": [1.0]}
