"""The change of a metric between two reports: one computation per change (pure, no Django).

Every change Assay reports (the gate's rows and budgets, the CI log, the pull-request comment, the run page,
the API) is computed here, once, from the per-query values of the queries both reports counted, so that a
change, its interval and its p-value always describe the same pairs (docs/metrics.md, "Changes"):

- the pairs: the queries of the scope present in both reports that the metric's `over` (the metric table,
  `assay.metric_table`) counts on both sides: an errored query counts on neither, an expected-empty one not
  in the means over scored queries;
- the change: the (traffic-weighted, for the weighted twin) mean of the per-query changes current -
  baseline, and the two sides' means over the same pairs, so that `current - baseline == delta`;
- the interval and the p-value: a percentile bootstrap of that mean, resampling whole pairs, and a paired
  randomization test of it (`assay.resampling`), with the report's seed.

What is left out of a scope, and why, is `LeftOut`: queries that errored in the baseline, in the current
report or in both, queries new to the current report (no baseline) and queries retired from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from operator import is_not, itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from assay.metric_table import BY_KEY, Metric
from assay.resampling import DEFAULT_SEED, LEVEL, PERMUTATIONS, RESAMPLES, Sample, resampled

# The fields two reports must share to be compared at all (made under the same rules), and how close to a
# threshold a number counts as reaching it (0.5 - 0.475 may come out as 0.02499999...): the gate's and the
# noise floor's.
IDENTITY_FIELDS = ("metrics_spec", "golden_version", "k", "relevant_min_grade", "scale")
TOLERANCE = 1e-12

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


def paired_changes(
    wanted: Sequence[tuple[NDArray[np.float64] | Sequence[tuple[float, float, float]], str, bool]],
    *,
    seed: int = DEFAULT_SEED,
    with_interval: bool = True,
) -> list[Change]:
    """`paired_change` of each (pairs, metric, weighted) of `wanted`, every change the very one it gives
    alone. The changes over as many pairs share their draws (the same seed and size draw the same indices
    and sign flips), so a scope's metrics are resampled from one set of draws instead of one each."""
    found: list[Change | None] = []
    samples: dict[int, list[tuple[int, Sample]]] = {}  # by size: (where in `found`, its sample)
    figures: dict[int, tuple[str, bool, int, float, float]] = {}
    for at, (pairs, metric, weighted) in enumerate(wanted):
        data = np.asarray(pairs, dtype=np.float64) if len(pairs) else np.empty((0, 3))
        if weighted:
            data = data[data[:, 2] > 0]  # a query without traffic is in no weighted mean
        if not data.size:
            found.append(Change(metric, weighted, 0, None, None, None, None, None, None, seed=seed))
            continue
        before, after = data[:, 0], data[:, 1]
        weights = data[:, 2] if weighted else None
        deltas = after - before
        w = np.ones_like(deltas) if weights is None else weights
        total = w.sum()
        base_mean = float((before * w).sum() / total)
        delta = float((deltas * w).sum() / total)
        figures[at] = (metric, weighted, len(data), base_mean, delta)
        if with_interval and not deltas.any():
            # Nothing changed on any query (a report gated against itself): every resampled mean is 0 and
            # every sign flip ties the observed 0, which is what the draws would find, without drawing them.
            found.append(_change(figures[at], 0.0, 0.0, 1.0, seed))
            continue
        found.append(None if with_interval else _change(figures[at], None, None, None, seed))
        if with_interval:
            samples.setdefault(deltas.size, []).append((at, Sample(deltas, weights)))
    groups = list(samples.values())
    for group, figured in zip(
        groups, resampled([[sample for _, sample in g] for g in groups], seed), strict=True
    ):
        for (where, _), (low, high, p_value) in zip(group, figured, strict=True):
            found[where] = _change(figures[where], low, high, p_value, seed)
    return [change for change in found if change is not None]


def _change(
    figures: tuple[str, bool, int, float, float],
    low: float | None,
    high: float | None,
    p_value: float | None,
    seed: int,
) -> Change:
    metric, weighted, n, base_mean, delta = figures
    return Change(metric, weighted, n, base_mean, base_mean + delta, delta, low, high, p_value, seed=seed)


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
    return paired_changes([(pairs, metric, weighted)], seed=seed, with_interval=with_interval)[0]


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

    def changes(
        self, wanted: Sequence[tuple[str, bool]], *, seed: int, with_interval: bool = True
    ) -> dict[tuple[str, bool], Change]:
        """`change` of each (metric, weighted) of `wanted`, resampled together (`paired_changes`)."""
        found = paired_changes(
            [(self.pairs[metric], metric, weighted) for metric, weighted in wanted],
            seed=seed,
            with_interval=with_interval,
        )
        return dict(zip(wanted, found, strict=True))


class QueryColumns:
    """A report's per-query rows read into columns once: each field's values in row order, each metric's
    values as `per_query_value` gives them, and which rows have a tier or slice. The gate checks, pairs and
    compares every scope and metric of a comparison from these instead of reading each row's fields again
    for each of them (at 100,000 queries that reading was most of the gate's time outside resampling)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows
        self._fields: dict[str, list[Any]] = {}
        self._numbers: dict[str, tuple[NDArray[np.float64], NDArray[np.bool_]]] = {}
        self._metrics: dict[str, tuple[NDArray[np.float64], NDArray[np.bool_]]] = {}
        self._labels: dict[tuple[str, str | None], tuple[NDArray[np.intp], dict[str | None, int]]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    @cached_property
    def ids(self) -> list[str]:
        """Each row's query id (`row["id"]`)."""
        found = self._fields.get("id")
        return found if found is not None and None not in found else [row["id"] for row in self.rows]

    def read(self, keys: Sequence[str]) -> None:
        """Read the fields `keys` of every row in one pass, when every row has them all: a row's fields are
        read while it is in the CPU's cache, where a pass per field fetches each row from memory again (at
        100,000 rows, 19 fields read in a third less time)."""
        wanted = [key for key in keys if key not in self._fields]
        if len(wanted) < 2:
            return
        try:
            lines = list(map(itemgetter(*wanted), self.rows))
        except (KeyError, TypeError):  # a row without one of them: `field` reads them one at a time
            return
        for at, key in enumerate(wanted):
            self._fields[key] = list(map(itemgetter(at), lines))

    def field(self, key: str) -> list[Any]:
        """Each row's `row.get(key)`."""
        found = self._fields.get(key)
        if found is None:
            try:  # `dict.get` mapped over the rows: twice as fast as calling each row's `get`
                found = list(map(dict.get, self.rows, repeat(key)))  # type: ignore[arg-type]
            except TypeError:  # rows that are other mappings
                found = [row.get(key) for row in self.rows]
            self._fields[key] = found
        return found

    def given(self, key: str, default: Any) -> list[Any]:
        """Each row's `row.get(key, default)`: `field`, with `default` for the rows without `key`."""
        values = self.field(key)
        if None not in values:
            return values
        return [
            default if v is None and key not in row else v for v, row in zip(values, self.rows, strict=True)
        ]

    def numbers(
        self, key: str, counts: NDArray[np.bool_] | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """`float` of each row's `key` (0.0 for a null or missing one) and which rows have one. Read
        through numpy (None comes out as NaN, told apart from a NaN value by looking); values numpy does
        not take are converted one by one, only where `counts` (the rows whose value is used)."""
        if key in self._numbers:
            return self._numbers[key]
        values = self.field(key)
        try:
            found = np.array(values, dtype=np.float64)
            if found.shape != (len(values),):
                raise ValueError(key)
        except (TypeError, ValueError, OverflowError):
            used = np.ones(len(values), dtype=bool) if counts is None else counts
            present = np.array([v is not None for v in values], dtype=bool)
            return (
                np.array(
                    [
                        float(v) if u and v is not None else 0.0
                        for v, u in zip(values, used.tolist(), strict=True)
                    ],
                    dtype=np.float64,
                ),
                present,
            )
        present = np.ones(len(values), dtype=bool)
        gaps = np.flatnonzero(np.isnan(found))
        if gaps.size:
            null = gaps[np.array([values[i] is None for i in gaps.tolist()], dtype=bool)]
            present[null] = False
            found[null] = 0.0
        self._numbers[key] = found, present
        return found, present

    @cached_property
    def errored(self) -> NDArray[np.bool_]:
        return np.fromiter(map(is_not, self.field("error"), repeat(None)), dtype=bool, count=len(self))

    @cached_property
    def expect_empty(self) -> NDArray[np.bool_]:
        return np.fromiter(map(bool, self.field("expect_empty")), dtype=bool, count=len(self))

    @cached_property
    def weight(self) -> NDArray[np.float64]:
        """Each row's traffic weight as its pairs carry it: `float(row.get("weight", 1.0) or 0.0)`."""
        try:
            found, present = self.numbers("weight")
        except (TypeError, ValueError, OverflowError):  # not numbers (a falsy one is 0.0): one by one
            return np.array([float(w or 0.0) for w in self.given("weight", 1.0)], dtype=np.float64)
        weight = found.copy()
        weight[weight == 0.0] = 0.0  # -0.0 too, as `or` has it
        gaps = np.flatnonzero(~present)
        weight[gaps] = [0.0 if "weight" in self.rows[i] else 1.0 for i in gaps.tolist()]
        return weight

    def metric(self, key: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Each row's `per_query_value` of the metric `key` (0.0 where the metric does not count the row)
        and whether it counts the row."""
        found = self._metrics.get(key)
        if found is None:
            metric = BY_KEY[key]
            if key == "error_rate":
                found = self.errored.astype(np.float64), np.ones(len(self), dtype=bool)
            else:
                counts = ~self.errored
                if metric.over == "scored":
                    counts &= ~self.expect_empty
                values, present = self.numbers(metric.per_query, counts)
                counts &= present
                found = np.where(counts, values, 0.0), counts
            self._metrics[key] = found
        return found

    def where(self, key: str, value: str, default: str | None = None) -> NDArray[np.bool_]:
        """Which rows have `str(row.get(key, default)) == value` (a row whose value is null has none)."""
        labels = self._labels.get((key, default))
        if labels is None:
            given = self.given(key, default) if default is not None else self.field(key)
            if not set(map(type, given)) <= {str, type(None)}:
                given = [None if v is None else str(v) for v in given]
            # Each distinct label numbered once: a mask is then a comparison of integers.
            number = {label: at for at, label in enumerate(set(given))}
            codes = np.fromiter(map(number.__getitem__, given), dtype=np.intp, count=len(given))
            labels = self._labels[key, default] = codes, number
        codes, number = labels
        return codes == number.get(value, -1)


class ReportPairs:
    """Two reports' per-query rows matched by query id, once for every scope of a comparison: each current
    row with the baseline's row of its id (the last one, as a mapping by id keeps it), and which baseline
    rows the current report lacks (retired)."""

    def __init__(self, current: QueryColumns, baseline: QueryColumns) -> None:
        self.current, self.baseline = current, baseline
        if baseline is current and len(set(current.ids)) == len(current):  # against itself, ids unique
            self.match = np.arange(len(current), dtype=np.intp)
            self.retired = np.zeros(len(current), dtype=bool)
            return
        where = dict(zip(baseline.ids, range(len(baseline)), strict=True))
        self.match = np.fromiter(map(where.get, current.ids, repeat(-1)), dtype=np.intp, count=len(current))
        now = set(current.ids)
        self.retired = ~np.fromiter(map(now.__contains__, baseline.ids), dtype=bool, count=len(baseline))

    def scope(
        self, in_current: NDArray[np.bool_], in_baseline: NDArray[np.bool_], metrics: Sequence[str]
    ) -> ScopePairs:
        """The pairs of a scope (its current rows `in_current`, its baseline rows `in_baseline`), as
        `pair_scope` defines them."""
        rows = np.flatnonzero(in_current)
        match = self.match[rows]
        paired = match >= 0
        now, then = rows[paired], match[paired]
        errored_now, errored_then = self.current.errored[now], self.baseline.errored[then]
        ids = self.current.ids
        left = LeftOut(
            errored_baseline=_ids(ids, now[errored_then & ~errored_now]),
            errored_current=_ids(ids, now[errored_now & ~errored_then]),
            errored_both=_ids(ids, now[errored_now & errored_then]),
            new=_ids(ids, rows[~paired]),
            retired=_ids(self.baseline.ids, np.flatnonzero(in_baseline & self.retired)),
        )
        weight = self.current.weight[now]
        pairs: dict[str, NDArray[np.float64]] = {}
        for key in metrics:
            now_values, now_counted = self.current.metric(key)
            then_values, then_counted = self.baseline.metric(key)
            both = now_counted[now] & then_counted[then]
            pairs[key] = np.column_stack((then_values[then[both]], now_values[now[both]], weight[both]))
        return ScopePairs(pairs, left)


def _ids(ids: Sequence[str], at: NDArray[np.intp]) -> list[str]:
    return [ids[i] for i in at.tolist()]


def pair_scope(
    current: Sequence[Row],
    baseline: Sequence[Row],
    in_scope: Callable[[Row], bool],
    metrics: Sequence[str],
) -> ScopePairs:
    """Match two reports' per-query rows by query id within a scope: the scope's current rows, each with
    the baseline's row of its id whatever that row's scope (none: the query is new), and the scope's
    baseline rows the current report lacks (retired). A query belongs to the scope by its current row (by
    its baseline row when it was retired). The weight is the current row's (the golden's traffic weight)."""
    now = QueryColumns(current)
    then = now if baseline is current else QueryColumns(baseline)
    return ReportPairs(now, then).scope(_matching(current, in_scope), _matching(baseline, in_scope), metrics)


def _matching(rows: Sequence[Row], in_scope: Callable[[Row], bool]) -> NDArray[np.bool_]:
    return np.array([bool(in_scope(row)) for row in rows], dtype=bool)


def report_seed(report: Mapping[str, Any]) -> int:
    """The bootstrap seed a report names (`ci.seed`, or its nDCG interval's), else `DEFAULT_SEED`."""
    ci = report.get("ci")
    if isinstance(ci, Mapping):
        ndcg = ci.get("ndcg")
        for candidate in (ci.get("seed"), ndcg.get("seed") if isinstance(ndcg, Mapping) else None):
            if isinstance(candidate, int) and not isinstance(candidate, bool) and candidate >= 0:
                return candidate
    return DEFAULT_SEED
