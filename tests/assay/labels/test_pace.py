"""A rater's pace (assay.labels.pace): the median seconds spent per document, each document's time summed
over its saves (the time the agreement page's per-rater median is taken from)."""

from __future__ import annotations

from assay.labels.pace import pace_seconds, time_per_document


def test_each_documents_time_is_summed_over_its_saves() -> None:
    saves = [("a", 4000), ("b", 3000), ("a", 1000), ("c", 0), ("b", -5)]
    assert time_per_document(saves) == {"a": 5000, "b": 3000, "c": 0}


def test_the_pace_is_the_median_over_documents_in_seconds() -> None:
    assert pace_seconds([5000, 3000, 4400]) == 4.4
    assert pace_seconds([3000, 6000]) == 4.5  # two: their mean
    assert pace_seconds([0]) == 0.0  # saved with no time counted (an import): said as it is
    assert pace_seconds([]) is None


def test_saves_made_together_still_have_their_pace() -> None:
    """The demo loads its grades in one go: the gaps between saves are 0, the time counted is not."""
    saves = [(n, 3000 + 700 * (n % 7)) for n in range(20)]
    assert pace_seconds(time_per_document(saves).values()) == 5.1
