"""Per rater pair: Cohen's kappa three ways (quadratic, unweighted, binary) from scikit-learn, exact and
within-1 agreement, the pair's grade distributions, and the quadratic kappa's bootstrap interval and
reading (docs/agreement.md, "Cohen's kappa per rater pair" and "Readings").

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

import math

import numpy as np

from assay.labels.agreement_alpha import figure_reading, percentile_interval, resampled_sums
from assay.labels.agreement_input import Columns, PairRows
from assay.labels.agreement_types import (
    Figure,
    FloatArray,
    Interval,
    PairAgreement,
    ReadingThresholds,
    Undefined,
    grade_distribution,
)


def _expected(confusion: FloatArray, weights: FloatArray) -> FloatArray:
    """Per confusion matrix (shape (P, K, K)): the expected weighted disagreement, scikit-learn's
    denominator. Zero (kappa undefined) when both raters used one and the same category; an exact zero
    test is safe, as it is a sum of non-negative terms."""
    sum0 = confusion.sum(axis=1)
    sum1 = confusion.sum(axis=2)
    expected = sum0[:, :, None] * sum1[:, None, :] / sum0.sum(axis=1)[:, None, None]
    result: FloatArray = (weights * expected).sum(axis=(1, 2))
    return result


def kappa_from_confusions(confusion: FloatArray, weights: FloatArray) -> FloatArray:
    """Weighted kappa for each confusion matrix (shape (P, K, K)) as scikit-learn defines it,
    1 - sum(w * observed) / sum(w * expected), batched; NaN where it is undefined."""
    denominator = _expected(confusion, weights)
    defined = denominator != 0
    observed = (weights * confusion).sum(axis=(1, 2))
    result: FloatArray = np.where(defined, 1 - observed / np.where(defined, denominator, 1.0), np.nan)
    return result


def _kappa_interval(
    per_query: FloatArray, weights: FloatArray, *, n_resamples: int, confidence: float, seed: int
) -> Interval:
    """The percentile bootstrap interval of one pair's weighted kappa, resampling the pair's shared
    queries whole (one row each: the query's flattened confusion matrix), as alpha's interval does."""
    if len(per_query) < 2:
        return Undefined("one shared query only: resampling whole queries needs two or more")
    v = weights.shape[0]
    sums = resampled_sums(per_query, n_resamples=n_resamples, seed=seed).reshape(-1, v, v)
    interval, _ = percentile_interval(
        kappa_from_confusions(sums, weights),
        confidence,
        none="in every resample both raters used one and the same grade",
    )
    return interval


def _kappas(confusion: FloatArray, weights: FloatArray) -> list[float | None]:
    """`kappa_from_confusions` for every pair's confusion matrix, None where it is undefined.

    Computed here rather than by scikit-learn's `cohen_kappa_score` (the same formula, which the tests
    hold these to, to 1e-12): importing scikit-learn took seconds, paid by the first agreement page a web
    process served (4.5 s, then 50 ms)."""
    return [None if math.isnan(k) else float(k) for k in kappa_from_confusions(confusion, weights).tolist()]


def pair_figures(
    data: Columns,
    pairs: PairRows,
    *,
    n_resamples: int,
    confidence: float,
    seed: int,
    thresholds: ReadingThresholds,
) -> tuple[PairAgreement, ...]:
    v, cut, scale = data.n_values, data.cutoff, data.scale
    present, which = np.unique(pairs.a * len(data.raters) + pairs.b, return_inverse=True)
    n_pairs = len(present)
    if not n_pairs:
        return ()
    # Per (pair, query) confusion matrices, sorted by pair then query: each pair's rows are one run.
    cell = pairs.grade_a * v + pairs.grade_b
    n_q = len(data.queries)
    groups, group = np.unique(which * n_q + data.unit_query[pairs.unit], return_inverse=True)
    per_query = (
        np.bincount(group * v * v + cell, minlength=len(groups) * v * v)
        .reshape(len(groups), v * v)
        .astype(np.float64)
    )
    runs = np.searchsorted(groups // n_q, np.arange(n_pairs + 1))
    quadratic_weights = np.subtract.outer(np.arange(v), np.arange(v)).astype(np.float64) ** 2
    flat = which * v * v + cell
    confusion = np.bincount(flat, minlength=n_pairs * v * v).reshape(n_pairs, v, v).astype(np.float64)
    binary = np.stack(
        [
            np.stack(
                [confusion[:, :cut, :cut].sum(axis=(1, 2)), confusion[:, :cut, cut:].sum(axis=(1, 2))], 1
            ),
            np.stack(
                [confusion[:, cut:, :cut].sum(axis=(1, 2)), confusion[:, cut:, cut:].sum(axis=(1, 2))], 1
            ),
        ],
        1,
    )
    idx = np.arange(v)
    # Over the full scale's confusion matrices (docs/agreement.md: every grade of the scale counts).
    quadratic = _kappas(confusion, quadratic_weights)
    unweighted = _kappas(confusion, 1 - np.eye(v))
    kappa_binary = _kappas(binary.astype(np.float64), 1 - np.eye(2))
    shared = confusion.sum(axis=(1, 2))
    exact = np.trace(confusion, axis1=1, axis2=2)
    within_1 = (confusion * (np.abs(np.subtract.outer(idx, idx)) <= 1)).sum(axis=(1, 2))
    dist_a, dist_b = confusion.sum(axis=2), confusion.sum(axis=1)

    out = []
    for p, key in enumerate(present.tolist()):
        n = int(shared[p])
        same_grade = scale.min + int(np.argmax(dist_a[p]))
        one_grade = Undefined(f"both raters gave grade {same_grade} to all {n} shared items")
        side = "relevant" if binary[p, 1, 1] else "not relevant"
        one_side = Undefined(
            f"both raters put all {n} shared items on one side of the cutoff {data.cutoff + scale.min}"
            f" ({side})"
        )
        kappa_quadratic = _or(quadratic[p], one_grade)
        shared_queries = per_query[runs[p] : runs[p + 1]]
        interval: Interval = (
            kappa_quadratic
            if isinstance(kappa_quadratic, Undefined)
            else _kappa_interval(
                shared_queries, quadratic_weights, n_resamples=n_resamples, confidence=confidence, seed=seed
            )
        )
        reading, why = figure_reading(
            kappa_quadratic, interval, len(shared_queries), thresholds, queries_with="shared items"
        )
        out.append(
            PairAgreement(
                rater_a=data.raters[key // len(data.raters)],
                rater_b=data.raters[key % len(data.raters)],
                n_shared=n,
                kappa_quadratic=kappa_quadratic,
                kappa_unweighted=_or(unweighted[p], one_grade),
                kappa_binary=_or(kappa_binary[p], one_side),
                exact=float(exact[p]) / n,
                within_1=float(within_1[p]) / n,
                distribution_a=grade_distribution(dist_a[p], scale),
                distribution_b=grade_distribution(dist_b[p], scale),
                n_queries=len(shared_queries),
                kappa_quadratic_interval=interval,
                kappa_quadratic_reading=reading,
                kappa_quadratic_reading_why=why,
                thresholds=thresholds,
            )
        )
    return tuple(out)


def _or(value: float | None, undefined: Undefined) -> Figure:
    return undefined if value is None else value
