"""`assay gate --suggest-budgets` and `assay gate --noise` through the installed console script: the
suggested budgets load as a budgets file, the floor file feeds the gate's `noise` warnings, and every
unusable input is one worded line with exit 2 (docs/cli.md). The demo's real runs are in
tests/demo/test_noise_floor_demo.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.budgets import Budgets, load_budgets
from assay.noise import NoiseFloor, below_floor
from tests.assay.test_cli import assay, no_traceback
from tests.assay.test_cli_gate import artifact
from tests.assay.test_critical_reach import report


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """Two runs of one configuration that differ on a few queries (an A/A pair of a noisy engine)."""
    return artifact(tmp_path / "a.json", swapped=3), artifact(tmp_path / "b.json", swapped=5)


def test_it_prints_suggested_budgets_that_load_and_the_floor_on_stderr(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    floor_file = tmp_path / "floor.json"
    budgets_file = tmp_path / "budgets.json"
    budgets_file.write_text(json.dumps({"lt3_rate": {"warn": 0.05, "fail": 0.1}, "strata": {"billing": {}}}))

    proc = assay(
        "gate",
        "--suggest-budgets",
        *map(str, runs),
        "--budgets",
        str(budgets_file),
        "--noise-out",
        str(floor_file),
    )

    assert proc.returncode == 0, proc.stderr
    suggested = load_budgets(json.loads(proc.stdout))
    floor = NoiseFloor.from_dict(json.loads(floor_file.read_text()))
    assert floor.runs == tuple(map(str, runs))
    assert below_floor(suggested, floor) == []
    assert below_floor(load_budgets(json.loads(budgets_file.read_text())), floor) != []
    assert suggested.core["lt3_rate"].warn is not None  # gated in the budgets given: still gated
    assert set(suggested.strata) == {"billing", "docs"}
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"noise floor of 2 runs ({runs[0]}, {runs[1]}) on golden version 2026-08-01")
    core_ndcg = next(line for line in lines if line.startswith("core ") and "nDCG@k" in line)
    assert core_ndcg.split()[4] == f"{floor.core['ndcg'].floor:.4f}" != "0.0000"
    assert "0.01 / 0.025 *" in core_ndcg
    assert (
        lines[-1] == "* below the noise floor: a change this small happens between runs of one configuration"
    )


def test_identical_runs_suggest_the_budgets_given_and_their_floor_adds_no_warning(tmp_path: Path) -> None:
    runs = [artifact(tmp_path / f"a{i}.json", swapped=4) for i in (1, 2, 3)]
    floor_file = tmp_path / "floor.json"

    proc = assay("gate", "--suggest-budgets", *map(str, runs), "--noise-out", str(floor_file))
    gated = assay("gate", "--current", str(runs[2]), "--baseline", str(runs[0]), "--noise", str(floor_file))

    assert proc.returncode == 0, proc.stderr
    # The defaults, for the core and for each stratum measured: nothing but a movement raises a budget.
    defaults = Budgets().core
    assert load_budgets(json.loads(proc.stdout)) == Budgets(
        core=defaults, strata=dict.fromkeys(("billing", "docs"), defaults)
    )
    assert "no query moved between the runs" in proc.stderr and "*" not in proc.stderr
    assert gated.returncode == 0 and gated.stdout.startswith("Relevance gate: PASS — 0 failures, 0 warnings")
    assert "WARN" not in gated.stdout


def test_the_gate_given_the_floor_warns_on_each_budget_below_it(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    floor_file = tmp_path / "floor.json"
    assay("gate", "--suggest-budgets", *map(str, runs), "--noise-out", str(floor_file))
    current, baseline = artifact(tmp_path / "current.json"), artifact(tmp_path / "baseline.json")

    plain = assay("gate", "--current", str(current), "--baseline", str(baseline))
    noisy = assay("gate", "--current", str(current), "--baseline", str(baseline), "--noise", str(floor_file))

    assert plain.returncode == 0 and plain.stdout.startswith("Relevance gate: PASS"), plain.stdout
    assert noisy.returncode == 0 and noisy.stdout.startswith("Relevance gate: WARN"), noisy.stdout
    floor = NoiseFloor.from_dict(json.loads(floor_file.read_text()))
    below = below_floor(load_budgets(None), floor)
    assert {(b.scope, b.metric, b.level) for b in below} >= {
        ("core", "ndcg", "warn"),
        ("core", "mrr", "warn"),
    }
    # One WARN line per scope with a budget below its floor, naming each of them.
    noise_lines = [line for line in noisy.stdout.splitlines() if "below the noise floor" in line]
    assert [line.split(" budgets below")[0] for line in noise_lines] == [
        f"WARN  {scope}" for scope in dict.fromkeys(b.scope for b in below)
    ]
    assert noise_lines[0].startswith("WARN  core budgets below the noise floor: nDCG@k warn 0.01 (floor ")
    assert ", MRR warn 0.01 (floor " in noise_lines[0]
    assert noise_lines[0].endswith("raise them to the suggested budgets")


def test_a_floor_of_another_golden_version_is_used_with_a_warning(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    floor_file = tmp_path / "floor.json"
    assay("gate", "--suggest-budgets", *map(str, runs), "--noise-out", str(floor_file))
    newer = [artifact(tmp_path / f"{name}.json", version="2026-09-01") for name in ("current", "baseline")]

    proc = assay("gate", "--current", str(newer[0]), "--baseline", str(newer[1]), "--noise", str(floor_file))

    assert proc.returncode == 0
    assert f"warning: --noise {floor_file} was measured on golden version 2026-08-01" in proc.stderr


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (
            "one report",
            "1 run: the noise floor needs at least 2 runs of one configuration (an A/A pair); run",
        ),
        ("two versions", "golden_version differs ("),
        ("not a report", "tiers: expected an object"),
        ("deep", "nested deeper than 64 levels"),
        ("with current", "--suggest-budgets measures runs and compares none: leave out --current"),
        ("no baseline", "--current and --baseline are both required (or --suggest-budgets REPORT ...)"),
        ("noise out alone", "--noise-out goes with --suggest-budgets"),
        ("budgets as floor", "not a noise floor (it has no noise_spec)"),
        ("deep floor", "--noise deep.json: nested deeper than 64 levels"),
        ("bad floor", "core.ndcg.run_to_run: -1 is not a number >= 0 or null"),
    ],
)
def test_unusable_input_is_one_worded_line_and_exit_2(
    case: str, expected: str, runs: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = map(str, runs)
    other = str(artifact(tmp_path / "other.json", version="2026-09-01"))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "not-a-report.json").write_text('{"tiers": 3}')
    (tmp_path / "budgets.json").write_text("{}")
    bad_floor = {"noise_spec": "2", "golden_version": "2026-08-01", "runs": [], "strata": {}}
    bad_floor["core"] = {"ndcg": {"run_to_run": -1}}
    (tmp_path / "bad-floor.json").write_text(json.dumps(bad_floor))
    gate = ("gate", "--current", a, "--baseline", b)
    args = {
        "one report": ("gate", "--suggest-budgets", a),
        "two versions": ("gate", "--suggest-budgets", a, other),
        "not a report": ("gate", "--suggest-budgets", a, "not-a-report.json"),
        "deep": ("gate", "--suggest-budgets", a, "deep.json"),
        "with current": ("gate", "--suggest-budgets", a, b, "--current", a),
        "no baseline": ("gate", "--current", a),
        "noise out alone": (*gate, "--noise-out", "floor.json"),
        "budgets as floor": (*gate, "--noise", "budgets.json"),
        "deep floor": (*gate, "--noise", "deep.json"),
        "bad floor": (*gate, "--noise", "bad-floor.json"),
    }[case]

    proc = assay(*args, cwd=tmp_path)

    assert proc.returncode == 2, proc.stdout + proc.stderr
    no_traceback(proc)
    assert proc.stdout == ""
    assert proc.stderr.startswith("assay gate: error: ") and expected in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "floor.json").exists()


def test_a_critical_query_the_a_a_runs_moved_warns_within_their_reach_and_fails_past_it(
    tmp_path: Path,
) -> None:
    """The floor file carries the critical queries' A/A ranks and the deepest change to `--noise`; the
    gate's lines say which side of the reach a critical query is (docs/metrics.md, "The drift gate",
    item 6)."""
    files = []
    for name, built in [("a", report(1)), ("b", report(2, swapped_at=5)), ("c", report(1))]:
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(built))
    floor_file = tmp_path / "floor.json"
    suggested = assay("gate", "--suggest-budgets", *map(str, files), "--noise-out", str(floor_file))
    for rank in (5, 6):
        (tmp_path / f"rank-{rank}.json").write_text(json.dumps(report(rank)))

    def gated(rank: int) -> Any:
        current = str(tmp_path / f"rank-{rank}.json")
        return assay("gate", "--current", current, "--baseline", str(files[0]), "--noise", str(floor_file))

    within, past = gated(5), gated(6)

    assert suggested.returncode == 0, suggested.stderr
    assert suggested.stderr.splitlines()[-1] == (
        "critical queries' best documents ranked, run by run: nav 1, 2, 1; lists changed down to rank 5 "
        '(docs/metrics.md, "The drift gate", item 6)'
    )
    assert json.loads(floor_file.read_text())["critical"] == {"nav": [1, 2, 1]}
    seen = "(its ranks there 1, 2, 1; lists changed down to rank 5)"
    assert within.returncode == 0 and within.stdout.startswith("Relevance gate: WARN"), within.stdout
    assert (
        "WARN  critical query nav: best document (best, grade 3) at rank 5, outside the top 3 within the A/A "
        f"runs' reach {seen}: the engine is not deterministic for it; re-run, or make it deterministic"
    ) in within.stdout.splitlines()
    assert past.returncode == 1 and past.stdout.startswith("Relevance gate: FAIL"), past.stdout
    assert (
        "FAIL  critical query nav: best document (best, grade 3) at rank 6, must be within the top 3; past "
        f"the A/A runs' reach {seen}"
    ) in past.stdout.splitlines()
