from __future__ import annotations

import pytest


def test_paired_intervals_count_queries_as_the_means_do() -> None:
    from assay.drift import paired_intervals

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
    assert intervals["lt3_rate"]["n"] == 3  # METRICS.md keeps expected empties in the <3 rate
