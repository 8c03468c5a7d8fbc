"""The side-by-side analysis: every figure of docs/sxs.md, "Analysis", from the queries and the answers
(sides undone), in numpy. The bootstraps draw one index matrix each (no Python loop per resample) and
reuse the repository's helpers: `assay.resampling.bootstrap_means` for the mean preference, and the batched
ordinal alpha of `assay.labels.agreement_alpha` for the raters' agreement.

Part of `assay.sxs`, which is the public API: import from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.changes import TOLERANCE
from assay.labels.agreement_alpha import (
    alpha_from_coincidences,
    percentile_interval,
    resampled_sums,
    unit_coincidences,
)
from assay.labels.agreement_types import Undefined
from assay.resampling import bootstrap_means
from assay.resampling import percentile_interval as mean_interval
from assay.sxs.checks import check_input
from assay.sxs.results import Agreement, OfflineRow, Position, RaterPosition, Summary, SxsAnalysis
from assay.sxs.stats import LEVEL, sign_test_p, wilcoxon_p, wilson_interval
from assay.sxs.types import PREFERENCE_SCALE, REASONS, SxsAnswer, SxsQuery, SxsRule
from assay.sxs.verdict import decide, shown, threshold

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# People "prefer a side" for the offline comparison when the query's mean preference is at least this far
# from 0: half a step of the scale, e.g. one of two raters "slightly better", the other "the same".
PREFERENCE_MIN = 0.5
_V = len(PREFERENCE_SCALE)
_LOW = PREFERENCE_SCALE[0]


class _Answers:
    """The answers as columns, each row one answer, queries and raters by position."""

    def __init__(self, asked: list[SxsQuery], answers: Sequence[SxsAnswer]) -> None:
        position = {q.query_id: i for i, q in enumerate(asked)}
        self.raters = sorted({a.rater for a in answers})
        rater = {name: i for i, name in enumerate(self.raters)}
        self.query = np.array([position[a.query_id] for a in answers], dtype=np.int64)
        self.rater = np.array([rater[a.rater] for a in answers], dtype=np.int64)
        self.preference = np.array([a.preference for a in answers], dtype=np.int64)
        self.candidate_left = np.array([a.candidate_left for a in answers], dtype=bool)
        n = len(asked)
        self.count = np.bincount(self.query, minlength=n)
        self.total = np.bincount(self.query, weights=self.preference, minlength=n).astype(np.int64)


def summarise(
    mean: FloatArray, sign: IntArray, *, asked: int, answered: int, seed: int, resamples: int
) -> Summary:
    """The figures of one set of queries from their mean preferences and the signs of those means (signs
    taken from the integer sums, so that a tie is exactly a tie)."""
    wins, ties, losses = int((sign > 0).sum()), int((sign == 0).sum()), int((sign < 0).sum())
    if not len(mean):
        return Summary(asked, answered, 0, None, None, None, None, 0, 0, 0, None, None, None, None, None, "")
    low, high = mean_interval(bootstrap_means(mean, resamples=resamples, seed=seed), LEVEL)
    decided = wins + losses
    win = wilson_interval(wins, decided)
    p, method = wilcoxon_p(mean)
    return Summary(
        asked=asked,
        answered=answered,
        queries=len(mean),
        mean=float(mean.mean()),
        low=low,
        high=high,
        spread=float(mean.std(ddof=1)) if len(mean) > 1 else None,
        wins=wins,
        ties=ties,
        losses=losses,
        win_rate=wins / decided if decided else None,
        win_low=win[0] if win else None,
        win_high=win[1] if win else None,
        sign_p=sign_test_p(wins, losses),
        wilcoxon_p=p,
        wilcoxon_method=method,
    )


def _reading(alpha: float, thresholds: tuple[float, float]) -> tuple[str, str]:
    good, tentative = thresholds  # checked: 0 < tentative <= good <= 1
    if alpha >= good:
        return "good", f"alpha {shown(alpha, good)} >= {threshold(good)}"
    if alpha >= tentative:
        return (
            "tentative",
            f"alpha {shown(alpha, tentative)} >= {threshold(tentative)}; good needs >= {threshold(good)}",
        )
    return "poor", f"alpha {shown(alpha, tentative)} < {threshold(tentative)}"


def agreement(
    data: _Answers, ids: list[str], *, seed: int, resamples: int, thresholds: tuple[float, float]
) -> Agreement:
    """Ordinal alpha over the queries answered by two or more raters (each query a unit, the scale the
    value domain), the package's steps batched; its bootstrap resamples those queries whole."""
    n = len(ids)
    positive = np.bincount(data.query, weights=data.preference > 0, minlength=n) > 0
    negative = np.bincount(data.query, weights=data.preference < 0, minlength=n) > 0
    split = [ids[i] for i in np.flatnonzero(positive & negative)]
    cells = data.query * _V + (data.preference - _LOW)
    counts = np.bincount(cells, minlength=n * _V).reshape(n, _V)[data.count >= 2]
    units = len(counts)

    def result(
        value: float | None, interval: tuple[float, float] | None, why: str, undefined: int = 0
    ) -> Agreement:
        reading, reason = _reading(value, thresholds) if value is not None else (None, why)
        if value is not None and why:
            reason = f"{reason}; {why}"
        low, high = interval if interval else (None, None)
        return Agreement(value, low, high, reading, reason, units, undefined, split)

    if not units:
        return result(None, None, "no query has answers from two or more raters")
    per_unit = unit_coincidences(counts)
    value = float(alpha_from_coincidences(per_unit.sum(axis=0)[None, :], _V)[0])
    if np.isnan(value):
        used = _LOW + int(np.argmax(counts.sum(axis=0)))
        return result(None, None, f"every answer on those queries is {used}: alpha needs two values in use")
    if units < 2:
        return result(value, None, "no interval: one query only, resampling whole queries needs two or more")
    alphas = alpha_from_coincidences(resampled_sums(per_unit, n_resamples=resamples, seed=seed), _V)
    interval, undefined = percentile_interval(alphas, LEVEL, none="every resample has one value only")
    if isinstance(interval, Undefined):
        return result(value, None, f"no interval: {interval.reason}", undefined)
    return result(value, interval, "", undefined)


def _share(part: int, n: int) -> float | None:
    return part / n if n else None


def position(data: _Answers) -> Position:
    """The share of non-zero answers that preferred the side shown on the left, overall and per rater, and
    each rater's agreement in direction with the mean of the others on the same queries."""
    nonzero = data.preference != 0
    left = nonzero & ((data.preference > 0) == data.candidate_left)
    n, k = int(nonzero.sum()), int(left.sum())
    interval = wilson_interval(k, n)
    low, high = interval if interval else (None, None)
    warn = interval is not None and (interval[0] > 0.5 or interval[1] < 0.5)
    r = len(data.raters)
    answers = np.bincount(data.rater, minlength=r)
    nonzero_by = np.bincount(data.rater, weights=nonzero, minlength=r).astype(np.int64)
    left_by = np.bincount(data.rater, weights=left, minlength=r).astype(np.int64)
    shared = data.count[data.query] >= 2
    others = data.total[data.query] - data.preference  # the others' sum: its sign is their mean's
    same = shared & (np.sign(others) == np.sign(data.preference))
    compared = np.bincount(data.rater, weights=shared, minlength=r).astype(np.int64)
    agreeing = np.bincount(data.rater, weights=same, minlength=r).astype(np.int64)
    raters = [
        RaterPosition(
            rater=name,
            answers=int(answers[i]),
            left_rate=_share(int(left_by[i]), int(nonzero_by[i])),
            agreement=_share(int(agreeing[i]), int(compared[i])),
            compared=int(compared[i]),
        )
        for i, name in enumerate(data.raters)
    ]
    return Position(n, _share(k, n), low, high, warn, raters)


def tags(
    asked: list[SxsQuery], answers: Sequence[SxsAnswer]
) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[str]]]:
    """The reason tags by the side the rater preferred ("same" for answers of 0) and the junk flags by
    side, each with the queries named in study order; junk["critical"] names the critical queries with
    junk flagged on the candidate's side."""
    order = {q.query_id: i for i, q in enumerate(asked)}
    sides = ("baseline", "same", "candidate")
    found: dict[str, dict[str, set[str]]] = {side: {tag: set() for tag in REASONS} for side in sides}
    junk: dict[str, set[str]] = {"baseline": set(), "candidate": set()}
    for a in answers:
        side = sides[int(np.sign(a.preference)) + 1]
        for tag in a.reasons:
            found[side][tag].add(a.query_id)
        if a.junk_baseline:
            junk["baseline"].add(a.query_id)
        if a.junk_candidate:
            junk["candidate"].add(a.query_id)

    def listed(ids: set[str]) -> list[str]:
        return sorted(ids, key=order.__getitem__)

    reasons = {side: {tag: listed(ids) for tag, ids in found[side].items()} for side in sides}
    critical = {q.query_id for q in asked if q.critical} & junk["candidate"]
    flags = {"baseline": listed(junk["baseline"]), "candidate": listed(junk["candidate"])}
    return reasons, {**flags, "critical": listed(critical)}


def offline(asked: list[SxsQuery], data: _Answers, margin: float) -> list[OfflineRow]:
    """Per answered query, its mean preference beside its nDCG change: conflicts first, then the largest
    gaps between the two (on one -1..1 scale), then the queries without an nDCG change, in study order."""
    rows = []
    for i in np.flatnonzero(data.count > 0):
        q = asked[i]
        preference = float(data.total[i] / data.count[i])
        change = q.ndcg_change
        conflict = (
            change is not None
            and abs(preference) >= PREFERENCE_MIN
            and abs(change) > margin + TOLERANCE
            and (preference > 0) != (change > 0)
        )
        gap = None if change is None else abs(preference / PREFERENCE_SCALE[-1] - change)
        rows.append((i, OfflineRow(q.query_id, q.stratum, preference, change, conflict, gap)))
    rows.sort(key=lambda row: (not row[1].conflict, row[1].gap is None, -(row[1].gap or 0.0), row[0]))
    return [row for _, row in rows]


def analyse(
    queries: Sequence[SxsQuery],
    answers: Sequence[SxsAnswer],
    *,
    answers_per_query: int,
    rule: SxsRule = SxsRule(),  # noqa: B008 (frozen: one shared default is safe)
    seed: int = 0,
    resamples: int = 1000,
    margin: float = 0.05,
    alpha_thresholds: tuple[float, float] = (0.8, 0.667),
) -> SxsAnalysis:
    """Every figure of the study (docs/sxs.md, "Analysis") and its verdict under `rule` ("Verdict").

    `answers` carry the sides undone (preference in the candidate's favour). Identical queries are not
    asked and enter no figure; asked queries without an answer enter none either; both are counted. The
    bootstraps (1,000 resamples by default) are seeded with `seed`, so one input gives one result.
    Raises SxsInputError listing every bad input. The result does not depend on the order of `answers`.
    """
    check_input(
        queries, answers, answers_per_query=answers_per_query, rule=rule, seed=seed,
        resamples=resamples, margin=margin, alpha_thresholds=alpha_thresholds,
    )  # fmt: skip
    asked = [q for q in queries if not q.identical]
    ids = [q.query_id for q in asked]
    data = _Answers(asked, answers)
    with_answers = data.count > 0
    full = data.count >= answers_per_query
    means = data.total / np.maximum(data.count, 1)
    signs = np.sign(data.total)

    def summary(of: BoolArray) -> Summary:
        kept = of & with_answers
        return summarise(
            means[kept], signs[kept], asked=int(of.sum()), answered=int((of & full).sum()),
            seed=seed, resamples=resamples,
        )  # fmt: skip

    everything = np.ones(len(asked), dtype=bool)
    overall = summary(everything)
    stratum = np.array([q.stratum for q in asked], dtype=object)
    named = sorted({q.stratum for q in asked}) if any(q.stratum for q in asked) else []
    strata = {name: summary(stratum == name) for name in named}
    reasons, junk = tags(asked, answers)
    verdict = decide(
        rule, overall, identical=len(queries) - len(asked), answers_per_query=answers_per_query,
        critical_junk=junk["critical"],
    )  # fmt: skip
    method: dict[str, Any] = {
        "bootstrap": "percentile, resampling queries with replacement",
        "level": LEVEL,
        "resamples": resamples,
        "seed": seed,
        "margin": margin,
        "preference_min": PREFERENCE_MIN,
        "alpha_thresholds": list(alpha_thresholds),
    }
    return SxsAnalysis(
        asked=len(asked),
        identical=len(queries) - len(asked),
        answered=int(full.sum()),
        partial=int((with_answers & ~full).sum()),
        unanswered=int((~with_answers).sum()),
        answers=len(answers),
        raters=len(data.raters),
        answers_per_query=answers_per_query,
        overall=overall,
        strata=strata,
        agreement=agreement(data, ids, seed=seed, resamples=resamples, thresholds=alpha_thresholds),
        position=position(data),
        reasons=reasons,
        junk=junk,
        offline=offline(asked, data, margin),
        verdict=verdict,
        method=method,
    )
