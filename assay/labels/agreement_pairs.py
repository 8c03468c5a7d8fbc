"""Per rater pair: Cohen's kappa three ways (quadratic, unweighted, binary) from scikit-learn, exact and
within-1 agreement, the pair's grade distributions, and the quadratic kappa's bootstrap interval and
reading (docs/agreement.md, "Cohen's kappa per rater pair" and "Readings").

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from assay.labels.agreement_alpha import figure_reading, percentile_interval, resampled_sums
from assay.labels.agreement_input import Columns, PairRows
from assay.labels.agreement_types import (
    Figure,
    FloatArray,
    IntArray,
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


def _kappa_undefined(confusion: FloatArray, weights: FloatArray) -> npt.NDArray[np.bool_]:
    return _expected(confusion, weights) == 0


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


def _kappas(
    a: list[IntArray], b: list[IntArray], undefined: npt.NDArray[np.bool_], **options: Any
) -> list[float | None]:
    """`cohen_kappa_score(a[p], b[p], **options)` for every pair p, None where `undefined`."""
    # Imported here: scikit-learn takes seconds to import, and every web and worker process imports this
    # module, most of them never to compute a kappa.
    from sklearn.metrics import cohen_kappa_score

    return [
        None if skip else float(cohen_kappa_score(x, y, **options))
        for x, y, skip in zip(a, b, undefined.tolist(), strict=True)
    ]


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
    q_undef = _kappa_undefined(confusion, quadratic_weights)
    u_undef = _kappa_undefined(confusion, 1 - np.eye(v))
    b_undef = _kappa_undefined(binary, 1 - np.eye(2))
    # Each pair's two grade columns, in the scale's own grades, for the scikit-learn calls.
    order = np.argsort(which, kind="stable")
    bounds = np.cumsum(np.bincount(which, minlength=n_pairs))[:-1]
    grades_a = np.split(pairs.grade_a[order] + scale.min, bounds)
    grades_b = np.split(pairs.grade_b[order] + scale.min, bounds)
    relevant_a = [(g >= cut + scale.min).astype(np.int64) for g in grades_a]
    relevant_b = [(g >= cut + scale.min).astype(np.int64) for g in grades_b]
    labels = list(range(scale.min, scale.max + 1))  # always the full scale (docs/agreement.md)
    quadratic = _kappas(grades_a, grades_b, q_undef, labels=labels, weights="quadratic")
    unweighted = _kappas(grades_a, grades_b, u_undef, labels=labels)
    kappa_binary = _kappas(relevant_a, relevant_b, b_undef, labels=[0, 1])
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
