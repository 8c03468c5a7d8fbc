"""A rater's pace: the median seconds spent per document (the grading page's progress strip, docs/labeling.md
"Grading").

The time is the one the grading page counts while a document is highlighted in a visible tab and sends with
each save (at most ten minutes a save), summed over a document's saves: the same time the agreement page's
per-rater median is taken from (each judgment's `time_spent_ms`), so both pages state one fact. Gaps between
saves are not used: saves made together (an import, the demo's loader, a rater's second tab) would read as 0 s
a document.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Iterable
from typing import TypeVar

Document = TypeVar("Document", bound=Hashable)


def time_per_document(saves: Iterable[tuple[Document, int]]) -> dict[Document, int]:
    """The milliseconds spent on each document over its saves; `saves` are (document, milliseconds)."""
    spent: dict[Document, int] = {}
    for document, ms in saves:
        spent[document] = spent.get(document, 0) + max(0, ms)
    return spent


def pace_seconds(per_document_ms: Iterable[int]) -> float | None:
    """The median seconds per document; None before the first document."""
    times = list(per_document_ms)
    return statistics.median(times) / 1000 if times else None
