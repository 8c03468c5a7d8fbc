"""A critical query on an engine that moves between runs (docs/metrics.md, "The drift gate", item 6): the
noise floor records each critical query's best document's rank in every A/A run and the deepest rank at
which two runs' lists of any query differed; out of its top ranks within that reach the query is a warning,
past it (or on a deterministic engine, or without such a floor) a failure. Reports are built with the real
report builder and read back through JSON, as artifacts are."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from assay.budgets import load_budgets
from assay.gate import GateResult, compare
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.noise import CriticalReach, NoiseError, NoiseFloor, noise_floor, render_floor, suggest_budgets
from assay.report import build_report
from assay.results import QueryResult

FILLER = tuple(f"x{i}" for i in range(1, 10))
OTHERS = 40  # steady queries beside the critical one: one query in 41 barely moves a mean


def golden() -> GoldenFile:
    judged = (Judgment("best", 3), Judgment("good", 2))
    return GoldenFile(
        version="2026-08-01",
        queries=(
            GoldenQuery(id="nav", text="sign in", critical=True, judgments=judged),
            *(GoldenQuery(id=f"o{i}", text=f"other {i}", judgments=judged) for i in range(OTHERS)),
        ),
    )


def nav_list(rank: int | None) -> tuple[str, ...]:
    """Ten hits with the best document at `rank` (None: not returned) and the good one first or second."""
    rest = ["good", *FILLER] if rank != 1 else ["good", *FILLER[:-1]]
    if rank is None:
        return tuple(rest[:10])
    return tuple([*rest[: rank - 1], "best", *rest[rank - 1 :]][:10])


def report(
    rank: int | None, *, swapped_at: int | None = None, errored: bool = False, ids: bool = True
) -> dict[str, Any]:
    """A run: the critical query's best document at `rank`; the other queries the same in every run, but
    for o0, whose hits at `swapped_at` and the rank above it are swapped; `errored`: the critical query
    failed; `ids=False`: an artifact without the per-query lists (older or hand-made)."""
    steady = ("best", "good", *FILLER[:8])
    results = {f"o{i}": QueryResult(query_id=f"o{i}", ids=steady) for i in range(OTHERS)}
    if swapped_at is not None:
        moved = list(steady)
        moved[swapped_at - 2], moved[swapped_at - 1] = moved[swapped_at - 1], moved[swapped_at - 2]
        results["o0"] = QueryResult(query_id="o0", ids=tuple(moved))
    error = "HTTP 503 after 4 attempts" if errored else None
    results["nav"] = QueryResult(query_id="nav", ids=() if errored else nav_list(rank), error=error)
    built: dict[str, Any] = json.loads(
        json.dumps(build_report(golden(), results, run={"adapter": "http_json"}))
    )
    if not ids:
        for row in built["per_query"]:
            del row["ids"]
    return built


def gate(current: dict[str, Any], floor: NoiseFloor | None, critical_rank: int = 3) -> GateResult:
    return compare(current, report(1), load_budgets({"critical_rank": critical_rank}), noise_floor=floor)


def critical(result: GateResult) -> tuple[list[str], list[str]]:
    """The critical findings: (failures, warnings)."""
    return (
        [f.message for f in result.failures if f.kind == "critical"],
        [w.message for w in result.warnings if w.kind == "critical"],
    )


# A jittered engine's A/A runs: the critical query at ranks 1, 2, 1, and o0's list changed down to rank 5.
MOVING = [report(1), report(2, swapped_at=5), report(1)]
HEAD = "critical query nav: best document (best, grade 3)"


# ------------------------------------------------------------------------------------------- measuring


def test_the_floor_records_each_critical_query_s_ranks_and_the_deepest_change() -> None:
    floor = noise_floor(MOVING)

    assert floor.critical == {"nav": (1, 2, 1)}
    # nav's own lists differ down to rank 2 (best and good swapped), o0's down to rank 5.
    assert floor.deepest_change == 5
    steady = noise_floor([report(4), report(4), report(4)])
    assert (steady.critical, steady.deepest_change) == ({"nav": (4, 4, 4)}, 0)


def test_an_errored_run_of_the_critical_query_says_nothing_of_its_rank() -> None:
    floor = noise_floor([report(1), report(None, errored=True), report(1)])

    assert floor.critical == {"nav": (1, 1)}
    assert floor.deepest_change == 0  # the errored list is compared with nothing
    # Errored in the first run: its lists in the next two are compared with each other.
    later = noise_floor([report(None, errored=True), report(1), report(2)])
    assert (later.critical, later.deepest_change) == ({"nav": (1, 2)}, 2)


def test_runs_whose_rows_are_in_another_order_are_compared_query_by_query() -> None:
    moved = report(1, swapped_at=4)
    moved["per_query"].reverse()

    assert noise_floor([report(1), moved]).deepest_change == 4
    assert noise_floor([report(1), moved, report(1)]).deepest_change == 4


def test_lists_of_different_lengths_differ_down_to_the_longer() -> None:
    shorter = report(1)
    shorter["per_query"][0]["ids"] = shorter["per_query"][0]["ids"][:7]

    assert noise_floor([report(1), shorter]).deepest_change == 10


def test_without_per_query_lists_the_deepest_change_is_not_measured() -> None:
    floor = noise_floor([report(1, ids=False), report(2, ids=False)])

    assert (floor.critical, floor.deepest_change) == ({"nav": (1, 2)}, None)
    # The ranks alone show the engine moves it: the reach is its worst rank there.
    assert floor.critical_reach("nav", 3) == CriticalReach((1, 2), 2, None)


# ------------------------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(
    ("rank", "verdict"),
    [(3, "pass"), (4, "warn"), (5, "warn"), (6, "fail"), (10, "fail"), (None, "fail")],
)
def test_out_of_its_top_ranks_within_the_reach_warns_and_past_it_fails(
    rank: int | None, verdict: str
) -> None:
    result = gate(report(rank), noise_floor(MOVING))

    assert result.verdict == verdict
    failures, warnings = critical(result)
    where = f"at rank {rank}" if rank is not None else "not returned"
    seen = "its ranks there 1, 2, 1; lists changed down to rank 5"
    if verdict == "warn":
        assert (failures, warnings) == (
            [],
            [
                f"{HEAD} {where}, outside the top 3 within the A/A runs' reach ({seen}): the engine is not "
                "deterministic for it; re-run, or make it deterministic"
            ],
        )
    elif verdict == "fail":
        assert (failures, warnings) == (
            [f"{HEAD} {where}, must be within the top 3; past the A/A runs' reach ({seen})"],
            [],
        )


def test_the_reach_is_the_worst_a_a_rank_when_that_is_deeper_than_any_change_of_a_list() -> None:
    # Without the lists, only the ranks tell: 1, 2 and 7 make a reach of 7.
    floor = noise_floor([report(1, ids=False), report(2, ids=False), report(7, ids=False)])

    assert critical(gate(report(7), floor))[1] != []
    assert critical(gate(report(8), floor))[0] != []


def test_not_returned_is_within_the_reach_only_when_an_a_a_run_did_not_return_it() -> None:
    floor = noise_floor([report(1), report(None), report(2)])

    assert floor.critical_reach("nav", 3) == CriticalReach((1, None, 2), None, 10)
    failures, warnings = critical(gate(report(None), floor))
    assert failures == []
    assert warnings == [
        f"{HEAD} not returned, outside the top 3 within the A/A runs' reach (its ranks there 1, not "
        "returned, 2; lists changed down to rank 10): the engine is not deterministic for it; re-run, or "
        "make it deterministic"
    ]


def test_the_top_ranks_are_the_budgets_critical_rank() -> None:
    floor = noise_floor(MOVING)

    assert gate(report(1), floor, critical_rank=1).verdict == "pass"
    # Out of the top 1 at rank 2: the A/A runs had it there and within the top 1.
    assert critical(gate(report(2), floor, critical_rank=1))[1] != []
    assert gate(report(5), floor, critical_rank=5).verdict == "pass"


def test_a_deterministic_engine_fails_as_before() -> None:
    steady = noise_floor([report(1), report(1), report(1)])
    current = report(4)

    assert steady.critical_reach("nav", 3) is None
    expected = [f"{HEAD} at rank 4, must be within the top 3"]
    for floor in (steady, None):
        assert critical(gate(current, floor)) == (expected, [])


def test_a_configuration_that_never_met_the_rule_in_the_a_a_runs_fails() -> None:
    # Its ranks move, but never into the top 3: the rule is not met by the unchanged configuration.
    floor = noise_floor([report(4), report(5, swapped_at=6), report(4)])

    assert floor.critical_reach("nav", 3) is None
    assert critical(gate(report(4), floor)) == ([f"{HEAD} at rank 4, must be within the top 3"], [])


def test_a_query_the_floor_has_no_record_of_fails() -> None:
    unknown = dataclasses.replace(noise_floor(MOVING), critical={})

    assert critical(gate(report(4), unknown))[0] == [f"{HEAD} at rank 4, must be within the top 3"]


def test_a_rebaseline_does_not_excuse_a_critical_query_past_the_reach() -> None:
    result = compare(
        report(6), report(1), load_budgets(None), rebaseline=True, noise_floor=noise_floor(MOVING)
    )

    assert result.verdict == "fail" and [f.kind for f in result.failures] == ["critical"]


# ------------------------------------------------------------------------------------------- the floor file


def test_the_ranks_and_the_deepest_change_survive_the_floor_file() -> None:
    floor = noise_floor([report(1), report(None), report(2, swapped_at=4)])
    data = json.loads(json.dumps(floor.to_dict()))

    assert data["noise_spec"] == "4"
    assert (data["critical"], data["deepest_change"]) == ({"nav": [1, None, 2]}, 10)
    assert NoiseFloor.from_dict(data) == floor


def test_a_spec_3_floor_file_is_read_without_them_and_gates_the_critical_query_as_before() -> None:
    data = noise_floor(MOVING).to_dict()
    older = {key: value for key, value in data.items() if key not in ("critical", "deepest_change")}
    older["noise_spec"] = "3"

    floor = NoiseFloor.from_dict(older)

    assert (floor.critical, floor.deepest_change) == ({}, None)
    assert floor.core == noise_floor(MOVING).core
    assert critical(gate(report(4), floor))[0] == [f"{HEAD} at rank 4, must be within the top 3"]
    with pytest.raises(NoiseError, match="critical: unknown key"):
        NoiseFloor.from_dict({**older, "critical": {}})


def test_bad_ranks_and_a_bad_deepest_change_are_each_named() -> None:
    data = copy.deepcopy(noise_floor(MOVING).to_dict())
    data["critical"] = {"nav": [1, 0], "a": "1", "b": [True], "c": [2, None]}
    data["deepest_change"] = -1

    with pytest.raises(NoiseError) as error:
        NoiseFloor.from_dict(data, where="floor.json")

    expected = "expected a list of ranks (integers >= 1, null: not returned), got"
    assert error.value.problems == [
        f"floor.json: critical.nav: {expected} [1, 0]",
        f'floor.json: critical.a: {expected} "1"',
        f"floor.json: critical.b: {expected} [true]",
        "floor.json: deepest_change: -1 is not an integer >= 0 or null",
    ]
    with pytest.raises(NoiseError, match="critical: expected an object of query id -> ranks, got list"):
        NoiseFloor.from_dict({**data, "critical": [], "deepest_change": 0})


def test_the_floor_table_lists_the_critical_queries_ranks_and_the_deepest_change() -> None:
    budgets = load_budgets(None)
    moving, steady = noise_floor(MOVING), noise_floor([report(1), report(1)])

    assert render_floor(moving, budgets, suggest_budgets(moving, budgets)).splitlines()[-1] == (
        "critical queries' best documents ranked, run by run: nav 1, 2, 1; lists changed down to rank 5 "
        '(docs/metrics.md, "The drift gate", item 6)'
    )
    assert render_floor(steady, budgets, budgets).splitlines()[-1] == (
        "critical queries' best documents ranked, run by run: nav 1, 1; no query's list changed between the "
        'runs (docs/metrics.md, "The drift gate", item 6)'
    )
