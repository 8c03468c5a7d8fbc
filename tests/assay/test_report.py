"""The report artifact: who counts where (docs/metrics.md), flags, critical queries, intervals."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from assay.report import _alike, _title_similarity, bootstrap_interval, build_report, near_duplicate_groups
from assay.results import QueryResult

LOG2_3 = math.log2(3)


def q(qid: str, *judged: tuple[str, int], **fields: Any) -> GoldenQuery:
    return GoldenQuery(
        id=qid, text=f"text of {qid}", judgments=tuple(Judgment(d, g) for d, g in judged), **fields
    )


def golden(*queries: GoldenQuery, k: int = 10) -> GoldenFile:
    return GoldenFile(version="2026-08-01", queries=queries, k=k)


def hits(qid: str, *ids: str) -> QueryResult:
    return QueryResult(query_id=qid, ids=ids)


def failed(qid: str) -> QueryResult:
    return QueryResult(query_id=qid, error="HTTP 503 after 3 attempts")


def results(*items: QueryResult) -> dict[str, QueryResult]:
    return {r.query_id: r for r in items}


def row(report: dict[str, Any], qid: str) -> dict[str, Any]:
    return next(r for r in report["per_query"] if r["id"] == qid)


def test_it_keeps_the_seed_fields_and_the_rules_it_was_computed_under() -> None:
    g = GoldenFile(version="v7", queries=(q("a", ("d1", 1)),), k=5, relevant_min_grade=1, scale=Scale(0, 1))
    report = build_report(g, results(hits("a", "d1")), run={"model_id": "m-2", "params": {"rewrite": True}})
    assert report["metrics_spec"] == "1"
    assert (report["golden_version"], report["k"], report["relevant_min_grade"]) == ("v7", 5, 1)
    assert report["scale"] == {"min": 0, "max": 1}
    assert (report["n"], report["ndcg"], report["mrr"], report["precision_at_k"], report["empty_rate"]) == (
        1,
        1.0,
        1.0,
        0.2,
        0.0,
    )
    assert report["run"] == {"model_id": "m-2", "params": {"rewrite": True}}
    assert row(report, "a")["p_at_k"] == 0.2


def test_it_leaves_errored_queries_out_of_every_mean_but_counts_them_in_error_rate() -> None:
    g = golden(q("a", ("d1", 3)), q("b", ("d1", 3)), q("c", ("d1", 3)), q("d", ("d1", 3)))
    report = build_report(g, results(hits("a", "d1"), hits("b"), failed("c"), failed("d")))
    core = report["tiers"]["core"]
    assert core["ndcg"] == {"value": 0.5, "n": 2}  # a = 1, b = 0; c and d left out
    assert core["empty_rate"] == {"value": 0.5, "n": 2}  # an errored query is never empty
    assert core["lt3_rate"] == {"value": 1.0, "n": 2}
    assert core["error_rate"] == {"value": 0.5, "n": 4}  # over every query of the group
    assert core["judged_at_k"] == {"value": 1.0, "n": 1}  # b returned nothing: no judged share
    assert report["error_rate"] == 0.5
    assert report["flags"]["errors"] == [
        {"id": "c", "error": "HTTP 503 after 3 attempts"},
        {"id": "d", "error": "HTTP 503 after 3 attempts"},
    ]
    c = row(report, "c")
    assert (c["ndcg"], c["mrr"], c["p_at_k"], c["judged_at_k"]) == (None, None, None, None)
    assert (c["empty"], c["lt3"], c["error"]) == (False, False, "HTTP 503 after 3 attempts")


def test_it_treats_a_golden_query_missing_from_the_results_as_returning_nothing() -> None:
    report = build_report(golden(q("a", ("d1", 3)), q("b", ("d1", 3))), results(hits("a", "d1")))
    b = row(report, "b")
    assert (b["n"], b["empty"], b["lt3"], b["ndcg"], b["error"], b["judged_at_k"]) == (
        0,
        True,
        True,
        0.0,
        None,
        None,
    )
    assert report["empty_rate"] == 0.5
    assert report["error_rate"] == 0.0


def test_it_leaves_expect_empty_queries_out_of_ranking_means_and_empty_rate_but_not_lt3() -> None:
    g = golden(
        q("a", ("d1", 3)),
        q("b", ("d1", 3)),
        q("quiet", expect_empty=True),
        q("noisy", expect_empty=True),
    )
    report = build_report(g, results(hits("a", "d1", "x", "y"), hits("b"), hits("noisy", "z")))
    core = report["tiers"]["core"]
    assert core["ndcg"] == {"value": 0.5, "n": 2}
    assert core["mrr"]["n"] == core["precision_at_k"]["n"] == 2
    assert core["empty_rate"] == {"value": 0.5, "n": 2}  # a and b only
    # docs/metrics.md does not exclude expect_empty from lt3_rate: b, quiet and noisy have < 3 results.
    assert core["lt3_rate"] == {"value": 0.75, "n": 4}
    assert core["judged_at_k"] == {"value": pytest.approx((1 / 3 + 0.0) / 2), "n": 2}
    assert report["flags"]["unexpected_hits"] == ["noisy"]
    assert report["flags"]["no_positive_judgments"] == []  # expected empties are meant to have none


def test_it_flags_queries_without_positive_judgments_and_still_counts_their_zeros() -> None:
    g = golden(q("a", ("d1", 3)), q("zero", ("d1", 0)), q("none"))
    report = build_report(g, results(hits("a", "d1"), hits("zero", "d1"), hits("none", "d2")))
    assert report["flags"]["no_positive_judgments"] == ["zero", "none"]
    assert report["tiers"]["core"]["ndcg"] == {"value": pytest.approx(1 / 3), "n": 3}


def test_it_publishes_traffic_weighted_means_beside_the_unweighted_ones() -> None:
    g = golden(
        q("head", ("d1", 3), weight=3.0), q("tail", ("d1", 3), weight=1.0), q("err", ("d1", 3), weight=50.0)
    )
    report = build_report(g, results(hits("head", "d1"), hits("tail", "x", "d1", "y"), failed("err")))
    core = report["tiers"]["core"]
    tail_ndcg = 1 / LOG2_3
    assert core["ndcg"]["value"] == pytest.approx((1 + tail_ndcg) / 2)
    assert core["weighted"]["ndcg"] == {"value": pytest.approx((3 * 1 + 1 * tail_ndcg) / 4), "n": 2}
    assert core["weighted"]["mrr"]["value"] == pytest.approx((3 * 1 + 0.5) / 4)
    assert core["weighted"]["lt3_rate"]["value"] == pytest.approx(3 / 4)  # head has 1 result, tail 3
    assert set(core["weighted"]) == {"ndcg", "mrr", "precision_at_k", "empty_rate", "lt3_rate"}


def test_it_aggregates_each_present_tier_and_all_queries() -> None:
    g = golden(q("c1", ("d", 3)), q("s1", ("d", 3), tier="shadow"), q("s2", ("d", 3), tier="shadow"))
    report = build_report(g, results(hits("c1", "d"), hits("s1")))
    assert set(report["tiers"]) == {"core", "shadow"}
    assert report["tiers"]["shadow"]["empty_rate"] == {"value": 1.0, "n": 2}
    assert report["tiers"]["shadow"]["n_queries"] == 2
    assert report["all"]["ndcg"] == {"value": pytest.approx(1 / 3), "n": 3}
    assert (report["n"], report["ndcg"], report["empty_rate"]) == (1, 1.0, 0.0)  # seed fields: core only


def test_it_reports_null_never_nan_when_a_mean_has_no_query() -> None:
    report = build_report(golden(q("s", ("d", 3), tier="challenge")), results(failed("s")))
    assert (report["n"], report["ndcg"], report["judged_at_k"], report["error_rate"]) == (0, None, None, None)
    assert report["tiers"]["challenge"]["ndcg"] == {"value": None, "n": 0}
    assert report["ci"]["ndcg"]["low"] is None
    json.dumps(report, allow_nan=False)  # raises on NaN or infinity


def test_it_slices_the_core_tier_by_stratum_locale_and_filters() -> None:
    g = golden(
        q("b1", ("d", 3), stratum="billing", locale="en-US", filters={"product": "billing"}),
        q("b2", ("d", 3), stratum="billing", locale="de-DE"),
        q("d1", ("d", 3), stratum="docs", locale="en-US"),
        q("plain", ("d", 3)),
        q("b-shadow", ("d", 3), stratum="billing", tier="shadow", filters={"product": "billing"}),
    )
    report = build_report(g, results(hits("b1", "d"), hits("b2"), hits("d1", "d"), hits("plain", "d")))
    slices = report["slices"]
    assert list(slices["stratum"]) == ["billing", "docs"]
    assert slices["stratum"]["billing"]["n_queries"] == 2  # the shadow billing query is not in the slice
    assert slices["stratum"]["billing"]["ndcg"]["value"] == 0.5
    assert slices["stratum"]["billing"]["empty_rate"]["value"] == 0.5
    assert list(slices["locale"]) == ["de-DE", "en-US"]
    assert slices["locale"]["en-US"]["ndcg"] == {"value": 1.0, "n": 2}
    assert slices["filters"]["with_filters"]["n_queries"] == 1
    assert slices["filters"]["without_filters"]["n_queries"] == 3
    assert slices["filters"]["without_filters"]["empty_rate"]["value"] == pytest.approx(1 / 3)


def test_it_checks_critical_queries_against_their_best_graded_documents() -> None:
    g = golden(
        q("top", ("best", 3), ("ok", 2), critical=True),
        q("tied", ("x", 3), ("y", 3), critical=True),
        q("buried", ("best", 3), critical=True),
        q("missing", ("best", 3), critical=True),
        q("broken", ("best", 3), critical=True),
        q("ordinary", ("best", 3)),
    )
    report = build_report(
        g,
        results(
            hits("top", "ok", "best"),
            hits("tied", "a", "b", "c", "y", "x"),
            hits("buried", "a", "b", "c", "best"),
            hits("missing", "a"),
            failed("broken"),
        ),
    )
    entries = {c["id"]: c for c in report["critical"]}
    assert list(entries) == ["top", "tied", "buried", "missing", "broken"]
    assert entries["top"] == {
        "id": "top",
        "best_grade": 3,
        "best_docs": ["best"],
        "rank": 2,
        "critical_rank": 3,
        "ok": True,
    }
    assert (entries["tied"]["best_docs"], entries["tied"]["rank"], entries["tied"]["ok"]) == (
        ["x", "y"],
        4,
        False,
    )
    assert (entries["buried"]["rank"], entries["buried"]["ok"]) == (4, False)
    assert (entries["missing"]["rank"], entries["missing"]["ok"]) == (None, False)
    assert (entries["broken"]["rank"], entries["broken"]["ok"]) == (None, False)
    wider = build_report(g, results(hits("buried", "a", "b", "c", "best")), critical_rank=4)
    assert next(c for c in wider["critical"] if c["id"] == "buried")["ok"] is True


def test_it_lists_run_queries_the_golden_file_lacks_without_scoring_them() -> None:
    g = golden(q("a", ("d", 3)))
    report = build_report(
        g, results(hits("a", "d"), hits("stray", "d")), extra_queries=["q-9", "stray", "q-9"]
    )
    assert report["flags"]["unknown_queries"] == ["q-9", "stray"]
    assert [r["id"] for r in report["per_query"]] == ["a"]
    assert report["all"]["n_queries"] == 1


def test_it_records_per_query_ids_ranks_grades_and_metadata() -> None:
    g = golden(
        q(
            "a",
            ("d1", 3),
            ("d2", 1),
            ("d3", 0),
            ("far", 2),
            ("gone", 2),
            stratum="billing",
            locale="en-US",
            filters={"p": "b"},
            weight=2.5,
            critical=True,
        ),
        k=3,
    )
    report = build_report(g, results(hits("a", "d2", "d2", "d1", "x", "far")))
    a = row(report, "a")
    assert a["ids"] == ["d2", "d2", "d1"]  # the top k as returned
    assert a["ranks"] == {
        "d1": 3,
        "d2": 1,
        "far": 5,
        "gone": None,
    }  # graded >= 1, first occurrence, whole list
    assert a["grades"] == {"d1": 3, "d2": 1, "far": 2, "gone": 2}
    assert (a["n"], a["duplicates"], a["lt3"], a["empty"]) == (5, 1, False, False)
    assert a["judged_at_k"] == 1.0
    assert (a["tier"], a["stratum"], a["locale"], a["has_filters"], a["weight"]) == (
        "core",
        "billing",
        "en-US",
        True,
        2.5,
    )
    assert (a["expect_empty"], a["critical"], a["text"]) == (False, True, "text of a")
    assert a["mrr"] == pytest.approx(1 / 3)


def test_it_gives_the_bootstrap_interval_of_mean_core_ndcg_with_a_fixed_seed() -> None:
    g = golden(*(q(f"q{i}", ("d", 3)) for i in range(40)), q("sh", ("d", 3), tier="shadow"))
    # nDCG 1, 1/log2(3), 1/log2(4), ... by where d comes back
    answers = results(*(hits(f"q{i}", *[f"x{j}" for j in range(i % 4)], "d") for i in range(40)))
    report = build_report(g, answers)
    ci = report["ci"]["ndcg"]
    values = np.array([row(report, f"q{i}")["ndcg"] for i in range(40)])
    # The documented procedure: numpy default_rng(seed), 1,000 resamples of the queries, 2.5/97.5 percentiles
    # (the same draws, whose means differ from these only in floating-point summation order).
    draws = np.random.default_rng(ci["seed"]).integers(0, 40, size=(1000, 40))
    low, high = np.percentile(values[draws].mean(axis=1), [2.5, 97.5])
    assert (ci["low"], ci["high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert (ci["level"], ci["resamples"], ci["n"]) == (0.95, 1000, 40)
    assert ci["low"] < report["ndcg"] < ci["high"]
    assert build_report(g, answers)["ci"] == report["ci"]


def test_it_gives_a_degenerate_interval_for_identical_values_and_none_for_no_values() -> None:
    assert bootstrap_interval([0.25] * 7)["low"] == bootstrap_interval([0.25] * 7)["high"] == 0.25
    empty = bootstrap_interval([])
    assert (empty["low"], empty["high"], empty["mean"], empty["n"]) == (None, None, None, 0)


def test_it_draws_large_samples_in_batches_reproducibly() -> None:
    values = np.random.default_rng(1).random(50_000)
    first, second = bootstrap_interval(values), bootstrap_interval(values)
    assert first == second
    assert first["low"] < values.mean() < first["high"]
    assert first["high"] - first["low"] < 0.01  # se of the mean is ~0.0013 here


def test_it_lists_near_duplicate_titles_in_the_top_k_for_review() -> None:
    gold = golden(GoldenQuery(id="q1", text="refund", judgments=(Judgment("a", 3),)), k=3)
    titles = ("Refund policy (2024)", "Refund policy 2024", "Shipping rates", "Refund policy, 2024")
    answer = QueryResult(query_id="q1", ids=("a", "b", "c", "d"), titles=titles)
    report = build_report(gold, {"q1": answer})
    # d is past k = 3: only a and b are in the group.
    assert report["near_duplicates"] == [
        {
            "id": "q1",
            "groups": [
                [
                    {"rank": 1, "doc_id": "a", "title": "Refund policy (2024)"},
                    {"rank": 2, "doc_id": "b", "title": "Refund policy 2024"},
                ]
            ],
        }
    ]
    untitled = build_report(gold, {"q1": QueryResult(query_id="q1", ids=("a", "b"))})
    assert untitled["near_duplicates"] == []


def test_titles_with_the_same_words_in_another_order_are_not_near_duplicates() -> None:
    """Word order counts: reordered words can say the opposite; a copy keeps the order, give or take a
    word."""
    reordered = ("Switch from monthly to annual billing", "Switch from annual to monthly billing")
    assert near_duplicate_groups(["a", "b"], reordered) == []
    copies = ("Refund policy for annual plans", "Refund policy for annual plans (copy)")
    assert [[hit["doc_id"] for hit in group] for group in near_duplicate_groups(["a", "b"], copies)] == [
        ["a", "b"]
    ]


def test_the_cheap_bounds_refuse_only_pairs_the_full_comparison_refuses() -> None:
    """`_alike` skips the full comparison where the matcher's upper bounds already fall short: the same
    answer as comparing every pair in full, on titles drawn from a small vocabulary (many near pairs)."""
    rng = np.random.default_rng(7)
    vocabulary = [
        "refund",
        "policy",
        "for",
        "annual",
        "plans",
        "billing",
        "switch",
        "from",
        "monthly",
        "to",
        "the",
        "copy",
    ]
    titles = [list(rng.choice(vocabulary, size=rng.integers(1, 8))) for _ in range(300)]
    for similarity in (0.5, 0.8, 0.95):
        for a, b in zip(titles[::2], titles[1::2], strict=True):
            assert _alike(a, b, similarity) == (_title_similarity(a, b) >= similarity), (a, b)


@pytest.mark.parametrize("compact_ranks", [False, True])
def test_a_report_shares_nothing_it_may_change_with_the_next_one(compact_ranks: bool) -> None:
    """What a report reads of its golden file alone is worked out once per golden object: a second report
    on the same object is the first one's JSON even after the first was changed in place, and so is a
    report on an equal golden object worked out afresh."""
    import random
    from dataclasses import replace

    from tests.assay.finalize_fixture import seeded_run

    golden = seeded_run(300, 4, reports=False)[0]
    rng = random.Random(4)
    docs = [f"d{i}" for i in range(1, 13)]
    results = {
        q.id: QueryResult(q.id, error="HTTP 503")
        if rng.random() < 0.05
        else QueryResult(q.id, tuple(rng.sample(docs, rng.randint(0, 10))))
        for q in golden.queries
    }
    first = build_report(golden, results, compact_ranks=compact_ranks)
    expected = json.dumps(first, sort_keys=True)
    for row in first["per_query"]:
        row["grades"]["d1"] = 99
        row["ranks"].clear()
        row["ids"].append("d99")
    for name in ("no_positive_judgments", "unexpected_hits"):
        first["flags"][name].append("q-0")
    assert json.dumps(build_report(golden, results, compact_ranks=compact_ranks), sort_keys=True) == expected
    assert (
        json.dumps(build_report(replace(golden), results, compact_ranks=compact_ranks), sort_keys=True)
        == expected
    )
