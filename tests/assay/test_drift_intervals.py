"""The paired bootstrap intervals of the gate's deltas count queries as the means do (docs/metrics.md)."""

from __future__ import annotations

from typing import Any

import pytest

from assay.drift import paired_intervals


def test_paired_intervals_count_queries_as_the_means_do() -> None:
    def row(qid: str, ndcg: float, **extra: object) -> dict[str, object]:
        return {"id": qid, "ndcg": ndcg, "mrr": ndcg, "p_at_k": ndcg, "empty": False, "lt3": False, **extra}

    baseline = [row("a", 0.5), row("b", 0.5), row("e", 0.0, expect_empty=True), row("s", 0.5, tier="shadow")]
    current = [
        row("a", 0.4),
        row("b", 0.4),
        row("e", 1.0, expect_empty=True),  # an expected-empty query is in no nDCG mean
        row("s", 0.0, tier="shadow"),  # shadow queries do not gate
        row("x", 0.0, error="timeout"),
    ]
    intervals = paired_intervals(current, baseline)
    assert intervals["ndcg"]["n"] == 2
    assert intervals["ndcg"]["low"] == pytest.approx(-0.1) and intervals["ndcg"]["high"] == pytest.approx(
        -0.1
    )
    assert intervals["lt3_rate"]["n"] == 3  # docs/metrics.md keeps expected empties in the <3 rate


def _row(qid: str, ndcg: float | None, **extra: Any) -> dict[str, Any]:
    row = {
        "id": qid,
        "ndcg": ndcg,
        "mrr": ndcg,
        "p_at_k": ndcg,
        "empty": ndcg == 0.0,
        "lt3": ndcg == 0.0,
        "error": None if ndcg is not None else "HTTP 500",
        "tier": "core",
        "expect_empty": False,
    }
    row.update(extra)
    return row


def test_paired_intervals_cover_the_core_queries_both_runs_scored() -> None:
    baseline = [
        _row("q-1", 1.0),
        _row("q-2", 0.5),
        _row("q-3", 0.8),
        _row("q-4", 0.0, expect_empty=True),
        _row("q-5", 0.9, tier="shadow"),
        _row("q-6", 0.7),
    ]
    current = [
        _row("q-1", 0.0),  # -1.0
        _row("q-2", 0.75),  # +0.25
        _row("q-3", None),  # errored now: left out
        _row("q-4", 0.0, expect_empty=True),  # out of the nDCG means, in the <3 rate
        _row("q-5", 0.1, tier="shadow"),  # not core
        _row("q-7", 0.3),  # not in the baseline
    ]
    intervals = paired_intervals(current, baseline)

    assert intervals["ndcg"]["n"] == 2
    assert intervals["ndcg"]["mean"] == pytest.approx((-1.0 + 0.25) / 2)
    assert intervals["ndcg"]["low"] <= intervals["ndcg"]["mean"] <= intervals["ndcg"]["high"]
    assert intervals["empty_rate"]["n"] == 2 and intervals["empty_rate"]["mean"] == pytest.approx(0.5)
    assert intervals["lt3_rate"]["n"] == 3  # q-4 counts in the <3 rate
    assert set(intervals) == {"ndcg", "mrr", "precision_at_k", "empty_rate", "lt3_rate"}


def test_paired_intervals_without_common_queries_are_undefined() -> None:
    intervals = paired_intervals([_row("q-1", 0.5)], [_row("q-2", 0.5)])
    assert intervals["ndcg"]["n"] == 0 and intervals["ndcg"]["low"] is None
