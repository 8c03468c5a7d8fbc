"""Per rater pair: Cohen's kappa three ways (quadratic, unweighted, binary) from scikit-learn, exact and
within-1 agreement, and the pair's grade distributions (docs/agreement.md, "Cohen's kappa per rater
pair").

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.metrics import cohen_kappa_score

from assay.labels.agreement_input import Columns, PairRows
from assay.labels.agreement_types import (
    Figure,
    FloatArray,
    IntArray,
    PairAgreement,
    Undefined,
    grade_distribution,
)


def _kappa_undefined(confusion: FloatArray, weights: FloatArray) -> npt.NDArray[np.bool_]:
    """Per confusion matrix (shape (P, K, K)): is Cohen's kappa undefined, i.e. is the expected weighted
    disagreement (scikit-learn's denominator) zero? Both raters used one and the same category."""
    sum0 = confusion.sum(axis=1)
    sum1 = confusion.sum(axis=2)
    expected = sum0[:, :, None] * sum1[:, None, :] / sum0.sum(axis=1)[:, None, None]
    # Exact zero test is safe: a sum of non-negative terms.
    return (weights * expected).sum(axis=(1, 2)) == 0


def _kappas(
    a: list[IntArray], b: list[IntArray], undefined: npt.NDArray[np.bool_], **options: Any
) -> list[float | None]:
    """`cohen_kappa_score(a[p], b[p], **options)` for every pair p, None where `undefined`."""
    return [
        None if skip else float(cohen_kappa_score(x, y, **options))
        for x, y, skip in zip(a, b, undefined.tolist(), strict=True)
    ]


def pair_figures(data: Columns, pairs: PairRows) -> tuple[PairAgreement, ...]:
    v, cut, scale = data.n_values, data.cutoff, data.scale
    present, which = np.unique(pairs.a * len(data.raters) + pairs.b, return_inverse=True)
    n_pairs = len(present)
    if not n_pairs:
        return ()
    flat = which * v * v + pairs.grade_a * v + pairs.grade_b
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
    q_undef = _kappa_undefined(confusion, np.subtract.outer(idx, idx).astype(np.float64) ** 2)
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
        out.append(
            PairAgreement(
                rater_a=data.raters[key // len(data.raters)],
                rater_b=data.raters[key % len(data.raters)],
                n_shared=n,
                kappa_quadratic=_or(quadratic[p], one_grade),
                kappa_unweighted=_or(unweighted[p], one_grade),
                kappa_binary=_or(kappa_binary[p], one_side),
                exact=float(exact[p]) / n,
                within_1=float(within_1[p]) / n,
                distribution_a=grade_distribution(dist_a[p], scale),
                distribution_b=grade_distribution(dist_b[p], scale),
            )
        )
    return tuple(out)


def _or(value: float | None, undefined: Undefined) -> Figure:
    return undefined if value is None else value
