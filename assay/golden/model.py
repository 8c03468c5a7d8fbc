"""The golden file in memory: plain, immutable data shared by every part (pure, no Django).

`assay.golden.format` parses and dumps it; the metrics engine scores against it; the labeling app
freezes golden versions into it. Field meanings: docs/golden-format.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

TIERS = ("core", "shadow", "challenge")
# A query's traffic band, by its share of the searches in a query log (assay.labels.querylog).
TRAFFIC_BANDS = ("head", "torso", "tail")
DEFAULT_K = 10
DEFAULT_RELEVANT_MIN_GRADE = 2
# A judgment's `source` when a machine judge gave the grade (absent: humans did); the only value so far.
JUDGE = "judge"
JUDGMENT_SOURCES = (JUDGE,)

# JSON scalar values allowed in a query's filters (a filter value may also be a list of these).
FilterValue = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Scale:
    """The inclusive integer grade range: 0..3 by default, 0..1 for binary labels."""

    min: int = 0
    max: int = 3

    def __contains__(self, grade: object) -> bool:
        return isinstance(grade, int) and not isinstance(grade, bool) and self.min <= grade <= self.max

    def __str__(self) -> str:
        return f"{self.min}..{self.max}"


def default_relevant_min_grade(scale: Scale) -> int:
    """The binary cutoff when a file names none: 2 (docs/metrics.md), kept inside the scale (0..1 gives 1)."""
    return min(max(DEFAULT_RELEVANT_MIN_GRADE, scale.min + 1), scale.max)


@dataclass(frozen=True, slots=True)
class Judgment:
    doc_id: str
    grade: int
    # A durable key (canonical URL, external id) resolved to the live doc id at evaluation time.
    key: str | None = None
    # Who gave the grade: None for humans (the field is absent from the file), JUDGE for a qualified
    # machine judge's label (docs/golden-format.md, "Judgment sources").
    source: str | None = None


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    id: str
    text: str
    judgments: tuple[Judgment, ...] = ()
    locale: str | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)
    # The product vertical (billing, docs): the report's strata and the per-stratum budgets.
    stratum: str | None = None
    traffic_band: str | None = None  # one of TRAFFIC_BANDS
    # Why a known failure is in the set: a short slug such as "typo", "synonym", "zero-results".
    failure_mode: str | None = None
    weight: float = 1.0
    tier: str = "core"
    expect_empty: bool = False
    critical: bool = False
    tags: tuple[str, ...] = ()

    @property
    def grades(self) -> dict[str, int]:
        return {j.doc_id: j.grade for j in self.judgments}

    @property
    def has_positive_judgment(self) -> bool:
        """False means the query cannot score above 0 (docs/metrics.md: `no_positive_judgments`)."""
        return any(j.grade >= 1 for j in self.judgments)


@dataclass(frozen=True, slots=True)
class GoldenFile:
    version: str
    queries: tuple[GoldenQuery, ...]
    k: int = DEFAULT_K
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE
    scale: Scale = Scale()
    rubric: str | None = None

    @property
    def sources(self) -> dict[str, int]:
        """How many judgments each source gave ("human" for those without one)."""
        out: dict[str, int] = {}
        for q in self.queries:
            for j in q.judgments:
                source = j.source or "human"
                out[source] = out.get(source, 0) + 1
        return out

    def without_source(self, source: str) -> GoldenFile:
        """The file without the judgments of `source` (e.g. JUDGE: what the humans' labels alone say);
        their documents become unjudged."""
        return replace(
            self,
            queries=tuple(
                replace(q, judgments=tuple(j for j in q.judgments if j.source != source))
                for q in self.queries
            ),
        )

    def query(self, query_id: str) -> GoldenQuery:
        for q in self.queries:
            if q.id == query_id:
                return q
        raise KeyError(query_id)
