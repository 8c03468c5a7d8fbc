"""The side-by-side analysis' result as plain dataclasses; `SxsAnalysis.to_dict()` is JSON-ready (no NaN:
a figure without a value is None). What each figure means: docs/sxs.md, "Analysis" and "Verdict".

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The version of the analysis' result: an analysis stored by an app under another version is made again
# when read (docs/sxs.md, "Studies stored before the three outcomes"). 2: the three outcomes, `spread` and
# the verdict's `more`.
ANALYSIS_VERSION = 2


@dataclass(frozen=True, slots=True)
class Summary:
    """The preferences of a set of queries (the study's, or one stratum's). Each query counts once, with
    the mean of its raters' preferences in the candidate's favour; `queries` are those with an answer."""

    asked: int  # queries asked (identical ones are not)
    answered: int  # of those, queries with all the answers the study asks for
    queries: int  # queries with at least one answer: what every figure below is over
    mean: float | None
    low: float | None  # 95% percentile bootstrap interval of the mean, resampling queries
    high: float | None
    spread: float | None  # standard deviation of the query means (n - 1); None below two queries
    wins: int  # queries whose mean preference is > 0 (the candidate preferred)
    ties: int  # = 0
    losses: int  # < 0
    win_rate: float | None  # wins / (wins + losses)
    win_low: float | None  # Wilson's 95% interval of the win rate
    win_high: float | None
    sign_p: float | None  # exact two-sided sign test, wins against losses
    wilcoxon_p: float | None  # two-sided Wilcoxon signed-rank test of the query means against 0
    wilcoxon_method: str  # "exact", "exact flips" or "normal" ("" without a p-value)


@dataclass(frozen=True, slots=True)
class Agreement:
    """Ordinal Krippendorff's alpha of the raters' preferences, each query a unit."""

    alpha: float | None
    low: float | None  # 95% percentile bootstrap interval, resampling the queries with two or more raters
    high: float | None
    reading: str | None  # "good", "tentative", "poor"; None when alpha is undefined
    why: str  # the reading's reason, or why there is no alpha or no interval
    queries: int  # queries answered by two or more raters: alpha's units
    resamples_undefined: int  # resamples in which alpha was undefined (left out of the interval)
    split_queries: list[str]  # queries where one rater preferred the candidate and another the baseline


@dataclass(frozen=True, slots=True)
class RaterPosition:
    rater: str
    answers: int
    left_rate: float | None  # share of the rater's non-zero answers that preferred the side on the left
    # Share of the rater's answers on queries others answered too whose direction (-, 0, +) is that of the
    # others' mean there; None when the rater shares no query with another.
    agreement: float | None
    compared: int  # answers on queries others answered too


@dataclass(frozen=True, slots=True)
class Position:
    """Whether raters favour a side for its position: the share of non-zero answers preferring the left."""

    nonzero: int  # answers other than 0: what left_share is over
    left_share: float | None
    low: float | None  # Wilson's 95% interval
    high: float | None
    warn: bool  # the interval excludes 0.5
    raters: list[RaterPosition]


@dataclass(frozen=True, slots=True)
class OfflineRow:
    query_id: str
    stratum: str
    preference: float  # the query's mean preference in the candidate's favour
    ndcg_change: float | None
    # People prefer one side (|preference| >= the preference threshold) and nDCG the other by > margin.
    conflict: bool
    # |preference / 3 - ndcg_change|: both in the candidate's favour on a -1..1 scale; None without nDCG.
    gap: float | None


@dataclass(frozen=True, slots=True)
class MoreQueries:
    """How many more fully answered queries would likely decide an inconclusive study, if its mean and
    spread stay as they are (docs/sxs.md, "How many more queries would likely decide it")."""

    toward: str | None  # "pass" or "fail"; None when only the rule's minimum of queries is missing
    queries: int  # more fully answered queries
    total: int  # fully answered queries in all
    capped: bool  # the estimate is past MORE_CAP: "more than" that


@dataclass(frozen=True, slots=True)
class Verdict:
    result: str  # "pass", "fail" or "inconclusive" (docs/sxs.md, "Verdict")
    why: list[str]  # sentences a reviewer reads
    rule: dict[str, Any]
    more: MoreQueries | None = None  # on an inconclusive verdict, when some number of queries would decide


@dataclass(frozen=True, slots=True)
class SxsAnalysis:
    asked: int  # queries asked: every query of the study but the identical ones
    identical: int  # queries whose lists are identical in the shown top: not asked, in no figure
    answered: int  # asked queries with at least `answers_per_query` answers
    partial: int  # asked queries with some answers, fewer than `answers_per_query`
    unanswered: int  # asked queries with no answer: in no figure
    answers: int
    raters: int
    answers_per_query: int
    overall: Summary
    strata: dict[str, Summary]
    agreement: Agreement
    position: Position
    reasons: dict[str, dict[str, list[str]]]  # side ("baseline", "candidate", "same") -> tag -> queries
    junk: dict[str, list[str]]  # "baseline", "candidate", "critical" (critical, candidate side) -> queries
    offline: list[OfflineRow]
    verdict: Verdict
    method: dict[str, Any] = field(default_factory=dict)  # seed, resamples, level, thresholds used

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
