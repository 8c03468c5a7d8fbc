"""How wide a study's interval will likely be at a given size, before it is made, and whether that width
can separate the rule's bound from 0 (docs/sxs.md, "How wide the interval will likely be").

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from assay.changes import TOLERANCE
from assay.sxs.stats import Z
from assay.sxs.types import SxsRule
from assay.sxs.verdict import shown, threshold

# The spread (standard deviation of the query means, on -3..3) assumed for a set without an earlier study
# that has one: answers of two raters on queries whose lists differ, spread over "slightly" to "much"
# either way. An assumption, said as such wherever it is used.
DEFAULT_SPREAD = 1.25


@dataclass(frozen=True, slots=True)
class Expectation:
    """The likely 95% interval of a study of `queries` queries, and the warning when it cannot decide."""

    queries: int
    spread: float  # per query, on -3..3
    studies: int  # earlier studies the spread was pooled over; 0: DEFAULT_SPREAD
    half_width: float  # the interval will likely be the mean +- this
    needed: int | None  # queries at which a mean of 0 would likely pass; None when no size would
    warn: bool  # half_width > |min_lower|: even a mean of 0 would likely stay inconclusive
    text: str  # the line the form and the creation say
    warning: str  # why it cannot decide ("" unless warn)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _wider(half: float, distance: float) -> str:
    """`half` (> `distance`) with two decimals, more when rounding would make it read as no wider."""
    return next(
        (text for decimals in range(2, 17) if float(text := f"{half:.{decimals}f}") > distance), repr(half)
    )


def pooled_spread(studies: Iterable[tuple[int | None, float | None]]) -> tuple[float | None, int]:
    """The spread pooled over studies given as (queries in the figures, spread), those with a spread (two
    or more queries) only: sqrt(sum((Q - 1) s^2) / sum(Q - 1)); and how many were pooled."""
    kept = [(q, s) for q, s in studies if q is not None and q > 1 and s is not None]
    weight = sum(q - 1 for q, _ in kept)
    if not weight:
        return None, 0
    return math.sqrt(sum((q - 1) * s * s for q, s in kept) / weight), len(kept)


def expect(queries: int, rule: SxsRule, spread: float | None = None, studies: int = 0) -> Expectation:
    """What a study of `queries` queries will likely show: the interval's half-width Z * spread / sqrt(n)
    (the default spread when `spread` is None), and whether it is wider than the rule's bound is from 0."""
    if queries < 1:
        raise ValueError(f"queries: {queries!r} must be at least 1")
    s = DEFAULT_SPREAD if spread is None else spread
    half = Z * s / math.sqrt(queries)
    bound = rule.min_lower
    source = (
        f"pooled over {studies} earlier {'study' if studies == 1 else 'studies'} of this set"
        if spread is not None
        else "the default: no earlier study of this set has two or more answered queries"
    )
    text = (
        f"At {queries:,} {'query' if queries == 1 else 'queries'} the 95% interval of the mean preference"
        f" will likely be about ±{shown(half)} (a spread of {shown(s)} per query, {source})"
    )
    needed: int | None = None
    if bound < -TOLERANCE:
        needed = max(1, math.ceil((Z * s / -bound) ** 2 - TOLERANCE))
        warn = half > -bound + TOLERANCE
        text += f"; about {needed:,} queries would let a candidate as good as the baseline pass"
        warning = (
            f"±{_wider(half, -bound)} is wider than the {threshold(-bound)} between the rule's bound"
            f" ({threshold(bound)}) and 0: even a candidate as good as the baseline would likely stay"
            f" inconclusive at {queries:,} queries; about {needed:,} would let it pass"
            if warn
            else ""
        )
    else:
        warn = True
        warning = (
            f"the rule's bound is {threshold(bound)}: a candidate as good as the baseline never passes, at"
            f" any size; at {queries:,} queries one passes when its mean is above about {shown(bound + half)}"
        )
    return Expectation(queries, s, studies if spread is not None else 0, half, needed, warn, text, warning)
