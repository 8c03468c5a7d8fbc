"""The agreement figures as plain dataclasses (each with `to_dict()`, JSON-ready), `Undefined` for a
figure without a value, the input row `Rating`, and the defaults.

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from assay.golden.model import Scale

DEFAULT_SCALE = Scale()
DEFAULT_HARD_DIFF = 2
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
# Any fixed seed will do; fixed so that a dashboard shows the same interval on every load.
DEFAULT_SEED = 20_240_611
# Krippendorff (2004, 2011): rely on data with alpha >= 0.800; 0.667 is the lowest limit for tentative
# conclusions. The readings' defaults (a golden set can set its own, `ReadingThresholds`).
ALPHA_RELIABLE = 0.8
ALPHA_TENTATIVE = 0.667
# Fewer resampled queries than this and an interval says too little to read (docs/agreement.md, "Readings").
MIN_PAIRABLE_UNITS = 10
NOT_ENOUGH_DATA = "not enough data"
NO_SHARED_ITEMS = "no shared items"
# Shown in an error message before the rest is summarised as "... and N more".
MAX_ERRORS_SHOWN = 20

KappaVariant = Literal["quadratic", "unweighted", "binary"]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class AgreementInputError(ValueError):
    """Every problem in the input at once, each naming its place (`ratings[3].grade: ...`)."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        shown = self.errors[:MAX_ERRORS_SHOWN]
        more = len(self.errors) - len(shown)
        super().__init__("; ".join(shown) + (f"; ... and {more} more" if more else ""))


@dataclass(frozen=True, slots=True)
class Undefined:
    """A figure that has no value for these data; `reason` is shown in its place."""

    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"undefined": True, "reason": self.reason}


Figure = float | Undefined
Interval = tuple[float, float] | Undefined


def reading_thresholds_errors(
    reliable_min: object, tentative_min: object, min_pairable_units: object
) -> dict[str, str]:
    """What is wrong with these reading thresholds, by field (empty when nothing is)."""
    errors: dict[str, str] = {}
    numbers: list[float] = []
    for name, value in (("reliable_min", reliable_min), ("tentative_min", tentative_min)):
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            numbers.append(float(value))
        else:
            errors[name] = f"{value!r} must be a number"
    if not errors:
        reliable, tentative = numbers
        if tentative <= 0:
            errors["tentative_min"] = f"{tentative_min} must be above 0"
        elif tentative > reliable:
            errors["tentative_min"] = f"{tentative_min} must not be above reliable_min ({reliable_min})"
        if reliable > 1:
            errors["reliable_min"] = f"{reliable_min} must be at most 1 (alpha and kappa never exceed 1)"
    if type(min_pairable_units) is not int or min_pairable_units < 2:
        errors["min_pairable_units"] = (
            f"{min_pairable_units!r} must be a whole number of at least 2 (the interval resamples queries)"
        )
    return errors


@dataclass(frozen=True, slots=True)
class ReadingThresholds:
    """When alpha or a kappa reads "reliable" or "tentative" (docs/agreement.md, "Readings"): the golden
    set's settings, Krippendorff's limits by default. 0 < tentative_min <= reliable_min <= 1;
    `min_pairable_units` counts the queries the interval resamples, at least 2."""

    reliable_min: float = ALPHA_RELIABLE
    tentative_min: float = ALPHA_TENTATIVE
    min_pairable_units: int = MIN_PAIRABLE_UNITS

    def __post_init__(self) -> None:
        errors = reading_thresholds_errors(self.reliable_min, self.tentative_min, self.min_pairable_units)
        if errors:
            raise ValueError("; ".join(f"{name}: {message}" for name, message in errors.items()))

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


DEFAULT_READING_THRESHOLDS = ReadingThresholds()


@dataclass(frozen=True, slots=True)
class Rating:
    """One rater's current grade for one (query, document); `time_ms` is the time spent on it if known."""

    query_id: str
    doc_id: str
    rater: str
    grade: int
    time_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """How often a rater's grades equal, or are within one grade of, a reference over `n` comparisons."""

    n: int
    exact: Figure
    within_1: Figure

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class AlphaResult:
    value: Figure
    # Percentile bootstrap interval at `confidence`, resampling whole queries.
    interval: Interval
    # One of READINGS, from the interval and `thresholds` (`figure_reading`); `reading_why` says why, e.g.
    # "lower bound 0.712 >= 0.667; reliable needs >= 0.800".
    reading: str
    reading_why: str
    thresholds: ReadingThresholds
    n_units: int  # (query, document) units with two or more grades
    n_pairable: int  # grades in those units
    n_queries: int  # queries with at least one such unit: what the bootstrap resamples
    n_resamples: int
    # Resamples whose grades all fell in one category (alpha undefined there); left out of the interval.
    n_resamples_undefined: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class PairAgreement:
    """Two raters over the items both graded; distributions are over those shared items only."""

    rater_a: str
    rater_b: str
    n_shared: int
    kappa_quadratic: Figure
    kappa_unweighted: Figure
    kappa_binary: Figure
    exact: Figure
    within_1: Figure
    distribution_a: dict[int, int]
    distribution_b: dict[int, int]
    # The quadratic kappa's bootstrap interval over the queries in which the two share an item
    # (`n_queries`, resampled whole as for alpha) and its reading, as alpha's.
    n_queries: int
    kappa_quadratic_interval: Interval
    kappa_quadratic_reading: str
    kappa_quadratic_reading_why: str
    thresholds: ReadingThresholds

    def kappa(self, variant: KappaVariant) -> Figure:
        return {
            "quadratic": self.kappa_quadratic,
            "unweighted": self.kappa_unweighted,
            "binary": self.kappa_binary,
        }[variant]

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class DocDisagreement:
    doc_id: str
    grades: tuple[int, ...]  # ascending

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class QueryAgreement:
    """One query's dual-labeled documents. Every pair of grades on a document counts once."""

    query_id: str
    n_docs: int  # documents with at least one grade
    n_dual: int  # documents with two or more grades
    n_pairs: int  # grade pairs compared
    n_exact: int  # pairs with equal grades
    abs_diff_sum: int  # sum over the pairs of |grade difference|
    # Documents whose grades differ at all (they need a third rater), and the two kinds of bad ones.
    disagreements: tuple[DocDisagreement, ...]
    hard_disagreements: tuple[DocDisagreement, ...]  # some pair differs by >= hard_diff
    relevance_flips: tuple[DocDisagreement, ...]  # some grade >= the cutoff and some below it

    # Integer counts divided once, so that a threshold such as 0.55 compares exactly with 11/20.
    @property
    def exact(self) -> Figure:
        return figure_ratio(self.n_exact, self.n_pairs, "no dual-labeled documents")

    @property
    def mad(self) -> Figure:
        """Mean absolute difference over the pairs."""
        return figure_ratio(self.abs_diff_sum, self.n_pairs, "no dual-labeled documents")

    def to_dict(self) -> dict[str, Any]:
        return {**_fields(self), "exact": _plain(self.exact), "mad": _plain(self.mad)}


@dataclass(frozen=True, slots=True)
class RaterFigures:
    rater: str
    n_items: int
    median_time_ms: Figure
    distribution: dict[int, int]
    peers: Match  # every pair with another rater on a shared item
    consensus: Match  # against the final labels passed in (the rater's own grade helped make them)
    gold: Match  # against known answers

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class AgreementReport:
    scale: Scale
    relevant_min_grade: int
    hard_diff: int
    alpha: AlphaResult
    raters: tuple[RaterFigures, ...]
    # Only pairs with at least one shared item; `pair()` answers for the others too.
    pairs: tuple[PairAgreement, ...]
    queries: tuple[QueryAgreement, ...]

    def pair(self, a: str, b: str) -> PairAgreement:
        """The pair's figures in (a, b) order; a pair with nothing in common gets undefined ones."""
        if a == b:
            raise ValueError(f"pair: {a!r} twice; a pair is two different raters")
        lo, hi = sorted((a, b))
        found = next((p for p in self.pairs if p.rater_a == lo and p.rater_b == hi), None)
        if found is None:
            found = _pair_without_overlap(lo, hi, self.scale, self.alpha.thresholds)
        return found if (a, b) == (lo, hi) else _swap(found)

    def kappa_matrix(self, variant: KappaVariant = "quadratic") -> dict[str, dict[str, Figure]]:
        """Rater x rater kappa (symmetric; the diagonal is left out) for the dashboard."""
        names = [r.rater for r in self.raters]
        known = {(p.rater_a, p.rater_b): p.kappa(variant) for p in self.pairs}
        none = Undefined(NO_SHARED_ITEMS)
        return {a: {b: known.get((min(a, b), max(a, b)), none) for b in names if b != a} for a in names}

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


def grade_distribution(counts: Iterable[int], scale: Scale) -> dict[int, int]:
    return {scale.min + i: int(c) for i, c in enumerate(counts)}


def figure_ratio(count: float, n: float, reason: str) -> Figure:
    return float(count) / float(n) if n else Undefined(reason)


def _pair_without_overlap(a: str, b: str, scale: Scale, thresholds: ReadingThresholds) -> PairAgreement:
    none = Undefined(NO_SHARED_ITEMS)
    zeros = grade_distribution([0] * (scale.max - scale.min + 1), scale)
    return PairAgreement(
        a, b, 0, none, none, none, none, none, zeros, dict(zeros),
        0, none, NOT_ENOUGH_DATA, f"undefined: {NO_SHARED_ITEMS}", thresholds,
    )  # fmt: skip


def _swap(p: PairAgreement) -> PairAgreement:
    # Every figure here is symmetric in the two raters; only the labels and distributions trade places.
    return replace(
        p,
        rater_a=p.rater_b,
        rater_b=p.rater_a,
        distribution_a=p.distribution_b,
        distribution_b=p.distribution_a,
    )


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}


def _plain(value: Any) -> Any:
    """JSON-ready form: Undefined as {"undefined": true, "reason": ...}, mapping keys as strings."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
