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
- The verdicts drawn from these figures, qualification per scope and the drift watch, are
  `assay.labels.judge_verdicts`.

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
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    AgreementInputError,
    Figure,
    FloatArray,
    IntArray,
    Interval,
    Undefined,
    _fields,
)

Scope = Literal["overall", "stratum", "locale"]
ItemKey = tuple[str, str]


def is_number(value: object) -> bool:
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


# --- input ---------------------------------------------------------------------------------------------


def options_errors(scale: Scale, n_resamples: int, confidence: float) -> list[str]:
    errors = []
    if not all(type(x) is int for x in (scale.min, scale.max)) or scale.max <= scale.min:
        errors.append(f"scale: {scale} must be integers with at least two grades")
    if type(n_resamples) is not int or n_resamples < 1:
        errors.append(f"n_resamples: {n_resamples!r} must be a positive integer")
    if not is_number(confidence) or not 0 < confidence < 1:
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
class Batch:
    """Every figure of a batch of confusion matrices (shape (B, V, V)), NaN where undefined."""

    kappa_quadratic: FloatArray
    kappa_unweighted: FloatArray
    alpha: FloatArray
    exact: FloatArray
    within_1: FloatArray
    bias: FloatArray

    @classmethod
    def of(cls, confusion: FloatArray) -> Batch:
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

    point = Batch.of(confusion[None])
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
    batch = Batch.of(sums)
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
    humans_by_scope: dict[tuple[str, str], HumanFigures] | None = None,
) -> JudgeAgreement:
    """The judge against the human consensus, and the humans against each other, overall, per stratum
    and per locale (docs/judge-qualification.md). The result does not depend on the order of the rows.
    Raises AgreementInputError listing every bad input. `humans_by_scope`: the humans' figures of these
    same pairs and options by (scope kind, name), used where present and filled where not, so that
    several judges compared on one set of pairs (`judges_compare`) share them."""
    item_rows = list(items)
    pair_rows = list(human_pairs)
    errors = options_errors(scale, n_resamples, confidence)
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
        shared = {} if humans_by_scope is None else humans_by_scope
        if (kind, name) not in shared:
            shared[(kind, name)] = _human_figures(humans.where(keep(humans, field)), scale, **options)
        return ScopeFigures(
            kind,
            name,
            _judge_figures(judged.where(keep(judged, field)), sum(keep(failed, field)), scale, **options),
            shared[(kind, name)],
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
    humans: dict[tuple[str, str], HumanFigures] = {}  # the same pairs for every judge: computed once
    compared = tuple(
        ComparedJudge(
            name=name,
            n_errors=sum(1 for key in keys if key in grades and grades[key] is None),
            n_missing=sum(1 for key in keys if key not in grades),
            figures=judge_agreement(judged_items(common, grades), pairs, humans_by_scope=humans, **options),
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
