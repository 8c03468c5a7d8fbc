"""A rater's pace: the median seconds per document, from their own save timestamps (the grading page's
progress strip, docs/labeling.md "Grading").

Each document counts once, at its first save in the period: the gap from the document before it is the
time it took. Gaps longer than `MAX_GAP_SECONDS` are a break, not a document, and are left out.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Hashable, Iterable

# A gap this long is a pause (lunch, a meeting), not time on one document: the grading save counts at
# most ten minutes per save for the same reason.
MAX_GAP_SECONDS = 10 * 60


def first_saves(saves: Iterable[tuple[Hashable, float]]) -> list[float]:
    """The time of each document's first save, in time order; `saves` are (document, seconds)."""
    first: dict[Hashable, float] = {}
    for document, at in saves:
        if document not in first or at < first[document]:
            first[document] = at
    return sorted(first.values())


def pace_seconds(first: Iterable[float], *, max_gap: float = MAX_GAP_SECONDS) -> float | None:
    """The median gap between consecutive first saves, breaks left out; None with no gap to measure."""
    times = sorted(first)
    gaps = [b - a for a, b in itertools.pairwise(times) if b - a <= max_gap]
    return statistics.median(gaps) if gaps else None
