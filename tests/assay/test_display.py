"""The one vocabulary of the pages (assay.display, the `display` template filters): params and stage
toggles as typed, a dispute's grades lowest first, a gate finding without its scope twice, numbers and
thresholds."""

from __future__ import annotations

from typing import Any

import pytest

from assay import display
from assay.labels.disputes import DocGrades, consolidate, query_dispute


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({}, "none"),
        (None, "none"),
        ({"rewrite": True}, "rewrite=true"),
        ({"rewrite": False, "size": 10, "mode": "fast"}, 'rewrite=false size=10 mode="fast"'),
        ({"boost": None, "tags": ["a"]}, 'boost=null tags=["a"]'),
        ({"lang": "français"}, 'lang="français"'),
    ],
)
def test_params_and_toggles_read_as_typed(params: Any, text: str) -> None:
    assert display.params_text(params) == text


def test_overrides_name_each_key_once_with_the_targets_own_value() -> None:
    assert display.overrides_text({"rewrite": False}, {"rewrite": True}) == "rewrite (target: false)"
    assert (
        display.overrides_text({"rewrite": False}, {"rewrite": True, "size": 5})
        == "rewrite (target: false), size (target: not set)"
    )
    assert display.overrides_text({"rewrite": False}, {}) == ""
    assert display.overrides_text(None, None) == ""


@pytest.mark.parametrize(
    ("grades", "text"),
    [((3, 1), "1 vs 3"), ((1, 3), "1 vs 3"), ((2, 0, 0), "0 vs 0 vs 2"), ((2,), "2")],
)
def test_a_disputes_grades_read_lowest_first_whoever_graded_first(grades: tuple[int, ...], text: str) -> None:
    assert display.grades_text(grades) == text


def test_the_dispute_rules_and_consolidation_word_grades_the_same_way() -> None:
    for order in ((3, 1), (1, 3)):
        decision = query_dispute([DocGrades("d1", order)], query_id="q")
        assert decision.reasons == (
            "hard disagreement and relevance flip on d1: 1 vs 3 (relevant from grade 2)",
        )
        final = consolidate(order, expected=2)
        assert final.unresolved_reason == "two grades disagree (1 vs 3): awaiting third rater"
    assert (
        consolidate((3, 0, 0), expected=2).unresolved_reason
        == "grades 0 vs 0 vs 3 are 3 apart: a reviewer decides"
    )


@pytest.mark.parametrize(
    ("scope", "message", "text"),
    [
        ("stratum billing", "stratum billing nDCG@k drop 0.19", "nDCG@k drop 0.19"),
        ("core", "core MRR drop 0.07", "MRR drop 0.07"),
        ("all", "current error rate 0.1667", "current error rate 0.1667"),
        (None, "a note", "a note"),
        ("stratum bill", "stratum billing nDCG@k drop", "stratum billing nDCG@k drop"),
    ],
)
def test_a_finding_shows_its_scope_once(scope: str | None, message: str, text: str) -> None:
    assert display.finding_text(scope, message) == text


def test_numbers_and_thresholds() -> None:
    assert display.number(0.80271) == "0.8027"
    assert display.number(None) == "—"
    assert display.signed(-3e-17) == "+0.0000"
    assert display.signed(0.0968) == "+0.0968"
    assert display.number(0.5, 2) == "0.50"
    assert [display.threshold(v) for v in (0.025, 0.005, 3, None, 1e-05)] == [
        "0.025",
        "0.005",
        "3",
        "off",
        "1e-05",
    ]
    assert display.threshold("x") == "—"


def test_a_count_takes_its_noun_in_the_right_number() -> None:
    """Never "document(s)" or "quer(y/ies)" in what a person reads."""
    assert display.counted(1, "document") == "1 document"
    assert display.counted(0, "document") == "0 documents"
    assert display.counted(2, "query", "queries") == "2 queries"
    assert display.counted(1, "query", "queries") == "1 query"
    assert display.in_number(1, "user") == "user"
    assert display.in_number(2, "user") == "users"
    assert display.in_number(1, "goes", "go") == "goes"
    assert display.in_number(3, "goes", "go") == "go"


@pytest.mark.parametrize(
    ("sent", "stages", "label"),
    [
        ({}, {}, "run 1 demo-search"),
        ({"rewrite": False}, {"rewrite": False}, "run 1 demo-search"),  # a stage off is its default
        ({"rewrite": True}, {"rewrite": False}, "run 1 demo-search (rewrite=true)"),  # flipped by the run
        ({"rewrite": True}, {"rewrite": True}, "run 1 demo-search (rewrite=true)"),  # on by the target
        (
            {"min_should_match": 1, "rewrite": False},
            {"rewrite": False},
            "run 1 demo-search (min_should_match=1)",
        ),
        ({"fuzzy": False}, {}, "run 1 demo-search (fuzzy=false)"),  # a param, not a stage: sent, so shown
        ({"mode": "fast", "w": 3}, None, 'run 1 demo-search (mode="fast" w=3)'),
        (None, None, "run 1 demo-search"),
    ],
)
def test_a_run_is_named_with_what_it_sent_beyond_the_defaults(sent: Any, stages: Any, label: str) -> None:
    assert display.run_label(1, "demo-search", sent, stages) == label
