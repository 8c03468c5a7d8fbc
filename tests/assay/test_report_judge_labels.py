"""`assay.report.judge_label_effect`: the core metrics with a golden file's judge labels and without them
(their documents unjudged), against a hand computation of docs/metrics.md's formulas."""

from __future__ import annotations

import math

import pytest

from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report, judge_label_effect
from assay.results import QueryResult

GOLDEN = GoldenFile(
    version="v1",
    k=10,
    relevant_min_grade=2,
    queries=(
        GoldenQuery(
            "q1",
            "refund",
            (Judgment("d1", 3), Judgment("d2", 2, source="judge"), Judgment("d3", 0)),
        ),
        GoldenQuery("q2", "invoice", (Judgment("e1", 1), Judgment("e2", 3, source="judge"))),
        GoldenQuery("q3", "shadow only", (Judgment("f1", 3, source="judge"),), tier="shadow"),
    ),
)
RESULTS = {
    "q1": QueryResult("q1", ("d2", "d1", "dx")),
    "q2": QueryResult("q2", ("e1", "e2")),
    "q3": QueryResult("q3", ("f1",)),
}


def _gain(grade: int, rank: int) -> float:
    return (2**grade - 1) / math.log2(rank + 1)


def test_with_and_without_the_judge_labels_equal_a_hand_computation() -> None:
    effect = judge_label_effect(GOLDEN, RESULTS)
    assert effect is not None
    assert effect["judge_labels"] == 3  # d2, e2, f1 (f1's query is shadow: not in the core figures)
    assert effect["n"] == 2
    rows = {row["key"]: row for row in effect["rows"]}

    # With the judge's labels. q1: d2 (2) at 1, d1 (3) at 2; ideal 3, 2, 0. q2: e1 (1) at 1, e2 (3) at 2.
    q1 = (_gain(2, 1) + _gain(3, 2)) / (_gain(3, 1) + _gain(2, 2))
    q2 = (_gain(1, 1) + _gain(3, 2)) / (_gain(3, 1) + _gain(1, 2))
    assert rows["ndcg"]["with_judge"] == pytest.approx((q1 + q2) / 2, abs=1e-12)
    assert rows["mrr"]["with_judge"] == pytest.approx((1 / 1 + 1 / 2) / 2)  # d2 relevant at 1; e2 at 2
    assert rows["precision_at_k"]["with_judge"] == pytest.approx((2 / 10 + 1 / 10) / 2)
    assert rows["judged_at_k"]["with_judge"] == pytest.approx((2 / 3 + 2 / 2) / 2)  # dx is nobody's

    # Without: d2, e2 and f1 are unjudged (grade 0, and out of the ideal lists).
    q1 = _gain(3, 2) / _gain(3, 1)
    q2 = _gain(1, 1) / _gain(1, 1)
    assert rows["ndcg"]["without_judge"] == pytest.approx((q1 + q2) / 2, abs=1e-12)
    assert rows["mrr"]["without_judge"] == pytest.approx(
        (1 / 2 + 0) / 2
    )  # q2 keeps only e1 (1 < 2): no relevant
    assert rows["precision_at_k"]["without_judge"] == pytest.approx((1 / 10 + 0) / 2)
    assert rows["judged_at_k"]["without_judge"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    for row in rows.values():
        assert row["difference"] == pytest.approx(row["with_judge"] - row["without_judge"])

    # "With" is the run's own report; "without" a report on the file with the judge's labels left out.
    report = build_report(GOLDEN, RESULTS)
    assert [rows[key]["with_judge"] for key in rows] == [report[key] for key in rows]
    human = build_report(GOLDEN.without_source("judge"), RESULTS)
    assert [rows[key]["without_judge"] for key in rows] == [human[key] for key in rows]


def test_a_file_without_judge_labels_has_no_comparison() -> None:
    assert judge_label_effect(GOLDEN.without_source("judge"), RESULTS) is None
