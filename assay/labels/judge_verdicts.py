"""A machine judge's verdicts (pure): qualification per scope from its figures against the humans
(`assay.labels.judge_agreement`), and the drift watch of its running agreement with the human grades that
came after (docs/judge-qualification.md, "Verdict" and "Drift").

- **Qualification** (`qualification_verdicts`): per scope, qualified when the judge's quadratic kappa's
  lower bound reaches the bar max(min_kappa, human-human quadratic kappa - margin), not qualified when
  its upper bound is below it, not enough data otherwise.
- **Drift** (`drift_watch`): the running quadratic kappa and exact agreement of the judge against the
  human grades that came after qualification, over a window of the latest pairs, and when it first
  fell below the bar once the window held enough pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from assay.golden.model import Scale
from assay.labels.agreement_input import grade_problem
from assay.labels.agreement_types import (
    ALPHA_TENTATIVE,
    DEFAULT_SCALE,
    MIN_PAIRABLE_UNITS,
    NOT_ENOUGH_DATA,
    AgreementInputError,
    Figure,
    Undefined,
    _fields,
)
from assay.labels.judge_agreement import (
    Batch,
    Estimate,
    JudgeAgreement,
    Scope,
    ScopeFigures,
    is_number,
    options_errors,
)
from assay.metric_table import format_number

QUALIFIED = "qualified"
NOT_QUALIFIED = "not qualified"
VERDICTS = (QUALIFIED, NOT_QUALIFIED, NOT_ENOUGH_DATA)
# The qualification bar's defaults (docs/judge-qualification.md, "Verdict"): the judge may trail the
# humans' own agreement by this much, and never go below Krippendorff's tentative limit.
DEFAULT_MARGIN = 0.05
DEFAULT_MIN_KAPPA = ALPHA_TENTATIVE
# The drift watch's defaults: the running figures over the latest 200 pairs, judged from 50 on.
DEFAULT_DRIFT_WINDOW = 200
DEFAULT_DRIFT_MIN_PAIRS = 50
HOLDING = "holding"
FELL_BELOW = "fell below"
TOO_FEW_PAIRS = "too few pairs"


@dataclass(frozen=True, slots=True)
class QualificationBar:
    """The rule's settings: the judge may trail the humans' quadratic kappa by `margin`, never go below
    `min_kappa`, and both the judge's and the humans' figures must rest on `min_queries` queries."""

    margin: float = DEFAULT_MARGIN
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_queries: int = MIN_PAIRABLE_UNITS

    def __post_init__(self) -> None:
        errors = []
        for name in ("margin", "min_kappa"):
            value = getattr(self, name)
            if not is_number(value) or not -1 <= value <= 1:
                errors.append(f"{name}: {value!r} must be a number from -1 to 1")
        if type(self.min_queries) is not int or self.min_queries < 2:
            errors.append(f"min_queries: {self.min_queries!r} must be a whole number of at least 2")
        if errors:
            raise ValueError("; ".join(errors))

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


DEFAULT_BAR = QualificationBar()


@dataclass(frozen=True, slots=True)
class Verdict:
    scope: Scope
    name: str
    verdict: str  # one of VERDICTS
    why: str  # the rule with the numbers
    bar: Figure  # the quadratic kappa the judge's lower bound must reach
    judge_kappa: Estimate
    human_kappa: Estimate

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class Qualification:
    bar: QualificationBar
    overall: Verdict
    strata: tuple[Verdict, ...]
    locales: tuple[Verdict, ...]

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class DriftPoint:
    n: int  # graded pairs so far
    n_window: int  # pairs the running figures are over
    kappa_quadratic: Figure
    exact: float

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class DriftWatch:
    bar: float
    window: int | None  # None: every pair since qualification
    min_pairs: int
    n_pairs: int  # graded pairs (errors left out)
    n_errors: int
    kappa_quadratic: Figure  # now, over the window
    exact: Figure
    n_window: int
    status: str  # HOLDING, FELL_BELOW or TOO_FEW_PAIRS
    why: str
    fell_at: int | None  # the pair count at which the running kappa first fell below the bar
    below_now: bool
    points: tuple[DriftPoint, ...]  # after each graded pair

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


# --- qualification -------------------------------------------------------------------------------------


def _shown(value: float, *limits: float) -> str:
    """Three decimals, more when rounding would put the value on the other side of a limit."""
    for decimals in range(3, 17):
        shown = format_number(value, decimals=decimals)
        if all((float(shown) >= limit) == (value >= limit) for limit in limits):
            return shown
    return repr(value)


def _verdict(figures: ScopeFigures, bar: QualificationBar) -> Verdict:
    judge, human = figures.judge.kappa_quadratic, figures.humans.kappa_quadratic

    def verdict(what: str, why: str, level: Figure) -> Verdict:
        return Verdict(figures.scope, figures.name, what, why, level, judge, human)

    min_kappa = format_number(bar.min_kappa, decimals=3)
    if isinstance(human.value, Undefined):
        return verdict(
            NOT_ENOUGH_DATA, f"no human-human kappa to compare with: {human.value.reason}", human.value
        )
    level = max(bar.min_kappa, human.value - bar.margin)
    rule = (
        f"bar {_shown(level)} = max(minimum {min_kappa}, human-human kappa {_shown(human.value)}"
        f" - margin {format_number(bar.margin, decimals=3)})"
    )
    for who, n in (("judge", figures.judge.n_queries), ("human-human", figures.humans.n_queries)):
        if n < bar.min_queries:
            return verdict(
                NOT_ENOUGH_DATA,
                f"the {who} kappa rests on {n} {'query' if n == 1 else 'queries'}; a verdict needs"
                f" >= {bar.min_queries}",
                level,
            )
    if isinstance(judge.value, Undefined):
        return verdict(NOT_ENOUGH_DATA, f"judge kappa undefined: {judge.value.reason}", level)
    if isinstance(judge.interval, Undefined):
        return verdict(NOT_ENOUGH_DATA, f"judge kappa has no interval: {judge.interval.reason}", level)
    low, high = judge.interval
    if low >= level:
        return verdict(QUALIFIED, f"judge kappa's lower bound {_shown(low, level)} >= {rule}", level)
    if high < level:
        return verdict(NOT_QUALIFIED, f"judge kappa's upper bound {_shown(high, level)} < {rule}", level)
    return verdict(
        NOT_ENOUGH_DATA,
        f"judge kappa's interval [{_shown(low, level)}, {_shown(high, level)}] spans the {rule}",
        level,
    )


def qualification_verdicts(figures: JudgeAgreement, bar: QualificationBar = DEFAULT_BAR) -> Qualification:
    """Per scope, whether the judge may be used (docs/judge-qualification.md, "Verdict"): `qualified`
    when the lower bound of the judge's quadratic kappa (95% interval, whole queries resampled) reaches
    the bar max(min_kappa, human-human quadratic kappa - margin) of the same scope, `not qualified` when
    its upper bound is below the bar, `not enough data` when the interval spans the bar, when either
    kappa rests on fewer than `min_queries` queries, or when a kappa or the interval is undefined."""
    return Qualification(
        bar=bar,
        overall=_verdict(figures.overall, bar),
        strata=tuple(_verdict(s, bar) for s in figures.strata),
        locales=tuple(_verdict(s, bar) for s in figures.locales),
    )


# --- drift ---------------------------------------------------------------------------------------------


def drift_watch(
    pairs: Iterable[tuple[int | None, int]],
    *,
    bar: float,
    window: int | None = DEFAULT_DRIFT_WINDOW,
    min_pairs: int = DEFAULT_DRIFT_MIN_PAIRS,
    scale: Scale = DEFAULT_SCALE,
) -> DriftWatch:
    """The judge's running agreement with the human grades that landed after it was qualified.

    `pairs` are (judge grade, later human grade) in the order they landed; a judge grade of None is an
    error, counted apart. After each graded pair: the quadratic kappa and exact agreement over the
    latest `window` graded pairs (all of them when None). The kappa falls below `bar` (pass the
    qualification's bar, `Verdict.bar`) at the first pair where the window holds at least `min_pairs`
    pairs and the running kappa is defined and below the bar; the fall stays on record (`fell_at`)
    even if the kappa recovers, and `below_now` says where it is now."""
    rows = list(pairs)
    errors = options_errors(scale, 1, 0.5)
    if not is_number(bar):
        errors.append(f"bar: {bar!r} must be a number")
    if window is not None and (type(window) is not int or window < 1):
        errors.append(f"window: {window!r} must be a positive integer or None")
    if type(min_pairs) is not int or min_pairs < 1:
        errors.append(f"min_pairs: {min_pairs!r} must be a positive integer")
    elif type(window) is int and min_pairs > window:
        errors.append(f"min_pairs: {min_pairs} must not exceed the window ({window}), or it could never fall")
    for i, row in enumerate(rows):
        if not (isinstance(row, tuple) and len(row) == 2):
            errors.append(f"pairs[{i}]: {row!r} is not a (judge grade, human grade) pair")
            continue
        for name, value in zip(("judge", "human"), row, strict=True):
            problem = None if value is None and name == "judge" else grade_problem(value, scale)
            if problem:
                errors.append(f"pairs[{i}].{name}: {problem}")
    if errors:
        raise AgreementInputError(errors)
    graded = [(j, h) for j, h in rows if j is not None]
    n_errors = len(rows) - len(graded)
    v = scale.max - scale.min + 1
    cells = np.array([(h - scale.min) * v + (j - scale.min) for j, h in graded], dtype=np.int64)
    onehot = np.zeros((len(cells), v * v))
    onehot[np.arange(len(cells)), cells] = 1
    running = np.cumsum(onehot, axis=0)
    if window is not None and len(cells) > window:
        running[window:] -= running[:-window].copy()
    confusion = running.reshape(-1, v, v)
    batch = Batch.of(confusion) if len(cells) else None
    counts = confusion.sum(axis=(1, 2)).astype(np.int64)
    points = tuple(
        DriftPoint(
            n=i + 1,
            n_window=int(counts[i]),
            kappa_quadratic=Undefined("one and the same grade throughout the window")
            if np.isnan(batch.kappa_quadratic[i])
            else float(batch.kappa_quadratic[i]),
            exact=float(batch.exact[i]),
        )
        for i in range(len(cells))
        if batch is not None
    )
    fell_at = next(
        (
            p.n
            for p in points
            if p.n_window >= min_pairs
            and not isinstance(p.kappa_quadratic, Undefined)
            and p.kappa_quadratic < bar
        ),
        None,
    )
    last = points[-1] if points else None
    now: Figure = last.kappa_quadratic if last else Undefined("no graded pair since qualification")
    exact: Figure = last.exact if last else Undefined("no graded pair since qualification")
    n_window = last.n_window if last else 0
    below_now = n_window >= min_pairs and not isinstance(now, Undefined) and now < bar
    span = "all pairs" if window is None else f"the latest {window} pairs"
    now_text = now.reason if isinstance(now, Undefined) else _shown(now, bar)
    if fell_at is not None:
        status = FELL_BELOW
        why = (
            f"the running kappa over {span} fell below the bar {_shown(bar)} at pair {fell_at};"
            f" now {now_text} over {n_window} pairs"
        )
    elif n_window < min_pairs:
        status = TOO_FEW_PAIRS
        why = f"{n_window} graded pairs in the window; the kappa can fall below the bar from {min_pairs} on"
    else:
        status = HOLDING
        why = f"the running kappa over {span} is {now_text} over {n_window} pairs, >= the bar {_shown(bar)}"
        if isinstance(now, Undefined):
            why = (
                f"the running kappa over {span} is undefined ({now.reason}); it has not fallen below the bar"
            )
    return DriftWatch(
        bar=float(bar),
        window=window,
        min_pairs=min_pairs,
        n_pairs=len(graded),
        n_errors=n_errors,
        kappa_quadratic=now,
        exact=exact,
        n_window=n_window,
        status=status,
        why=why,
        fell_at=fell_at,
        below_now=below_now,
        points=points,
    )
