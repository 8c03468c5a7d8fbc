"""The tests and intervals of the side-by-side analysis, in numpy and the standard library only (the core
runs without scipy): Wilson's interval of a proportion, the exact two-sided sign test, and the Wilcoxon
signed-rank test as `scipy.stats.wilcoxon(x)` computes it with its defaults (docs/sxs.md, "Analysis").
tests/assay/test_sxs.py holds each to scipy.

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

LEVEL = 0.95
Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)  # 1.95996...: the normal quantile of a two-sided 95% interval
# scipy's `wilcoxon(method="auto")` takes the exact null distribution up to this many values (zeros
# included) when there are no ties and no zeros, and enumerates every sign flip up to EXACT_FLIPS values
# when there are (2^13 = 8,192 flips, below its 9,999 resamples, so its permutation test is exact).
EXACT_MAX = 50
EXACT_FLIPS = 13
# scipy's permutation test counts a flip as "as extreme" within this relative distance of the statistic.
_RELATIVE_TIE = 1e-14


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson's score interval of the proportion successes / n (no continuity correction), as
    `scipy.stats.binomtest(successes, n).proportion_ci(level, method="wilson")`; None when n is 0."""
    if n == 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def sign_test_p(wins: int, losses: int) -> float | None:
    """The exact two-sided sign test: `scipy.stats.binomtest(wins, wins + losses, 0.5).pvalue`, i.e.
    twice the probability of a split at least as uneven, at most 1; None without wins or losses."""
    n = wins + losses
    if n == 0:
        return None
    tail = term = 1  # C(n, 0); each next binomial coefficient from the last, in whole numbers
    for i in range(min(wins, losses)):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, 2 * tail / 2**n)  # whole numbers divided once: one rounding


def midranks(values: FloatArray) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """The ranks of `values` from 1, ties given the mean of their ranks, and the size of each tie group."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(ordered)]
    group = np.repeat(np.arange(len(starts)), ends - starts)
    ranks = np.empty(len(values))
    ranks[order] = ((starts + 1 + ends) / 2)[group]
    return ranks, (ends - starts).astype(np.int64)


def _exact_counts(n: int) -> npt.NDArray[np.float64]:
    """How many of the 2^n sign patterns of the ranks 1..n give each sum of positive ranks (0..n(n+1)/2);
    every count is below 2^50, so float64 holds it exactly."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return counts


def wilcoxon_p(values: FloatArray) -> tuple[float | None, str]:
    """The two-sided Wilcoxon signed-rank p-value of `values` against 0 and the method used, as
    `scipy.stats.wilcoxon(values)` (zero_method="wilcox": zeros are dropped; correction=False;
    method="auto"). The method follows scipy's choice on the number of values n, zeros included:

    - "exact": n <= 50 with no zeros and no tied absolute values: the exact null distribution;
    - "exact flips": zeros or ties and n <= 13: every sign flip of the non-zero values enumerated (scipy's
      permutation test, which is exact at that size), ties keeping their mid-ranks;
    - "normal": otherwise, the normal approximation with the variance corrected for ties.

    None (and "") when no value is non-zero: there is nothing to rank.
    """
    n_all = len(values)
    d = values[values != 0]
    n = len(d)
    if n == 0:
        return None, ""
    ranks, ties = midranks(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    tied = bool((ties > 1).any())
    if n_all <= EXACT_MAX and not tied and n == n_all:
        counts = _exact_counts(n)
        k = round(r_plus)  # no ties: a whole number
        total = 2.0**n
        low, high = counts[: k + 1].sum() / total, counts[k:].sum() / total
        return min(1.0, 2 * min(low, high)), "exact"
    if n_all <= EXACT_FLIPS:
        flips = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
        null = flips @ ranks
        gamma = abs(_RELATIVE_TIE * r_plus)
        less = float(np.mean(null <= r_plus + gamma))
        greater = float(np.mean(null >= r_plus - gamma))
        return min(1.0, 2 * min(less, greater)), "exact flips"
    mean = n * (n + 1) / 4
    variance = (n * (n + 1) * (2 * n + 1) - float((ties**3 - ties).sum()) / 2) / 24
    z = (r_plus - mean) / math.sqrt(variance)
    return math.erfc(abs(z) / math.sqrt(2)), "normal"
