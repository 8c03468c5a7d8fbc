"""A seeded random run and its baseline, varied in every way the report and the gate count (errors,
expected-empty, critical, shadow and core tiers, weights, strata, bands, failure modes), and the report
and gate JSON they make: the fixture of the finalize-path identity test and of benchmarks."""

from __future__ import annotations

import json
import random
from typing import Any

import assay.gate_check
from assay.budgets import Budgets, load_budgets
from assay.gate import compare
from assay.gate_check import ArtifactError, validate_artifact
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.results import QueryResult

_DOCS = tuple(f"d{i}" for i in range(1, 13))


def _query(i: int, rng: random.Random) -> GoldenQuery:
    judged = rng.sample(_DOCS, rng.randint(0, 6))
    judgments = tuple(Judgment(doc, rng.randint(0, 3)) for doc in judged)
    expect_empty = rng.random() < 0.03
    # A valid golden file: a critical query has a positive judgment and is not expected to be empty.
    critical = rng.random() < 0.01 and not expect_empty and any(j.grade >= 1 for j in judgments)
    return GoldenQuery(
        id=f"q-{i}",
        text=f"query {i}",
        judgments=judgments,
        stratum=rng.choice(("billing", "docs", "api", None)),
        traffic_band=rng.choice(("head", "torso", "tail", None)),
        failure_mode=rng.choice(("typo", "synonym", None, None)),
        weight=rng.choice((1.0, 0.5, 2.5, 10.0)),
        tier="shadow" if rng.random() < 0.1 else "core",
        expect_empty=expect_empty,
        critical=critical,
    )


def _results(golden: GoldenFile, rng: random.Random) -> dict[str, QueryResult]:
    results = {}
    for q in golden.queries:
        if rng.random() < 0.02:
            results[q.id] = QueryResult(q.id, error="HTTP 503")
        else:
            ids = tuple(rng.sample(_DOCS, rng.randint(0, 10)))
            results[q.id] = QueryResult(q.id, ids, status=200, latency_ms=rng.uniform(1, 50))
    return results


def seeded_run(
    n: int, seed: int, *, reports: bool = True
) -> tuple[GoldenFile, dict[str, Any], dict[str, Any], Budgets]:
    """(golden, current report, baseline report, budgets with stratum budgets) of `n` random queries
    (without `reports`, the reports are empty)."""
    rng = random.Random(seed)
    golden = GoldenFile(version="v1", queries=tuple(_query(i, rng) for i in range(1, n + 1)), rubric="r@1")
    if not reports:
        return golden, {}, {}, load_budgets(None)
    baseline = build_report(golden, _results(golden, rng), run={}, bootstrap_seed=seed)
    current = build_report(golden, _results(golden, rng), run={}, bootstrap_seed=seed + 1)
    budgets = load_budgets({"strata": {"billing": {}}, "traffic_bands": {"head": {}}})
    return golden, current, baseline, budgets


def gate_json(golden: GoldenFile, current: dict[str, Any], baseline: dict[str, Any], budgets: Budgets) -> str:
    """The reports and both gates (against the baseline, and of the current report alone) as one JSON."""
    gates = [compare(current, baseline, budgets).to_dict(), compare(current, current, budgets).to_dict()]
    return json.dumps({"current": current, "baseline": baseline, "gates": gates}, sort_keys=True)


def problems_checking_every_row(report: object) -> list[str]:
    """`validate_artifact`'s problems (role "current") with every per-query row through the field-by-field
    checks, none left out by the checks over the columns: what those must find the same of."""
    fast = assay.gate_check._suspect_rows
    assay.gate_check._suspect_rows = lambda columns: set(range(len(columns)))
    try:
        validate_artifact(report, "current")
        return []
    except ArtifactError as error:
        return error.problems
    finally:
        assay.gate_check._suspect_rows = fast
