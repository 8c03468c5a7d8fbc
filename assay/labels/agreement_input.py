"""The ratings checked (every problem at once, `AgreementInputError`) and laid out as arrays sorted by
(unit, rater), a unit being one (query, document), with every pair of grades one unit got. The figure
modules compute from these.

Part of `assay.labels.agreement`, which is the public API: import from there.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from assay.golden.model import Scale
from assay.labels.agreement_types import AgreementInputError, FloatArray, IntArray, Rating


def settings_errors(scale: Scale, relevant_min_grade: int, hard_diff: int) -> list[str]:
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


def grade_problem(grade: object, scale: Scale) -> str | None:
    if type(grade) is not int:
        return f"{grade!r} is not an integer grade"
    if grade not in scale:
        return f"{grade} is outside the scale {scale}"
    return None


def id_problem(value: object) -> str | None:
    return None if isinstance(value, str) and value else f"{value!r} is not a non-empty string"


def _codes(values: list[str]) -> tuple[list[str], IntArray]:
    """Sorted distinct values and each value's position among them."""
    names = sorted(set(values))
    index = {name: i for i, name in enumerate(names)}
    return names, np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))


@dataclass(frozen=True, slots=True)
class Columns:
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
    ) -> Columns:
        rows = list(ratings)
        errors = settings_errors(scale, relevant_min_grade, hard_diff)
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
                    problem = id_problem(getattr(r, name))
                    if problem:
                        errors.append(f"ratings[{i}].{name}: {problem}")
        if {type(g) for g in grades} - {int} or (
            grades and not scale.min <= min(grades) <= max(grades) <= scale.max
        ):
            for i, g in enumerate(grades):
                problem = grade_problem(g, scale)
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
        problem = grade_problem(grade, scale)
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
class PairRows:
    """Every pair of grades given to one unit by two raters (a < b), one row per pair."""

    a: IntArray
    b: IntArray
    grade_a: IntArray
    grade_b: IntArray
    unit: IntArray

    @classmethod
    def build(cls, data: Columns) -> PairRows:
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
