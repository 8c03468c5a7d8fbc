"""The gate on evidence: how often identical re-runs of a nondeterministic engine FAIL, for any reason,
beside how often planted regressions still do (docs/metrics.md, "The drift gate", items 6 and 7, and
"Noise floor").

The A/A protocol of a team that meets a nondeterministic engine: three runs of demo/golden.json, the noise
floor and the budgets suggested from them (`assay.noise.noise_floor`, `suggest_budgets` over
demo/budgets.json: what `assay gate --suggest-budgets ... --noise-out` writes), then six more identical runs
each gated against the first with that floor and those budgets (`assay.gate.compare`: what `assay gate
--noise` runs). The engine is the demo's, searched in-process once per configuration, with two of the top
five hits of about one query in three swapped on each run by a seeded generator (tests/support/aa_runs.py);
every run is a real report artifact read back through JSON. The protocol is repeated with seeds 0, 1, ...

Planted regressions, gated the same way: the demo's rewriter (billing nDCG -0.19) on the jittered engine,
and a core nDCG drop of at least 0.03 (the top hit of randomly chosen core queries moved to the bottom of
their lists, until the core mean dropped by 0.03) on the deterministic engine, whose floor is 0 and whose
suggestion is demo/budgets.json (fail 0.025); the same drop on the jittered engine shows the power left
against its noise. A planted critical-query regression: the best document of one critical query (drawn
per protocol among those with more than `DEPTH` hits) moved to rank `DEPTH` + 1, just past the deepest
rank the jitter reorders, on the jittered engine and on the deterministic one; and, to show what the
critical rule gives up on a moving engine, the same document moved to rank `DEPTH`, within that reach.
Beside them, the same re-runs under the rule this replaced: the floor the range of the three runs'
aggregate values, budgets suggested at 1.5 and 3 times it, a FAIL on the budget alone, and every critical
query out of its top ranks a FAIL.
Shares with their 95% Wilson intervals; the re-runs of one protocol share a baseline
and a floor, so the interval over gates is a little narrower than one over protocols would be.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from assay.budgets import Budget, Budgets, load_budgets
from assay.gate import GateResult, compare
from assay.metric_table import BY_KEY, GATED_METRICS
from assay.noise import NoiseFloor, noise_floor, readable_ceiling, suggest_budgets
from assay.sxs.stats import wilson_interval
from benchmarks._report import write_section
from tests.support.aa_runs import DEMO, DEPTH, SHARE, Lists, demo_lists, jittered, report_of

PROTOCOLS = int(os.environ.get("ASSAY_BENCH_GATE_PROTOCOLS", "150"))
A_A_RUNS = 3
RERUNS = 6
PLANTED_DROP = 0.03


def _demoted(lists: Lists, queries: list[str]) -> dict[str, tuple[str, ...]]:
    """`lists` with the top hit of each of `queries` moved to the bottom of its list."""
    moved = dict(lists)
    for query_id in queries:
        ids = lists[query_id]
        if len(ids) >= 2:
            moved[query_id] = (*ids[1:], ids[0])
    return moved


def _planted(steady: Lists, rng: np.random.Generator) -> list[str]:
    """Core queries, in a random order, whose top hit moved down drops the core's mean nDCG by at least
    `PLANTED_DROP` on the deterministic engine."""
    before = {row["id"]: row for row in report_of(steady)["per_query"]}
    after = {row["id"]: row for row in report_of(_demoted(steady, list(steady)))["per_query"]}
    core = [q for q, row in before.items() if row.get("tier", "core") == "core" and row["ndcg"] is not None]
    drops = {q: before[q]["ndcg"] - after[q]["ndcg"] for q in core}
    chosen, dropped = [], 0.0
    for query_id in rng.permutation(sorted(core)).tolist():
        if drops[query_id] > 0:
            chosen.append(query_id)
            dropped += drops[query_id]
            if dropped / len(core) >= PLANTED_DROP:
                return chosen
    raise SystemExit("no core queries enough to plant the drop")


def _critical_moved(lists: Lists, best: dict[str, set[str]], query_id: str, rank: int) -> Lists:
    """`lists` with the best document of critical query `query_id` moved to `rank`."""
    ids = list(lists[query_id])
    doc = ids.pop(next(i for i, doc in enumerate(ids) if doc in best[query_id]))
    ids.insert(rank - 1, doc)
    return {**lists, query_id: tuple(ids)}


def _best_docs(steady: Lists) -> dict[str, set[str]]:
    """The best documents of each critical query that the engine returns with more than `DEPTH` hits."""
    report = report_of(steady)
    return {
        e["id"]: set(e["best_docs"])
        for e in report["critical"]
        if e["rank"] is not None and len(steady[e["id"]]) > DEPTH
    }


def _range_budgets(runs: list[dict[str, Any]], budgets: Budgets) -> Budgets:
    """The budgets the rule this replaced suggested: the floor the range of each scope's aggregate over the
    runs, warn 1.5 and fail 3 times it, rounded up, never below the defaults (off above 1)."""

    def level(default: float | None, floor: float, factor: float) -> float | None:
        value = max(default or 0.0, readable_ceiling(floor, factor))
        return None if value > 1 else value

    def scope(aggregates: list[dict[str, Any]]) -> dict[str, Budget]:
        found = {}
        for metric in GATED_METRICS:
            values = [agg[metric]["value"] for agg in aggregates if agg[metric]["value"] is not None]
            floor = max(values) - min(values)
            shown = BY_KEY[metric]
            found[metric] = Budget(
                level(shown.default_warn, floor, 1.5) if shown.default_warn else None,
                level(shown.default_fail, floor, 3.0) if shown.default_fail else None,
            )
        return found

    strata = {
        name: scope([run["slices"]["stratum"][name] for run in runs]) for name in runs[0]["slices"]["stratum"]
    }
    return dataclasses.replace(budgets, core=scope([run["tiers"]["core"] for run in runs]), strata=strata)


class Tally:
    def __init__(self) -> None:
        self.gates = 0
        self.failed = 0  # on a budget
        self.failed_any = 0  # for any reason
        self.tripped = 0  # a fail budget reached: what failed before the gate asked for evidence
        self.within = 0  # a within-noise warning
        self.named = 0  # the finding the row is about failed
        self.critical_warned = 0  # a critical query out of its top ranks within the A/A runs' reach

    def add(self, result: GateResult, named: tuple[str, str | None] | None = None) -> None:
        self.gates += 1
        budget = [f for f in result.failures if f.kind == "budget"]
        self.failed += bool(budget)
        self.failed_any += result.verdict == "fail"
        self.within += any(w.kind == "within_noise" for w in result.warnings)
        self.tripped += bool(budget) or any(w.kind == "within_noise" for w in result.warnings)
        self.named += named is not None and named in {(f.scope, f.metric) for f in result.failures}
        self.critical_warned += any(w.kind == "critical" for w in result.warnings)

    def share(self, count: int) -> str:
        low, high = wilson_interval(count, self.gates) or (0.0, 0.0)
        return f"{count} ({count / self.gates:.1%}, [{low:.1%}, {high:.1%}])"


@dataclasses.dataclass
class Protocol:
    floor: NoiseFloor
    suggested: Budgets
    ranged: Budgets  # what the rule this replaced suggested
    baseline: dict[str, Any]
    reruns: list[dict[str, Any]]
    rewritten: dict[str, Any]
    planted: dict[str, Any]
    critical_past: dict[str, Any]  # a critical query's best document moved past the jitter's reach
    critical_within: dict[str, Any]  # ... and within it


def _protocol(
    seed: int, budgets: Budgets, plant: Callable[[Lists], Lists], critical: Callable[[Lists, int], Lists]
) -> Protocol:
    rng = np.random.default_rng(seed)
    steady = demo_lists(rewrite=False)
    runs = [report_of(jittered(steady, rng)) for _ in range(A_A_RUNS)]
    floor = noise_floor(runs)
    return Protocol(
        floor=floor,
        suggested=suggest_budgets(floor, budgets),
        ranged=_range_budgets(runs, budgets),
        baseline=runs[0],
        reruns=[report_of(jittered(steady, rng)) for _ in range(RERUNS)],
        rewritten=report_of(jittered(demo_lists(rewrite=True), rng)),
        planted=report_of(plant(jittered(steady, rng))),
        critical_past=report_of(critical(jittered(steady, rng), DEPTH + 1)),
        critical_within=report_of(critical(jittered(steady, rng), DEPTH)),
    )


def measure() -> dict[str, Any]:
    budgets = load_budgets(json.loads((DEMO / "budgets.json").read_text()))
    steady = demo_lists(rewrite=False)
    best = _best_docs(steady)
    names = (
        "aa",
        "aa_demo",
        "aa_before",
        "rewriter",
        "planted",
        "planted_jittered",
        "critical",
        "critical_steady",
        "critical_within",
    )
    tallies = {name: Tally() for name in names}
    started = time.perf_counter()
    for seed in range(PROTOCOLS):
        draw = np.random.default_rng(10_000 + seed)
        chosen = _planted(steady, draw)
        query = str(draw.choice(sorted(best)))

        def plant(lists: Lists, chosen: list[str] = chosen) -> dict[str, tuple[str, ...]]:
            return _demoted(lists, chosen)

        def critical(lists: Lists, rank: int, query: str = query) -> Lists:
            return _critical_moved(lists, best, query, rank)

        found = _protocol(seed, budgets, plant, critical)
        floor, baseline = found.floor, found.baseline
        for rerun in found.reruns:
            tallies["aa"].add(compare(rerun, baseline, found.suggested, noise_floor=floor))
            tallies["aa_demo"].add(compare(rerun, baseline, budgets, noise_floor=floor))
            tallies["aa_before"].add(compare(rerun, baseline, found.ranged))
        tallies["rewriter"].add(
            compare(found.rewritten, baseline, found.suggested, noise_floor=floor),
            ("stratum billing", "ndcg"),
        )
        tallies["planted_jittered"].add(
            compare(found.planted, baseline, found.suggested, noise_floor=floor), ("core", "ndcg")
        )
        for name, moved in (("critical", found.critical_past), ("critical_within", found.critical_within)):
            tallies[name].add(
                compare(moved, baseline, found.suggested, noise_floor=floor), (f"query {query}", None)
            )
        # The deterministic engine: identical A/A runs, a floor of 0, the suggestion demo/budgets.json.
        still = [report_of(steady) for _ in range(A_A_RUNS)]
        still_floor = noise_floor(still)
        tallies["planted"].add(
            compare(
                report_of(_demoted(steady, chosen)),
                still[0],
                suggest_budgets(still_floor, budgets),
                noise_floor=still_floor,
            ),
            ("core", "ndcg"),
        )
        tallies["critical_steady"].add(
            compare(
                report_of(critical(steady, DEPTH + 1)),
                still[0],
                suggest_budgets(still_floor, budgets),
                noise_floor=still_floor,
            ),
            (f"query {query}", None),
        )
    return {"tallies": tallies, "seconds": time.perf_counter() - started}


def _ratio(tally: Tally, count: str = "named") -> str:
    """The share of a planted regression's gates counted by `count` (default: failed on its planted
    scope)."""
    return f"{getattr(tally, count) / tally.gates:.0%}"


def _bound(tally: Tally, count: int) -> str:
    low, high = wilson_interval(count, tally.gates) or (0.0, 0.0)
    return f"{count / tally.gates:.1%} (95% interval [{low:.1%}, {high:.1%}])"


def main() -> None:
    load_before = os.getloadavg()[0]
    found = measure()
    tallies: dict[str, Tally] = found["tallies"]
    aa = tallies["aa"]
    reruns = [
        (
            "the rule this replaced (range floor, budget alone, no critical-query reach)",
            tallies["aa_before"],
        ),
        ("suggested budgets (both levers, the critical queries' reach)", aa),
        ("demo/budgets.json (below the floor: the evidence alone)", tallies["aa_demo"]),
    ]
    planted = [
        ("the rewriter, jittered engine, suggested budgets", "billing nDCG", tallies["rewriter"]),
        (
            f"core nDCG drop >= {PLANTED_DROP}, deterministic engine (floor 0: demo/budgets.json)",
            "core nDCG",
            tallies["planted"],
        ),
        (
            f"core nDCG drop >= {PLANTED_DROP}, jittered engine, suggested budgets (power against its noise)",
            "core nDCG",
            tallies["planted_jittered"],
        ),
        (
            f"critical query's best document to rank {DEPTH + 1} (past the reach), jittered engine",
            "the critical query",
            tallies["critical"],
        ),
        (
            f"critical query's best document to rank {DEPTH + 1}, deterministic engine",
            "the critical query",
            tallies["critical_steady"],
        ),
        (
            f"critical query's best document to rank {DEPTH} (within the reach), jittered engine",
            "the critical query",
            tallies["critical_within"],
        ),
    ]
    lines = [
        "### The gate on evidence",
        "",
        f"{PROTOCOLS} A/A protocols (seeds 0-{PROTOCOLS - 1}), each: {A_A_RUNS} runs of demo/golden.json "
        f"(79 core queries; strata of 31, 21, 17 and 10; 3 critical queries) on the demo engine with two "
        f"of the top {DEPTH} hits of about {SHARE:.0%} of the queries swapped per run, the floor and the "
        f"budgets suggested over demo/budgets.json, then {RERUNS} identical re-runs and one run of each "
        "planted regression, each gated against the first A/A run with that floor "
        "(benchmarks/bench_gate_noise.py). "
        "Shares are of gates, with 95% Wilson intervals. FAIL for any reason counts budgets, critical "
        "queries and everything else; a fail budget reached is what failed before the gate asked for "
        "evidence; a critical warning is a critical query out of its top 3 within the A/A runs' reach (its "
        'worst A/A rank or the deepest rank any list changed, docs/metrics.md, "The drift gate", item 6), '
        "which the rule this replaced failed. The planted critical query is drawn per protocol among the "
        f"two with more than {DEPTH} hits. {found['seconds']:.0f} s of wall time in all; 1-minute load "
        f"average {load_before:.1f} before.",
        "",
        "| identical re-runs, jittered engine | gates | FAIL for any reason | FAIL on a budget "
        "| a fail budget reached | a critical warning |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *(
            f"| {name} | {t.gates} | {t.share(t.failed_any)} | {t.share(t.failed)} | {t.share(t.tripped)} "
            f"| {t.share(t.critical_warned)} |"
            for name, t in reruns
        ),
        "",
        "| planted regression | gates | FAIL | FAIL on the planted scope | a critical warning |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {name} | {t.gates} | {t.share(t.failed_any)} | {scope}: {t.share(t.named)} "
            f"| {t.share(t.critical_warned)} |"
            for name, scope, t in planted
        ),
        "",
        f"Target: at most 5% of identical re-runs FAIL for any reason: {_bound(aa, aa.failed_any)}, "
        f"{_bound(tallies['aa_before'], tallies['aa_before'].failed_any)} under the rule this replaced. "
        f"Planted regressions FAIL: the rewriter {_ratio(tallies['rewriter'], 'failed_any')} of its runs "
        f"({_ratio(tallies['rewriter'])} on billing nDCG itself), the core drop on the deterministic engine "
        f"{_ratio(tallies['planted'])}, a critical query past the reach {_ratio(tallies['critical'])} "
        f"(deterministic engine {_ratio(tallies['critical_steady'])}); within the reach the jittered "
        f"engine's critical query is a warning ({_ratio(tallies['critical_within'], 'critical_warned')} "
        f"warned, {_ratio(tallies['critical_within'])} failed on it): that is what the rule gives up on an "
        "engine that moves its top ranks.",
    ]
    write_section("gate_noise", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
