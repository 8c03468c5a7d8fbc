"""`assay gate` through the installed console script: verdicts and exit codes, refusals, unusable input,
GitHub annotations and the markdown summary. The artifacts are built with the real report builder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.results import QueryResult
from tests.assay.test_cli import assay, no_traceback

# 50 queries, each with a grade-3 document d1 and a grade-1 document d2-<i>. The baseline ranks d1 first
# everywhere; a "swapped" query ranks d2 first (nDCG 0.7098, RR 0.5), so each swap moves the means by
# nDCG 0.0058 and MRR 0.01: 2 swaps = warn on both, 10 swaps = fail on both (default budgets).
N = 50


def golden(version: str = "2026-08-01") -> GoldenFile:
    return GoldenFile(
        version=version,
        queries=tuple(
            GoldenQuery(
                id=f"q-{i}",
                text=f"query {i}",
                stratum="billing" if i < 10 else "docs",
                judgments=(Judgment("d1", 3), Judgment(f"d2-{i}", 1)),
            )
            for i in range(N)
        ),
    )


def artifact(path: Path, *, swapped: int = 0, errors: int = 0, version: str = "2026-08-01") -> Path:
    results = {}
    for i in range(N):
        qid = f"q-{i}"
        if i < errors:
            results[qid] = QueryResult(query_id=qid, error="HTTP 503 after 4 attempts", status=503)
        else:
            ids = (f"d2-{i}", "d1") if i < swapped else ("d1", f"d2-{i}")
            results[qid] = QueryResult(query_id=qid, ids=ids)
    path.write_text(json.dumps(build_report(golden(version), results, run={"adapter": "http_json"})))
    return path


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    return artifact(tmp_path / "baseline.json")


def gate(*args: str, env: dict[str, str] | None = None) -> Any:
    return assay("gate", *args, env=env)


def test_it_passes_identical_reports_with_exit_0(tmp_path: Path, baseline: Path) -> None:
    current = artifact(tmp_path / "current.json")

    proc = gate("--current", str(current), "--baseline", str(baseline))

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Relevance gate: PASS")
    assert "::" not in proc.stdout  # no annotations outside GitHub Actions


def test_it_warns_with_exit_0_and_lists_the_top_losers(tmp_path: Path, baseline: Path) -> None:
    current = artifact(tmp_path / "current.json", swapped=2)

    proc = gate("--current", str(current), "--baseline", str(baseline))

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Relevance gate: WARN")
    assert "WARN" in proc.stdout and "FAIL " not in proc.stdout
    assert (
        "Top losers (2):" in proc.stdout and "q-0 'query 0'" in proc.stdout and "q-1 'query 1'" in proc.stdout
    )


def test_it_fails_with_exit_1_past_a_hard_budget(tmp_path: Path, baseline: Path) -> None:
    current = artifact(tmp_path / "current.json", swapped=10)

    proc = gate("--current", str(current), "--baseline", str(baseline), "--top", "3")

    assert proc.returncode == 1
    assert proc.stdout.startswith("Relevance gate: FAIL")
    assert "FAIL  " in proc.stdout and "Top losers (3):" in proc.stdout


def test_it_fails_on_errors_in_the_current_run(tmp_path: Path, baseline: Path) -> None:
    current = artifact(tmp_path / "current.json", errors=1)

    proc = gate("--current", str(current), "--baseline", str(baseline))

    assert proc.returncode == 1
    assert "error" in proc.stdout.lower() and "FAIL  " in proc.stdout


def test_it_refuses_reports_of_different_golden_versions_unless_rebaselining(
    tmp_path: Path, baseline: Path
) -> None:
    current = artifact(tmp_path / "current.json", version="2026-09-01")

    refused = gate("--current", str(current), "--baseline", str(baseline))
    accepted = gate("--current", str(current), "--baseline", str(baseline), "--rebaseline")

    assert refused.returncode == 1
    assert "2026-09-01" in refused.stdout and "2026-08-01" in refused.stdout
    assert accepted.returncode == 0, accepted.stdout
    assert "(rebaseline)" in accepted.stdout


def test_it_reads_budgets_and_the_seeds_flat_form(tmp_path: Path, baseline: Path) -> None:
    current = artifact(tmp_path / "current.json", swapped=2)
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"ndcg_max_drop": 0.005}))

    proc = gate("--current", str(current), "--baseline", str(baseline), "--budgets", str(strict))

    assert proc.returncode == 1 and proc.stdout.startswith("Relevance gate: FAIL")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"ndgc": {"warn": 0.01, "fail": 0.02}}, "ndgc: unknown key (did you mean 'ndcg'?)"),
        (None, "expected a JSON object of budgets, got null"),  # not the defaults in disguise
        ([0.01], "expected a JSON object, got list"),
    ],
)
def test_unknown_budget_keys_and_non_objects_are_unusable_input(
    tmp_path: Path, baseline: Path, content: Any, message: str
) -> None:
    budgets = tmp_path / "budgets.json"
    budgets.write_text(json.dumps(content))

    proc = gate("--current", str(baseline), "--baseline", str(baseline), "--budgets", str(budgets))

    assert proc.returncode == 2
    assert proc.stderr.startswith(f"assay gate: error: --budgets {budgets}: ") and message in proc.stderr
    assert proc.stdout == ""
    no_traceback(proc)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "invalid JSON at line 1 column 2"),
        ('{"hello": "world"}', ""),
        ("[1, 2]", ""),
    ],
)
def test_malformed_or_missing_artifacts_are_unusable_input(
    tmp_path: Path, baseline: Path, content: str | None, message: str
) -> None:
    current = tmp_path / "current.json"
    if content is not None:
        current.write_text(content)
    summary = tmp_path / "summary.md"

    proc = gate("--current", str(current), "--baseline", str(baseline), "--summary", str(summary))

    assert proc.returncode == 2
    assert proc.stderr.startswith("assay gate: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not summary.exists()
    no_traceback(proc)


def test_it_prints_github_annotations_under_github_actions(tmp_path: Path, baseline: Path) -> None:
    current = artifact(tmp_path / "current.json", swapped=10)

    proc = gate("--current", str(current), "--baseline", str(baseline), env={"GITHUB_ACTIONS": "true"})

    assert proc.returncode == 1
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert annotations and all(line.startswith("::error title=") for line in annotations)
    assert any("nDCG" in line for line in annotations)


def test_it_writes_the_markdown_summary_and_appends_it_to_the_step_summary(
    tmp_path: Path, baseline: Path
) -> None:
    current = artifact(tmp_path / "current.json", swapped=2)
    summary = tmp_path / "out" / "summary.md"
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("## Earlier step\n")

    proc = gate(
        "--current", str(current), "--baseline", str(baseline), "--summary", str(summary),
        env={"GITHUB_STEP_SUMMARY": str(step_summary)},
    )  # fmt: skip

    assert proc.returncode == 0, proc.stderr
    markdown = summary.read_text()
    assert markdown.startswith("### Relevance gate: **warn**")
    assert "q-0" in markdown and "|" in markdown
    assert step_summary.read_text() == "## Earlier step\n" + markdown
