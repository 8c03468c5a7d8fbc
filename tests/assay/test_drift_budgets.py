"""Budgets files: defaults (docs/metrics.md), nested and flat forms, strata, every bad key or value."""

from __future__ import annotations

from typing import Any

import pytest

from assay.drift import Budget, Budgets, BudgetsError, load_budgets


def problems(data: Any) -> list[str]:
    with pytest.raises(BudgetsError) as caught:
        load_budgets(data)
    return caught.value.problems


def test_it_defaults_to_the_seeds_table() -> None:
    budgets = load_budgets(None)
    assert budgets.core == {
        "ndcg": Budget(warn=0.01, fail=0.025),
        "mrr": Budget(warn=0.01, fail=0.03),
        "precision_at_k": Budget(warn=0.02, fail=0.04),
        "empty_rate": Budget(warn=0.005, fail=0.015),
        "lt3_rate": Budget(warn=None, fail=None),  # not gated unless a budgets file says so
    }
    assert (budgets.max_error_rate, budgets.critical_rank) == (0.0, 3)
    assert budgets.shadow_empty_rate == Budget(warn=0.005, fail=0.015)
    assert budgets.strata == {}
    assert load_budgets({}) == budgets == Budgets()


def test_it_overrides_only_the_levels_a_file_states() -> None:
    budgets = load_budgets({"ndcg": {"fail": 0.05}, "lt3_rate": {"warn": 0.02}, "mrr": {"warn": None}})
    assert budgets.core["ndcg"] == Budget(warn=0.01, fail=0.05)
    assert budgets.core["lt3_rate"] == Budget(warn=0.02, fail=None)
    assert budgets.core["mrr"] == Budget(warn=None, fail=0.03)  # null turns a level off


def test_it_reads_the_seeds_flat_form_as_fail_budgets() -> None:
    budgets = load_budgets(
        {"ndcg_max_drop": 0.02, "mrr_max_drop": 0.05, "precision_max_drop": 0.06, "empty_rate_max_rise": 0.01}
    )
    assert budgets.core["ndcg"] == Budget(warn=0.01, fail=0.02)
    assert budgets.core["mrr"] == Budget(warn=0.01, fail=0.05)
    assert budgets.core["precision_at_k"] == Budget(warn=0.02, fail=0.06)
    assert budgets.core["empty_rate"] == Budget(warn=0.005, fail=0.01)


def test_it_refuses_a_fail_budget_given_twice() -> None:
    assert problems({"ndcg_max_drop": 0.02, "ndcg": {"fail": 0.03}}) == [
        "ndcg_max_drop: ndcg.fail is given too; say the fail budget once"
    ]


def test_it_gates_a_named_stratum_with_the_global_budgets_overridden_by_its_own() -> None:
    budgets = load_budgets(
        {"ndcg": {"warn": 0.02}, "strata": {"billing": {"ndcg": {"fail": 0.015}}, "docs": {}}}
    )
    assert budgets.strata["billing"]["ndcg"] == Budget(warn=0.02, fail=0.015)
    assert budgets.strata["billing"]["mrr"] == Budget(warn=0.01, fail=0.03)
    assert budgets.strata["docs"] == budgets.core


def test_it_sets_the_shadow_empty_rate_budget_and_the_global_limits() -> None:
    budgets = load_budgets(
        {"shadow": {"empty_rate": {"fail": 0.1}}, "max_error_rate": 0.02, "critical_rank": 1}
    )
    assert budgets.shadow_empty_rate == Budget(warn=0.005, fail=0.1)
    assert (budgets.max_error_rate, budgets.critical_rank) == (0.02, 1)


def test_it_round_trips_through_to_dict() -> None:
    data = {
        "ndcg": {"warn": 0.02, "fail": None},
        "lt3_rate": {"warn": 0.05, "fail": 0.1},
        "max_error_rate": 0.01,
        "critical_rank": 5,
        "shadow": {"empty_rate": {"warn": 0.01, "fail": 0.2}},
        "strata": {"billing": {"ndcg": {"fail": 0.015}}},
    }
    budgets = load_budgets(data)
    assert load_budgets(budgets.to_dict()) == budgets
    as_dict = budgets.to_dict()
    assert as_dict["ndcg"] == {"warn": 0.02, "fail": None}
    assert as_dict["strata"]["billing"]["ndcg"] == {"warn": 0.02, "fail": 0.015}
    assert as_dict["shadow"] == {"empty_rate": {"warn": 0.01, "fail": 0.2}}


def test_it_names_every_unknown_key_with_a_suggestion() -> None:
    found = problems(
        {
            "ndgc": {"fail": 0.1},
            "mrr": {"wran": 0.1},
            "shadow": {"ndcg": {"fail": 0.1}},
            "strata": {"billing": {"ndcg_max_drop": 0.1}},
        }
    )
    assert found[0].startswith("ndgc: unknown key (did you mean 'ndcg'?)")
    assert found[1].startswith("mrr.wran: unknown key (did you mean 'warn'?)")
    assert found[2].startswith("shadow.ndcg: unknown key") and "gates only on empty_rate" in found[2]
    assert found[3].startswith("strata.billing.ndcg_max_drop: unknown key")
    assert len(found) == 4


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"ndcg": {"fail": -0.1}},
            "ndcg.fail: -0.1 is not a positive finite number (use null to turn it off)",
        ),
        ({"ndcg": {"fail": 0}}, "ndcg.fail: 0 is not a positive finite number (use null to turn it off)"),
        ({"mrr": {"warn": True}}, "mrr.warn: True is not a positive finite number (use null to turn it off)"),
        (
            {"mrr": {"warn": "0.1"}},
            "mrr.warn: '0.1' is not a positive finite number (use null to turn it off)",
        ),
        (
            {"mrr": {"warn": float("nan")}},
            "mrr.warn: nan is not a positive finite number (use null to turn it off)",
        ),
        (
            {"ndcg_max_drop": -1},
            "ndcg_max_drop: -1 is not a positive finite number (use null to turn it off)",
        ),
        ({"ndcg": 0.02}, 'ndcg: expected an object like {"warn": 0.01, "fail": 0.025}, got 0.02'),
        ({"max_error_rate": 1.5}, "max_error_rate: 1.5 is not a number between 0 and 1"),
        ({"max_error_rate": None}, "max_error_rate: None is not a number between 0 and 1"),
        ({"critical_rank": 0}, "critical_rank: 0 is not a positive integer"),
        ({"critical_rank": 2.5}, "critical_rank: 2.5 is not a positive integer"),
        ({"shadow": []}, 'shadow: expected an object like {"empty_rate": {...}}, got []'),
        ({"strata": ["billing"]}, "strata: expected an object of stratum name -> budgets, got ['billing']"),
        (
            {"strata": {"billing": 0.1}},
            "strata.billing: expected an object of metric -> {warn, fail}, got 0.1",
        ),
    ],
)
def test_it_names_each_bad_value(data: dict[str, Any], message: str) -> None:
    assert problems(data) == [message]


def test_it_reports_every_problem_at_once() -> None:
    with pytest.raises(BudgetsError) as caught:
        load_budgets({"ndcg": {"fail": 0}, "critical_rank": -1, "x": 1})
    assert len(caught.value.problems) == 3
    text = str(caught.value)
    assert text.startswith("invalid budgets:\n")
    assert all(problem in text for problem in caught.value.problems)


def test_it_refuses_a_budgets_document_that_is_not_an_object() -> None:
    assert problems([1, 2]) == ["budgets: expected a JSON object, got list"]
