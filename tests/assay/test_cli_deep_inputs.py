"""Every command given a file nested too deeply exits 2 with one worded line, never a traceback or exit 1
(a failed gate, to a CI job): run files, reports, budgets (assay.jsonin bounds every user's JSON). A file with
thousands of problems lists the first thousand (assay.problems.MAX_SHOWN)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.assay.test_cli import assay, no_traceback

GOLDEN = {"version": "v", "queries": [{"id": "q1", "text": "t", "judgments": [{"doc_id": "d", "grade": 2}]}]}


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [100, 5_000])
def test_deep_inputs_are_usage_errors(tmp_path: Path, levels: int) -> None:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN))
    run = tmp_path / "run.jsonl"
    run.write_text(f'{{"query_id": "q1", "ids": {deep(levels)}}}\n')
    report = tmp_path / "report.json"
    (tmp_path / "ok.jsonl").write_text('{"query_id": "q1", "ids": ["d"]}\n')
    scored = assay(
        "score", "--golden", str(golden), "--run", str(tmp_path / "ok.jsonl"), "--out", str(report)
    )
    assert scored.returncode == 0, scored.stderr
    too_deep = tmp_path / "deep.json"
    too_deep.write_text(deep(levels))

    cases = {
        "run file": ("score", "--golden", str(golden), "--run", str(run), "--out", str(tmp_path / "x.json")),
        "--current": ("gate", "--current", str(too_deep), "--baseline", str(report)),
        "--budgets": (
            "gate",
            "--current",
            str(report),
            "--baseline",
            str(report),
            "--budgets",
            str(too_deep),
        ),
    }
    for what, args in cases.items():
        proc = assay(*args)
        no_traceback(proc)
        assert proc.returncode == 2, (what, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "nested deeper than 64 levels" in lines[0], (what, proc.stderr)


def test_validate_lists_the_first_thousand_problems_and_writes_every_one_as_csv(tmp_path: Path) -> None:
    queries = [{"id": f"q{i}", "text": "t", "judgments": [{"doc_id": "d", "grade": 9}]} for i in range(2500)]
    golden = tmp_path / "bad.json"
    golden.write_text(json.dumps({"version": "v", "queries": queries}))
    proc = assay("validate", "--golden", str(golden), "--problems-csv", str(tmp_path / "all.csv"))
    no_traceback(proc)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[0].endswith("2500 problems, nothing evaluated:")
    assert len(lines) == 1 + 1000 + 1
    assert (
        lines[-1] == f"  ... and 1,500 more (2,500 problems in all); every one is in {tmp_path / 'all.csv'}"
    )
    csv_lines = (tmp_path / "all.csv").read_text().splitlines()
    assert csv_lines[0] == "where,message,code,query_id" and len(csv_lines) == 2501
