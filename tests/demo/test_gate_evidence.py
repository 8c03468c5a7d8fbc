"""The gate fails on evidence (docs/metrics.md, "The drift gate", item 7, and "Noise floor"): runs of the
demo engine made in-process (tests/support/aa_runs.py), jittered with fixed seeds (two of the top five
hits of about one query in three swapped, differently on each run), scored by the real report builder and
gated by the real gate, as `assay gate --suggest-budgets ... --noise-out` and `assay gate --noise` do.

These are statistical properties held at fixed seeds, not timings: identical re-runs gated on the budgets
their own A/A runs suggest never FAIL on a budget; a 10-query stratum gets a wider floor than the core;
a fail budget that noise trips is a within-noise warning naming n; the p-value and interval each finding
shows agree with its verdict; a critical query that a swap takes out of its top ranks warns, and one moved
past the A/A runs' reach fails; and a deterministic engine's outputs, the rewriter's FAIL on billing among
them, are what they were.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from assay.budgets import Budgets, load_budgets
from assay.gate import GateResult, compare
from assay.gate_findings import ALPHA
from assay.metric_table import BY_KEY
from assay.noise import NoiseFloor, noise_floor, suggest_budgets
from tests.support.aa_runs import DEMO, demo_lists, jittered, report_of

SEEDS = range(5)
RERUNS = 6


@dataclass
class Protocol:
    """Three A/A runs of the jittered engine, their floor and suggested budgets, then six identical
    re-runs and one with the rewriter on, each gated against the first A/A run."""

    floor: NoiseFloor
    suggested: Budgets
    baseline: dict[str, Any]
    reruns: list[dict[str, Any]]
    rewritten: dict[str, Any]


def demo_budgets() -> Budgets:
    return load_budgets(json.loads((DEMO / "budgets.json").read_text()))


def protocol(seed: int) -> Protocol:
    rng = np.random.default_rng(seed)
    steady = demo_lists(rewrite=False)
    runs = [report_of(jittered(steady, rng)) for _ in range(3)]
    floor = noise_floor(runs)
    return Protocol(
        floor=floor,
        suggested=suggest_budgets(floor, demo_budgets()),
        baseline=runs[0],
        reruns=[report_of(jittered(steady, rng)) for _ in range(RERUNS)],
        rewritten=report_of(jittered(demo_lists(rewrite=True), rng)),
    )


@pytest.fixture(scope="module")
def protocols() -> list[Protocol]:
    return [protocol(seed) for seed in SEEDS]


def gates(protocols: list[Protocol], budgets: str) -> Iterator[GateResult]:
    """Every re-run gated against its protocol's baseline with its floor, under the `suggested` budgets or
    the `demo` ones (below the floor)."""
    for found in protocols:
        chosen = found.suggested if budgets == "suggested" else demo_budgets()
        for rerun in found.reruns:
            yield compare(rerun, found.baseline, chosen, noise_floor=found.floor)


def test_identical_reruns_gated_on_their_suggested_budgets_never_fail(protocols: list[Protocol]) -> None:
    results = list(gates(protocols, "suggested"))

    assert len(results) == len(SEEDS) * RERUNS
    assert [f.message for r in results for f in r.failures] == []
    # A swap that took a critical query's best document out of its top 3 is within the reach of the A/A
    # runs' movement (a swap within the top 5): a warning (docs/metrics.md, "The drift gate", item 6).
    critical = [w.message for r in results for w in r.warnings if w.kind == "critical"]
    assert critical != []
    assert all("lists changed down to rank 5): the engine is not deterministic" in m for m in critical)


def test_a_critical_query_moved_past_the_a_a_runs_reach_fails_on_the_jittered_engine(
    protocols: list[Protocol],
) -> None:
    best = {e["id"]: e["best_docs"][0] for e in report_of(demo_lists(rewrite=False))["critical"]}
    for seed, found in enumerate(protocols):
        rng = np.random.default_rng(100 + seed)
        lists = dict(jittered(demo_lists(rewrite=False), rng))
        ids = [doc for doc in lists["q-0408"] if doc != best["q-0408"]]
        lists["q-0408"] = (*ids[:5], best["q-0408"], *ids[5:])  # rank 6: deeper than any swap
        result = compare(report_of(lists), found.baseline, found.suggested, noise_floor=found.floor)

        assert found.floor.deepest_change == 5
        critical = [f for f in result.failures if f.kind == "critical"]
        assert [f.scope for f in critical] == ["query q-0408"]
        assert "at rank 6, must be within the top 3; past the A/A runs' reach" in critical[0].message
        assert [w for w in result.warnings if w.scope == "query q-0408"] == []


def test_under_budgets_below_the_floor_noise_trips_fail_budgets_and_each_is_a_within_noise_warning(
    protocols: list[Protocol],
) -> None:
    results = list(gates(protocols, "demo"))

    within = [w for r in results for w in r.warnings if w.kind == "within_noise"]
    assert len(within) >= 5  # the budgets are below the floor: noise reaches them often
    assert [f.message for r in results for f in r.failures if f.kind == "budget"] == []
    for warning in within:
        scope, metric = warning.scope or "", warning.metric or ""
        result = next(r for r in results if warning in r.warnings)
        row = _row(result, scope, metric)
        assert row["status"] == "warn" and row["change"] >= row["fail"]
        assert warning.message.endswith(
            f"re-run, or add queries to {'the core tier' if scope == 'core' else 'this stratum'} "
            f"(n={row['n']})"
        )
        assert "past the budget but within noise (" in warning.message


def test_a_10_query_stratum_gets_a_wider_floor_than_the_core(protocols: list[Protocol]) -> None:
    for found in protocols:
        for metric in ("ndcg", "mrr"):
            core, blog = found.floor.core[metric], found.floor.strata["blog"][metric]
            assert (core.n, blog.n) == (79, 10)
            assert core.floor is not None and core.floor > 0
            # At least the core's per-query noise, over 10 queries instead of 79.
            assert blog.floor is not None and blog.floor >= core.floor * (79 / 10) ** 0.5 - 1e-12
            assert found.suggested.strata["blog"][metric].fail > found.suggested.core[metric].fail  # type: ignore[operator]


def test_the_p_value_and_interval_shown_agree_with_every_verdict(protocols: list[Protocol]) -> None:
    results = [*gates(protocols, "demo"), *gates(protocols, "suggested")]
    results += [compare(p.rewritten, p.baseline, p.suggested, noise_floor=p.floor) for p in protocols]
    judged = 0
    for result in results:
        for finding in [*result.failures, *result.warnings]:
            if finding.kind not in ("budget", "within_noise") or "fail budget" not in finding.message:
                continue
            row = _row(result, finding.scope or "", finding.metric or "")
            if "evidence" not in row:  # a metric the floor measured as steady: noise taken as 0
                assert result.noise_floor is not None and finding.metric is not None
                assert finding.kind == "budget" and not result.noise_floor.moves(finding.metric)
                continue
            judged += 1
            low, high, shown_p = _shown(finding.message)
            worse = BY_KEY[finding.metric or ""].worsening
            wholly_worse = min(worse(0.0, low), worse(0.0, high)) > 0
            # The p-value shown is the one decided on, to its 3 decimals.
            p_holm = row["evidence"]["p_holm"]
            assert shown_p == pytest.approx(p_holm, abs=0.00051)
            if finding.kind == "budget":  # a FAIL: both say it is beyond noise
                assert p_holm < ALPHA and wholly_worse, finding.message
            else:  # within noise: at least one of them says it is not
                assert p_holm >= ALPHA or not wholly_worse, finding.message
                assert (p_holm >= ALPHA) == (f"not below {ALPHA}" in finding.message)
                assert (not wholly_worse) == ("interval reaches 0" in finding.message)
    assert judged >= 10


def test_the_family_is_every_gated_change_on_a_metric_that_moves(protocols: list[Protocol]) -> None:
    found = protocols[0]
    result = compare(found.reruns[0], found.baseline, found.suggested, noise_floor=found.floor)

    moving = [m for m in ("ndcg", "mrr", "precision_at_k", "empty_rate") if found.floor.moves(m)]
    assert moving == ["ndcg", "mrr"]  # a swap within the top five moves neither P@10 nor the empty rate
    scopes = [result.comparison["core"], *result.comparison["strata"].values()]
    families = {row["evidence"]["family"] for rows in scopes for m, row in rows.items() if m in moving}
    assert families == {len(scopes) * len(moving)} == {10}
    assert all("evidence" not in rows[m] for rows in scopes for m in ("precision_at_k", "empty_rate"))


def test_the_rewriter_still_fails_billing_ndcg_on_the_jittered_engine(protocols: list[Protocol]) -> None:
    for found in protocols:
        result = compare(found.rewritten, found.baseline, found.suggested, noise_floor=found.floor)

        assert result.verdict == "fail"
        failed = {(f.scope, f.metric) for f in result.failures if f.kind == "budget"}
        assert ("stratum billing", "ndcg") in failed
        # The empty rate does not move between runs of this engine: three emptied billing queries fail.
        assert ("stratum billing", "empty_rate") in failed


def test_a_deterministic_engine_gates_as_before_and_no_floor_is_said_in_a_note() -> None:
    steady, rewritten = report_of(demo_lists(rewrite=False)), report_of(demo_lists(rewrite=True))
    floor = noise_floor([steady, report_of(demo_lists(rewrite=False))])
    assert not any(floor.moves(m) for m in BY_KEY if m in floor.core)

    plain = compare(rewritten, steady, demo_budgets())
    floored = compare(rewritten, steady, suggest_budgets(floor, demo_budgets()), noise_floor=floor)

    for result in (plain, floored):
        assert result.verdict == "fail"
        assert [w for w in result.warnings if w.kind == "within_noise"] == []
        assert "beyond run-to-run noise" not in " ".join(f.message for f in result.failures)
    assert [f.message for f in floored.failures] == [f.message for f in plain.failures]
    billing = next(f for f in plain.failures if (f.scope, f.metric) == ("stratum billing", "ndcg"))
    assert billing.message == (
        "stratum billing nDCG@k drop 0.1902 >= fail budget 0.025 (baseline 0.8567 -> current 0.6666 over 31 "
        "paired queries; 95% interval [-0.3108, -0.0820], p=0.003)"
    )
    assert [n for n in plain.notes if n.startswith("no noise floor given")] != []
    assert [n for n in floored.notes if n.startswith("no noise floor given")] == []


def _row(result: GateResult, scope: str, metric: str) -> dict[str, Any]:
    if scope == "core":
        row: dict[str, Any] = result.comparison["core"][metric]
        return row
    return dict(result.comparison["strata"][scope.removeprefix("stratum ")][metric])


def _shown(message: str) -> tuple[float, float, float]:
    """The interval and the Holm-adjusted p-value a finding shows."""
    interval = re.search(r"95% interval \[([-+]\d+\.\d+), ([-+]\d+\.\d+)\]", message)
    p_value = re.search(r"one-sided p=(<?)(\d\.\d+) Holm-adjusted", message)
    assert interval and p_value, message
    p = float(p_value.group(2)) / (2 if p_value.group(1) else 1)  # "<0.001" is below 0.001
    return float(interval.group(1)), float(interval.group(2)), p
