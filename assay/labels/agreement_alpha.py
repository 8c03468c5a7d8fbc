"""Krippendorff's alpha (ordinal) with a bootstrap interval that resamples whole queries, and the
reading of a figure from its interval (alpha's and each pair's quadratic kappa; docs/agreement.md,
"Krippendorff's alpha" and "Readings"). The bootstrap helpers serve both.

Part of `assay.labels.agreement`, which is the public API: import from there. The batched helpers
(`unit_coincidences`, `resampled_sums`, `alpha_from_coincidences`, `percentile_interval`) need numpy
only, so the side-by-side analysis (`assay.sxs`), which must run without the server's packages, uses
them too; the krippendorff package is imported where alpha's value is computed, not here.
"""

from __future__ import annotations

import numpy as np

from assay.labels.agreement_input import Columns
from assay.labels.agreement_types import (
    NOT_ENOUGH_DATA,
    AlphaResult,
    Figure,
    FloatArray,
    IntArray,
    Interval,
    ReadingThresholds,
    Undefined,
)
from assay.metric_table import format_number
from assay.resampling import percentile_interval as percentile_bounds


def figure_reading(
    value: Figure, interval: Interval, n_queries: int, thresholds: ReadingThresholds, *, queries_with: str
) -> tuple[str, str]:
    """The reading of alpha or a kappa from its interval, and why (docs/agreement.md, "Readings").

    "reliable" when the lower bound is >= reliable_min, "tentative" when it is >= tentative_min,
    "unreliable" when the upper bound is < tentative_min; "not enough data" when the interval spans
    tentative_min, when fewer than `min_pairable_units` queries were resampled (`queries_with` says what
    they have in the reason, e.g. "pairable grades"), or when the value or the interval is undefined.
    """
    t = thresholds
    tentative, reliable = _threshold(t.tentative_min), _threshold(t.reliable_min)
    if isinstance(value, Undefined):
        return NOT_ENOUGH_DATA, f"undefined: {value.reason}"
    if n_queries < t.min_pairable_units:
        queries = "query" if n_queries == 1 else "queries"
        return NOT_ENOUGH_DATA, (
            f"{n_queries} {queries} with {queries_with}; a reading needs >= {t.min_pairable_units}"
        )
    if isinstance(interval, Undefined):
        return NOT_ENOUGH_DATA, f"no interval: {interval.reason}"
    low, high = interval
    low_shown, high_shown = _bound(low, t), _bound(high, t)
    if low >= t.reliable_min:
        return "reliable", f"lower bound {low_shown} >= {reliable}"
    if low >= t.tentative_min:
        return "tentative", f"lower bound {low_shown} >= {tentative}; reliable needs >= {reliable}"
    if high < t.tentative_min:
        return "unreliable", f"upper bound {high_shown} < {tentative}"
    return NOT_ENOUGH_DATA, (
        f"interval [{low_shown}, {high_shown}] spans {tentative}: tentative needs a lower bound"
        f" >= {tentative}, unreliable an upper bound < {tentative}"
    )


def _threshold(value: float) -> str:
    """A threshold with three decimals, or as set when it has more (0.6675 is not "0.668")."""
    shown = format_number(value, decimals=3)
    return shown if float(shown) == value else repr(float(value))


def _bound(value: float, thresholds: ReadingThresholds) -> str:
    """A bound with three decimals, more when rounding would put it on the other side of a threshold:
    0.6669 is "0.6669", never "0.667" that would read as reaching 0.667."""
    for decimals in range(3, 17):
        shown = format_number(value, decimals=decimals)
        if all(
            (float(shown) >= limit) == (value >= limit)
            for limit in (thresholds.tentative_min, thresholds.reliable_min)
        ):
            return shown
    return repr(value)


def bootstrap_samples(n_queries: int, *, n_resamples: int, seed: int) -> IntArray:
    """The resampled query positions, shape (n_resamples, n_queries): the draws the interval uses.

    Public so that an independent computation (the benchmark's plain loop) can reuse the same draws.
    """
    return np.random.default_rng(seed).integers(0, n_queries, size=(n_resamples, n_queries))


def resampled_sums(per_query: FloatArray, *, n_resamples: int, seed: int) -> FloatArray:
    """Each resample's sum of the rows of `per_query` (one row per query, e.g. its flattened coincidence
    or confusion matrix), queries drawn with repeats by `bootstrap_samples`: shape (n_resamples, columns).
    A resample's sum is its draw counts times the rows, so all of them cost one matrix product."""
    n_queries = len(per_query)
    samples = bootstrap_samples(n_queries, n_resamples=n_resamples, seed=seed)
    out = np.empty((n_resamples, per_query.shape[1]))
    chunk = max(1, 4_000_000 // n_queries)
    for lo in range(0, n_resamples, chunk):
        rows = samples[lo : lo + chunk]
        flat = (np.arange(len(rows))[:, None] * n_queries + rows).ravel()
        weights = np.bincount(flat, minlength=rows.size).reshape(rows.shape).astype(np.float64)
        out[lo : lo + chunk] = weights @ per_query
    return out


def percentile_interval(figures: FloatArray, confidence: float, *, none: str) -> tuple[Interval, int]:
    """The percentile interval of the resamples' figures (NaN where a resample has none: left out, and
    counted), by the bootstrap's one percentile rule (`assay.resampling.percentile_interval`: numpy's
    default linear interpolation); `Undefined(none)` when no resample has a figure."""
    ok = figures[~np.isnan(figures)]
    undefined = len(figures) - len(ok)
    if not len(ok):
        return Undefined(none), undefined
    return percentile_bounds(ok, confidence), undefined


def unit_coincidences(counts: IntArray) -> FloatArray:
    """Each unit's coincidences, flattened (shape (units, V*V)), from its value counts (shape (units, V);
    every unit has two or more values): the ordered pairs of its values, weighted 1 / (m - 1)."""
    v = counts.shape[1]
    m = counts.sum(axis=1)
    per_unit = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v, dtype=np.int64)) / (
        m - 1
    )[:, None, None]
    result: FloatArray = per_unit.reshape(len(counts), v * v)
    return result


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


def alpha_compute(
    data: Columns, *, n_resamples: int, confidence: float, seed: int, thresholds: ReadingThresholds
) -> AlphaResult:
    v = data.n_values
    n_units = len(data.unit_query)
    counts = np.bincount(data.unit * v + data.grade, minlength=n_units * v).reshape(n_units, v)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m, unit_query = counts[pairable], m[pairable], data.unit_query[pairable]
    n_pairable = int(m.sum())
    queries, starts = np.unique(unit_query, return_index=True)

    def result(value: Figure, interval: Interval, undefined: int = 0) -> AlphaResult:
        reading, why = figure_reading(
            value, interval, len(queries), thresholds, queries_with="pairable grades"
        )
        return AlphaResult(
            value=value,
            interval=interval,
            reading=reading,
            reading_why=why,
            thresholds=thresholds,
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
    # Units are sorted by query, so each query's units are one contiguous run.
    per_query = np.add.reduceat(unit_coincidences(counts), starts, axis=0)
    if np.count_nonzero(counts.sum(axis=0)) < 2:  # no expected disagreement: the package is not called
        grade = data.scale.min + int(np.argmax(counts.sum(axis=0)))
        none = Undefined(f"every pairable grade is {grade}: alpha needs two or more grades in use")
        return result(none, none)
    # The value itself is the package's; the bootstrap below repeats its steps batched (1,000 calls
    # would take seconds), and tests hold the two equal. Imported here: see the module's docstring.
    import krippendorff

    value = float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=list(range(data.scale.min, data.scale.max + 1)),
            level_of_measurement="ordinal",
        )
    )
    if len(queries) < 2:
        return result(value, Undefined("one query only: resampling whole queries needs two or more"))
    # A resample's coincidences are the sum of its queries' (with repeats).
    alphas = alpha_from_coincidences(resampled_sums(per_query, n_resamples=n_resamples, seed=seed), v)
    interval, undefined = percentile_interval(
        alphas, confidence, none="every resample has all its grades in one category"
    )
    return result(value, interval, undefined)
