"""The gate's renderings carry the facts: CI log text, the PR comment in markdown, GitHub annotations."""

from __future__ import annotations

import json
from typing import Any

from assay.drift import (
    GateResult,
    compare,
    github_annotations,
    load_budgets,
    render_markdown,
    render_text,
)
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.results import QueryResult

JUDGED = (Judgment("doc-8821", 3), Judgment("doc-4410", 2), Judgment("doc-1199", 1))
GOLDEN = GoldenFile(
    version="2026-08-01",
    queries=(
        GoldenQuery("q-0471", "refund policy | annual plan", JUDGED, stratum="billing", critical=True),
        GoldenQuery("q-0002", "cancel subscription", JUDGED, stratum="billing"),
        GoldenQuery("q-0003", "api keys", JUDGED, stratum="developer"),
        GoldenQuery("q-0004", "old blog", JUDGED, tier="shadow"),
    ),
)
GOOD = ("doc-8821", "doc-4410", "doc-1199")


def report(answers: dict[str, QueryResult]) -> dict[str, Any]:
    full = {q.id: answers.get(q.id, QueryResult(q.id, GOOD)) for q in GOLDEN.queries}
    return json.loads(json.dumps(build_report(GOLDEN, full)))


def failing_result() -> GateResult:
    current = report(
        {
            "q-0471": QueryResult("q-0471", ("doc-x", "doc-y", "doc-z", "doc-1199", "doc-4410", "doc-8821")),
            "q-0003": QueryResult("q-0003", error="HTTP 503\nupstream: 100% busy"),
        }
    )
    budgets = load_budgets({"strata": {"billing": {"ndcg": {"fail": 0.02}}}, "max_error_rate": 0})
    return compare(current, report({}), budgets)


def test_it_writes_the_ci_log_with_failures_warnings_and_top_losers() -> None:
    text = render_text(failing_result())
    # q-0471: its graded documents at ranks 6, 5, 4 -> nDCG (1/log2(5) + 3/log2(6) + 7/log2(7)) /
    # (7 + 3/log2(3) + 1/log2(4)) = 0.4349; q-0002 stays 1.0 and errored q-0003 is left out: core 0.7174.
    # Failures: core nDCG and MRR (RR 1 -> 0.2 on q-0471), the same two in billing, errors, critical.
    assert text.splitlines()[0] == "Relevance gate: FAIL — 6 failures, 0 warnings"
    assert "golden 2026-08-01, k=10, relevant_min_grade=2, metrics_spec 1" in text
    # Every change is over the pairs both reports counted: q-0471 and q-0002 (q-0003 errored now).
    assert (
        "FAIL  core nDCG@k drop 0.2826 >= fail budget 0.025 (baseline 1.0000 -> current 0.7174 over 2 paired "
        "queries; 95% interval [-0.5651, +0.0000], p=1.000)" in text
    )
    assert "FAIL  core MRR drop 0.4000 >= fail budget 0.03 (baseline 1.0000 -> current 0.6000 over 2" in text
    assert "FAIL  stratum billing nDCG@k drop 0.2826 >= fail budget 0.02" in text
    assert "FAIL  stratum billing MRR drop 0.4000 >= fail budget 0.03" in text
    assert (
        "FAIL  critical query q-0471: best document (doc-8821, grade 3) at rank 6, must be within the top 3"
        in text
    )
    assert "FAIL  current error rate 0.2500 over all 4 queries (every tier)" in text
    assert "Left out of every core change: 1 errored in the current run (q-0003)" in text
    assert "nDCG@k           1.0000 -> 0.7174 (-0.2826) [-0.5651, +0.0000] p=1.000 n=2 fail" in text
    assert "| weighted 1.0000 -> 0.7174 (-0.2826) [-0.5651, +0.0000] p=1.000 n=2 not gated" in text
    assert "1. q-0471 'refund policy | annual plan' (billing, core): nDCG 1.0000 -> 0.4349 (-0.5651)" in text
    assert "doc-8821 (grade 3): rank 1 -> 6" in text
    assert "nDCG change -0.2826, 95% paired bootstrap interval" in text  # over q-0471 and q-0002


def test_it_writes_a_pr_comment_with_the_verdict_the_metric_table_strata_and_losers() -> None:
    markdown = render_markdown(failing_result())
    lines = markdown.splitlines()
    assert lines[0] == "### Relevance gate: **FAIL**"
    assert (
        "| nDCG@k | 2 | 1.0000 | 0.7174 | -0.2826 | [-0.5651, +0.0000] | 1.000 | 0.01 / 0.025 | **fail** |"
        in lines
    )
    assert (
        "| MRR | 2 | 1.0000 | 0.6000 | -0.4000 | [-0.8000, +0.0000] | 1.000 | 0.01 / 0.03 | **fail** |"
        in lines
    )
    assert "| P@k | 2 | 0.2000 | 0.2000 | +0.0000 | [+0.0000, +0.0000] | 1.000 | 0.02 / 0.04 | ok |" in lines
    # The error rate is over every common query, errored ones included: 0 of 3 -> 1 of 3.
    assert "| error rate | 3 | 0.0000 | 0.3333 | +0.3333 | [+0.0000, +1.0000] | 1.000 |  |  |" in lines
    assert "| nDCG@k (weighted) | 2 | 1.0000 | 0.7174 | -0.2826 | [-0.5651, +0.0000] | 1.000 |  |  |" in lines
    strata = next(line for line in lines if line.startswith("| billing |"))
    assert "| billing | 0.7174 (-0.2826) **fail** | 0.6000 (-0.4000) **fail** | 0.2000 (+0.0000) |" in strata
    assert any(line.startswith("| developer |") for line in lines)
    loser = next(line for line in lines if line.startswith("| q-0471 |"))
    assert "refund policy \\| annual plan" in loser  # a pipe in the text does not break the table
    assert "doc-8821 (grade 3): rank 1 -> 6" in loser
    assert "- :x: critical query q-0471" in markdown
    assert "#### Shadow tier (gated on empty rate only)" in markdown


def test_it_renders_a_passing_gate_briefly() -> None:
    result = compare(report({}), report({}), load_budgets(None))
    assert render_text(result).splitlines()[0] == "Relevance gate: PASS — 0 failures, 0 warnings"
    markdown = render_markdown(result)
    assert markdown.startswith("### Relevance gate: **pass**\n")
    assert "#### Top losers" not in markdown
    assert github_annotations(result) == []


def test_it_emits_one_github_annotation_per_failure_and_warning_escaped() -> None:
    result = failing_result()
    warned = compare(
        report({"q-0002": QueryResult("q-0002", ("doc-4410", "doc-8821", "doc-1199"))}),
        report({}),
        load_budgets({"ndcg": {"fail": 0.5}}),
    )
    lines = github_annotations(result) + github_annotations(warned)
    assert lines[0] == (
        "::error title=Relevance gate — core nDCG@k::core nDCG@k drop 0.2826 >= fail budget 0.025 "
        "(baseline 1.0000 -> current 0.7174 over 2 paired queries; 95%25 interval [-0.5651, +0.0000], "
        "p=1.000)"
    )
    errors = next(line for line in lines if "error rate" in line and line.startswith("::error"))
    assert errors.endswith("is above max_error_rate 0.0; failed: q-0003")
    critical = next(line for line in lines if "critical" in line)
    assert critical.startswith("::error title=Relevance gate — query q-0471::critical query q-0471")
    assert sum(line.startswith("::error") for line in lines) == len(result.failures)
    assert lines[-1].startswith("::warning title=Relevance gate — core nDCG@k::core nDCG@k drop")


def test_it_escapes_workflow_command_characters_in_annotations() -> None:
    golden = GoldenFile(version="v", queries=(GoldenQuery("a:b,c%\nd", "t", JUDGED, critical=True),))
    current = json.loads(json.dumps(build_report(golden, {})))
    (line,) = github_annotations(compare(current, current, load_budgets(None)))
    assert line.startswith(
        "::error title=Relevance gate — query a%3Ab%2Cc%25%0Ad::critical query a:b,c%25%0Ad"
    )
