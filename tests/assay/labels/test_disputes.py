"""Dispute rules at and around each threshold, third-rater choice, and the consolidation table."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.golden.model import Scale
from assay.labels.agreement import AgreementInputError
from assay.labels.disputes import (
    DEFAULT_THRESHOLDS,
    DocGrades,
    Final,
    ItemGrades,
    Thresholds,
    choose_third_rater,
    consolidate,
    labels_consolidate,
    query_dispute,
)

# Off-by-one pairs below the cutoff (0 vs 1 at relevant_min_grade 2): neither hard nor a flip, so only
# the query-level rules can fire. With only such pairs, MAD = 1 - exact.
AGREE, NEAR = (1, 1), (0, 1)


def _docs(agree: int, near: int, *extra: DocGrades) -> list[DocGrades]:
    rows = [AGREE] * agree + [NEAR] * near
    return [DocGrades(f"doc-{i}", grades) for i, grades in enumerate(rows)] + list(extra)


def test_its_default_thresholds_are_the_design_ones() -> None:
    assert Thresholds(hard_diff=2, min_dual_docs=5, min_exact=0.55, max_mad=0.45) == DEFAULT_THRESHOLDS


# Each rule alone: the other threshold is set where it cannot fire.
EXACT_ONLY, MAD_ONLY = Thresholds(max_mad=1.0), Thresholds(min_exact=0.0)


@pytest.mark.parametrize(
    ("thresholds", "agree", "near", "disputed"),
    [
        (EXACT_ONLY, 11, 9, False),  # exact 0.55 exactly: not below the threshold
        (EXACT_ONLY, 5499, 4501, True),  # exact 0.5499
        (EXACT_ONLY, 5501, 4499, False),  # exact 0.5501
        (EXACT_ONLY, 10, 10, True),
        (EXACT_ONLY, 12, 8, False),
        (MAD_ONLY, 11, 9, False),  # MAD 0.45 exactly: not above the threshold
        (MAD_ONLY, 5499, 4501, True),  # MAD 0.4501
        (MAD_ONLY, 5501, 4499, False),  # MAD 0.4499
        (MAD_ONLY, 10, 10, True),
    ],
)
def test_it_disputes_strictly_beyond_each_query_level_threshold(
    thresholds: Thresholds, agree: int, near: int, disputed: bool
) -> None:
    decision = query_dispute(_docs(agree, near), thresholds=thresholds)
    assert decision.disputed is disputed
    assert len(decision.disagreeing_docs) == near
    n = agree + near
    if disputed and thresholds is EXACT_ONLY:
        assert decision.reasons[0].startswith(f"exact agreement {agree}/{n} = ")
        assert decision.reasons[0].endswith(f"is below 0.55 on {n} dual-labeled documents")
    elif disputed:
        assert decision.reasons[0].startswith(f"mean absolute difference {near}/{n} = ")
        assert decision.reasons[0].endswith(f"is above 0.45 on {n} dual-labeled documents")


def test_it_words_the_reasons_with_their_numbers() -> None:
    assert query_dispute(_docs(5499, 4501)).reasons == (
        "exact agreement 5499/10000 = 0.5499 is below 0.55 on 10000 dual-labeled documents",
        "mean absolute difference 4501/10000 = 0.4501 is above 0.45 on 10000 dual-labeled documents",
    )
    assert query_dispute(_docs(11, 9)).disputed is False


def test_it_applies_query_level_rules_from_five_dual_labeled_documents() -> None:
    # Every pair differs by one below the cutoff: exact 0, MAD 1, but no document-level rule fires.
    four = query_dispute(_docs(0, 4, DocGrades("single", (3,)), DocGrades("unrated", ())))
    assert four.agreement.n_dual == 4
    assert four.disputed is False
    assert four.disagreeing_docs == ("doc-0", "doc-1", "doc-2", "doc-3")
    five = query_dispute(_docs(0, 5))
    assert five.disputed is True
    assert len(five.reasons) == 2
    assert query_dispute(_docs(0, 5), thresholds=Thresholds(min_dual_docs=6)).disputed is False


def test_it_disputes_a_hard_disagreement_even_with_few_documents() -> None:
    decision = query_dispute([DocGrades("doc-12", (3, 1)), DocGrades("doc-13", (2, 2))], relevant_min_grade=1)
    assert decision.disputed is True
    assert decision.reasons == ("hard disagreement on doc-12: 1 vs 3",)
    assert decision.disagreeing_docs == ("doc-12",)


@pytest.mark.parametrize(
    ("grades", "hard_diff", "hard"),
    [((0, 2), 2, True), ((0, 1), 2, False), ((1, 3), 3, False), ((0, 3), 3, True)],
)
def test_it_calls_a_disagreement_hard_from_the_threshold(
    grades: tuple[int, int], hard_diff: int, hard: bool
) -> None:
    cutoff = 3 if max(grades) < 3 else 1  # clear of all but (0, 3), which crosses every cutoff
    decision = query_dispute(
        [DocGrades("d", grades)], relevant_min_grade=cutoff, thresholds=Thresholds(hard_diff=hard_diff)
    )
    assert bool(decision.agreement.hard_disagreements) is hard
    assert any(r.startswith("hard disagreement") for r in decision.reasons) is hard


@pytest.mark.parametrize(
    ("grades", "flip"), [((1, 2), True), ((2, 3), False), ((0, 1), False), ((2, 1), True)]
)
def test_it_disputes_a_relevance_flip_across_the_cutoff(grades: tuple[int, int], flip: bool) -> None:
    decision = query_dispute([DocGrades("doc-7", grades)], relevant_min_grade=2)
    assert decision.disputed is flip
    if flip:
        assert decision.reasons == ("relevance flip on doc-7: 1 vs 2 (relevant from grade 2)",)


def test_it_names_a_document_that_is_both_hard_and_flipped_once() -> None:
    decision = query_dispute([DocGrades("d", (0, 3))])
    assert decision.reasons == ("hard disagreement and relevance flip on d: 0 vs 3 (relevant from grade 2)",)


def test_it_ignores_quarrels_outside_the_top_for_the_query_but_still_sends_them_to_a_third_rater() -> None:
    docs = [
        DocGrades("deep", (0, 3), in_top=False),
        DocGrades("near", (1, 2), in_top=False),
        DocGrades("ok", (2, 2)),
    ]
    decision = query_dispute(docs)
    assert decision.disputed is False
    assert decision.reasons == ()
    assert decision.disagreeing_docs == ("deep", "near")
    assert len(decision.agreement.hard_disagreements) == 1


def test_it_decides_the_same_way_every_time_and_in_any_order() -> None:
    docs = _docs(3, 4, DocGrades("z", (0, 2)), DocGrades("y", (3, 1), in_top=False))
    first = query_dispute(docs, query_id="q1")
    shuffled = docs[:]
    random.Random(5).shuffle(shuffled)
    assert query_dispute(shuffled, query_id="q1") == first == query_dispute(docs, query_id="q1")
    assert first.to_dict()["agreement"]["query_id"] == "q1"


def test_it_names_every_bad_document_at_once() -> None:
    docs = [
        DocGrades("a", (1, 5)),
        DocGrades("a", (1,)),
        DocGrades("b", (1,), in_top="yes"),  # type: ignore[arg-type]
        ("c", (1,)),
    ]
    with pytest.raises(AgreementInputError) as caught:
        query_dispute(docs)  # type: ignore[arg-type]
    assert caught.value.errors == [
        "docs[1].doc_id: 'a' already appears at docs[0]",
        "docs[2].in_top: 'yes' must be True or False",
        "docs[3]: ('c', (1,)) is not a DocGrades",
        "grades['a'][1]: 5 is outside the scale 0..3",
    ]


def test_it_validates_thresholds_and_reads_them_from_stored_settings() -> None:
    assert Thresholds.from_mapping({"min_exact": 0.6}) == Thresholds(min_exact=0.6)
    assert Thresholds.from_mapping(Thresholds(max_mad=0.5).to_dict()) == Thresholds(max_mad=0.5)
    with pytest.raises(ValueError, match=r"thresholds: unknown keys \['min_kappa'\]"):
        Thresholds.from_mapping({"min_kappa": 0.4})
    with pytest.raises(ValueError) as caught:
        Thresholds(hard_diff=0, min_dual_docs=2.5, min_exact=1.2, max_mad=-1)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "thresholds.hard_diff: 0 must be a positive integer; "
        "thresholds.min_dual_docs: 2.5 must be a positive integer; "
        "thresholds.min_exact: 1.2 must be a number from 0 to 1; "
        "thresholds.max_mad: -1 must be a finite number >= 0"
    )


# --- third rater ------------------------------------------------------------------------------------


def test_it_picks_the_least_loaded_rater_who_is_neither_of_the_first_two() -> None:
    load = {"alice": 0, "bob": 0, "carol": 5, "dave": 2, "erin": 2}
    assert choose_third_rater(["alice", "bob", "carol", "dave", "erin"], {"alice", "bob"}, load) == "dave"
    # Absent from the load means no open work.
    assert choose_third_rater(["carol", "zoe", "alice"], ["alice", "bob"], load) == "zoe"


def test_it_returns_none_when_only_the_first_two_are_available() -> None:
    assert choose_third_rater(["alice", "bob"], {"alice", "bob"}, {}) is None
    assert choose_third_rater([], set(), {}) is None


def test_it_refuses_a_negative_load() -> None:
    with pytest.raises(ValueError, match=r"load\['carol'\]: -1 must be an integer >= 0"):
        choose_third_rater(["carol"], set(), {"carol": -1})


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 30), min_size=0, max_size=12, unique=True),
    st.lists(st.integers(1, 30), min_size=2, max_size=2, unique=True),
    st.dictionaries(st.integers(1, 30), st.integers(0, 4)),
    st.randoms(),
)
def test_it_never_picks_the_first_two_and_breaks_ties_by_id(
    candidates: list[int], first_two: list[int], load: dict[int, int], rnd: random.Random
) -> None:
    chosen = choose_third_rater(candidates, set(first_two), load)
    eligible = [c for c in candidates if c not in first_two]
    if not eligible:
        assert chosen is None
        return
    assert chosen is not None and chosen not in first_two
    least = min(load.get(c, 0) for c in eligible)
    assert chosen == min(c for c in eligible if load.get(c, 0) == least)
    shuffled = candidates[:]
    rnd.shuffle(shuffled)
    assert choose_third_rater(shuffled, set(first_two), load) == chosen


# --- consolidation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grades", "adjudication", "expected", "final"),
    [
        ((), None, 1, Final(None, None, "no grade yet: awaiting a rater", "first_rater")),
        ((2,), None, 1, Final(2, "single")),
        (
            (2,),
            None,
            2,
            Final(None, None, "dual-labeled with one grade so far: awaiting second rater", "second_rater"),
        ),
        ((2, 2), None, 2, Final(2, "agreed")),
        (
            (2, 1),
            None,
            2,
            Final(None, None, "two grades disagree (1 vs 2): awaiting third rater", "third_rater"),
        ),
        (
            (2, 1),
            None,
            1,
            Final(None, None, "two grades disagree (1 vs 2): awaiting third rater", "third_rater"),
        ),
        ((1, 2, 2), None, 2, Final(2, "median")),
        ((1, 2, 1), None, 2, Final(1, "median")),
        ((3, 3, 3), None, 2, Final(3, "agreed")),
        # Two agree, but the three are two or more apart: a reviewer decides.
        (
            (0, 3, 0),
            None,
            2,
            Final(None, None, "grades 0 vs 0 vs 3 are 3 apart: a reviewer decides", "reviewer"),
        ),
        (
            (0, 2, 1),
            None,
            2,
            Final(None, None, "grades 0 vs 1 vs 2 are 2 apart: a reviewer decides", "reviewer"),
        ),
        (
            (1, 1, 2, 2),
            None,
            2,
            Final(None, None, "grades 1 vs 1 vs 2 vs 2 tie between 1 and 2: a reviewer decides", "reviewer"),
        ),
        ((1, 1, 1, 2), None, 2, Final(1, "median")),
        # An adjudication always wins, whatever the raters said or have not said yet.
        ((0, 3), 2, 2, Final(2, "adjudicated")),
        ((2, 2), 0, 2, Final(0, "adjudicated")),
        ((), 1, 2, Final(1, "adjudicated")),
    ],
)
def test_it_consolidates_by_the_table(
    grades: tuple[int, ...], adjudication: int | None, expected: int, final: Final
) -> None:
    assert consolidate(grades, adjudication=adjudication, expected=expected) == final


def test_it_refuses_bad_grades_adjudications_and_expectations() -> None:
    with pytest.raises(ValueError) as caught:
        consolidate([1, 4, "2"], adjudication=9, expected=3)  # type: ignore[list-item]
    assert str(caught.value) == (
        "grades[1]: 4 is not a grade on 0..3; grades[2]: '2' is not a grade on 0..3; "
        "adjudication: 9 is not a grade on 0..3; expected: 3 must be 1 (single-labeled) or 2 (dual-labeled)"
    )
    assert consolidate([1, 0], expected=2, scale=Scale(0, 1)).awaiting == "third_rater"


def test_it_consolidates_a_golden_set_and_lists_what_is_unresolved() -> None:
    result = labels_consolidate(
        [
            ItemGrades("q1", "a", (2,), expected=1),
            ItemGrades("q1", "b", (1, 2), expected=2),
            ItemGrades("q1", "c", (1, 2, 2), expected=2),
            ItemGrades("q2", "a", (0, 3, 3), expected=2),
            ItemGrades("q2", "b", (0, 3, 3), expected=2, adjudication=3),
        ]
    )
    assert result.labels == {("q1", "a"): 2, ("q1", "c"): 2, ("q2", "b"): 3}
    assert [(q, d, f.awaiting) for q, d, f in result.unresolved] == [
        ("q1", "b", "third_rater"),
        ("q2", "a", "reviewer"),
    ]
    data = result.to_dict()
    assert [row["method"] for row in data["labels"]] == ["single", "median", "adjudicated"]
    assert data["unresolved"][1]["unresolved_reason"] == "grades 0 vs 3 vs 3 are 3 apart: a reviewer decides"


def test_it_names_every_bad_item_when_consolidating_a_set() -> None:
    with pytest.raises(AgreementInputError) as caught:
        labels_consolidate(
            [
                ItemGrades("q", "a", (1,), expected=1),
                ItemGrades("q", "a", (2,), expected=1),
                ItemGrades("q", "b", (7,), expected=1),
            ]
        )
    assert caught.value.errors == [
        "items[1]: ('q', 'a') already appears at items[0]",
        "items[2] ('q', 'b'): grades[0]: 7 is not a grade on 0..3",
    ]


def test_it_gives_the_reasons_docs_agreement_md_shows() -> None:
    docs = [
        DocGrades("d1", (2, 2)),
        DocGrades("d2", (1, 2)),
        DocGrades("d3", (0, 3)),
        DocGrades("d4", (3, 3)),
        DocGrades("d5", (0, 1)),
        DocGrades("d6", (1, 1, 2)),
    ]
    decision = query_dispute(docs, query_id="q-7")
    assert decision.reasons == (
        "relevance flip on d2: 1 vs 2 (relevant from grade 2)",
        "hard disagreement and relevance flip on d3: 0 vs 3 (relevant from grade 2)",
        "relevance flip on d6: 1 vs 1 vs 2 (relevant from grade 2)",
        "exact agreement 3/8 = 0.375 is below 0.55 on 6 dual-labeled documents",
        "mean absolute difference 7/8 = 0.875 is above 0.45 on 6 dual-labeled documents",
    )
    assert decision.disagreeing_docs == ("d2", "d3", "d5", "d6")
