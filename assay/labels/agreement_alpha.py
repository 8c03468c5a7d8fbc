"""Krippendorff's alpha (ordinal) with its reading and a bootstrap interval that resamples whole queries
(docs/agreement.md, "Krippendorff's alpha").

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

import krippendorff
import numpy as np

from assay.labels.agreement_input import Columns
from assay.labels.agreement_types import (
    ALPHA_RELIABLE,
    ALPHA_TENTATIVE,
    AlphaResult,
    Figure,
    FloatArray,
    IntArray,
    Undefined,
)


def alpha_reading(value: float) -> str:
    if value >= ALPHA_RELIABLE:
        return "reliable"
    if value >= ALPHA_TENTATIVE:
        return "tentative"
    return "unreliable"


def bootstrap_samples(n_queries: int, *, n_resamples: int, seed: int) -> IntArray:
    """The resampled query positions, shape (n_resamples, n_queries): the draws the interval uses.

    Public so that an independent computation (the benchmark's plain loop) can reuse the same draws.
    """
    return np.random.default_rng(seed).integers(0, n_queries, size=(n_resamples, n_queries))


def alpha_from_coincidences(o: FloatArray, n_values: int) -> FloatArray:
    """Ordinal alpha for each row of flattened coincidence matrices (shape (B, V*V)); NaN where every
    pairable value is in one category. The same steps as the krippendorff package, batched."""
    o = o.reshape(-1, n_values, n_values)
    eye = np.eye(n_values)
    n_v = o.sum(axis=1)
    n = n_v.sum(axis=1)
    e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * eye) / (n - 1)[:, None, None]
    idx = np.arange(n_values)
    lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
    # Ordinal distance: (sum of n_g for g from lo to hi, minus half of n_lo and n_hi) squared.
    cum = np.cumsum(n_v, axis=1)
    between = cum[:, hi] - cum[:, lo] + n_v[:, lo]
    d = (between - (n_v[:, lo] + n_v[:, hi]) / 2) ** 2
    defined = (n_v > 0).sum(axis=1) >= 2
    observed = (o * d).sum(axis=(1, 2))
    expected = np.where(defined, (e * d).sum(axis=(1, 2)), 1.0)
    return np.where(defined, 1 - observed / expected, np.nan)


def alpha_compute(data: Columns, *, n_resamples: int, confidence: float, seed: int) -> AlphaResult:
    v = data.n_values
    n_units = len(data.unit_query)
    counts = np.bincount(data.unit * v + data.grade, minlength=n_units * v).reshape(n_units, v)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m, unit_query = counts[pairable], m[pairable], data.unit_query[pairable]
    n_pairable = int(m.sum())
    queries, starts = np.unique(unit_query, return_index=True)

    def result(value: Figure, interval: tuple[float, float] | Undefined, undefined: int = 0) -> AlphaResult:
        return AlphaResult(
            value=value,
            interval=interval,
            reading=None if isinstance(value, Undefined) else alpha_reading(value),
            n_units=len(counts),
            n_pairable=n_pairable,
            n_queries=len(queries),
            n_resamples=n_resamples,
            n_resamples_undefined=undefined,
            confidence=confidence,
        )

    if not len(counts):
        none = Undefined("no document has two or more grades")
        return result(none, none)
    # Each unit's coincidences: ordered pairs of its values, weighted 1 / (m - 1).
    per_unit = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v, dtype=np.int64)) / (
        m - 1
    )[:, None, None]
    # Units are sorted by query, so each query's units are one contiguous run.
    per_query = np.add.reduceat(per_unit.reshape(len(counts), v * v), starts, axis=0)
    if np.count_nonzero(counts.sum(axis=0)) < 2:  # no expected disagreement: the package is not called
        grade = data.scale.min + int(np.argmax(counts.sum(axis=0)))
        none = Undefined(f"every pairable grade is {grade}: alpha needs two or more grades in use")
        return result(none, none)
    # The value itself is the package's; the bootstrap below repeats its steps batched (1,000 calls
    # would take seconds), and tests hold the two equal.
    value = float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=list(range(data.scale.min, data.scale.max + 1)),
            level_of_measurement="ordinal",
        )
    )
    if len(queries) < 2:
        return result(value, Undefined("one query only: resampling whole queries needs two or more"))

    samples = bootstrap_samples(len(queries), n_resamples=n_resamples, seed=seed)
    alphas = np.empty(n_resamples)
    # A resample's coincidences are the sum of its queries' (with repeats): counts @ per-query matrices.
    chunk = max(1, 4_000_000 // len(queries))
    for lo in range(0, n_resamples, chunk):
        rows = samples[lo : lo + chunk]
        flat = (np.arange(len(rows))[:, None] * len(queries) + rows).ravel()
        weights = np.bincount(flat, minlength=rows.size).reshape(rows.shape).astype(np.float64)
        alphas[lo : lo + chunk] = alpha_from_coincidences(weights @ per_query, v)
    ok = alphas[~np.isnan(alphas)]
    undefined = n_resamples - len(ok)
    if not len(ok):
        return result(value, Undefined("every resample has all its grades in one category"), undefined)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ok, [tail, 100 - tail])
    return result(value, (float(low), float(high)), undefined)
