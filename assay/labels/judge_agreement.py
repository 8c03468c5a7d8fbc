"""A machine judge against the humans (pure: no Django; builds on `assay.labels.agreement`'s parts).

The judge grades (query, document) items on the golden set's scale; its grades come in as plain rows
beside the human consensus grade of each item, and the human-human grade pairs on the same kind of
items come in beside them. Definitions, the rules and a worked example: docs/judge-qualification.md. In
short:

- **Judge vs consensus** (`JudgeFigures`): Cohen's kappa quadratic-weighted and unweighted
  (`cohen_kappa_score(human, judge, labels=<full scale>, weights=...)`), ordinal Krippendorff's alpha of
  the two as coders (`krippendorff.alpha`), exact and within-1 agreement, bias (mean judge grade minus
  human grade), the confusion matrix (human rows x judge columns over the full scale). Items where the
  judge answered with an error are counted apart (`n_errors`), never as a grade.
- **Human vs human** (`HumanFigures`): the same kappas, alpha, exact and within-1 over the pairs.
- Every figure has a 95% percentile bootstrap interval that resamples whole queries (fixed seed), as
  the agreement figures do: each query's confusion matrix once, a resample's the sum of its draws'
  (`agreement_alpha.resampled_sums`), every figure of a resample computed from that sum.
- The figures overall, per stratum and per locale (`JudgeAgreement`); several judges side by side on
  the items every judge graded (`judges_compare`).
- **Qualification** (`qualification_verdicts`): per scope, qualified when the judge's quadratic kappa's
  lower bound reaches the bar max(min_kappa, human-human quadratic kappa - margin), not qualified when
  its upper bound is below it, not enough data otherwise.
- **Drift** (`drift_watch`): the running quadratic kappa and exact agreement of the judge against the
  human grades that came after qualification, over a window of the latest pairs, and when it first
  fell below the bar once the window held enough pairs.

A figure that cannot be computed is an `Undefined` carrying the reason, never 0 or NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import krippendorff
import numpy as np

from assay.golden.model import Scale
from assay.labels.agreement_alpha import alpha_from_coincidences, percentile_interval, resampled_sums
from assay.labels.agreement_input import grade_problem, id_problem
from assay.labels.agreement_pairs import kappa_from_confusions
from assay.labels.agreement_types import (
    ALPHA_TENTATIVE,
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    MIN_PAIRABLE_UNITS,
    NOT_ENOUGH_DATA,
    AgreementInputError,
    Figure,
    FloatArray,
    IntArray,
    Interval,
    Undefined,
    _fields,
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

Scope = Literal["overall", "stratum", "locale"]
ItemKey = tuple[str, str]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class HumanItem:
    """One (query, document) humans have labeled: its query's stratum and locale ("" when none) and the
    human consensus grade."""

    query_id: str
    doc_id: str
    stratum: str
    locale: str
    human: int


@dataclass(frozen=True, slots=True)
class JudgedItem:
    """A `HumanItem` with the judge's grade; `judge` None: the judge answered with an error."""

    query_id: str
    doc_id: str
    stratum: str
    locale: str
    human: int
    judge: int | None


@dataclass(frozen=True, slots=True)
class HumanPair:
    """Two human grades of one (query, document), e.g. the first and the second rater's."""

    query_id: str
    doc_id: str
    stratum: str
    locale: str
    grade_a: int
    grade_b: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """A figure and its percentile bootstrap interval (resampling whole queries)."""

    value: Figure
    interval: Interval

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class JudgeFigures:
    """The judge against the human consensus on one scope's items."""

    n_items: int  # items the judge graded (errors left out)
    n_queries: int  # queries with such an item: what the bootstrap resamples
    n_errors: int  # items where the judge answered with an error
    kappa_quadratic: Estimate
    kappa_unweighted: Estimate
    alpha: Estimate  # ordinal, the consensus and the judge as two coders
    exact: Estimate
    within_1: Estimate
    bias: Estimate  # mean of judge grade - human grade: positive, the judge grades higher
    # Human grades as rows, judge grades as columns, over the full scale (`grades`).
    confusion: tuple[tuple[int, ...], ...]
    grades: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class HumanFigures:
    """Human against human on one scope's pairs: how well the humans agree with each other."""

    n_pairs: int
    n_queries: int
    kappa_quadratic: Estimate
    kappa_unweighted: Estimate
    alpha: Estimate
    exact: Estimate
    within_1: Estimate

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class ScopeFigures:
    scope: Scope
    name: str  # the stratum or locale ("" for items without one); "" for overall
    judge: JudgeFigures
    humans: HumanFigures

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    scale: Scale
    confidence: float
    n_resamples: int
    seed: int
    overall: ScopeFigures
    strata: tuple[ScopeFigures, ...]  # by stratum name
    locales: tuple[ScopeFigures, ...]

    @property
    def scopes(self) -> tuple[ScopeFigures, ...]:
        return (self.overall, *self.strata, *self.locales)

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class ComparedJudge:
    name: str
    n_errors: int  # over all the items, before the common ones were taken
    n_missing: int  # items the judge has no answer for
    figures: JudgeAgreement  # on the common items only

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class JudgeComparison:
    n_items: int  # human items offered
    n_common: int  # items every judge graded: the figures' items
    note: str  # says which items the figures are on
    judges: tuple[ComparedJudge, ...]

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


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
            if not _number(value) or not -1 <= value <= 1:
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


# --- input ---------------------------------------------------------------------------------------------


def _options_errors(scale: Scale, n_resamples: int, confidence: float) -> list[str]:
    errors = []
    if not all(type(x) is int for x in (scale.min, scale.max)) or scale.max <= scale.min:
        errors.append(f"scale: {scale} must be integers with at least two grades")
    if type(n_resamples) is not int or n_resamples < 1:
        errors.append(f"n_resamples: {n_resamples!r} must be a positive integer")
    if not _number(confidence) or not 0 < confidence < 1:
        errors.append(f"confidence: {confidence!r} must be strictly between 0 and 1")
    return errors


def _row_errors(
    name: str, rows: Sequence[Any], kind: type, grades: tuple[str, ...], scale: Scale
) -> list[str]:
    errors = []
    for i, row in enumerate(rows):
        if type(row) is not kind:
            errors.append(f"{name}[{i}]: {row!r} is not a {kind.__name__}")
            continue
        for field in ("query_id", "doc_id"):
            problem = id_problem(getattr(row, field))
            if problem:
                errors.append(f"{name}[{i}].{field}: {problem}")
        for field in ("stratum", "locale"):
            if type(getattr(row, field)) is not str:
                errors.append(f"{name}[{i}].{field}: {getattr(row, field)!r} is not a string")
        for field in grades:
            value = getattr(row, field)
            problem = None if value is None and field == "judge" else grade_problem(value, scale)
            if problem:
                errors.append(f"{name}[{i}].{field}: {problem}")
    return errors


def _duplicates(name: str, rows: Sequence[HumanItem | JudgedItem]) -> list[str]:
    first: dict[ItemKey, int] = {}
    errors = []
    for i, row in enumerate(rows):
        key = (row.query_id, row.doc_id)
        if key in first:
            errors.append(f"{name}[{i}]: ({row.query_id!r}, {row.doc_id!r}) already at {name}[{first[key]}]")
        else:
            first[key] = i
    return errors


@dataclass(frozen=True, slots=True)
class _Rows:
    """Grade pairs as grade indexes (grade - scale.min): a the reference (human), b the other (judge or
    second human), with their query, stratum and locale."""

    query: list[str]
    stratum: list[str]
    locale: list[str]
    a: IntArray
    b: IntArray

    def where(self, keep: Sequence[bool]) -> _Rows:
        mask = np.array(keep, dtype=bool)
        return _Rows(
            [q for q, k in zip(self.query, keep, strict=True) if k],
            [s for s, k in zip(self.stratum, keep, strict=True) if k],
            [loc for loc, k in zip(self.locale, keep, strict=True) if k],
            self.a[mask],
            self.b[mask],
        )


def _rows(
    query: list[str], stratum: list[str], locale: list[str], a: list[int], b: list[int], lo: int
) -> _Rows:
    return _Rows(query, stratum, locale, np.array(a, dtype=np.int64) - lo, np.array(b, dtype=np.int64) - lo)


# --- figures -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Batch:
    """Every figure of a batch of confusion matrices (shape (B, V, V)), NaN where undefined."""

    kappa_quadratic: FloatArray
    kappa_unweighted: FloatArray
    alpha: FloatArray
    exact: FloatArray
    within_1: FloatArray
    bias: FloatArray

    @classmethod
    def of(cls, confusion: FloatArray) -> _Batch:
        v = confusion.shape[-1]
        idx = np.arange(v)
        diff = np.subtract.outer(idx, idx)  # row (a) minus column (b)
        n = confusion.sum(axis=(1, 2))
        return cls(
            kappa_quadratic=kappa_from_confusions(confusion, (diff**2).astype(np.float64)),
            kappa_unweighted=kappa_from_confusions(confusion, 1 - np.eye(v)),
            # Two coders per unit: each unit's coincidences are its pair both ways, weighted 1/(2-1).
            alpha=alpha_from_coincidences((confusion + confusion.transpose(0, 2, 1)).reshape(-1, v * v), v),
            exact=np.trace(confusion, axis1=1, axis2=2) / n,
            within_1=(confusion * (np.abs(diff) <= 1)).sum(axis=(1, 2)) / n,
            bias=(confusion * -diff).sum(axis=(1, 2)) / n,  # column (b) minus row (a)
        )


def _per_query(rows: _Rows, v: int) -> FloatArray:
    """Each query's confusion matrix (rows a, columns b), flattened, queries in id order."""
    _, q = np.unique(np.array(rows.query, dtype=object), return_inverse=True)
    n_q = int(q.max()) + 1 if len(q) else 0
    counts = np.bincount(q * v * v + rows.a * v + rows.b, minlength=n_q * v * v)
    return counts.reshape(n_q, v * v).astype(np.float64)


def _estimates(
    rows: _Rows, scale: Scale, *, what: str, none: str, n_resamples: int, confidence: float, seed: int
) -> tuple[dict[str, Estimate], FloatArray, int]:
    """Every figure of these rows (`what` they are: items or pairs) with its interval; the confusion
    matrix; the number of queries."""
    v = scale.max - scale.min + 1
    per_query = _per_query(rows, v)
    confusion = per_query.sum(axis=0).reshape(v, v)
    names = ("kappa_quadratic", "kappa_unweighted", "alpha", "exact", "within_1", "bias")
    if not len(rows.a):
        missing = Undefined(none)
        return {name: Estimate(missing, missing) for name in names}, confusion, 0
    from sklearn.metrics import cohen_kappa_score  # here: seconds to import (assay.labels.agreement_pairs)

    point = _Batch.of(confusion[None])
    labels = list(range(scale.min, scale.max + 1))  # always the full scale (docs/agreement.md)
    a, b = rows.a + scale.min, rows.b + scale.min
    n = len(rows.a)
    used = sorted({*a.tolist(), *b.tolist()})
    one_grade = Undefined(f"every grade of the {n} {what} is {used[0]}, on both sides")
    values: dict[str, Figure] = {
        "kappa_quadratic": one_grade
        if np.isnan(point.kappa_quadratic[0])
        else float(cohen_kappa_score(a, b, labels=labels, weights="quadratic")),
        "kappa_unweighted": one_grade
        if np.isnan(point.kappa_unweighted[0])
        else float(cohen_kappa_score(a, b, labels=labels)),
        "alpha": Undefined(f"every grade is {used[0]}: alpha needs two or more grades in use")
        if len(used) < 2
        else float(
            krippendorff.alpha(
                value_counts=_value_counts(rows, v), value_domain=labels, level_of_measurement="ordinal"
            )
        ),
        "exact": float(point.exact[0]),
        "within_1": float(point.within_1[0]),
        "bias": float(point.bias[0]),
    }
    n_queries = len(per_query)
    if n_queries < 2:
        one_query = Undefined("one query only: resampling whole queries needs two or more")
        return (
            {k: Estimate(x, x if isinstance(x, Undefined) else one_query) for k, x in values.items()},
            confusion,
            1,
        )
    sums = resampled_sums(per_query, n_resamples=n_resamples, seed=seed).reshape(-1, v, v)
    batch = _Batch.of(sums)
    out = {}
    for name, value in values.items():
        if isinstance(value, Undefined):
            out[name] = Estimate(value, value)
            continue
        interval, _ = percentile_interval(
            getattr(batch, name), confidence, none="in every resample every grade is one and the same"
        )
        out[name] = Estimate(value, interval)
    return out, confusion, n_queries


def _value_counts(rows: _Rows, v: int) -> IntArray:
    """Units x grades counts for `krippendorff.alpha`: each row is one item's two grades."""
    counts = np.zeros((len(rows.a), v), dtype=np.int64)
    np.add.at(counts, (np.arange(len(rows.a)), rows.a), 1)
    np.add.at(counts, (np.arange(len(rows.b)), rows.b), 1)
    return counts


def _judge_figures(rows: _Rows, n_errors: int, scale: Scale, **options: Any) -> JudgeFigures:
    est, confusion, n_queries = _estimates(
        rows, scale, what="items", none="no item graded by the judge", **options
    )
    return JudgeFigures(
        n_items=len(rows.a),
        n_queries=n_queries,
        n_errors=n_errors,
        confusion=tuple(tuple(int(c) for c in row) for row in confusion),
        grades=tuple(range(scale.min, scale.max + 1)),
        **est,
    )


def _human_figures(rows: _Rows, scale: Scale, **options: Any) -> HumanFigures:
    est, _, n_queries = _estimates(rows, scale, what="pairs", none="no human-human pairs", **options)
    del est["bias"]  # which human is "a" is an accident of the order: no bias between them
    return HumanFigures(n_pairs=len(rows.a), n_queries=n_queries, **est)


def judged_items(items: Iterable[HumanItem], grades: Mapping[ItemKey, int | None]) -> list[JudgedItem]:
    """The items the judge answered for (a grade, or None for an error), with its answer; items missing
    from `grades` are left out."""
    return [
        JudgedItem(i.query_id, i.doc_id, i.stratum, i.locale, i.human, grades[(i.query_id, i.doc_id)])
        for i in items
        if (i.query_id, i.doc_id) in grades
    ]


def judge_agreement(
    items: Iterable[JudgedItem],
    human_pairs: Iterable[HumanPair],
    *,
    scale: Scale = DEFAULT_SCALE,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> JudgeAgreement:
    """The judge against the human consensus, and the humans against each other, overall, per stratum
    and per locale (docs/judge-qualification.md). The result does not depend on the order of the rows.
    Raises AgreementInputError listing every bad input."""
    item_rows = list(items)
    pair_rows = list(human_pairs)
    errors = _options_errors(scale, n_resamples, confidence)
    if errors:
        raise AgreementInputError(errors)
    errors = _row_errors("items", item_rows, JudgedItem, ("human", "judge"), scale)
    errors += _row_errors("human_pairs", pair_rows, HumanPair, ("grade_a", "grade_b"), scale)
    if not errors:
        errors = _duplicates("items", item_rows)
    if errors:
        raise AgreementInputError(errors)
    graded = [i for i in item_rows if i.judge is not None]
    failed = [i for i in item_rows if i.judge is None]
    judged = _rows(
        [i.query_id for i in graded], [i.stratum for i in graded], [i.locale for i in graded],
        [i.human for i in graded], [i.judge for i in graded if i.judge is not None], scale.min,
    )  # fmt: skip
    humans = _rows(
        [p.query_id for p in pair_rows], [p.stratum for p in pair_rows], [p.locale for p in pair_rows],
        [p.grade_a for p in pair_rows], [p.grade_b for p in pair_rows], scale.min,
    )  # fmt: skip
    options = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}

    def scope(kind: Scope, name: str) -> ScopeFigures:
        def keep(rows: _Rows | list[JudgedItem], field: str) -> list[bool]:
            values = getattr(rows, field) if isinstance(rows, _Rows) else [getattr(i, field) for i in rows]
            return [kind == "overall" or value == name for value in values]

        field = "stratum" if kind == "stratum" else "locale"
        return ScopeFigures(
            kind,
            name,
            _judge_figures(judged.where(keep(judged, field)), sum(keep(failed, field)), scale, **options),
            _human_figures(humans.where(keep(humans, field)), scale, **options),
        )

    strata = sorted({i.stratum for i in item_rows})
    locales = sorted({i.locale for i in item_rows})
    return JudgeAgreement(
        scale=scale,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        overall=scope("overall", ""),
        strata=tuple(scope("stratum", s) for s in strata),
        locales=tuple(scope("locale", loc) for loc in locales),
    )


def judges_compare(
    items: Iterable[HumanItem],
    judges: Mapping[str, Mapping[ItemKey, int | None]],
    human_pairs: Iterable[HumanPair],
    **options: Any,
) -> JudgeComparison:
    """Several judges side by side on the same items: only the items every judge graded (a grade from
    each; an error or no answer from any judge leaves the item out for all), which `note` says. Each
    judge's `n_errors` and `n_missing` count over all the items. `options` are `judge_agreement`'s."""
    rows = list(items)
    pairs = list(human_pairs)
    keys = [(i.query_id, i.doc_id) for i in rows]
    common = [
        i
        for i, key in zip(rows, keys, strict=True)
        if all(grades.get(key) is not None for grades in judges.values())
    ]
    compared = tuple(
        ComparedJudge(
            name=name,
            n_errors=sum(1 for key in keys if key in grades and grades[key] is None),
            n_missing=sum(1 for key in keys if key not in grades),
            figures=judge_agreement(judged_items(common, grades), pairs, **options),
        )
        for name, grades in sorted(judges.items())
    )
    left_out = len(rows) - len(common)
    note = f"on the {len(common)} items every judge graded"
    if left_out:
        note += (
            f" ({left_out} of {len(rows)} left out: a judge has no grade there, or answered with an error)"
        )
    return JudgeComparison(n_items=len(rows), n_common=len(common), note=note, judges=compared)


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
    errors = _options_errors(scale, 1, 0.5)
    if not _number(bar):
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
    batch = _Batch.of(confusion) if len(cells) else None
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
