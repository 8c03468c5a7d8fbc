"""The name raters read for a study (assay.sxs.names): the reviewer's title when it names nothing compared,
else the day; a typed name that names a target, a parameter or a run by its number is refused in words."""

from __future__ import annotations

from datetime import date

import pytest

from assay.sxs import dated_name, rater_name_default, rater_name_problem

SYSTEMS = ["demo-search", "demo-search-msm1", "rewrite", "min_should_match", "v2"]
MADE = date(2026, 5, 3)


@pytest.mark.parametrize(
    "name",
    ["Checkout wording", "Spring refresh of the help center", "Billing answers, round two", "Study of May"],
)
def test_a_name_that_names_nothing_compared_may_be_read(name: str) -> None:
    assert rater_name_problem(name, systems=SYSTEMS) is None


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("demo-search against msm1", "'demo-search'"),
        ("DEMO-SEARCH-MSM1 trial", "'demo-search', 'demo-search-msm1'"),
        ("rewriter on", "'rewrite'"),  # a longer system word is found inside a word
        ("min_should_match=1", "'min_should_match'"),
        ("the v2 lists", "'v2'"),  # a short one as a whole word only
    ],
)
def test_a_name_that_names_a_system_is_refused_saying_which(name: str, named: str) -> None:
    problem = rater_name_problem(name, systems=SYSTEMS)
    assert problem == f"{name!r} names {named}, which raters may not see"


def test_a_short_system_word_inside_another_word_is_no_match() -> None:
    assert rater_name_problem("v20 lists", systems=["v2"]) is None
    assert rater_name_problem("Lists, v2.", systems=["v2"]) is not None


@pytest.mark.parametrize("name", ["run 12 against run 13", "Run #4", "checking run4"])
def test_a_name_that_names_a_run_by_its_number_is_refused(name: str) -> None:
    assert (
        rater_name_problem(name, systems=[])
        == f"{name!r} names a run by its number, which raters may not see"
    )


def test_an_empty_name_is_refused() -> None:
    assert rater_name_problem("  ", systems=[]) == "say what raters should call the study"


def test_the_default_is_the_title_when_raters_may_read_it() -> None:
    assert rater_name_default("  Checkout wording ", systems=SYSTEMS, made=MADE) == "Checkout wording"


@pytest.mark.parametrize("title", ["", "run 1 against run 2", "demo-search against demo-search-msm1"])
def test_otherwise_the_default_is_the_day(title: str) -> None:
    assert rater_name_default(title, systems=SYSTEMS, made=MADE) == "Study of 3 May 2026"
    assert dated_name(date(2026, 12, 25)) == "Study of 25 December 2026"


def test_a_day_already_taken_gets_the_time_of_day() -> None:
    taken = {"Study of 3 May 2026"}
    assert (
        rater_name_default("", systems=[], made=MADE, at="14:05", taken=taken) == "Study of 3 May 2026, 14:05"
    )
    assert rater_name_default("", systems=[], made=MADE, at="14:05", taken=set()) == "Study of 3 May 2026"
