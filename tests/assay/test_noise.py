"""The noise floor (`assay.noise`): every query's movement between runs of one configuration and the floor
of each scope's mean it gives, the suggested budgets, the thresholds below the floor, the floor file, and
the gate's `noise` warnings, one per scope (docs/metrics.md, "Noise floor"). Reports are built with the
real report builder."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.budgets import Budget, Budgets, load_budgets
from assay.changes import IDENTITY_FIELDS, TOLERANCE
from assay.gate import compare
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.metric_table import BY_KEY, GATED_METRICS
from assay.noise import (
    FAIL_FACTOR,
    MAX_CHANGE,
    SAME_REPORT,
    WARN_FACTOR,
    MetricNoise,
    NoiseError,
    NoiseFloor,
    below_floor,
    noise_floor,
    noise_warnings,
    readable_ceiling,
    render_floor,
    suggest_budgets,
)
from assay.report import build_report
from assay.results import QueryResult

STRATA = ("billing", "docs", "blog")


def golden(n: int = 30, version: str = "2026-08-01") -> GoldenFile:
    """Queries q-0.. with a grade-3 d1 and a grade-1 d2-<i>; strata cycle billing, docs, blog."""
    return GoldenFile(
        version=version,
        queries=tuple(
            GoldenQuery(
                id=f"q-{i}",
                text=f"query {i}",
                stratum=STRATA[i % len(STRATA)],
                judgments=(Judgment("d1", 3), Judgment(f"d2-{i}", 1)),
            )
            for i in range(n)
        ),
    )


def report(
    swapped: frozenset[int] = frozenset(),
    empty: frozenset[int] = frozenset(),
    *,
    errored: frozenset[int] = frozenset(),
    n: int = 30,
    version: str = "2026-08-01",
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A report where the queries in `swapped` rank d2 first (nDCG 0.7098, RR 0.5), those in `empty`
    return nothing and those in `errored` fail; every other query ranks d1 first. Through JSON, as
    artifacts are read from files."""
    results = {}
    for i in range(n):
        ids = () if i in empty else (f"d2-{i}", "d1") if i in swapped else ("d1", f"d2-{i}")
        error = "HTTP 503 after 4 attempts" if i in errored else None
        results[f"q-{i}"] = QueryResult(query_id=f"q-{i}", ids=ids, error=error)
    run = {"adapter": "http_json", "url": "http://search.test/search", "params": params or {}}
    return json.loads(json.dumps(build_report(golden(n, version), results, run=run)))


def floor_of(
    core: dict[str, MetricNoise], strata: dict[str, dict[str, MetricNoise]] | None = None
) -> NoiseFloor:
    full = {metric: core.get(metric, MetricNoise()) for metric in GATED_METRICS}
    return NoiseFloor(golden_version="2026-08-01", runs=("a", "b"), core=full, strata=strata or {})


# ------------------------------------------------------------------------------------------- measuring


def test_identical_runs_have_a_floor_of_0_everywhere_however_spread_their_queries_are() -> None:
    run = report(frozenset({1, 4, 7, 11}))
    # The queries score differently within the run: a bootstrap of its mean would be wide.
    assert run["ci"]["ndcg"]["high"] - run["ci"]["ndcg"]["low"] > 0.05

    floor = noise_floor([run, copy.deepcopy(run), copy.deepcopy(run)], names=["a.json", "b.json", "c.json"])

    assert floor.runs == ("a.json", "b.json", "c.json") and floor.golden_version == "2026-08-01"
    assert list(floor.strata) == ["billing", "blog", "docs"]
    for _, _, noise in floor.scopes():
        assert set(noise) == set(GATED_METRICS)
        assert {metric: measured.floor for metric, measured in noise.items()} == dict.fromkeys(
            GATED_METRICS, 0.0
        )
    # Nothing is below a floor of 0, and the suggestion is the defaults themselves.
    assert below_floor(Budgets(), floor) == [] and noise_warnings(Budgets(), floor) == []
    assert suggest_budgets(floor, Budgets()).core == Budgets().core
    assert render_floor(floor, Budgets(), Budgets()).endswith(
        "no query moved between the runs: no budget is below the floor\n"
    )


def _changes(runs: list[dict[str, Any]], metric: str, stratum: str | None = None) -> list[float]:
    """Every query's change of `metric` between every two of `runs` (by hand: the hand-made queries are all
    core, none errored or expected empty)."""
    field = BY_KEY[metric].per_query
    found = []
    for i, later in enumerate(runs):
        for earlier in runs[:i]:
            for now, then in zip(later["per_query"], earlier["per_query"], strict=True):
                if stratum is None or now["stratum"] == stratum:
                    found.append(float(now[field]) - float(then[field]))
    return found


def test_the_floor_is_1_96_times_the_per_query_noise_over_the_root_of_n() -> None:
    runs = [report(frozenset(range(k))) for k in (2, 0, 5)]
    changes = _changes(runs, "ndcg")
    sd = math.sqrt(sum(d * d for d in changes) / len(changes))

    floor = noise_floor(runs)

    core = floor.core["ndcg"]
    assert (core.floor, core.query_sd, core.n) == (
        pytest.approx(1.96 * sd / math.sqrt(30), abs=1e-15),
        pytest.approx(sd, abs=1e-15),
        30,
    )
    # Nothing empty anywhere: the empty rate does not move at all.
    assert floor.core["empty_rate"] == MetricNoise(0.0, 0.0, 30)
    assert floor.moves("ndcg") and not floor.moves("empty_rate")


def test_a_small_stratum_gets_a_wider_floor_than_the_core_and_never_the_core_s_noise_less() -> None:
    """Queries 0-4 moved: billing (0, 3) and docs (1, 4) have their own noise, blog (2 only, of 10) less than
    the core's per query: it is held to the core's, over its own 10 queries."""
    runs = [report(frozenset(range(5))), report()]
    core_sd = math.sqrt(sum(d * d for d in _changes(runs, "mrr")) / 30)
    blog_sd = math.sqrt(sum(d * d for d in _changes(runs, "mrr", "blog")) / 10)
    assert 0 < blog_sd < core_sd

    floor = noise_floor(runs)

    blog = floor.strata["blog"]["mrr"]
    assert (blog.query_sd, blog.n) == (pytest.approx(blog_sd), 10)
    assert blog.floor == pytest.approx(1.96 * core_sd / math.sqrt(10))
    assert blog.floor > floor.core["mrr"].floor  # type: ignore[operator]
    billing = floor.strata["billing"]["mrr"]
    assert billing.query_sd is not None and billing.query_sd > core_sd
    assert billing.floor == pytest.approx(1.96 * billing.query_sd / math.sqrt(10))


def test_it_refuses_fewer_than_two_runs_and_says_what_to_do() -> None:
    with pytest.raises(NoiseError) as error:
        noise_floor([report()])
    assert error.value.problems == [
        "1 run: the noise floor needs at least 2 runs of one configuration (an A/A pair); run the "
        "baseline's configuration once more to measure the noise"
    ]


def test_it_refuses_runs_of_different_configurations_naming_the_field_and_the_values() -> None:
    with pytest.raises(NoiseError) as version:
        noise_floor([report(), report(version="2026-09-01")], names=["a.json", "b.json"])
    assert version.value.problems == [
        'golden_version differs (a.json "2026-08-01", b.json "2026-09-01"): the noise floor is measured on '
        "runs of one configuration (the same system, golden version and parameters)"
    ]
    with pytest.raises(NoiseError, match=r'run.params differs \(a {}, b {"rewrite": true}\)'):
        noise_floor([report(), report(params={"rewrite": True})], names=["a", "b"])


def test_it_names_every_problem_of_a_malformed_report_as_the_gate_does() -> None:
    bad = report()
    bad["tiers"]["core"]["ndcg"] = {"value": "high"}
    bad["per_query"][2]["ndcg"] = "x"
    bad["per_query"][3] = ["not", "a", "row"]
    del bad["slices"]

    with pytest.raises(NoiseError) as error:
        noise_floor([report(), bad, 7], names=["good", "bad", "seven"])

    assert error.value.problems == [
        "bad: tiers.core.ndcg.value: expected a number or null, got 'high'",
        "bad: slices: missing",
        "bad: per_query[3]: expected an object with a string id",
        "bad: per_query[2].ndcg: expected a number or null, got 'x'",
        "seven: expected a report object, got int",
    ]


def test_the_noise_floor_compares_the_gate_s_identity_fields() -> None:
    assert SAME_REPORT == IDENTITY_FIELDS


# ------------------------------------------------------------------------------------------- suggesting


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.0123, 0.015), (0.041, 0.045), (0.26, 0.3), (0.01, 0.01), (0.0099, 0.01), (0.00049, 0.0005), (0, 0)],
)
def test_readable_ceiling_rounds_up_to_half_a_unit_of_the_second_digit(value: float, expected: float) -> None:
    assert readable_ceiling(value) == expected


@given(st.floats(min_value=1e-9, max_value=10, allow_nan=False))
def test_readable_ceiling_is_never_below_the_value_and_at_most_half_again(value: float) -> None:
    rounded = readable_ceiling(value)
    assert value <= rounded <= value * 1.5 + 1e-15
    assert readable_ceiling(value, 3.0) >= value


def test_readable_ceiling_multiplies_in_decimal() -> None:
    assert 0.4 * 1.5 == 0.6000000000000001
    assert readable_ceiling(0.4, 1.5) == 0.6


def test_the_suggestion_follows_the_rule_and_never_goes_below_the_defaults() -> None:
    floor = floor_of(
        {
            "ndcg": MetricNoise(0.0246),  # 0.0246 -> 0.025; 1.5 x 0.0246 = 0.0369 -> 0.04
            "mrr": MetricNoise(0.002),  # below the defaults: 0.01 / 0.03 stay
            "lt3_rate": MetricNoise(0.05),  # off by default: stays off
        },
        {"billing": {"ndcg": MetricNoise(0.8)}},  # 1.5 x 0.8 > 1: that level is off
    )

    suggested = suggest_budgets(floor, load_budgets({"strata": {"docs": {"ndcg": {"fail": 0.2}}}}))

    assert suggested.core["ndcg"] == Budget(0.025, 0.04)
    assert suggested.core["mrr"] == Budget(0.01, 0.03)
    assert suggested.core["lt3_rate"] == Budget(None, None)
    assert suggested.core["precision_at_k"] == Budget(0.02, 0.04)  # not measured: kept
    # A stratum the budgets did not name gets budgets from its own floor; one they named is kept.
    assert suggested.strata["billing"]["ndcg"] == Budget(0.8, None)
    assert suggested.strata["docs"]["ndcg"] == Budget(0.01, 0.2)
    assert (suggested.max_error_rate, suggested.critical_rank) == (0.0, 3)
    assert load_budgets(suggested.to_dict()) == suggested
    assert (WARN_FACTOR, FAIL_FACTOR) == (1.0, 1.5)


def test_a_floor_of_0_suggests_the_defaults_whatever_the_budgets_in_force() -> None:
    floor = floor_of(dict.fromkeys(GATED_METRICS, MetricNoise(0.0)))
    # Loose budgets (an older suggestion), strict ones, and a <3 rate budget (no default to go by).
    loose = load_budgets(
        {"ndcg": {"warn": 0.09, "fail": 0.2}, "mrr": {"fail": 0.005}, "lt3_rate": {"fail": 0.1}}
    )

    suggested = suggest_budgets(floor, loose)

    assert suggested.core["ndcg"] == Budgets().core["ndcg"] == Budget(0.01, 0.025)
    assert suggested.core["mrr"] == Budgets().core["mrr"]
    assert suggested.core["lt3_rate"] == Budget(None, 0.1)  # no default: the budget given is the bound


def test_a_budget_at_the_floor_is_not_below_it_and_one_under_it_is() -> None:
    floor = floor_of({"ndcg": MetricNoise(0.0123)})
    at = Budgets(core={**Budgets().core, "ndcg": Budget(0.0123, 0.025)})
    under = Budgets(core={**Budgets().core, "ndcg": Budget(0.005, 0.0122)})

    assert below_floor(at, floor) == []
    assert [(b.scope, b.metric, b.level, b.threshold) for b in below_floor(under, floor)] == [
        ("core", "ndcg", "warn", 0.005),
        ("core", "ndcg", "fail", 0.0122),
    ]


def test_the_warning_is_one_per_scope_naming_each_budget_below_the_floor() -> None:
    floor = floor_of(
        {"ndcg": MetricNoise(0.0123), "mrr": MetricNoise(0.05), "precision_at_k": MetricNoise(0.001)},
        {"billing": {"ndcg": MetricNoise(0.03)}, "docs": {"ndcg": MetricNoise(0.5)}},
    )
    budgets = load_budgets({"ndcg": {"warn": None, "fail": 0.005}, "strata": {"billing": {}}})

    assert noise_warnings(budgets, floor) == [
        (
            "core",
            "core budgets below the noise floor: nDCG@k fail 0.005 (floor 0.0123), MRR warn 0.01 and fail "
            "0.03 (floor 0.0500): a change this small happens between runs of one unchanged configuration; "
            "raise them to the suggested budgets",
        ),
        (
            "stratum billing",
            "stratum billing budgets below the noise floor: nDCG@k fail 0.005 (floor 0.0300): a change this "
            "small happens between runs of one unchanged configuration; raise them to the suggested budgets",
        ),
    ]  # docs is not named in the budgets: not gated, no warning
    assert noise_warnings(budgets, None) == []


# ------------------------------------------------------------------------------------------- properties

noise_values = st.one_of(st.none(), st.floats(min_value=0, max_value=0.5, allow_nan=False))
thresholds = st.one_of(st.none(), st.floats(min_value=1e-4, max_value=0.6, allow_nan=False))
scopes = st.fixed_dictionaries(
    {
        metric: st.builds(MetricNoise, noise_values, noise_values, st.one_of(st.none(), st.integers(1, 500)))
        for metric in GATED_METRICS
    }
)
ranks = st.lists(st.none() | st.integers(1, 100), min_size=1, max_size=4).map(tuple)
floors = st.builds(
    lambda core, strata, critical, deepest: NoiseFloor(
        "2026-08-01", ("a", "b"), core, strata, critical=critical, deepest_change=deepest
    ),
    scopes,
    st.dictionaries(st.sampled_from(STRATA), scopes, max_size=3),
    st.dictionaries(st.sampled_from(("q-1", "q-10")), ranks, max_size=2),
    st.none() | st.integers(0, 100),
)
budget_maps = st.fixed_dictionaries({m: st.builds(Budget, thresholds, thresholds) for m in GATED_METRICS})
budget_sets = st.builds(
    lambda core, strata: Budgets(core=core, strata=strata),
    budget_maps,
    st.dictionaries(st.sampled_from(STRATA), budget_maps, max_size=3),
)


@given(st.lists(st.frozensets(st.integers(0, 29), max_size=30), min_size=2, max_size=4))
@settings(max_examples=25, deadline=None)
def test_the_floor_comes_from_every_query_s_change_between_every_two_runs(
    swaps: list[frozenset[int]],
) -> None:
    runs = [report(s, frozenset(s) if i % 2 else frozenset()) for i, s in enumerate(swaps)]

    floor = noise_floor(runs)

    for scope, name, noise in floor.scopes():
        for metric, measured in noise.items():
            changes = _changes(runs, metric, name)
            sd = math.sqrt(sum(d * d for d in changes) / len(changes))
            assert measured.query_sd == pytest.approx(sd, abs=1e-12), (scope, metric)
            used = sd if name is None else max(sd, floor.core[metric].query_sd or 0.0)
            assert measured.floor == pytest.approx(1.96 * used / math.sqrt(measured.n or 0), abs=1e-12)
            # 0 exactly when no query of the scope (nor, for a stratum, of the core) moved.
            assert (measured.floor == 0) == (used == 0)


@given(floors, budget_sets)
def test_every_suggested_threshold_that_is_on_is_at_or_above_the_floor(
    floor: NoiseFloor, budgets: Budgets
) -> None:
    suggested = suggest_budgets(floor, budgets)

    assert below_floor(suggested, floor) == []
    for _, name, noise in floor.scopes():
        scoped = suggested.core if name is None else suggested.strata[name]
        for metric, measured in noise.items():
            for level in ("warn", "fail"):
                threshold = getattr(scoped[metric], level)
                if threshold is not None and measured.floor is not None:
                    assert threshold >= measured.floor
                    default = getattr(BY_KEY[metric], f"default_{level}")
                    assert default is None or threshold >= default
    assert load_budgets(suggested.to_dict()) == suggested


@given(floors, budget_sets)
def test_a_suggestion_is_never_below_the_default_nor_above_what_the_runs_justify(
    floor: NoiseFloor, budgets: Budgets
) -> None:
    suggested = suggest_budgets(floor, budgets)

    for _, name, noise in floor.scopes():
        given_scope = budgets.core if name is None else budgets.strata.get(name, budgets.core)
        scoped = suggested.core if name is None else suggested.strata[name]
        for metric, measured in noise.items():
            if measured.floor is None:
                assert scoped[metric] == given_scope[metric]  # not measured: kept
                continue
            for level, factor in (("warn", WARN_FACTOR), ("fail", FAIL_FACTOR)):
                given, threshold = getattr(given_scope[metric], level), getattr(scoped[metric], level)
                if given is None:
                    assert threshold is None  # off stays off
                    continue
                default = getattr(BY_KEY[metric], f"default_{level}")
                bound = default if default is not None else given
                justified = max(bound, readable_ceiling(measured.floor, factor))
                # Exactly the larger of the lower bound and the rounded multiple of the floor; off past 1.
                assert threshold == (None if justified > MAX_CHANGE else justified)


@given(floors, budget_sets)
def test_below_floor_finds_exactly_the_thresholds_under_the_floor(
    floor: NoiseFloor, budgets: Budgets
) -> None:
    expected = set()
    for scope, name, noise in floor.scopes():
        scoped = budgets.core if name is None else budgets.strata.get(name)
        if scoped is None:
            continue  # a stratum the budgets do not name is not gated
        for metric in GATED_METRICS:
            value = noise[metric].floor
            for level in ("warn", "fail"):
                threshold = getattr(scoped[metric], level)
                # Under it by more than float noise: a threshold within TOLERANCE of the floor is at it.
                if threshold is not None and value is not None and threshold < value - TOLERANCE:
                    expected.add((scope, metric, level, threshold, value))

    assert set(below_floor(budgets, floor)) == expected
    # One warning per scope with a threshold below its floor, naming each of its metrics below it.
    warnings = noise_warnings(budgets, floor)
    assert [scope for scope, _ in warnings] == list(
        dict.fromkeys(b.scope for b in below_floor(budgets, floor))
    )
    for scope, message in warnings:
        below = {b.metric for b in below_floor(budgets, floor) if b.scope == scope}
        assert {m for m in GATED_METRICS if f" {BY_KEY[m].label} " in message.replace(":", " ")} == below


@given(floors)
def test_a_floor_survives_its_json_form(floor: NoiseFloor) -> None:
    assert NoiseFloor.from_dict(json.loads(json.dumps(floor.to_dict()))) == floor


# ------------------------------------------------------------------------------------------- the floor file


def test_a_floor_file_with_bad_values_names_every_problem() -> None:
    data = floor_of({"ndcg": MetricNoise(0.01)}).to_dict()
    data["core"]["ndcg"]["run_to_run"] = 0.5  # a figure of the older specs: not in this one
    data["core"]["mrr"]["query_sd"] = -1
    data["core"]["precision_at_k"]["n"] = 0
    data["core"]["recall"] = {}
    data["strata"] = []
    data["extra"] = 1

    with pytest.raises(NoiseError) as error:
        NoiseFloor.from_dict(data, where="floor.json")

    assert error.value.problems == [
        "floor.json: extra: unknown key",
        "floor.json: core.ndcg.run_to_run: unknown key",
        "floor.json: core.mrr.query_sd: -1 is not a number >= 0 or null",
        "floor.json: core.precision_at_k.n: 0 is not an integer >= 1 or null",
        "floor.json: core.recall: unknown metric; expected one of ndcg, mrr, precision_at_k, empty_rate, "
        "lt3_rate",
        "floor.json: strata: expected an object of stratum -> metrics, got list",
    ]
    with pytest.raises(NoiseError, match="not a noise floor"):
        NoiseFloor.from_dict(Budgets().to_dict())
    with pytest.raises(NoiseError, match="expected a JSON object, got list"):
        NoiseFloor.from_dict([])
    with pytest.raises(NoiseError, match="noise_spec: expected '4', got \"5\""):
        NoiseFloor.from_dict({**floor_of({}).to_dict(), "noise_spec": "5"})


def test_an_older_floor_file_is_read_as_its_run_to_run_figures() -> None:
    """Spec "1" floors were the larger of the run-to-run range and a bootstrap half-width, spec "2" ones the
    range: a CI job that keeps one still gates, its range read as the floor."""
    older = {
        "noise_spec": "1",
        "golden_version": "2026-08-01",
        "runs": ["a.json", "b.json"],
        "bootstrap": {"level": 0.95, "resamples": 1000},
        "core": {"ndcg": {"run_to_run": 0.0, "half_width": 0.0565, "floor": 0.0565}},
        "strata": {"billing": {"mrr": {"run_to_run": 0.02, "half_width": 0.06, "floor": 0.06}}},
    }

    floor = NoiseFloor.from_dict(older)

    assert floor.core == {"ndcg": MetricNoise(0.0)}
    assert floor.strata == {"billing": {"mrr": MetricNoise(0.02)}}
    assert not floor.moves("ndcg") and not floor.moves("mrr")  # the core's range: 0, or not measured
    two = {**older, "noise_spec": "2", "core": {"ndcg": {"run_to_run": 0.01}}, "strata": {}}
    del two["bootstrap"]
    assert NoiseFloor.from_dict(two).core == {"ndcg": MetricNoise(0.01)}
    assert NoiseFloor.from_dict(two).moves("ndcg")
    assert noise_warnings(load_budgets({"strata": {"billing": {}}}), floor) == [
        (
            "stratum billing",
            "stratum billing budgets below the noise floor: MRR warn 0.01 (floor 0.0200): a change this "
            "small happens between runs of one unchanged configuration; raise them to the suggested budgets",
        )
    ]


# ------------------------------------------------------------------------------------------- the gate


def test_a_budget_below_the_floor_is_a_noise_warning_so_the_gate_warns_instead_of_passing() -> None:
    baseline = report(frozenset({1, 2}))
    current = copy.deepcopy(baseline)
    floor = noise_floor([baseline, report(frozenset({1, 2, 3}))])
    budgets = load_budgets({"ndcg": {"warn": 0.001, "fail": 0.005}, "mrr": {"warn": None, "fail": None}})
    assert floor.core["ndcg"].floor is not None and floor.core["ndcg"].floor > 0.005

    quiet = compare(current, baseline, budgets)
    warned = compare(current, baseline, budgets, noise_floor=floor)

    assert quiet.verdict == "pass"
    assert warned.verdict == "warn" and warned.failures == []
    noise = [w for w in warned.warnings if w.kind == "noise"]
    assert [(w.scope, w.metric) for w in noise] == [("core", None)]  # one for the scope, both levels named
    assert noise[0].message.startswith(
        "core budgets below the noise floor: nDCG@k warn 0.001 and fail 0.005 "
    )
    assert warned.to_dict()["noise_floor"] == floor.to_dict()
    assert quiet.to_dict()["noise_floor"] is None
    # Budgets above the floor: nothing to say, the verdict stays pass.
    assert compare(current, baseline, suggest_budgets(floor, budgets), noise_floor=floor).verdict == "pass"


def test_a_scope_where_no_query_counted_has_no_floor_and_keeps_its_budgets() -> None:
    billing = frozenset(range(0, 30, 3))  # every billing query errored in both runs
    floor = noise_floor([report(errored=billing), report(errored=billing)])
    budgets = load_budgets({"strata": {"billing": {"ndcg": {"fail": 0.001}}}})

    assert floor.strata["billing"]["ndcg"] == MetricNoise(None)  # no query counted: no n either
    assert floor.strata["billing"]["ndcg"].floor is None
    assert not [b for b in below_floor(budgets, floor) if b.scope == "stratum billing"]
    assert suggest_budgets(floor, budgets).strata["billing"]["ndcg"] == Budget(0.01, 0.001)
    assert floor.core["ndcg"].floor is not None and math.isfinite(floor.core["ndcg"].floor)
