"""A rater's pace (assay.labels.pace): the median gap between documents' first saves, breaks left out."""

from __future__ import annotations

from assay.labels.pace import MAX_GAP_SECONDS, first_saves, pace_seconds


def test_each_document_counts_once_at_its_first_save() -> None:
    saves = [("a", 10.0), ("b", 30.0), ("a", 35.0), ("c", 40.0), ("b", 41.0)]
    assert first_saves(saves) == [10.0, 30.0, 40.0]
    assert first_saves([("a", 50.0), ("a", 20.0)]) == [20.0]


def test_the_pace_is_the_median_gap() -> None:
    assert pace_seconds([0.0, 12.0, 20.0, 50.0]) == 12.0  # gaps 12, 8, 30
    assert pace_seconds([0.0, 10.0, 30.0]) == 15.0  # gaps 10, 20: their mean


def test_a_break_is_no_document_and_nothing_to_measure_is_none() -> None:
    assert pace_seconds([0.0, 20.0, 20.0 + MAX_GAP_SECONDS + 1, 20.0 + MAX_GAP_SECONDS + 31]) == 25.0
    assert pace_seconds([]) is None
    assert pace_seconds([5.0]) is None
    assert pace_seconds([0.0, MAX_GAP_SECONDS + 1]) is None
