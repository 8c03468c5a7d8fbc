"""The one table of Assay's aggregate metrics, and the one way a number is shown (pure, no Django).

Everything that lists metrics reads `METRICS`: the report (`assay.report`: which means an aggregate
holds, over which queries, which have a traffic-weighted twin), the budgets (`assay.budgets`: what may
be gated, the default budgets), the gate and its renderings (`assay.gate`, `assay.gate_render`: which
way is worse, the labels), the trend charts (`assay.charts`), and on the Django side the report page,
the trend page and the API's gate summary. Adding a metric is one row here plus its computation
(docs/metrics.md, "Adding a metric").

`format_number` is how every page, the CI log, the pull-request comment and the API summary show a
value: 4 decimals, a signed change never "-0.0000", and `UNDEFINED` for a value that does not exist
(null, NaN, not a number). Artifacts are never rounded; only displays are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

# What an undefined value looks like wherever a number is shown (pages, CI log, PR comment, API).
UNDEFINED = "—"
DECIMALS = 4

# Which of a group's queries a mean is taken over (docs/metrics.md, "Aggregates"):
# scored: did not error and are not expect_empty; answered: did not error; all: every query;
# returned: did not error and returned at least one result.
Over = Literal["scored", "answered", "all", "returned"]


def format_number(value: object, *, signed: bool = False, decimals: int = DECIMALS) -> str:
    """A value as shown: rounded to `decimals`, with a sign when `signed` (a change), `UNDEFINED` when it
    is not a finite number. A float-noise change such as -3e-17 is no change: never "-0.0000"."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return UNDEFINED
    if not signed:
        return f"{value:.{decimals}f}"
    text = f"{value:+.{decimals}f}"
    zero = f"{0:.{decimals}f}"
    return f"+{zero}" if text == f"-{zero}" else text


def format_p_value(value: float | None, permutations: int = 1000) -> str:
    """A randomization test's p-value as shown: 3 decimals; "<0.001" when no draw of `permutations` was
    as extreme (the test cannot say 0, only that it is below 1 / permutations); `UNDEFINED` for none."""
    if value is None:
        return UNDEFINED
    if value * permutations < 0.5:
        return f"<{1 / permutations:.3f}"
    return f"{value:.3f}"


def format_budget(warn: object, fail: object) -> str:
    """A budget as "warn / fail" (a level that is off shows as `UNDEFINED`); "" when neither is set. The
    thresholds are shown as given, not rounded: they are what the budgets file says."""
    if warn is None and fail is None:
        return ""
    return " / ".join(UNDEFINED if level is None else str(level) for level in (warn, fail))


@dataclass(frozen=True, slots=True)
class Metric:
    """One aggregate metric of the report (`AGG[key] = {"value", "n"}`) and how it is read and shown."""

    key: str  # its field in an aggregate of the artifact, and its name in budgets files
    label: str  # how pages, the gate's messages and the CI log name it
    higher_is_better: bool  # the direction: worse is a drop (nDCG) or a rise (the rates)
    over: Over  # which of a group's queries its mean is taken over
    # Its field in a report's per-query rows (`assay.changes.per_query_value` reads it): the values whose
    # paired changes give every change of the metric, its interval and p-value.
    per_query: str
    weighted: bool  # has a traffic-weighted twin under AGG["weighted"]
    gated: bool  # budgets may gate its worsening (warn / fail thresholds)
    default_warn: float | None = None  # default budgets (gated metrics only; None: that level is off)
    default_fail: float | None = None
    sliced: bool = True  # a column of the report page's slice and tier tables
    decimals: int = DECIMALS  # display format: decimals shown

    @property
    def worse_word(self) -> str:
        """What its worsening is called in the gate's messages."""
        return "drop" if self.higher_is_better else "rise"

    def worsening(self, baseline: float, current: float) -> float:
        """How much worse `current` is than `baseline` (positive: worse), the number a budget limits."""
        return baseline - current if self.higher_is_better else current - baseline

    def format(self, value: object, *, signed: bool = False) -> str:
        return format_number(value, signed=signed, decimals=self.decimals)


# In artifact order: the order of an aggregate's fields, of the gate's comparison rows and of every table.
METRICS: tuple[Metric, ...] = (
    Metric("ndcg", "nDCG@k", True, "scored", "ndcg", True, True, 0.01, 0.025),
    Metric("mrr", "MRR", True, "scored", "mrr", True, True, 0.01, 0.03),
    Metric("precision_at_k", "P@k", True, "scored", "p_at_k", True, True, 0.02, 0.04),
    Metric("empty_rate", "empty rate", False, "scored", "empty", True, True, 0.005, 0.015),
    Metric("lt3_rate", "<3 results rate", False, "answered", "lt3", True, True),  # not gated by default
    Metric("error_rate", "error rate", False, "all", "error", False, False),
    Metric("judged_at_k", "judged@k", True, "returned", "judged_at_k", False, False, sliced=False),
)

BY_KEY: Mapping[str, Metric] = {m.key: m for m in METRICS}
METRIC_KEYS = tuple(m.key for m in METRICS)
WEIGHTED_METRICS = tuple(m.key for m in METRICS if m.weighted)
GATED_METRICS = tuple(m.key for m in METRICS if m.gated)
SLICED_METRICS = tuple(m.key for m in METRICS if m.sliced)
LABELS: Mapping[str, str] = {m.key: m.label for m in METRICS}
# A series of a metric's traffic-weighted twin (the trend's columns and charts) is named `weighted_<key>`.
WEIGHTED_PREFIX = "weighted_"


def series_metric(series: str) -> Metric | None:
    """The metric a series (`ndcg`, `weighted_ndcg`) shows; None for an unknown name."""
    return BY_KEY.get(series.removeprefix(WEIGHTED_PREFIX) if series.startswith(WEIGHTED_PREFIX) else series)


def series_label(series: str) -> str:
    """How a series is named: the metric's label, with "(weighted)" for a weighted twin."""
    metric = series_metric(series)
    if metric is None:
        return series
    return f"{metric.label} (weighted)" if series.startswith(WEIGHTED_PREFIX) else metric.label
