"""Calibration rounds' statistics (pure: no Django; builds on `assay.labels.agreement` only).

A calibration round has N raters grade the same queries, every candidate each, to measure the rubric.
Its figures are the everyday ones (`agreement_compute`: alpha with its interval and reading, every
pair's three kappas) plus, per rater:

- **bias**: the mean, over the units the rater graded that another rater graded too, of the rater's
  grade minus the mean of the other raters' grades on that unit. Positive: the rater grades higher than
  the rest of the round. With every rater grading every unit the biases add up to 0.
- **agreement with the median**: the rater's grade against the median of the OTHER raters' grades on
  the unit (their own grade left out, so nobody is compared with themself), as exact, within-1 and the
  number of units compared. The median of an even count is the mean of its two middle grades, so it
  can fall between two grades (1, 1, 2, 2 -> 1.5): there no grade is exact and the two middle grades are
  within 1; `n_between` counts those units.

And the promotion rule: per unit, the median of all the round's grades; an even count whose two middle
grades differ is a tie left to a reviewer (listed with the grades), as `assay.labels.disputes.consolidate`
treats ties. Unlike `consolidate`, a wide spread does not send a unit to a reviewer: with N raters the
median is the rule the reviewer chose by promoting the round.

A figure that cannot be computed is an `Undefined(reason)`, never 0 or NaN. Definitions and worked
examples: docs/agreement.md, section "Calibration rounds".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from assay import display
from assay.golden.model import DEFAULT_RELEVANT_MIN_GRADE, Scale
from assay.labels.agreement import (
    DEFAULT_CONFIDENCE,
    DEFAULT_READING_THRESHOLDS,
    DEFAULT_RESAMPLES,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    AgreementInputError,
    AgreementReport,
    Figure,
    KappaVariant,
    Match,
    PairAgreement,
    RaterFigures,
    Rating,
    ReadingThresholds,
    Undefined,
    agreement_compute,
)

NO_GRADES = "no grades yet"
NO_SHARED = "no item shared with another rater"


@dataclass(frozen=True, slots=True)
class RaterCalibration:
    """One rater of the round: how far their grades sit from the others' (docs/agreement.md)."""

    rater: str
    n_items: int  # units the rater graded
    bias: Figure  # mean of (own grade - mean of the others' grades), over the n_bias units
    n_bias: int  # units the rater graded that at least one other rater graded
    median: Match  # against the median of the other raters' grades (n = n_bias)
    n_between: int  # units where the others' median falls between two grades: never exact there

    def to_dict(self) -> dict[str, Any]:
        return {
            "rater": self.rater,
            "n_items": self.n_items,
            "bias": _plain(self.bias),
            "n_bias": self.n_bias,
            "median": self.median.to_dict(),
            "n_between": self.n_between,
        }


@dataclass(frozen=True, slots=True)
class UnitMedian:
    """One (query, document) of the round with every grade given to it and its median; `grade` is None
    when the median is a tie (an even count whose two middle grades differ) for a reviewer."""

    query_id: str
    doc_id: str
    grades: tuple[int, ...]  # ascending
    grade: int | None

    @property
    def tie(self) -> bool:
        return self.grade is None

    @property
    def grades_text(self) -> str:
        return ", ".join(map(str, self.grades))

    @property
    def reason(self) -> str | None:
        """Why there is no median to promote (the wording of `assay.labels.disputes.consolidate`)."""
        if not self.tie:
            return None
        n = len(self.grades)
        low, high = self.grades[n // 2 - 1], self.grades[n // 2]
        return f"grades {display.grades_text(self.grades)} tie between {low} and {high}: a reviewer decides"

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "grades": list(self.grades),
            "grade": self.grade,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Promotion:
    """What promoting the round would do: every graded unit, in (query, document) order."""

    units: tuple[UnitMedian, ...]

    @property
    def promotable(self) -> tuple[UnitMedian, ...]:
        return tuple(u for u in self.units if not u.tie)

    @property
    def ties(self) -> tuple[UnitMedian, ...]:
        return tuple(u for u in self.units if u.tie)

    def to_dict(self) -> dict[str, Any]:
        return {"units": [u.to_dict() for u in self.units]}


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    raters: tuple[str, ...]  # the round's raters, sorted; those without a grade too
    agreement: AgreementReport  # alpha, kappas, the everyday per-rater figures, over the round only
    rater_figures: tuple[RaterCalibration, ...]  # in `raters` order
    promotion: Promotion

    @property
    def pairs(self) -> tuple[PairAgreement, ...]:
        """Every pair of the round's raters (a < b), with undefined figures where they share nothing."""
        return tuple(self.agreement.pair(a, b) for a, b in itertools.combinations(self.raters, 2))

    def kappa_matrix(self, variant: KappaVariant = "quadratic") -> dict[str, dict[str, Figure]]:
        """Rater x rater kappa over every rater of the round (the diagonal is left out)."""
        return {
            a: {b: self.agreement.pair(a, b).kappa(variant) for b in self.raters if b != a}
            for a in self.raters
        }

    def rater(self, name: str) -> RaterCalibration:
        for figures in self.rater_figures:
            if figures.rater == name:
                return figures
        raise KeyError(name)

    def everyday(self, name: str) -> RaterFigures | None:
        """The rater's `agreement_compute` figures (items, time, distribution); None without a grade."""
        return next((r for r in self.agreement.raters if r.rater == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "raters": list(self.raters),
            "agreement": self.agreement.to_dict(),
            "rater_figures": [r.to_dict() for r in self.rater_figures],
            "pairs": [p.to_dict() for p in self.pairs],
            "promotion": self.promotion.to_dict(),
        }


def unit_median(grades: Sequence[int]) -> int | None:
    """The median grade, or None for a tie: an even count whose two middle grades differ."""
    if not grades:
        raise ValueError("unit_median: no grades")
    ordered = sorted(grades)
    n = len(ordered)
    low, high = ordered[(n - 1) // 2], ordered[n // 2]
    return low if low == high else None


def calibration_promotion(ratings: Iterable[Rating]) -> Promotion:
    """The promotion rule over the round's current grades: per unit the median, ties left out for a
    reviewer. Expects valid ratings (`calibration_compute` checks them)."""
    units: dict[tuple[str, str], list[int]] = {}
    for r in ratings:
        units.setdefault((r.query_id, r.doc_id), []).append(r.grade)
    return Promotion(
        tuple(
            UnitMedian(q, d, tuple(sorted(grades)), unit_median(grades))
            for (q, d), grades in sorted(units.items())
        )
    )


def calibration_compute(
    ratings: Iterable[Rating],
    *,
    raters: Sequence[str] | None = None,
    scale: Scale = DEFAULT_SCALE,
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    reading_thresholds: ReadingThresholds = DEFAULT_READING_THRESHOLDS,
) -> CalibrationReport:
    """Every figure of a calibration round from its raters' current grades.

    `raters` are the round's raters (figures for those without a grade are undefined); left out, the
    raters who graded. Raises AgreementInputError listing every bad input (`agreement_compute`'s
    checks, and a rating by someone who is not one of `raters`).
    """
    rows = list(ratings)
    agreement = agreement_compute(
        rows,
        scale=scale,
        relevant_min_grade=relevant_min_grade,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        reading_thresholds=reading_thresholds,
    )
    names = _raters(rows, raters)
    by_unit: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        by_unit.setdefault((r.query_id, r.doc_id), {})[r.rater] = r.grade
    return CalibrationReport(
        raters=names,
        agreement=agreement,
        rater_figures=tuple(_rater_calibration(name, by_unit) for name in names),
        promotion=calibration_promotion(rows),
    )


def _raters(rows: list[Rating], raters: Sequence[str] | None) -> tuple[str, ...]:
    if raters is None:
        return tuple(sorted({r.rater for r in rows}))
    errors = [
        f"raters[{i}]: {name!r} is not a non-empty string"
        for i, name in enumerate(raters)
        if not isinstance(name, str) or not name
    ]
    seen: dict[str, int] = {}
    for i, name in enumerate(raters):
        if name in seen:
            errors.append(f"raters[{i}]: {name!r} already appears at raters[{seen[name]}]")
        seen.setdefault(name, i)
    known = set(raters)
    errors += [
        f"ratings[{i}].rater: {r.rater!r} is not one of the round's raters"
        for i, r in enumerate(rows)
        if r.rater not in known
    ]
    if errors:
        raise AgreementInputError(errors)
    return tuple(sorted(known))


def _rater_calibration(name: str, by_unit: dict[tuple[str, str], dict[str, int]]) -> RaterCalibration:
    n_items = n = exact = within = between = 0
    diff_sum = Fraction(0)
    for grades in by_unit.values():
        if name not in grades:
            continue
        n_items += 1
        own = grades[name]
        others = sorted(g for rater, g in grades.items() if rater != name)
        if not others:
            continue
        n += 1
        # Exact fractions: a mean of 1/3s summed over many units stays exact until the one division.
        diff_sum += own - Fraction(sum(others), len(others))
        middle = len(others) // 2
        if len(others) % 2:
            median = Fraction(others[middle])
        else:
            median = Fraction(others[middle - 1] + others[middle], 2)
            between += median.denominator != 1
        distance = abs(own - median)
        exact += distance == 0
        within += distance <= 1
    reason = NO_GRADES if not n_items else NO_SHARED
    return RaterCalibration(
        rater=name,
        n_items=n_items,
        bias=float(diff_sum / n) if n else Undefined(reason),
        n_bias=n,
        median=Match(n, exact / n if n else Undefined(reason), within / n if n else Undefined(reason)),
        n_between=between,
    )


def _plain(value: Figure) -> Any:
    return value.to_dict() if isinstance(value, Undefined) else value
