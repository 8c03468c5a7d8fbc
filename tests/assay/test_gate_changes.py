"""The gate's changes are the pairs' (assay.changes): errors on either side fail closed and are named, the
interval holds the point change, weighted means and slices by band and failure mode are budgetable, and an
expected-empty hit is a finding (docs/metrics.md, "Changes" and "The drift gate")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.drift import compare, github_annotations, load_budgets, render_markdown, render_text
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.results import QueryResult

JUDGED = (Judgment("best", 3), Judgment("good", 2), Judgment("meh", 1))
PERFECT = ("best", "good", "meh")


def q(qid: str, **fields: Any) -> GoldenQuery:
    return GoldenQuery(id=qid, text=f"text of {qid}", judgments=JUDGED, **fields)


def report(golden: GoldenFile, answers: dict[str, QueryResult | tuple[str, ...]]) -> dict[str, Any]:
    results = {}
    for query in golden.queries:
        answer = answers.get(query.id, PERFECT)
        results[query.id] = answer if isinstance(answer, QueryResult) else QueryResult(query.id, answer)
    return json.loads(json.dumps(build_report(golden, results)))


GOLDEN = GoldenFile(version="v1", queries=tuple(q(f"q-{i:02d}") for i in range(79)))


def test_a_query_that_errored_in_the_baseline_is_left_out_named_and_fails_closed() -> None:
    # What was seen: the baseline errored on q-00, the candidate answered it badly; the change came from
    # each run's own aggregate (-0.0046) and the interval from the pairs ([+0, +0]), and the gate passed.
    baseline = report(GOLDEN, {"q-00": QueryResult("q-00", error="HTTP 502")})
    current = report(GOLDEN, {"q-00": ("x", "y", "z")})
    result = compare(current, baseline, load_budgets(None))

    ndcg = result.comparison["core"]["ndcg"]
    assert ndcg["n"] == 78
    assert ndcg["baseline"] == ndcg["current"] == 1.0 and ndcg["delta"] == 0.0
    interval = result.delta_interval
    assert interval is not None
    assert interval["low"] <= interval["mean"] <= interval["high"]
    assert interval["mean"] == ndcg["delta"] and interval["n"] == ndcg["n"]
    assert result.left_out["errored_baseline"] == ["q-00"]
    assert result.verdict == "fail"  # the baseline's error is over max_error_rate 0
    (failure,) = result.failures
    assert failure.kind == "errors" and failure.scope == "baseline"
    assert "baseline error rate 0.0127 over all 79 queries" in failure.message and "q-00" in failure.message
    text = render_text(result)
    assert "Left out of every core change: 1 errored in the baseline (q-00)" in text
    assert "nDCG@k           1.0000 -> 1.0000 (+0.0000) [+0.0000, +0.0000] p=1.000 n=78" in text

    within = compare(current, baseline, load_budgets({"max_error_rate": 0.05}))
    assert within.verdict == "warn"
    assert [w.scope for w in within.warnings] == ["baseline"]


def test_every_change_and_its_interval_come_from_the_same_pairs() -> None:
    # q-00 errored in the current run and q-01 in the baseline; q-02 dropped: the change is q-02's over 77.
    baseline = report(GOLDEN, {"q-01": QueryResult("q-01", error="timeout")})
    current = report(GOLDEN, {"q-00": QueryResult("q-00", error="timeout"), "q-02": ("x", "best")})
    result = compare(current, baseline, load_budgets({"max_error_rate": 0.05}))
    for metric, row in result.comparison["core"].items():
        assert row["current"] - row["baseline"] == pytest.approx(row["delta"], abs=1e-12), metric
        if row["interval"] is not None:
            assert row["interval"]["low"] - 1e-12 <= row["delta"] <= row["interval"]["high"] + 1e-12, metric
    ndcg = result.comparison["core"]["ndcg"]
    q02 = next(r["ndcg"] for r in current["per_query"] if r["id"] == "q-02")
    assert ndcg["n"] == 77 and ndcg["delta"] == pytest.approx((q02 - 1.0) / 77)
    assert result.left_out["errored_baseline"] == ["q-01"] and result.left_out["errored_current"] == ["q-00"]
    assert result.comparison["core"]["error_rate"]["n"] == 79


def test_new_and_retired_queries_are_listed_and_not_compared() -> None:
    old = GoldenFile(version="v", queries=(q("a"), q("b"), q("gone")))
    new = GoldenFile(version="v", queries=(q("a"), q("b"), q("fresh")))
    result = compare(report(new, {"fresh": ("x",)}), report(old, {}), load_budgets(None))
    assert result.left_out["new"] == ["fresh"] and result.left_out["retired"] == ["gone"]
    assert result.comparison["core"]["ndcg"]["n"] == 2
    assert result.verdict == "pass"


def test_weighted_means_are_shown_beside_the_macro_ones_and_budgetable() -> None:
    golden = GoldenFile(
        version="v", queries=(q("head", weight=98.0), *(q(f"t{i}", weight=1.0) for i in range(2)))
    )
    baseline = report(golden, {})
    current = report(golden, {"head": ("x", "y", "z", "best")})  # the popular query drops
    off = {metric: {"warn": None, "fail": None} for metric in ("ndcg", "mrr", "precision_at_k")}
    plain = compare(current, baseline, load_budgets(off))
    macro, weighted = plain.comparison["core"]["ndcg"], plain.comparison["core_weighted"]["ndcg"]
    assert macro["change"] < 0.5 < weighted["change"]
    assert plain.verdict == "pass"  # the weighted means are not gated by default
    assert weighted["status"] == "not gated"
    gated = compare(current, baseline, load_budgets({**off, "weighted": {"ndcg": {"fail": 0.5}}}))
    assert gated.verdict == "fail"
    assert [f.message.split(" (baseline")[0] for f in gated.failures] == [
        f"core nDCG@k (weighted) drop {weighted['change']:.4f} >= fail budget 0.5"
    ]
    assert "| nDCG@k (weighted) | 3 |" in render_markdown(gated)
    assert "| weighted 1.0000 ->" in render_text(gated)


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [
        ("strata", "stratum", "billing"),
        ("traffic_bands", "traffic_band", "head"),
        ("failure_modes", "failure_mode", "typo"),
    ],
)
def test_each_kind_of_slice_is_gated_by_its_own_budgets(key: str, field: str, value: str) -> None:
    golden = GoldenFile(
        version="v",
        queries=(
            q("a", **{field: value}),
            q("b", **{field: value}),
            *(q(f"o{i}", **{field: "other" if field != "traffic_band" else "tail"}) for i in range(80)),
        ),
    )
    baseline, current = report(golden, {}), report(golden, {"a": ("x", "best")})
    budgets = load_budgets({key: {value: {"ndcg": {"fail": 0.1}}}})
    result = compare(current, baseline, budgets)
    assert result.comparison["core"]["ndcg"]["status"] == "pass"  # 1 query in 82 barely moves the core
    assert result.verdict == "fail"
    # The slice's own budgets (nDCG) and those it inherits from the core (MRR, P@k) trip; nothing else.
    assert {f.scope for f in result.failures} == {f"{field.replace('_', ' ')} {value}"}
    assert "ndcg" in {f.metric for f in result.failures}
    row = result.comparison[key][value]["ndcg"]
    assert row["n"] == 2 and row["interval"] is not None and row["p_value"] is not None
    # An unbudgeted slice shows its change without an interval.
    other = next(name for name in result.comparison[key] if name != value)
    assert result.comparison[key][other]["ndcg"]["interval"] is None


def test_budgets_name_weighted_and_slice_budgets_and_refuse_unknown_keys() -> None:
    budgets = load_budgets(
        {"weighted": {"mrr": {"warn": 0.02}}, "traffic_bands": {"tail": {"ndcg": {"fail": 0.05}}}}
    )
    assert budgets.weighted["mrr"].warn == 0.02 and budgets.weighted["ndcg"].fail is None
    assert budgets.traffic_bands["tail"]["ndcg"].fail == 0.05
    assert budgets.traffic_bands["tail"]["mrr"] == budgets.core["mrr"]
    assert load_budgets(budgets.to_dict()) == budgets
    with pytest.raises(ValueError, match=r"weighted\.ndgc: unknown key"):
        load_budgets({"weighted": {"ndgc": {"fail": 0.1}}})
    with pytest.raises(ValueError, match=r"traffic_band: unknown key \(did you mean 'traffic_bands'"):
        load_budgets({"traffic_band": {}})


def test_an_expected_empty_query_that_returns_results_is_a_finding() -> None:
    golden = GoldenFile(
        version="v",
        queries=(q("a"), q("nothing", expect_empty=True), q("never", expect_empty=True, critical=True)),
    )
    quiet = report(golden, {"nothing": (), "never": ()})
    loud = report(golden, {"nothing": ("best",), "never": ()})
    warned = compare(loud, quiet, load_budgets(None))
    assert warned.verdict == "warn"
    assert [(w.kind, w.scope) for w in warned.warnings] == [("unexpected_hit", "query nothing")]
    assert warned.warnings[0].message == "expected-empty query nothing returned 1 result: best"
    assert "WARN  expected-empty query nothing returned 1 result" in render_text(warned)
    assert any(
        line.startswith("::warning title=Relevance gate — query nothing")
        for line in github_annotations(warned)
    )
    assert ":warning: expected-empty query nothing" in render_markdown(warned)

    critical = compare(report(golden, {"nothing": (), "never": ("meh", "good")}), quiet, load_budgets(None))
    assert critical.verdict == "fail"
    assert [f.kind for f in critical.failures] == ["unexpected_hit"]
    assert "and is critical" in critical.failures[0].message
