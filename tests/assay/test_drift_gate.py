"""The drift gate: thresholds, scopes, refusals, rebaseline, errors, critical queries, top losers, verdict."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.drift import (
    ArtifactError,
    GateResult,
    compare,
    github_annotations,
    load_budgets,
    render_markdown,
    render_text,
    validate_artifact,
)
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from assay.metric_table import BY_KEY
from assay.report import build_report
from assay.results import QueryResult

DROPS = ("ndcg", "mrr", "precision_at_k")
RISES = ("empty_rate", "lt3_rate")
WITH_LT3 = {"lt3_rate": {"warn": 0.05, "fail": 0.1}}


def q(qid: str, **fields: Any) -> GoldenQuery:
    judged = (Judgment("best", 3), Judgment("good", 2), Judgment("meh", 1))
    return GoldenQuery(id=qid, text=f"text of {qid}", judgments=judged, **fields)


GOLDEN = GoldenFile(
    version="2026-08-01",
    queries=(
        q("b1", stratum="billing"),
        q("b2", stratum="billing"),
        q("d1", stratum="docs"),
        q("d2", stratum="docs"),
        q("s1", stratum="billing", tier="shadow"),
        q("s2", tier="shadow"),
    ),
)
PERFECT = ("best", "good", "meh")


def make_report(
    answers: dict[str, tuple[str, ...]] | None = None, golden: GoldenFile = GOLDEN
) -> dict[str, Any]:
    answers = answers or {}
    results = {g.id: QueryResult(g.id, ids=answers.get(g.id, PERFECT)) for g in golden.queries}
    # Through JSON, as the gate reads artifacts from files.
    return json.loads(json.dumps(build_report(golden, results)))


BASELINE = make_report()


SCOPE_ROWS = 1000  # a rate is a share of booleans: this many queries give it steps of 0.001


def _in_scope(row: dict[str, Any], scope: str) -> bool:
    if scope in ("core", "shadow"):
        return bool(row["tier"] == scope)
    return bool(row["tier"] == "core" and row["stratum"] == scope)


def set_value(report: dict[str, Any], scope: str, metric: str, value: float) -> dict[str, Any]:
    """A copy of `report` whose queries in `scope` (core, shadow, or a stratum name) make `metric`'s mean
    `value`: the gate computes every change from the per-query values. A score is set on every query; a
    rate is a share of booleans, so the scope becomes SCOPE_ROWS copies of its first query (the same ids on
    both sides of a pair) of which floor(value * SCOPE_ROWS) are true."""
    report = copy.deepcopy(report)
    field = BY_KEY[metric].per_query
    rows = [row for row in report["per_query"] if _in_scope(row, scope)]
    if metric in DROPS:
        for row in rows:
            row[field] = value
    else:
        rest = [row for row in report["per_query"] if not _in_scope(row, scope)]
        hits = math.floor(value * SCOPE_ROWS + 1e-9)
        copies = [{**rows[0], "id": f"{scope}-{i}", field: i < hits} for i in range(SCOPE_ROWS)]
        report["per_query"] = copies + rest
    aggregate = report["tiers"][scope] if scope in ("core", "shadow") else report["slices"]["stratum"][scope]
    aggregate[metric]["value"] = value
    return report


def pair(scope: str, metric: str, before: float, after: float) -> tuple[dict[str, Any], dict[str, Any]]:
    return set_value(BASELINE, scope, metric, after), set_value(BASELINE, scope, metric, before)


def worse(metric: str, before: float, by: float) -> float:
    return before - by if metric in DROPS else before + by


@pytest.mark.parametrize(("level", "below"), [("fail", "warn"), ("warn", "pass")])
@pytest.mark.parametrize("metric", DROPS + RISES)
def test_it_trips_each_budget_at_its_threshold_and_not_just_below_it(
    metric: str, level: str, below: str
) -> None:
    budgets = load_budgets(WITH_LT3)
    threshold = getattr(budgets.core[metric], level)
    assert threshold is not None
    result = compare(*pair("core", metric, 0.5, worse(metric, 0.5, threshold)), budgets)
    assert result.verdict == level
    findings = result.failures if level == "fail" else result.warnings
    assert [(f.kind, f.scope, f.metric) for f in findings] == [("budget", "core", metric)]
    assert result.comparison["core"][metric]["status"] == level

    result = compare(*pair("core", metric, 0.5, worse(metric, 0.5, threshold - 1e-9)), budgets)
    assert result.verdict == below  # a fail budget missed by a hair still passes the warn budget
    assert result.failures == []
    assert result.comparison["core"][metric]["status"] == below


def test_it_counts_a_change_that_float_noise_puts_a_hair_below_the_budget_as_reaching_it() -> None:
    before, after = 0.03, 0.005
    assert before - after < 0.025  # 0.024999999999999998 in binary floating point
    current, baseline = pair("core", "ndcg", before, after)
    assert compare(current, baseline, load_budgets(None)).verdict == "fail"


def test_it_does_not_gate_lt3_rate_without_a_budget() -> None:
    current, baseline = pair("core", "lt3_rate", 0.0, 0.9)
    result = compare(current, baseline, load_budgets(None))
    assert result.verdict == "pass"
    assert result.comparison["core"]["lt3_rate"]["status"] == "not gated"
    assert result.comparison["core"]["lt3_rate"]["change"] == pytest.approx(0.9)


def test_it_never_counts_an_improvement_against_a_budget() -> None:
    current, baseline = pair("core", "ndcg", 0.5, 0.9)
    result = compare(current, baseline, load_budgets(None))
    assert result.verdict == "pass"
    assert result.comparison["core"]["ndcg"]["delta"] == pytest.approx(0.4)


@pytest.mark.parametrize(("level", "verdict"), [("warn", "warn"), ("fail", "fail")])
@pytest.mark.parametrize("metric", DROPS + RISES)
def test_it_gates_a_named_stratum_with_its_own_budgets(metric: str, level: str, verdict: str) -> None:
    budgets = load_budgets({"strata": {"billing": {metric: {"warn": 0.002, "fail": 0.004}}}})
    threshold = 0.002 if level == "warn" else 0.004
    current, baseline = pair("billing", metric, 0.5, worse(metric, 0.5, threshold))
    result = compare(current, baseline, budgets)
    assert result.verdict == verdict
    findings = result.failures if level == "fail" else result.warnings
    assert [(f.scope, f.metric) for f in findings] == [("stratum billing", metric)]
    below = compare(*pair("billing", metric, 0.5, worse(metric, 0.5, 0.002 - 1e-9)), budgets)
    assert below.verdict == "pass"


def test_it_does_not_gate_a_stratum_the_budgets_do_not_name_but_shows_it() -> None:
    current, baseline = pair("docs", "ndcg", 0.9, 0.1)
    # The docs queries are core queries too: the core budget is off so that only the strata are in play.
    off = {"warn": None, "fail": None}
    result = compare(current, baseline, load_budgets({"ndcg": off, "strata": {"billing": {}}}))
    assert result.verdict == "pass"
    assert result.comparison["strata"]["docs"]["ndcg"]["status"] == "not gated"
    assert result.comparison["strata"]["docs"]["ndcg"]["delta"] == pytest.approx(-0.8)


def test_it_warns_when_a_budgeted_stratum_is_missing_from_a_report() -> None:
    result = compare(BASELINE, BASELINE, load_budgets({"strata": {"biling": {}}}))
    assert result.verdict == "warn"
    assert [w.message for w in result.warnings] == [
        "stratum biling has budgets but is not in the current and baseline report"
    ]


@pytest.mark.parametrize(("level", "verdict"), [("warn", "warn"), ("fail", "fail")])
def test_it_gates_the_shadow_tier_on_its_empty_rate_rise(level: str, verdict: str) -> None:
    budgets = load_budgets(None)
    threshold = getattr(budgets.shadow_empty_rate, level)
    result = compare(*pair("shadow", "empty_rate", 0.1, 0.1 + threshold), budgets)
    assert result.verdict == verdict
    findings = result.failures if level == "fail" else result.warnings
    assert [(f.scope, f.metric) for f in findings] == [("shadow", "empty_rate")]
    below = compare(*pair("shadow", "empty_rate", 0.1, 0.1 + 0.005 - 1e-9), budgets)
    assert below.verdict == "pass"


def test_it_never_gates_the_shadow_tier_on_ndcg() -> None:
    current = make_report({"s1": ("x", "y", "z"), "s2": ("x", "y", "z")})  # shadow nDCG 1 -> 0
    result = compare(current, BASELINE, load_budgets(None))
    assert current["tiers"]["shadow"]["ndcg"]["value"] == 0.0
    assert result.verdict == "pass"
    assert list(result.comparison["shadow"]) == ["empty_rate"]


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("golden_version", "2026-09-01", "current 2026-09-01, baseline 2026-08-01"),
        ("k", 20, "current 20, baseline 10"),
        ("relevant_min_grade", 3, "current 3, baseline 2"),
        ("scale", {"min": 0, "max": 1}, "current 0..1, baseline 0..3"),
        ("metrics_spec", "2", "current 2, baseline 1"),
    ],
)
def test_it_refuses_to_compare_reports_made_under_different_rules(field: str, value: Any, shown: str) -> None:
    current = set_value(BASELINE, "core", "ndcg", 0.0)  # would trip a budget if compared
    current[field] = value
    result = compare(current, BASELINE, load_budgets(None))
    assert result.verdict == "fail"
    assert [(f.kind, f.message) for f in result.failures] == [
        ("refusal", f"{field} differs: {shown}; refusing to compare (rebaseline to accept)")
    ]
    assert result.comparison == {
        "core": {},
        "core_weighted": {},
        "shadow": {},
        "strata": {},
        "traffic_bands": {},
        "failure_modes": {},
    }
    assert result.top_losers == []

    rebased = compare(current, BASELINE, load_budgets(None), rebaseline=True)
    assert rebased.notes[0] == f"{field} differs: {shown} (rebaseline)"
    assert rebased.failures == []
    assert rebased.verdict == "warn"  # the nDCG drop is reported, as a warning: the new floor is accepted
    assert rebased.warnings[0].message.endswith("accepted by rebaseline")


def test_it_still_fails_a_rebaseline_on_errors_and_critical_queries() -> None:
    golden = GoldenFile(version="v", queries=(q("a", critical=True), q("b")))
    baseline = make_report(golden=golden)
    current = json.loads(
        json.dumps(
            build_report(
                golden,
                {"a": QueryResult("a", ("x", "y", "z", "best")), "b": QueryResult("b", error="timeout")},
            )
        )
    )
    result = compare(current, baseline, load_budgets(None), rebaseline=True)
    assert result.verdict == "fail"
    assert sorted(f.kind for f in result.failures) == ["critical", "errors"]


def test_it_fails_closed_on_errors_over_every_tier() -> None:
    golden = GoldenFile(version="v", queries=(q("a"), q("b"), q("c"), q("sh", tier="shadow")))
    baseline = make_report(golden=golden)
    answers = {g.id: QueryResult(g.id, PERFECT) for g in golden.queries}
    answers["sh"] = QueryResult("sh", error="HTTP 500")
    current = json.loads(json.dumps(build_report(golden, answers)))
    assert current["error_rate"] == 0.0  # the core tier had no error...
    result = compare(current, baseline, load_budgets(None))
    assert result.verdict == "fail"  # ...but the run did
    assert result.failures[0].kind == "errors"
    assert (
        result.failures[0].message
    ) == "current error rate 0.2500 over all 4 queries (every tier) is above max_error_rate 0.0; failed: sh"
    at_limit = compare(current, baseline, load_budgets({"max_error_rate": 0.25}))
    assert at_limit.verdict == "warn"  # within the budget, still named
    assert [w.message for w in at_limit.warnings] == [
        "current error rate 0.2500 over all 4 queries (every tier) is within max_error_rate 0.25; failed: sh"
    ]
    assert compare(current, baseline, load_budgets({"max_error_rate": 0.2})).verdict == "fail"


def test_it_fails_a_critical_query_out_of_its_top_ranks_whatever_the_means_say() -> None:
    golden = GoldenFile(version="v", queries=(q("nav", critical=True), *(q(f"o{i}") for i in range(50))))
    baseline = make_report(golden=golden)
    current = make_report({"nav": ("good", "meh", "x", "best")}, golden=golden)
    result = compare(current, baseline, load_budgets(None))
    assert result.comparison["core"]["ndcg"]["status"] == "pass"  # one query in 51 barely moves the mean
    assert result.verdict == "fail"
    assert [f.message for f in result.failures] == [
        "critical query nav: best document (best, grade 3) at rank 4, must be within the top 3"
    ]
    assert compare(current, baseline, load_budgets({"critical_rank": 4})).verdict == "pass"
    gone = make_report({"nav": ("x",)}, golden=golden)
    assert "not returned" in compare(gone, baseline, load_budgets(None)).failures[0].message


def test_it_lists_top_losers_by_drop_with_the_rank_changes_of_their_graded_documents() -> None:
    current = make_report(
        {
            "b1": ("x", "y", "z", "meh", "good", "best"),  # big drop
            "d1": ("good", "best", "meh"),  # small drop
            "d2": ("good", "best", "meh"),  # the same drop as d1: ordered by id
            "s1": ("best", "meh", "good"),  # shadow queries are losers too
        }
    )
    result = compare(current, BASELINE, load_budgets(None), top_n=3)
    assert [loser["id"] for loser in result.top_losers] == ["b1", "d1", "d2"]
    first = result.top_losers[0]
    assert (first["text"], first["stratum"], first["tier"], first["baseline_ndcg"]) == (
        "text of b1",
        "billing",
        "core",
        1.0,
    )
    assert first["drop"] == pytest.approx(1.0 - first["current_ndcg"])
    assert first["documents"] == [
        {"doc_id": "best", "grade": 3, "baseline_rank": 1, "current_rank": 6},
        {"doc_id": "good", "grade": 2, "baseline_rank": 2, "current_rank": 5},
        {"doc_id": "meh", "grade": 1, "baseline_rank": 3, "current_rank": 4},
    ]
    everyone = compare(current, BASELINE, load_budgets(None), top_n=10)
    assert [loser["id"] for loser in everyone.top_losers] == ["b1", "d1", "d2", "s1"]  # drops > 0 only


def test_it_leaves_out_of_top_losers_queries_not_scored_in_both_runs() -> None:
    golden = GoldenFile(version="v", queries=(q("a"), q("b")))
    baseline = make_report(golden=golden)
    current = json.loads(
        json.dumps(build_report(golden, {"a": QueryResult("a", error="boom"), "b": QueryResult("b", ("x",))}))
    )
    del baseline["per_query"][1]  # b unknown to the baseline
    result = compare(current, baseline, load_budgets({"max_error_rate": 1}))
    assert result.top_losers == []


def test_it_gives_the_paired_interval_of_the_ndcg_change_over_common_core_queries() -> None:
    current = make_report({"b1": ("x", "best"), "s1": ("x",)})
    result = compare(current, BASELINE, load_budgets(None))
    interval = result.delta_interval
    assert interval is not None
    assert interval["n"] == 4  # b1, b2, d1, d2: the shadow query is not in it
    b1_now = next(r["ndcg"] for r in current["per_query"] if r["id"] == "b1")
    assert interval["mean"] == pytest.approx((b1_now - 1.0) / 4)
    assert interval["low"] <= interval["mean"] <= interval["high"] <= 0.0


def test_its_verdict_is_fail_over_warn_over_pass_with_matching_exit_codes() -> None:
    budgets = load_budgets(None)
    passing = compare(BASELINE, BASELINE, budgets)
    warning = compare(*pair("core", "ndcg", 0.5, 0.485), budgets)
    current = set_value(set_value(BASELINE, "core", "ndcg", 0.485), "core", "mrr", 0.0)
    failing = compare(current, set_value(BASELINE, "core", "ndcg", 0.5), budgets)
    assert (passing.verdict, passing.exit_code) == ("pass", 0)
    assert (warning.verdict, warning.exit_code) == ("warn", 0)
    assert (failing.verdict, failing.exit_code) == ("fail", 1)
    assert len(failing.warnings) == 1 and len(failing.failures) == 1


def test_it_serialises_the_whole_result() -> None:
    result = compare(make_report({"b1": ("x",)}), BASELINE, load_budgets(None))
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["verdict"] == "fail"
    assert data["exit_code"] == 1
    assert data["current"] == {
        "metrics_spec": "1",
        "golden_version": "2026-08-01",
        "k": 10,
        "relevant_min_grade": 2,
        "scale": {"min": 0, "max": 3},
    }
    assert data["budgets"]["ndcg"] == {"warn": 0.01, "fail": 0.025}
    assert data["top_losers"][0]["id"] == "b1"
    assert {"kind", "scope", "metric", "message"} == set(data["failures"][0])
    assert isinstance(result, GateResult)


def test_it_refuses_files_that_are_not_reports_naming_each_problem() -> None:
    broken = copy.deepcopy(BASELINE)
    del broken["golden_version"]
    broken["k"] = "10"
    broken["tiers"]["core"]["ndcg"]["value"] = "high"
    broken["per_query"][0]["ndcg"] = None
    broken["per_query"][1] = ["not", "a", "row"]
    broken["per_query"][2]["grades"] = {"best": "high"}
    broken["per_query"][2]["ranks"] = {"best": 1.5}
    broken["flags"] = {"errors": "none"}
    with pytest.raises(ArtifactError) as caught:
        compare(broken, {"ndcg": 0.7}, load_budgets(None))
    found = caught.value.problems
    assert "current: golden_version: missing" in found
    assert "current: k: expected an integer, got '10'" in found
    assert "current: tiers.core.ndcg.value: expected a number or null, got 'high'" in found
    assert "current: per_query[1]: expected an object with a string id" in found
    assert "current: per_query[2].grades.best: expected an integer, got 'high'" in found
    assert "current: per_query[2].ranks.best: expected an integer or null, got 1.5" in found
    assert "current: flags.errors: expected a list, got 'none'" in found
    assert "baseline: metrics_spec: missing" in found
    assert not any("per_query[0]" in p for p in found)  # a null nDCG (errored query) is fine


@pytest.mark.parametrize("value", [None, [], "report", 3])
def test_it_refuses_a_document_that_is_not_an_object(value: Any) -> None:
    with pytest.raises(ArtifactError, match="current: expected a report object"):
        validate_artifact(value, "current")


def test_it_accepts_every_report_the_report_builder_writes() -> None:
    golden = GoldenFile(
        version="v",
        queries=(q("a", expect_empty=True), q("b", critical=True, locale="de-DE", filters={"p": 1})),
        scale=Scale(0, 3),
    )
    validate_artifact(make_report(golden=golden), "current")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


CRITICAL_REPORT = make_report(golden=GoldenFile(version="v", queries=(q("a", critical=True), q("b"))))
JUNK = [None, "x", 1.5, -1, True, [], {}, ["x"], {"value": "x"}, float("nan")]


@settings(max_examples=300, deadline=None)
@given(
    path=st.sampled_from(_paths(CRITICAL_REPORT)),
    junk=st.sampled_from(JUNK),
    delete=st.booleans(),
    side=st.sampled_from(["current", "baseline"]),
)
def test_it_turns_any_damage_to_a_report_into_an_artifact_error_or_a_result(
    path: tuple[Any, ...], junk: Any, delete: bool, side: str
) -> None:
    damaged = copy.deepcopy(CRITICAL_REPORT)
    parent = damaged
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = junk
    current, baseline = (damaged, CRITICAL_REPORT) if side == "current" else (CRITICAL_REPORT, damaged)
    try:
        result = compare(current, baseline, load_budgets(None))
    except ArtifactError as error:
        assert error.problems and all(p.startswith(f"{side}: ") for p in error.problems)
        return
    render_text(result)
    render_markdown(result)
    github_annotations(result)
    json.dumps(result.to_dict())
