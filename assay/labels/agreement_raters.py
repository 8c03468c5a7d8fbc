"""Per rater: items, median time, grade distribution, and agreement with peers, consensus and gold
(docs/agreement.md, "Per rater").

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

import numpy as np

from assay.labels.agreement_input import Columns, PairRows
from assay.labels.agreement_types import (
    IntArray,
    Match,
    RaterFigures,
    Undefined,
    figure_ratio,
    grade_distribution,
)


def _matches(
    rater: IntArray, grade: IntArray, reference: IntArray, n_raters: int, none_reason: str
) -> list[Match]:
    """Per rater, agreement of `grade` with `reference` (-1 in `reference` means nothing to compare)."""
    has = reference >= 0
    rater, diff = rater[has], np.abs(grade[has] - reference[has])
    n = np.bincount(rater, minlength=n_raters)
    exact = np.bincount(rater[diff == 0], minlength=n_raters)
    within = np.bincount(rater[diff <= 1], minlength=n_raters)
    return [
        Match(
            int(n[r]), figure_ratio(exact[r], n[r], none_reason), figure_ratio(within[r], n[r], none_reason)
        )
        for r in range(n_raters)
    ]


def rater_figures(data: Columns, pairs: PairRows) -> tuple[RaterFigures, ...]:
    n_raters, v = len(data.raters), data.n_values
    n_items = np.bincount(data.rater, minlength=n_raters)
    distribution = np.bincount(data.rater * v + data.grade, minlength=n_raters * v).reshape(n_raters, v)
    # Each pair row compares both raters with each other: once from each side.
    peers = _matches(
        np.r_[pairs.a, pairs.b],
        np.r_[pairs.grade_a, pairs.grade_b],
        np.r_[pairs.grade_b, pairs.grade_a],
        n_raters,
        "no item shared with another rater",
    )
    consensus = _matches(
        data.rater, data.grade, data.unit_final[data.unit], n_raters, "no rated item has a final label"
    )
    gold = _matches(data.rater, data.grade, data.unit_gold[data.unit], n_raters, "no gold item rated")
    by_rater = np.argsort(data.rater, kind="stable")
    times = np.split(data.time_ms[by_rater], np.cumsum(n_items)[:-1])
    out = []
    for r, name in enumerate(data.raters):
        known = times[r][~np.isnan(times[r])]
        out.append(
            RaterFigures(
                rater=name,
                n_items=int(n_items[r]),
                median_time_ms=float(np.median(known)) if len(known) else Undefined("no time recorded"),
                distribution=grade_distribution(distribution[r], data.scale),
                peers=peers[r],
                consensus=consensus[r],
                gold=gold[r],
            )
        )
    return tuple(out)
