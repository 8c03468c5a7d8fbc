"""The gate's overlap (docs/metrics.md, "Overlap"; docs/cli.md, "`assay gate`"): the two artifacts' lists
compared query by query beside the verdict, never in it, in the result's JSON (`overlap`), the CI log and
the pull-request comment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.cli import main
from assay.drift import compare, load_budgets, render_markdown, render_text
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.overlap import overlap, report_overlap
from assay.report import build_report
from assay.results import QueryResult

GOLDEN = GoldenFile(
    version="v1",
    queries=tuple(
        GoldenQuery(id=f"q{i}", text=f"query {i}", judgments=(Judgment("a", 3), Judgment("b", 2)))
        for i in range(1, 6)
    ),
)


def _report(answers: dict[str, tuple[str, ...]], errored: tuple[str, ...] = ()) -> dict[str, Any]:
    results = {
        q.id: QueryResult(q.id, error="timeout") if q.id in errored else QueryResult(q.id, ids=answers[q.id])
        for q in GOLDEN.queries
    }
    return json.loads(json.dumps(build_report(GOLDEN, results)))


BASELINE = _report({f"q{i}": ("a", "b", "c") for i in range(1, 6)})
CURRENT = _report(
    {
        "q1": ("a", "b", "c"),
        "q2": ("b", "a", "c"),
        "q3": ("x", "y"),
        "q4": ("a", "b", "c", "d"),
        "q5": ("a",),
    },
    errored=("q5",),
)


def test_the_gate_carries_the_overlap_of_the_queries_both_answered():
    result = compare(CURRENT, BASELINE, load_budgets(None))
    found = result.to_dict()["overlap"]
    expected = report_overlap(CURRENT, BASELINE, seed=4243)
    assert expected is not None and found == expected.to_dict()
    assert (found["k"], found["p"], found["n"], found["identical"]) == (10, 0.9, 4, 1)  # q5 errored
    each = [
        overlap(["a", "b", "c"], ids, k=10)
        for ids in (["a", "b", "c"], ["b", "a", "c"], ["x", "y"], ["a", "b", "c", "d"])
    ]
    assert found["jaccard"]["mean"] == pytest.approx(sum(o.jaccard for o in each) / 4)
    assert found["rbo"]["mean"] == pytest.approx(sum(o.rbo for o in each) / 4)
    assert found["rbo"]["low"] <= found["rbo"]["mean"] <= found["rbo"]["high"]


def test_the_overlap_does_not_change_the_verdict(monkeypatch):
    moved = compare(CURRENT, BASELINE, load_budgets(None)).to_dict()
    monkeypatch.setattr("assay.gate.report_overlap", lambda *args, **kwargs: None)
    without = compare(CURRENT, BASELINE, load_budgets(None)).to_dict()
    assert without["overlap"] is None and moved["overlap"] is not None
    assert {**moved, "overlap": None} == without


def test_identical_reports_overlap_fully_and_a_report_alone_has_no_overlap():
    copy = json.loads(json.dumps(BASELINE))
    found = compare(copy, BASELINE, load_budgets(None)).to_dict()["overlap"]
    assert (found["n"], found["identical"]) == (5, 5)
    for figure in ("jaccard", "rbo"):
        assert (found[figure]["mean"], found[figure]["low"], found[figure]["high"]) == (1.0, 1.0, 1.0)
    assert compare(BASELINE, BASELINE, load_budgets(None)).overlap is None


def test_the_log_and_the_comment_state_the_figures_the_formula_and_p():
    result = compare(CURRENT, BASELINE, load_budgets(None))
    data = result.to_dict()["overlap"]
    line = next(line for line in render_text(result).splitlines() if line.startswith("Overlap"))
    assert "Jaccard@10 and RBO (extrapolated, eq. 32 of Webber et al. 2010, p = 0.9)" in line
    assert "over 4 queries both answered" in line
    assert f"Jaccard@10 {data['jaccard']['mean']:.4f} [{data['jaccard']['low']:.4f}, " in line
    assert f"RBO {data['rbo']['mean']:.4f} [" in line and line.endswith("; 1 identical")
    assert line + ' (docs/metrics.md, "Overlap").' in render_markdown(result)


def test_assay_gate_prints_the_overlap(tmp_path, capsys):
    (tmp_path / "current.json").write_text(json.dumps(CURRENT))
    (tmp_path / "baseline.json").write_text(json.dumps(BASELINE))
    code = main(
        ["gate", "--current", str(tmp_path / "current.json"), "--baseline", str(tmp_path / "baseline.json")]
    )
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "Overlap with the baseline (Jaccard@10 and RBO" in out
