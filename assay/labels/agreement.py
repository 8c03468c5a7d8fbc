"""Inter-rater agreement statistics over flat ratings (pure: no Django, no other labeling module).

The Django side hands over plain `Rating` rows and gets plain dataclasses back (each with `to_dict()`).
Definitions, readings and worked examples: docs/agreement.md. In short:

- Krippendorff's alpha, ordinal, over every (query, document) unit with two or more grades, with the
  scale as the value domain: `krippendorff.alpha(value_counts=<units x grades>, value_domain=<scale>,
  level_of_measurement="ordinal")`, called once (not when only one grade is in use). The 95% interval
  is a percentile bootstrap that resamples whole queries (documents of one query are not independent:
  same rater, same rubric reading).
- Per rater pair, Cohen's kappa from scikit-learn: `cohen_kappa_score(a, b, labels=<full scale>,
  weights=...)` called for each pair (quadratic weighted, unweighted, and binary at `relevant_min_grade`
  with labels [0, 1]). Where kappa is undefined (no expected disagreement) it is not called: the pair's
  confusion matrix says so first, and the figure is an `Undefined` with the reason.
- Per query, on its dual-labeled documents: exact agreement, mean absolute difference, hard
  disagreements, relevance flips. A document with three grades contributes all three of its pairs.
- Per rater: items, median time, grade distribution, agreement with peers, consensus and gold.

A figure that cannot be computed is an `Undefined` carrying the reason, never 0 or NaN.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Literal

import krippendorff
import numpy as np
import numpy.typing as npt
from sklearn.metrics import cohen_kappa_score

from assay.golden.model import DEFAULT_RELEVANT_MIN_GRADE, Scale

DEFAULT_SCALE = Scale()
DEFAULT_HARD_DIFF = 2
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
# Any fixed seed will do; fixed so that a dashboard shows the same interval on every load.
DEFAULT_SEED = 20_240_611
# Krippendorff (2004, 2011): rely on data with alpha >= 0.800; 0.667 is the lowest limit for tentative
# conclusions.
ALPHA_RELIABLE = 0.8
ALPHA_TENTATIVE = 0.667
NO_SHARED_ITEMS = "no shared items"
# Shown in an error message before the rest is summarised as "... and N more".
MAX_ERRORS_SHOWN = 20

KappaVariant = Literal["quadratic", "unweighted", "binary"]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class AgreementInputError(ValueError):
    """Every problem in the input at once, each naming its place (`ratings[3].grade: ...`)."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        shown = self.errors[:MAX_ERRORS_SHOWN]
        more = len(self.errors) - len(shown)
        super().__init__("; ".join(shown) + (f"; ... and {more} more" if more else ""))


@dataclass(frozen=True, slots=True)
class Undefined:
    """A figure that has no value for these data; `reason` is shown in its place."""

    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"undefined": True, "reason": self.reason}


Figure = float | Undefined


@dataclass(frozen=True, slots=True)
class Rating:
    """One rater's current grade for one (query, document); `time_ms` is the time spent on it if known."""

    query_id: str
    doc_id: str
    rater: str
    grade: int
    time_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """How often a rater's grades equal, or are within one grade of, a reference over `n` comparisons."""

    n: int
    exact: Figure
    within_1: Figure

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class AlphaResult:
    value: Figure
    # Percentile bootstrap interval at `confidence`, resampling whole queries.
    interval: tuple[float, float] | Undefined
    # "reliable" (>= 0.8), "tentative" (>= 0.667) or "unreliable"; None when the value is undefined.
    reading: str | None
    n_units: int  # (query, document) units with two or more grades
    n_pairable: int  # grades in those units
    n_queries: int  # queries with at least one such unit: what the bootstrap resamples
    n_resamples: int
    # Resamples whose grades all fell in one category (alpha undefined there); left out of the interval.
    n_resamples_undefined: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class PairAgreement:
    """Two raters over the items both graded; distributions are over those shared items only."""

    rater_a: str
    rater_b: str
    n_shared: int
    kappa_quadratic: Figure
    kappa_unweighted: Figure
    kappa_binary: Figure
    exact: Figure
    within_1: Figure
    distribution_a: dict[int, int]
    distribution_b: dict[int, int]

    def kappa(self, variant: KappaVariant) -> Figure:
        return {
            "quadratic": self.kappa_quadratic,
            "unweighted": self.kappa_unweighted,
            "binary": self.kappa_binary,
        }[variant]

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class DocDisagreement:
    doc_id: str
    grades: tuple[int, ...]  # ascending

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class QueryAgreement:
    """One query's dual-labeled documents. Every pair of grades on a document counts once."""

    query_id: str
    n_docs: int  # documents with at least one grade
    n_dual: int  # documents with two or more grades
    n_pairs: int  # grade pairs compared
    n_exact: int  # pairs with equal grades
    abs_diff_sum: int  # sum over the pairs of |grade difference|
    # Documents whose grades differ at all (they need a third rater), and the two kinds of bad ones.
    disagreements: tuple[DocDisagreement, ...]
    hard_disagreements: tuple[DocDisagreement, ...]  # some pair differs by >= hard_diff
    relevance_flips: tuple[DocDisagreement, ...]  # some grade >= the cutoff and some below it

    # Integer counts divided once, so that a threshold such as 0.55 compares exactly with 11/20.
    @property
    def exact(self) -> Figure:
        return _ratio(self.n_exact, self.n_pairs, "no dual-labeled documents")

    @property
    def mad(self) -> Figure:
        """Mean absolute difference over the pairs."""
        return _ratio(self.abs_diff_sum, self.n_pairs, "no dual-labeled documents")

    def to_dict(self) -> dict[str, Any]:
        return {**_fields(self), "exact": _plain(self.exact), "mad": _plain(self.mad)}


@dataclass(frozen=True, slots=True)
class RaterFigures:
    rater: str
    n_items: int
    median_time_ms: Figure
    distribution: dict[int, int]
    peers: Match  # every pair with another rater on a shared item
    consensus: Match  # against the final labels passed in (the rater's own grade helped make them)
    gold: Match  # against known answers

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class AgreementReport:
    scale: Scale
    relevant_min_grade: int
    hard_diff: int
    alpha: AlphaResult
    raters: tuple[RaterFigures, ...]
    # Only pairs with at least one shared item; `pair()` answers for the others too.
    pairs: tuple[PairAgreement, ...]
    queries: tuple[QueryAgreement, ...]

    def pair(self, a: str, b: str) -> PairAgreement:
        """The pair's figures in (a, b) order; a pair with nothing in common gets undefined ones."""
        if a == b:
            raise ValueError(f"pair: {a!r} twice; a pair is two different raters")
        lo, hi = sorted((a, b))
        found = next((p for p in self.pairs if p.rater_a == lo and p.rater_b == hi), None)
        if found is None:
            found = _pair_without_overlap(lo, hi, self.scale)
        return found if (a, b) == (lo, hi) else _swap(found)

    def kappa_matrix(self, variant: KappaVariant = "quadratic") -> dict[str, dict[str, Figure]]:
        """Rater x rater kappa (symmetric; the diagonal is left out) for the dashboard."""
        names = [r.rater for r in self.raters]
        known = {(p.rater_a, p.rater_b): p.kappa(variant) for p in self.pairs}
        none = Undefined(NO_SHARED_ITEMS)
        return {a: {b: known.get((min(a, b), max(a, b)), none) for b in names if b != a} for a in names}

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


def alpha_reading(value: float) -> str:
    if value >= ALPHA_RELIABLE:
        return "reliable"
    if value >= ALPHA_TENTATIVE:
        return "tentative"
    return "unreliable"


def bootstrap_samples(n_queries: int, *, n_resamples: int, seed: int) -> IntArray:
    """The resampled query positions, shape (n_resamples, n_queries): the draws the interval uses.

    Public so that an independent computation (the benchmark's plain loop) can reuse the same draws.
    """
    return np.random.default_rng(seed).integers(0, n_queries, size=(n_resamples, n_queries))


def query_agreement(
    query_id: str,
    grades: Mapping[str, Sequence[int]],
    *,
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE,
    hard_diff: int = DEFAULT_HARD_DIFF,
    scale: Scale = DEFAULT_SCALE,
) -> QueryAgreement:
    """One query's figures from `doc_id -> grades` (the plain definition; `agreement_compute` computes
    the same for every query at once)."""
    errors = _settings_errors(scale, relevant_min_grade, hard_diff)
    for doc_id, doc_grades in grades.items():
        problem = _id_problem(doc_id)
        if problem:
            errors.append(f"grades[{doc_id!r}]: the document id {problem}")
        for i, g in enumerate(doc_grades):
            problem = _grade_problem(g, scale)
            if problem:
                errors.append(f"grades[{doc_id!r}][{i}]: {problem}")
    if errors:
        raise AgreementInputError(errors)

    n_dual = n_pairs = n_exact = abs_sum = 0
    disagreements: list[DocDisagreement] = []
    hard: list[DocDisagreement] = []
    flips: list[DocDisagreement] = []
    for doc_id in sorted(grades):
        gs = tuple(sorted(grades[doc_id]))
        if len(gs) < 2:
            continue
        n_dual += 1
        for a, b in itertools.combinations(gs, 2):
            n_pairs += 1
            n_exact += a == b
            abs_sum += abs(a - b)
        doc = DocDisagreement(doc_id, gs)
        if gs[-1] != gs[0]:
            disagreements.append(doc)
        if gs[-1] - gs[0] >= hard_diff:
            hard.append(doc)
        if gs[0] < relevant_min_grade <= gs[-1]:
            flips.append(doc)
    return QueryAgreement(
        query_id=query_id,
        n_docs=sum(1 for gs in grades.values() if gs),
        n_dual=n_dual,
        n_pairs=n_pairs,
        n_exact=n_exact,
        abs_diff_sum=abs_sum,
        disagreements=tuple(disagreements),
        hard_disagreements=tuple(hard),
        relevance_flips=tuple(flips),
    )


def agreement_compute(
    ratings: Iterable[Rating],
    *,
    scale: Scale = DEFAULT_SCALE,
    relevant_min_grade: int = DEFAULT_RELEVANT_MIN_GRADE,
    gold: Mapping[tuple[str, str], int] | None = None,
    final: Mapping[tuple[str, str], int] | None = None,
    hard_diff: int = DEFAULT_HARD_DIFF,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> AgreementReport:
    """Every agreement figure of a golden set.

    `ratings` hold each rater's current grade per (query, document), at most one per rater and item.
    `gold` maps (query_id, doc_id) to the known answer; `final` to the consolidated grade (for the
    raters' agreement with consensus). The result does not depend on the order of `ratings`.
    Raises AgreementInputError listing every bad input.
    """
    data = _Columns.build(
        ratings, scale=scale, relevant_min_grade=relevant_min_grade, hard_diff=hard_diff,
        gold=gold, final=final, n_resamples=n_resamples, confidence=confidence,
    )  # fmt: skip
    pairs = _PairRows.build(data)
    return AgreementReport(
        scale=scale,
        relevant_min_grade=relevant_min_grade,
        hard_diff=hard_diff,
        alpha=_alpha(data, n_resamples=n_resamples, confidence=confidence, seed=seed),
        raters=_rater_figures(data, pairs),
        pairs=_pair_figures(data, pairs),
        queries=_query_figures(data, pairs),
    )


# --- input ------------------------------------------------------------------------------------------


def _settings_errors(scale: Scale, relevant_min_grade: int, hard_diff: int) -> list[str]:
    errors = []
    if not all(type(x) is int for x in (scale.min, scale.max)) or scale.max <= scale.min:
        errors.append(f"scale: {scale} must be integers with at least two grades")
    elif type(relevant_min_grade) is not int or not scale.min < relevant_min_grade <= scale.max:
        errors.append(
            f"relevant_min_grade: {relevant_min_grade!r} must be an integer in {scale.min + 1}..{scale.max}"
            " so that grades exist on both sides of the cutoff"
        )
    if type(hard_diff) is not int or hard_diff < 1:
        errors.append(f"hard_diff: {hard_diff!r} must be a positive integer")
    return errors


def _grade_problem(grade: object, scale: Scale) -> str | None:
    if type(grade) is not int:
        return f"{grade!r} is not an integer grade"
    if grade not in scale:
        return f"{grade} is outside the scale {scale}"
    return None


def _id_problem(value: object) -> str | None:
    return None if isinstance(value, str) and value else f"{value!r} is not a non-empty string"


def _codes(values: list[str]) -> tuple[list[str], IntArray]:
    """Sorted distinct values and each value's position among them."""
    names = sorted(set(values))
    index = {name: i for i, name in enumerate(names)}
    return names, np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))


@dataclass(frozen=True, slots=True)
class _Columns:
    """The ratings as arrays sorted by (unit, rater); a unit is one (query, document)."""

    scale: Scale
    cutoff: int  # relevant_min_grade as a grade index (grade - scale.min)
    hard_diff: int
    queries: list[str]
    docs: list[str]
    raters: list[str]
    unit_query: IntArray  # per unit: query code; units are sorted by (query, doc)
    unit_doc: IntArray
    unit: IntArray  # per rating, sorted by (unit, rater)
    rater: IntArray
    grade: IntArray  # grade index 0..V-1
    time_ms: FloatArray  # NaN where unknown
    unit_gold: IntArray  # per unit: gold grade index or -1
    unit_final: IntArray

    @property
    def n_values(self) -> int:
        return self.scale.max - self.scale.min + 1

    @classmethod
    def build(
        cls,
        ratings: Iterable[Rating],
        *,
        scale: Scale,
        relevant_min_grade: int,
        hard_diff: int,
        gold: Mapping[tuple[str, str], int] | None,
        final: Mapping[tuple[str, str], int] | None,
        n_resamples: int,
        confidence: float,
    ) -> _Columns:
        rows = list(ratings)
        errors = _settings_errors(scale, relevant_min_grade, hard_diff)
        if type(n_resamples) is not int or n_resamples < 1:
            errors.append(f"n_resamples: {n_resamples!r} must be a positive integer")
        if not isinstance(confidence, float | int) or not 0 < confidence < 1:
            errors.append(f"confidence: {confidence!r} must be strictly between 0 and 1")
        if errors:
            raise AgreementInputError(errors)

        not_ratings = [
            f"ratings[{i}]: {r!r} is not a Rating" for i, r in enumerate(rows) if type(r) is not Rating
        ]
        if not_ratings:
            raise AgreementInputError(not_ratings)
        qids = [r.query_id for r in rows]
        dids = [r.doc_id for r in rows]
        rids = [r.rater for r in rows]
        grades = [r.grade for r in rows]
        times = [r.time_ms for r in rows]
        # Whole-column type checks first; the per-row messages are only built when one fails.
        if not {type(v) for v in itertools.chain(qids, dids, rids)} <= {str} or "" in {*qids, *dids, *rids}:
            for i, r in enumerate(rows):
                for name in ("query_id", "doc_id", "rater"):
                    problem = _id_problem(getattr(r, name))
                    if problem:
                        errors.append(f"ratings[{i}].{name}: {problem}")
        if {type(g) for g in grades} - {int} or (
            grades and not scale.min <= min(grades) <= max(grades) <= scale.max
        ):
            for i, g in enumerate(grades):
                problem = _grade_problem(g, scale)
                if problem:
                    errors.append(f"ratings[{i}].grade: {problem}")
        given = np.fromiter((t is not None for t in times), dtype=bool, count=len(times))
        # None (unknown) and anything that is not a number both become NaN; only the latter is an error.
        time_ms = np.array([t if type(t) in (int, float) else math.nan for t in times], dtype=np.float64)
        bad_time = np.flatnonzero(given & ~(np.isfinite(time_ms) & (time_ms >= 0)))
        errors.extend(f"ratings[{i}].time_ms: {times[i]!r} must be a finite number >= 0" for i in bad_time)
        if errors:
            raise AgreementInputError(errors)

        queries, q = _codes(qids)
        docs, d = _codes(dids)
        raters, rr = _codes(rids)
        unit_keys, unit = np.unique(q * len(docs) + d, return_inverse=True)
        n_raters = len(raters)
        seen, first, counts = np.unique(unit * n_raters + rr, return_index=True, return_counts=True)
        if (counts > 1).any():
            first_of = dict(zip(seen.tolist(), first.tolist(), strict=True))
            for i, key in enumerate((unit * n_raters + rr).tolist()):
                if first_of[key] != i:
                    errors.append(
                        f"ratings[{i}]: rater {rids[i]!r} already graded ({qids[i]!r}, {dids[i]!r})"
                        f" at ratings[{first_of[key]}]"
                    )
        unit_query, unit_doc = unit_keys // max(len(docs), 1), unit_keys % max(len(docs), 1)
        unit_gold = _unit_grades(gold, "gold", scale, queries, docs, unit_keys, errors)
        unit_final = _unit_grades(final, "final", scale, queries, docs, unit_keys, errors)
        if errors:
            raise AgreementInputError(errors)

        order = np.lexsort((rr, unit))
        grade = np.fromiter(grades, dtype=np.int64, count=len(grades)) - scale.min
        return cls(
            scale=scale,
            cutoff=relevant_min_grade - scale.min,
            hard_diff=hard_diff,
            queries=queries,
            docs=docs,
            raters=raters,
            unit_query=unit_query,
            unit_doc=unit_doc,
            unit=unit[order],
            rater=rr[order],
            grade=grade[order],
            time_ms=time_ms[order],
            unit_gold=unit_gold,
            unit_final=unit_final,
        )


def _unit_grades(
    labels: Mapping[tuple[str, str], int] | None,
    name: str,
    scale: Scale,
    queries: list[str],
    docs: list[str],
    unit_keys: IntArray,
    errors: list[str],
) -> IntArray:
    """Per unit, the grade index `labels` gives it, -1 where none; labels on unrated items are ignored."""
    out = np.full(len(unit_keys), -1, dtype=np.int64)
    if not labels:
        return out
    query_code = {q: i for i, q in enumerate(queries)}
    doc_code = {d: i for i, d in enumerate(docs)}
    keys: list[int] = []
    grades: list[int] = []
    for key, grade in labels.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            errors.append(f"{name}[{key!r}]: the key must be a (query_id, doc_id) pair")
            continue
        problem = _grade_problem(grade, scale)
        if problem:
            errors.append(f"{name}[{key!r}]: {problem}")
            continue
        qi, di = query_code.get(key[0]), doc_code.get(key[1])
        if qi is not None and di is not None:
            keys.append(qi * len(docs) + di)
            grades.append(grade - scale.min)
    wanted = np.array(keys, dtype=np.int64)
    pos = np.minimum(np.searchsorted(unit_keys, wanted), len(unit_keys) - 1)
    rated = unit_keys[pos] == wanted
    out[pos[rated]] = np.array(grades, dtype=np.int64)[rated]
    return out


@dataclass(frozen=True, slots=True)
class _PairRows:
    """Every pair of grades given to one unit by two raters (a < b), one row per pair."""

    a: IntArray
    b: IntArray
    grade_a: IntArray
    grade_b: IntArray
    unit: IntArray

    @classmethod
    def build(cls, data: _Columns) -> _PairRows:
        # Ratings are sorted by (unit, rater), so the pairs of a unit sit at offsets 1..m-1 from each
        # other, with the lower rater code first; once no offset-k neighbours share a unit, none further do.
        left: list[IntArray] = []
        right: list[IntArray] = []
        k = 1
        while k < len(data.unit):
            i = np.flatnonzero(data.unit[:-k] == data.unit[k:])
            if not len(i):
                break
            left.append(i)
            right.append(i + k)
            k += 1
        li = np.concatenate(left) if left else np.zeros(0, dtype=np.int64)
        ri = np.concatenate(right) if right else np.zeros(0, dtype=np.int64)
        return cls(data.rater[li], data.rater[ri], data.grade[li], data.grade[ri], data.unit[li])


# --- alpha ------------------------------------------------------------------------------------------


def _alpha_from_coincidences(o: FloatArray, n_values: int) -> FloatArray:
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


def _alpha(data: _Columns, *, n_resamples: int, confidence: float, seed: int) -> AlphaResult:
    v = data.n_values
    n_units = len(data.unit_query)
    counts = np.bincount(data.unit * v + data.grade, minlength=n_units * v).reshape(n_units, v)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m, unit_query = counts[pairable], m[pairable], data.unit_query[pairable]
    n_pairable = int(m.sum())
    queries, starts = np.unique(unit_query, return_index=True)

    def result(value: Figure, interval: tuple[float, float] | Undefined, undefined: int = 0) -> AlphaResult:
        return AlphaResult(
            value=value,
            interval=interval,
            reading=None if isinstance(value, Undefined) else alpha_reading(value),
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
    # Each unit's coincidences: ordered pairs of its values, weighted 1 / (m - 1).
    per_unit = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v, dtype=np.int64)) / (
        m - 1
    )[:, None, None]
    # Units are sorted by query, so each query's units are one contiguous run.
    per_query = np.add.reduceat(per_unit.reshape(len(counts), v * v), starts, axis=0)
    if np.count_nonzero(counts.sum(axis=0)) < 2:  # no expected disagreement: the package is not called
        grade = data.scale.min + int(np.argmax(counts.sum(axis=0)))
        none = Undefined(f"every pairable grade is {grade}: alpha needs two or more grades in use")
        return result(none, none)
    # The value itself is the package's; the bootstrap below repeats its steps batched (1,000 calls
    # would take seconds), and tests hold the two equal.
    value = float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=list(range(data.scale.min, data.scale.max + 1)),
            level_of_measurement="ordinal",
        )
    )
    if len(queries) < 2:
        return result(value, Undefined("one query only: resampling whole queries needs two or more"))

    samples = bootstrap_samples(len(queries), n_resamples=n_resamples, seed=seed)
    alphas = np.empty(n_resamples)
    # A resample's coincidences are the sum of its queries' (with repeats): counts @ per-query matrices.
    chunk = max(1, 4_000_000 // len(queries))
    for lo in range(0, n_resamples, chunk):
        rows = samples[lo : lo + chunk]
        flat = (np.arange(len(rows))[:, None] * len(queries) + rows).ravel()
        weights = np.bincount(flat, minlength=rows.size).reshape(rows.shape).astype(np.float64)
        alphas[lo : lo + chunk] = _alpha_from_coincidences(weights @ per_query, v)
    ok = alphas[~np.isnan(alphas)]
    undefined = n_resamples - len(ok)
    if not len(ok):
        return result(value, Undefined("every resample has all its grades in one category"), undefined)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ok, [tail, 100 - tail])
    return result(value, (float(low), float(high)), undefined)


# --- pairs of raters --------------------------------------------------------------------------------


def _kappa_undefined(confusion: FloatArray, weights: FloatArray) -> npt.NDArray[np.bool_]:
    """Per confusion matrix (shape (P, K, K)): is Cohen's kappa undefined, i.e. is the expected weighted
    disagreement (scikit-learn's denominator) zero? Both raters used one and the same category."""
    sum0 = confusion.sum(axis=1)
    sum1 = confusion.sum(axis=2)
    expected = sum0[:, :, None] * sum1[:, None, :] / sum0.sum(axis=1)[:, None, None]
    # Exact zero test is safe: a sum of non-negative terms.
    return (weights * expected).sum(axis=(1, 2)) == 0


def _kappas(
    a: list[IntArray], b: list[IntArray], undefined: npt.NDArray[np.bool_], **options: Any
) -> list[float | None]:
    """`cohen_kappa_score(a[p], b[p], **options)` for every pair p, None where `undefined`."""
    return [
        None if skip else float(cohen_kappa_score(x, y, **options))
        for x, y, skip in zip(a, b, undefined.tolist(), strict=True)
    ]


def _distribution(counts: Iterable[int], scale: Scale) -> dict[int, int]:
    return {scale.min + i: int(c) for i, c in enumerate(counts)}


def _ratio(count: float, n: float, reason: str) -> Figure:
    return float(count) / float(n) if n else Undefined(reason)


def _pair_figures(data: _Columns, pairs: _PairRows) -> tuple[PairAgreement, ...]:
    v, cut, scale = data.n_values, data.cutoff, data.scale
    present, which = np.unique(pairs.a * len(data.raters) + pairs.b, return_inverse=True)
    n_pairs = len(present)
    if not n_pairs:
        return ()
    flat = which * v * v + pairs.grade_a * v + pairs.grade_b
    confusion = np.bincount(flat, minlength=n_pairs * v * v).reshape(n_pairs, v, v).astype(np.float64)
    binary = np.stack(
        [
            np.stack(
                [confusion[:, :cut, :cut].sum(axis=(1, 2)), confusion[:, :cut, cut:].sum(axis=(1, 2))], 1
            ),
            np.stack(
                [confusion[:, cut:, :cut].sum(axis=(1, 2)), confusion[:, cut:, cut:].sum(axis=(1, 2))], 1
            ),
        ],
        1,
    )
    idx = np.arange(v)
    q_undef = _kappa_undefined(confusion, np.subtract.outer(idx, idx).astype(np.float64) ** 2)
    u_undef = _kappa_undefined(confusion, 1 - np.eye(v))
    b_undef = _kappa_undefined(binary, 1 - np.eye(2))
    # Each pair's two grade columns, in the scale's own grades, for the scikit-learn calls.
    order = np.argsort(which, kind="stable")
    bounds = np.cumsum(np.bincount(which, minlength=n_pairs))[:-1]
    grades_a = np.split(pairs.grade_a[order] + scale.min, bounds)
    grades_b = np.split(pairs.grade_b[order] + scale.min, bounds)
    relevant_a = [(g >= cut + scale.min).astype(np.int64) for g in grades_a]
    relevant_b = [(g >= cut + scale.min).astype(np.int64) for g in grades_b]
    labels = list(range(scale.min, scale.max + 1))  # always the full scale (docs/agreement.md)
    quadratic = _kappas(grades_a, grades_b, q_undef, labels=labels, weights="quadratic")
    unweighted = _kappas(grades_a, grades_b, u_undef, labels=labels)
    kappa_binary = _kappas(relevant_a, relevant_b, b_undef, labels=[0, 1])
    shared = confusion.sum(axis=(1, 2))
    exact = np.trace(confusion, axis1=1, axis2=2)
    within_1 = (confusion * (np.abs(np.subtract.outer(idx, idx)) <= 1)).sum(axis=(1, 2))
    dist_a, dist_b = confusion.sum(axis=2), confusion.sum(axis=1)

    out = []
    for p, key in enumerate(present.tolist()):
        n = int(shared[p])
        same_grade = scale.min + int(np.argmax(dist_a[p]))
        one_grade = Undefined(f"both raters gave grade {same_grade} to all {n} shared items")
        side = "relevant" if binary[p, 1, 1] else "not relevant"
        one_side = Undefined(
            f"both raters put all {n} shared items on one side of the cutoff {data.cutoff + scale.min}"
            f" ({side})"
        )
        out.append(
            PairAgreement(
                rater_a=data.raters[key // len(data.raters)],
                rater_b=data.raters[key % len(data.raters)],
                n_shared=n,
                kappa_quadratic=_or(quadratic[p], one_grade),
                kappa_unweighted=_or(unweighted[p], one_grade),
                kappa_binary=_or(kappa_binary[p], one_side),
                exact=float(exact[p]) / n,
                within_1=float(within_1[p]) / n,
                distribution_a=_distribution(dist_a[p], scale),
                distribution_b=_distribution(dist_b[p], scale),
            )
        )
    return tuple(out)


def _or(value: float | None, undefined: Undefined) -> Figure:
    return undefined if value is None else value


def _pair_without_overlap(a: str, b: str, scale: Scale) -> PairAgreement:
    none = Undefined(NO_SHARED_ITEMS)
    zeros = _distribution([0] * (scale.max - scale.min + 1), scale)
    return PairAgreement(a, b, 0, none, none, none, none, none, zeros, dict(zeros))


def _swap(p: PairAgreement) -> PairAgreement:
    # Every figure here is symmetric in the two raters; only the labels and distributions trade places.
    return PairAgreement(
        p.rater_b, p.rater_a, p.n_shared, p.kappa_quadratic, p.kappa_unweighted, p.kappa_binary,
        p.exact, p.within_1, p.distribution_b, p.distribution_a,
    )  # fmt: skip


# --- queries ----------------------------------------------------------------------------------------


def _query_figures(data: _Columns, pairs: _PairRows) -> tuple[QueryAgreement, ...]:
    n_queries, scale = len(data.queries), data.scale
    if not n_queries:
        return ()
    pair_query = data.unit_query[pairs.unit]
    diff = np.abs(pairs.grade_a - pairs.grade_b)
    n_pairs = np.bincount(pair_query, minlength=n_queries)
    n_exact = np.bincount(pair_query[diff == 0], minlength=n_queries)
    abs_sum = np.bincount(pair_query, weights=diff, minlength=n_queries).astype(np.int64)

    starts = np.flatnonzero(np.r_[True, data.unit[1:] != data.unit[:-1]])
    ends = np.r_[starts[1:], len(data.unit)]
    low = np.minimum.reduceat(data.grade, starts)
    high = np.maximum.reduceat(data.grade, starts)
    dual = ends - starts >= 2
    n_docs = np.bincount(data.unit_query, minlength=n_queries)
    n_dual = np.bincount(data.unit_query[dual], minlength=n_queries)

    found: dict[int, tuple[list[DocDisagreement], list[DocDisagreement], list[DocDisagreement]]] = {}
    units = np.flatnonzero(high > low)
    # Plain lists from here: indexing numpy scalars one by one is what made this loop slow.
    grades = (data.grade + scale.min).tolist()
    hard_units = set(units[high[units] - low[units] >= data.hard_diff].tolist())
    flip_units = set(units[(low[units] < data.cutoff) & (data.cutoff <= high[units])].tolist())
    for u, query, doc_code, start, end in zip(
        units.tolist(),
        data.unit_query[units].tolist(),
        data.unit_doc[units].tolist(),
        starts[units].tolist(),
        ends[units].tolist(),
        strict=True,
    ):
        doc = DocDisagreement(data.docs[doc_code], tuple(sorted(grades[start:end])))
        disagreeing, hard, flips = found.setdefault(query, ([], [], []))
        disagreeing.append(doc)
        if u in hard_units:
            hard.append(doc)
        if u in flip_units:
            flips.append(doc)

    out = []
    for q, query_id in enumerate(data.queries):
        disagreeing, hard, flips = found.get(q, ([], [], []))
        out.append(
            QueryAgreement(
                query_id=query_id,
                n_docs=int(n_docs[q]),
                n_dual=int(n_dual[q]),
                n_pairs=int(n_pairs[q]),
                n_exact=int(n_exact[q]),
                abs_diff_sum=int(abs_sum[q]),
                disagreements=tuple(disagreeing),
                hard_disagreements=tuple(hard),
                relevance_flips=tuple(flips),
            )
        )
    return tuple(out)


# --- raters -----------------------------------------------------------------------------------------


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
        Match(int(n[r]), _ratio(exact[r], n[r], none_reason), _ratio(within[r], n[r], none_reason))
        for r in range(n_raters)
    ]


def _rater_figures(data: _Columns, pairs: _PairRows) -> tuple[RaterFigures, ...]:
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
                distribution=_distribution(distribution[r], data.scale),
                peers=peers[r],
                consensus=consensus[r],
                gold=gold[r],
            )
        )
    return tuple(out)


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}


def _plain(value: Any) -> Any:
    """JSON-ready form: Undefined as {"undefined": true, "reason": ...}, mapping keys as strings."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
