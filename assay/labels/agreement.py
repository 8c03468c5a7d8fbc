"""Inter-rater agreement statistics over flat ratings (pure: no Django, no other labeling module).

The Django side hands over plain `Rating` rows and gets plain dataclasses back (each with `to_dict()`).
Definitions, readings and worked examples: docs/agreement.md. In short:

- Krippendorff's alpha, ordinal, over every (query, document) unit with two or more grades, with the
  scale as the value domain: `krippendorff.alpha(value_counts=<units x grades>, value_domain=<scale>,
  level_of_measurement="ordinal")`, called once (not when only one grade is in use). The 95% interval
  is a percentile bootstrap that resamples whole queries (documents of one query are not independent:
  same rater, same rubric reading).
- Readings (alpha's and each pair's quadratic kappa): from the interval's bounds against the golden
  set's `ReadingThresholds`, "not enough data" when the interval spans the tentative limit or rests on
  too few queries (`figure_reading`).
- Per rater pair, Cohen's kappa from scikit-learn: `cohen_kappa_score(a, b, labels=<full scale>,
  weights=...)` called for each pair (quadratic weighted, unweighted, and binary at `relevant_min_grade`
  with labels [0, 1]). Where kappa is undefined (no expected disagreement) it is not called: the pair's
  confusion matrix says so first, and the figure is an `Undefined` with the reason.
- Per query, on its dual-labeled documents: exact agreement, mean absolute difference, hard
  disagreements, relevance flips. A document with three grades contributes all three of its pairs.
- Per rater: items, median time, grade distribution, agreement with peers, consensus and gold.

A figure that cannot be computed is an `Undefined` carrying the reason, never 0 or NaN.

The code, by part (each module's names are re-exported here, the public API; import from here):
`agreement_types` (the result dataclasses, `Rating`, `Undefined`, the defaults), `agreement_input`
(the ratings checked and laid out as arrays), `agreement_alpha`, `agreement_pairs` (the kappas),
`agreement_queries` and `agreement_raters`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assay.golden.model import DEFAULT_RELEVANT_MIN_GRADE, Scale
from assay.labels.agreement_alpha import alpha_compute, bootstrap_samples, figure_reading
from assay.labels.agreement_input import Columns, PairRows
from assay.labels.agreement_pairs import pair_figures
from assay.labels.agreement_queries import query_agreement, query_figures
from assay.labels.agreement_raters import rater_figures
from assay.labels.agreement_types import (
    ALPHA_RELIABLE,
    ALPHA_TENTATIVE,
    DEFAULT_CONFIDENCE,
    DEFAULT_HARD_DIFF,
    DEFAULT_READING_THRESHOLDS,
    DEFAULT_RESAMPLES,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    MAX_ERRORS_SHOWN,
    MIN_PAIRABLE_UNITS,
    NO_SHARED_ITEMS,
    NOT_ENOUGH_DATA,
    AgreementInputError,
    AgreementReport,
    AlphaResult,
    DocDisagreement,
    Figure,
    FloatArray,
    IntArray,
    Interval,
    KappaVariant,
    Match,
    PairAgreement,
    QueryAgreement,
    RaterFigures,
    Rating,
    ReadingThresholds,
    Undefined,
    reading_thresholds_errors,
)

__all__ = [
    "ALPHA_RELIABLE",
    "ALPHA_TENTATIVE",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_HARD_DIFF",
    "DEFAULT_READING_THRESHOLDS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SCALE",
    "DEFAULT_SEED",
    "MAX_ERRORS_SHOWN",
    "MIN_PAIRABLE_UNITS",
    "NOT_ENOUGH_DATA",
    "NO_SHARED_ITEMS",
    "AgreementInputError",
    "AgreementReport",
    "AlphaResult",
    "DocDisagreement",
    "Figure",
    "FloatArray",
    "IntArray",
    "Interval",
    "KappaVariant",
    "Match",
    "PairAgreement",
    "QueryAgreement",
    "RaterFigures",
    "Rating",
    "ReadingThresholds",
    "Undefined",
    "agreement_compute",
    "bootstrap_samples",
    "figure_reading",
    "query_agreement",
    "reading_thresholds_errors",
]


def agreement_compute(
    ratings: Iterable[Rating],
    *,
    scale: Scale = DEFAULT_SCALE,
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE,
    gold: Mapping[tuple[str, str], int] | None = None,
    final: Mapping[tuple[str, str], int] | None = None,
    hard_diff: int = DEFAULT_HARD_DIFF,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    reading_thresholds: ReadingThresholds = DEFAULT_READING_THRESHOLDS,
) -> AgreementReport:
    """Every agreement figure of a golden set.

    `ratings` hold each rater's current grade per (query, document), at most one per rater and item.
    `gold` maps (query_id, doc_id) to the known answer; `final` to the consolidated grade (for the
    raters' agreement with consensus). `reading_thresholds` decide alpha's and the kappas' readings
    (the golden set's settings). The result does not depend on the order of `ratings`.
    Raises AgreementInputError listing every bad input.
    """
    if not isinstance(reading_thresholds, ReadingThresholds):
        raise AgreementInputError([f"reading_thresholds: {reading_thresholds!r} is not a ReadingThresholds"])
    data = Columns.build(
        ratings, scale=scale, relevant_min_grade=relevant_min_grade, hard_diff=hard_diff,
        gold=gold, final=final, n_resamples=n_resamples, confidence=confidence,
    )  # fmt: skip
    pairs = PairRows.build(data)
    return AgreementReport(
        scale=scale,
        relevant_min_grade=relevant_min_grade,
        hard_diff=hard_diff,
        alpha=alpha_compute(
            data, n_resamples=n_resamples, confidence=confidence, seed=seed, thresholds=reading_thresholds
        ),
        raters=rater_figures(data, pairs),
        pairs=pair_figures(
            data,
            pairs,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
            thresholds=reading_thresholds,
        ),
        queries=query_figures(data, pairs),
    )
