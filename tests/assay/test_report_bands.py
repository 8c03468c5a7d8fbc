"""A query's vertical (stratum), traffic band and failure mode in the report: per-query values and the
core tier's slices (docs/metrics.md, "Slices"); and a per-vertical budget on a set sampled from a query
log, whose strata are verticals and whose bands are apart."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from assay.budgets import load_budgets
from assay.gate import compare
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.results import QueryResult

# As a query-log import leaves a set: every query has a band, the verticals the log gave, failure modes
# for its known failures (docs/labeling.md, "Query logs").
FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("q-1", {"stratum": "billing", "traffic_band": "head"}),
    ("q-2", {"stratum": "billing", "traffic_band": "tail", "failure_mode": "zero-results"}),
    ("q-3", {"stratum": "account", "traffic_band": "head"}),
    ("q-4", {"stratum": "developer", "traffic_band": "torso", "failure_mode": "typo"}),
    ("q-5", {"traffic_band": "tail"}),  # the log gave no vertical: in no stratum
    ("q-6", {"stratum": "account"}),  # from a golden file, not in the log: in no band
    ("q-7", {"stratum": "billing", "traffic_band": "head", "failure_mode": "typo", "tier": "shadow"}),
]
LOG_SOURCED = GoldenFile(
    version="2026-08-01",
    queries=tuple(
        GoldenQuery(qid, f"text of {qid}", (Judgment(f"{qid}-a", 3), Judgment(f"{qid}-b", 1)), **fields)
        for qid, fields in FIELDS
    ),
)
BILLING = {"q-1", "q-2", "q-7"}


def _answers(golden: GoldenFile, *, broken: Collection[str] = ()) -> dict[str, QueryResult]:
    """The best document first, or, for a `broken` query, only the lesser one."""
    return {
        q.id: QueryResult(q.id, ids=(f"{q.id}-b",) if q.id in broken else (f"{q.id}-a", f"{q.id}-b"))
        for q in golden.queries
    }


def _report(golden: GoldenFile = LOG_SOURCED, **answers: Any) -> dict[str, Any]:
    return build_report(golden, _answers(golden, **answers))


def test_each_per_query_row_carries_the_band_and_the_failure_mode() -> None:
    rows = {row["id"]: row for row in _report()["per_query"]}

    assert (rows["q-2"]["stratum"], rows["q-2"]["traffic_band"], rows["q-2"]["failure_mode"]) == (
        "billing",
        "tail",
        "zero-results",
    )
    assert (rows["q-6"]["traffic_band"], rows["q-6"]["failure_mode"]) == (None, None)


def test_the_band_and_failure_mode_slices_are_core_tier_slices_like_the_strata() -> None:
    report = _report(broken={"q-2"})
    slices = report["slices"]

    assert list(slices["stratum"]) == ["account", "billing", "developer"]
    assert {name: s["n_queries"] for name, s in slices["traffic_band"].items()} == {
        "head": 2,
        "tail": 2,
        "torso": 1,
    }
    assert {name: s["n_queries"] for name, s in slices["failure_mode"].items()} == {
        "typo": 1,
        "zero-results": 1,
    }
    assert slices["traffic_band"]["tail"]["ndcg"]["n"] == 2  # q-2 and q-5; shadow q-7 is in no slice
    # Exactly the stratum's computation: the same queries with the band (or failure mode) as their
    # stratum give the same aggregates under "stratum".
    for field in ("traffic_band", "failure_mode"):
        relabelled = replace(
            LOG_SOURCED, queries=tuple(replace(q, stratum=getattr(q, field)) for q in LOG_SOURCED.queries)
        )
        assert _report(relabelled, broken={"q-2"})["slices"]["stratum"] == slices[field]


def test_a_per_vertical_budget_trips_on_a_log_sourced_set() -> None:
    budgets = load_budgets({"strata": {"billing": {"ndcg": {"fail": 0.01}}}})
    baseline = _report()
    current = _report(broken=BILLING)

    gate = compare(current, baseline, budgets)

    assert gate.verdict == "fail"
    assert ("stratum billing", "ndcg") in {(f.scope, f.metric) for f in gate.failures}
    assert set(gate.comparison["strata"]) == {"account", "billing", "developer"}  # verticals, no band
    assert gate.comparison["strata"]["billing"]["ndcg"]["status"] == "fail"
    assert gate.comparison["strata"]["account"]["ndcg"]["status"] != "fail"


def test_with_the_band_in_the_stratum_the_vertical_budget_finds_nothing_to_gate() -> None:
    """What a log-sourced set was before the band had its own field: the vertical's budget only warns
    that its stratum is missing, and the drop goes ungated by it."""
    banded = replace(
        LOG_SOURCED, queries=tuple(replace(q, stratum=q.traffic_band) for q in LOG_SOURCED.queries)
    )
    budgets = load_budgets({"strata": {"billing": {"ndcg": {"fail": 0.01}}}})

    gate = compare(_report(banded, broken=BILLING), _report(banded), budgets)

    assert "stratum billing" not in {f.scope for f in gate.failures}
    assert ("coverage", "stratum billing") in {(w.kind, w.scope) for w in gate.warnings}
