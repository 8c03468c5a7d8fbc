"""The change of a metric between two reports: one computation per change (pure, no Django).

Every change Assay reports (the gate's rows and budgets, the CI log, the pull-request comment, the run page,
the API) is computed here, once, from the per-query values of the queries both reports counted, so that a
change, its interval and its p-value always describe the same pairs (docs/metrics.md, "Changes"):

- the pairs: the queries of the scope present in both reports that the metric's `over` (the metric table,
  `assay.metric_table`) counts on both sides: an errored query counts on neither, an expected-empty one not
  in the means over scored queries;
- the change: the (traffic-weighted, for the weighted twin) mean of the per-query changes current -
  baseline, and the two sides' means over the same pairs, so that `current - baseline == delta`;
- the interval: a percentile bootstrap of that mean, resampling whole pairs, with the report's seed;
- the p-value: a paired randomization test (Fisher's, as ranx computes it): each pair's two values swapped
  at random, i.e. the sign of each change flipped, and the share of draws whose mean change is at least as
  large in absolute value as the observed one.

What is left out of a scope, and why, is `LeftOut`: queries that errored in the baseline, in the current
report or in both, queries new to the current report (no baseline) and queries retired from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from assay.metric_table import BY_KEY, Metric

# The fields two reports must share to be compared at all (made under the same rules), and how close to a
# threshold a number counts as reaching it (0.5 - 0.475 may come out as 0.02499999...): the gate's and the
# noise floor's.
IDENTITY_FIELDS = ("metrics_spec", "golden_version", "k", "relevant_min_grade", "scale")
TOLERANCE = 1e-12
RESAMPLES = 1000
PERMUTATIONS = 1000
LEVEL = 0.95
# The seed of a report that does not name one (`report["ci"]["seed"]`); fixed, so a page is reproducible.
DEFAULT_SEED = 4243
# How far a resampled mean may be below the observed one and still count as "at least as large" (float noise).
_TIE = 1e-12
# Resampled means are drawn in batches so that a large scope never needs a resamples x n matrix at once.
_BATCH_CELLS = 4_000_000

Row = Mapping[str, Any]


def per_query_value(row: Row, metric: Metric) -> float | None:
    """One query's value of `metric` in a report's per-query row; None when the metric does not count the
    query (docs/metrics.md, "Aggregates": errored queries nowhere but the error rate, expected-empty ones not
    in the means over scored queries, judged@k only where something was returned)."""
    errored = row.get("error") is not None
    if metric.key == "error_rate":
        return 1.0 if errored else 0.0
    if errored or (metric.over == "scored" and row.get("expect_empty")):
        return None
    value = row.get(metric.per_query)
    if value is None:
        return None
    return float(value)


@dataclass(frozen=True, slots=True)
class LeftOut:
    """The queries of a scope that no change of it counts, by reason (ids in report order)."""

    errored_baseline: list[str] = field(default_factory=list)
    errored_current: list[str] = field(default_factory=list)
    errored_both: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)  # in the current report only: no baseline
    retired: list[str] = field(default_factory=list)  # in the baseline only

    REASONS = {
        "errored_baseline": "errored in the baseline",
        "errored_current": "errored in the current run",
        "errored_both": "errored in both",
        "new": "new (no baseline)",
        "retired": "retired (baseline only)",
    }

    @classmethod
    def from_dict(cls, data: Mapping[str, Sequence[str]]) -> LeftOut:
        """From `to_dict`'s form (a gate's stored JSON); reasons it lacks are empty."""
        return cls(**{reason: [str(i) for i in data.get(reason) or []] for reason in cls.REASONS})

    @property
    def total(self) -> int:
        return sum(len(getattr(self, reason)) for reason in self.REASONS)

    def to_dict(self) -> dict[str, list[str]]:
        return {reason: list(getattr(self, reason)) for reason in self.REASONS}

    def describe(self, shown: int = 5) -> str:
        """ "2 errored in the baseline (q-1, q-2), 1 new (no baseline) (q-9)"; "" when nothing is left out."""
        parts = []
        for reason, words in self.REASONS.items():
            ids = getattr(self, reason)
            if ids:
                more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
                parts.append(f"{len(ids)} {words} ({', '.join(ids[:shown])}{more})")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Change:
    """One metric's change over one scope: the pairs' means, the mean change, its interval and p-value."""

    metric: str
    weighted: bool
    n: int  # the pairs counted
    baseline: float | None  # the baseline's (weighted) mean over the pairs
    current: float | None  # the current report's, over the same pairs
    delta: float | None  # current - baseline: the (weighted) mean of the per-query changes
    low: float | None
    high: float | None
    p_value: float | None
    level: float = LEVEL
    resamples: int = RESAMPLES
    permutations: int = PERMUTATIONS
    seed: int = DEFAULT_SEED

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "baseline": self.baseline,
            "current": self.current,
            "delta": self.delta,
            "interval": None
            if self.low is None
            else {
                "low": self.low,
                "high": self.high,
                "level": self.level,
                "resamples": self.resamples,
                "seed": self.seed,
                "method": "percentile bootstrap of the paired changes",
            },
            "p_value": self.p_value,
            "permutations": self.permutations,
        }


def _weighted_means(
    values: NDArray[np.float64],
    weights: NDArray[np.float64] | None,
    draws: NDArray[np.intp],
    weighted_values: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The (weighted) mean of `values` for each row of index draws. `weighted_values` is values * weights,
    made once for every batch: each drawn product is the very product of the drawn value and weight."""
    if weights is None:
        means: NDArray[np.float64] = values[draws].mean(axis=1)
        return means
    products = (values * weights if weighted_values is None else weighted_values)[draws]
    return np.asarray(products.sum(axis=1) / weights[draws].sum(axis=1), dtype=np.float64)


def _draws(rng: np.random.Generator, size: int, rows: int) -> NDArray[np.intp]:
    """`rows` x `size` indices below `size`. Drawn as int32 when they fit: numpy draws the very same
    values for int32 as for int64 below 2^32, several times faster."""
    dtype = np.int32 if size < 2**31 else np.int64
    return rng.integers(0, size, (rows, size), dtype=dtype)


def bootstrap_means(
    values: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> NDArray[np.float64]:
    """`resamples` means of `values` resampled with replacement (numpy default_rng(seed)), in batches.

    A second thread draws the next batch while this one averages the last (numpy lets go of the GIL for
    both): the draws come from the one generator in the same order, so the means are those of one thread.
    """
    rng = np.random.default_rng(seed)
    size = values.size
    batch = max(1, _BATCH_CELLS // size)
    rows = [min(batch, resamples - start) for start in range(0, resamples, batch)]
    products = None if weights is None else values * weights
    if len(rows) == 1:  # one batch (a small scope, as most of the gate's): nothing to overlap
        return _weighted_means(values, weights, _draws(rng, size, rows[0]), products)
    means: list[NDArray[np.float64]] = []
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_draws, rng, size, rows[0])
        for following in [*rows[1:], 0]:
            draws = pending.result()
            if following:
                pending = pool.submit(_draws, rng, size, following)
            means.append(_weighted_means(values, weights, draws, products))
    return np.concatenate(means)


def percentile_interval(means: NDArray[np.float64], level: float = LEVEL) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def randomization_p_value(
    deltas: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> float:
    """Two-sided paired randomization test of the mean change: the share of `permutations` random sign
    flips whose |mean| is at least the observed |mean| (1.0 when nothing changed)."""
    w = np.ones_like(deltas) if weights is None else weights
    observed = abs(float((deltas * w).sum() / w.sum()))
    rng = np.random.default_rng(seed + 1)  # not the bootstrap's draws
    batch = max(1, _BATCH_CELLS // deltas.size)
    hits = 0
    for start in range(0, permutations, batch):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(min(batch, permutations - start), deltas.size))
        flipped = np.abs((signs * (deltas * w)).sum(axis=1) / w.sum())
        hits += int((flipped >= observed - _TIE).sum())
    return hits / permutations


def paired_change(
    pairs: NDArray[np.float64] | Sequence[tuple[float, float, float]],
    metric: str,
    *,
    weighted: bool = False,
    seed: int = DEFAULT_SEED,
    with_interval: bool = True,
) -> Change:
    """The change over `pairs` of (baseline value, current value, traffic weight); weights are used only
    when `weighted`. Without pairs every figure is None; `with_interval=False` leaves the interval and the
    p-value out (the cheap change of a slice nobody gates)."""
    if len(pairs) == 0:
        return Change(metric, weighted, 0, None, None, None, None, None, None, seed=seed)
    data = np.asarray(pairs, dtype=np.float64)
    if weighted:
        data = data[data[:, 2] > 0]  # a query without traffic is in no weighted mean
        if not data.size:
            return Change(metric, weighted, 0, None, None, None, None, None, None, seed=seed)
    before, after = data[:, 0], data[:, 1]
    weights = data[:, 2] if weighted else None
    deltas = after - before
    w = np.ones_like(deltas) if weights is None else weights
    total = w.sum()
    base_mean = float((before * w).sum() / total)
    delta = float((deltas * w).sum() / total)
    low = high = p_value = None
    if with_interval and not deltas.any():
        # Nothing changed on any query (a report gated against itself): every resampled mean is 0 and every
        # sign flip ties the observed 0, which is what the draws below would find, without drawing them.
        low, high, p_value = 0.0, 0.0, 1.0
    elif with_interval:
        low, high = percentile_interval(bootstrap_means(deltas, weights, seed=seed))
        p_value = randomization_p_value(deltas, weights, seed=seed)
    return Change(
        metric,
        weighted,
        len(data),
        base_mean,
        base_mean + delta,
        delta,
        low,
        high,
        p_value,
        seed=seed,
    )


@dataclass(frozen=True)
class ScopePairs:
    """The queries of one scope matched across two reports: for each metric, its pairs (rows of baseline
    value, current value, traffic weight, in the current report's order); and what was left out of the
    scope altogether."""

    pairs: Mapping[str, NDArray[np.float64] | Sequence[tuple[float, float, float]]]
    left_out: LeftOut

    def change(self, metric: str, *, weighted: bool = False, seed: int, with_interval: bool = True) -> Change:
        return paired_change(
            self.pairs[metric], metric, weighted=weighted, seed=seed, with_interval=with_interval
        )


class RowValues:
    """Each per-query row's values of `metrics` (`per_query_value`; 0.0 where the metric does not count the
    row, with a False in its `counted`), worked out once however many scopes pair the row."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self.metrics = tuple(metrics)
        self._specs = [BY_KEY[key] for key in self.metrics]
        # id(row) -> (row, values, counted); the row is kept so that its id is not reused meanwhile.
        self._rows: dict[int, tuple[Row, tuple[float, ...], tuple[bool, ...]]] = {}

    def of(self, row: Row) -> tuple[tuple[float, ...], tuple[bool, ...]]:
        known = self._rows.get(id(row))
        if known is None:
            found = [per_query_value(row, metric) for metric in self._specs]
            values = tuple(0.0 if v is None else v for v in found)
            known = self._rows[id(row)] = (row, values, tuple(v is not None for v in found))
        return known[1], known[2]


def pair_rows(
    current: Sequence[Row],
    before: Mapping[str, Row],
    retired: Sequence[str],
    metrics: Sequence[str],
    values: RowValues | None = None,
) -> ScopePairs:
    """Pair a scope's current per-query rows with the baseline's rows (`before`: every baseline row by
    query id, whatever its scope); `retired` are the scope's baseline queries the current report lacks. The
    weight is the current row's (the golden's traffic weight). `values` (for these `metrics`) shares the
    rows' values between the scopes of one comparison."""
    rows = values if values is not None and values.metrics == tuple(metrics) else RowValues(metrics)
    left = LeftOut(retired=list(retired))
    now_rows: list[Row] = []
    then_rows: list[Row] = []
    for now in current:
        then = before.get(now["id"])
        if then is None:
            left.new.append(now["id"])
            continue
        errored_now, errored_then = now.get("error") is not None, then.get("error") is not None
        if errored_now and errored_then:
            left.errored_both.append(now["id"])
        elif errored_then:
            left.errored_baseline.append(now["id"])
        elif errored_now:
            left.errored_current.append(now["id"])
        now_rows.append(now)
        then_rows.append(then)
    width = len(rows.metrics)
    now_values, now_counted = _value_matrix(rows, now_rows, width)
    then_values, then_counted = _value_matrix(rows, then_rows, width)
    weight = np.array([float(now.get("weight", 1.0) or 0.0) for now in now_rows], dtype=np.float64)
    pairs: dict[str, NDArray[np.float64]] = {}
    for column, key in enumerate(rows.metrics):
        both = now_counted[:, column] & then_counted[:, column]
        pairs[key] = np.column_stack((then_values[both, column], now_values[both, column], weight[both]))
    return ScopePairs(pairs, left)


def _value_matrix(
    rows: RowValues, scope: Sequence[Row], width: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The rows' values (row x metric) and which of them count."""
    found = [rows.of(row) for row in scope]
    values = np.array([v for v, _ in found], dtype=np.float64).reshape(len(scope), width)
    counted = np.array([c for _, c in found], dtype=bool).reshape(len(scope), width)
    return values, counted


def pair_scope(
    current: Sequence[Row],
    baseline: Sequence[Row],
    in_scope: Callable[[Row], bool],
    metrics: Sequence[str],
    values: RowValues | None = None,
) -> ScopePairs:
    """Match two reports' per-query rows by query id within a scope. A query belongs to the scope by its
    current row (by its baseline row when it was retired)."""
    now_ids = {row["id"] for row in current}
    return pair_rows(
        [row for row in current if in_scope(row)],
        {row["id"]: row for row in baseline},
        [row["id"] for row in baseline if row["id"] not in now_ids and in_scope(row)],
        metrics,
        values,
    )


def report_seed(report: Mapping[str, Any]) -> int:
    """The bootstrap seed a report names (`ci.seed`, or its nDCG interval's), else `DEFAULT_SEED`."""
    ci = report.get("ci")
    if isinstance(ci, Mapping):
        ndcg = ci.get("ndcg")
        for candidate in (ci.get("seed"), ndcg.get("seed") if isinstance(ndcg, Mapping) else None):
            if isinstance(candidate, int) and not isinstance(candidate, bool) and candidate >= 0:
                return candidate
    return DEFAULT_SEED
