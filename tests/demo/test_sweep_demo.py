"""The README's sweep on the demo: the demo search service in its own process on a loopback port, the
5 x 4 grid of its title weight and minimum-should-match through `assay sweep`, the figures README.md
("Tuning on the demo") and docs/experiments.md quote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.demo.conftest import DEMO
from tests.support.processes import serving

ASSAY = Path(sys.executable).with_name("assay")
GRID = {"params": {"title_weight": [0.5, 1, 3, 6, 12], "min_should_match": [1, 2, 3, 4]}}


def test_the_readme_sweep_of_the_demo(tmp_path: Path) -> None:
    grid, out = tmp_path / "grid.json", tmp_path / "sweep.json"
    grid.write_text(json.dumps(GRID))
    with serving(["-m", "demo.search_service", "--corpus", str(DEMO / "corpus.jsonl"), "--port", "0"]) as url:
        done = subprocess.run(
            [str(ASSAY), "sweep", "--golden", str(DEMO / "golden.json"), "--search-url", f"{url}/search",
             "--grid", str(grid), "--seed", "1", "--out", str(out)],
            capture_output=True, text=True, timeout=300, cwd=DEMO.parent,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tuning: 1176 requests" in done.stderr and "holdout: 100 requests" in done.stderr
    data = json.loads(out.read_text())
    split = data["split"]
    assert (len(split["tuning"]), len(split["holdout"])) == (56, 25)
    assert split["strata"] == {
        "account": {"tuning": 15, "holdout": 7},
        "billing": {"tuning": 22, "holdout": 10},
        "blog": {"tuning": 7, "holdout": 3},
        "developer": {"tuning": 12, "holdout": 5},
    }
    winner = data["winner"]
    assert winner["params"] == {"title_weight": 3, "min_should_match": 1}
    assert data["requests"]["sent"] == 1276
    assert (
        round(winner["tuning"]["ndcg"], 3) == 0.897 and round(data["baseline"]["tuning"]["ndcg"], 3) == 0.838
    )
    assert round(winner["tuning_gain"], 3) == 0.059 and round(winner["holdout_gain"], 3) == 0.069
    assert round(data["optimism"], 3) == pytest.approx(-0.010)
    assert winner["change"]["ndcg"]["interval"]["low"] > 0
    assert winner["p_adjusted"] == pytest.approx(0.009)


def test_a_value_outside_the_services_bounds_is_that_configurations_errors(tmp_path: Path) -> None:
    grid, out = tmp_path / "grid.json", tmp_path / "sweep.json"
    # 25 is above the title weight's bound (20): the service answers 400 to each of its requests.
    grid.write_text(json.dumps({"configs": [{"title_weight": 25}, {"title_weight": 1}]}))
    with serving(["-m", "demo.search_service", "--corpus", str(DEMO / "corpus.jsonl"), "--port", "0"]) as url:
        done = subprocess.run(
            [str(ASSAY), "sweep", "--golden", str(DEMO / "golden.json"), "--search-url", f"{url}/search",
             "--grid", str(grid), "--top", "2", "--out", str(out), "--quiet"],
            capture_output=True, text=True, timeout=300, cwd=DEMO.parent,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr  # written, the errors said
    data = json.loads(out.read_text())
    refused, allowed = data["configs"]
    assert refused["tuning"]["errors"] == refused["tuning"]["n"] == 56
    assert refused["tuning"]["ndcg"] is None and refused["tuning"]["empty"] == 0
    assert (refused["rank"], allowed["rank"]) == (2, 1)
    assert data["best"]["params"] == {"title_weight": 1} and data["winner"] is None  # worse than the baseline
    assert "searches errored" in done.stderr
