"""Per-query ranking metrics exactly as docs/metrics.md defines them, vectorized with numpy (pure).

`score_lists` is the one scoring path: the report, the command line and the benchmark all go through it.
Only the top k of each list is looked at: everything the spec scores (nDCG@k, RR@k, P@k, judged@k,
duplicates) lives there, and `n` is just the list's length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, itemgetter, methodcaller

import numpy as np
from numpy.typing import NDArray

from assay.memory import gc_paused

# Marks "no judgment" in the integer grade matrix; no real grade is anywhere near it.
UNJUDGED = np.iinfo(np.int64).min


@dataclass(frozen=True, slots=True)
class MetricArrays:
    """One entry per query, in input order. `judged` is NaN where the list is empty (judged@k undefined)."""

    ndcg: NDArray[np.float64]
    rr: NDArray[np.float64]
    p: NDArray[np.float64]
    n: NDArray[np.int64]
    duplicates: NDArray[np.int64]
    judged: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.n)


@dataclass(frozen=True, slots=True)
class QueryScores:
    ndcg: float
    rr: float
    p: float
    n: int
    duplicates: int
    judged: float | None


def _discounts(k: int) -> NDArray[np.float64]:
    # math.log2, as a plain-Python reading of the formula computes it: sums match one to the last digit.
    return np.array([math.log2(i + 2) for i in range(k)], dtype=np.float64)


def _dcg(grades: NDArray[np.int64], discounts: NDArray[np.float64]) -> NDArray[np.float64]:
    """DCG of a (k, queries) grade matrix, summed rank by rank in order like the spec's formula.

    The actual and the ideal lists go through this same code, so an ideal ranking scores exactly 1.0.
    Grades <= 0 earn nothing (a negative grade is "judged, not relevant", as trec_eval reads it).
    """
    terms = (np.exp2(np.maximum(grades, 0).astype(np.float64)) - 1.0) / discounts[:, None]
    total = np.zeros(grades.shape[1], dtype=np.float64)
    for position in range(grades.shape[0]):
        total += terms[position]
    return total


def _by_position(flat: NDArray[np.int64], depth: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """Scatter each query's run of `depth[i]` values from `flat` into column i of a (k, queries) matrix."""
    queries = len(depth)
    if queries and bool((depth == k).all()):
        return np.ascontiguousarray(flat.reshape(queries, k).T)
    out = np.full((k, queries), UNJUDGED, dtype=np.int64)
    starts = np.cumsum(depth) - depth
    owner = np.repeat(np.arange(queries), depth)
    out[np.arange(len(flat)) - np.repeat(starts, depth), owner] = flat
    return out


def ideal_grades(
    grades: NDArray[np.int64], owner: NDArray[np.int64], queries: int, k: int
) -> NDArray[np.int64]:
    """(k, queries) matrix of each query's judged grades sorted descending, cut at k (zeros past the end):
    `grades` are every judgment's grade, `owner` the query index of each.

    Built from per-query counts of each positive grade, so no per-query sort and no ragged padding.
    """
    positive = grades > 0
    grades = grades[positive]
    if not grades.size:
        return np.zeros((k, queries), dtype=np.int64)
    highest = int(grades.max())
    if highest <= 32:
        # The usual case, a small scale: every grade from the highest down is a level (cheaper than unique).
        levels = np.arange(highest, 0, -1)
        level_of = highest - grades
    else:
        levels = np.unique(grades)[::-1]  # highest grade first
        level_of = np.searchsorted(-levels, -grades)
    counts = np.bincount(owner[positive] * levels.size + level_of, minlength=queries * levels.size)
    # at_or_above[q, j]: how many of q's documents have grade >= levels[j]. In the ideal list, positions
    # from at_or_above[q, j] on are past level j: mark where each level ends, and a running count of the
    # marks gives, per position, the index of the level found there (levels.size: past every positive).
    at_or_above = np.cumsum(counts.reshape(queries, levels.size), axis=1)
    ends = np.zeros((queries, k + 1), dtype=np.int64)
    rows = np.arange(queries)
    for j in range(levels.size):
        ends[rows, np.minimum(at_or_above[:, j], k)] += 1
    level_at = np.cumsum(ends[:, :k], axis=1)
    return np.ascontiguousarray(np.append(levels, 0)[level_at].T)


def score_lists(
    judgments: Sequence[Mapping[str, int]],
    ranked: Sequence[Sequence[str]],
    *,
    k: int,
    relevant_min_grade: int,
) -> MetricArrays:
    """Score many queries at once: `judgments[i]` (doc id -> grade) against `ranked[i]` (ids, best first).

    Per docs/metrics.md: gain 2^rel - 1, discount log2(i + 1), IDCG from the judged grades (0 -> nDCG 0),
    RR@k and P@k (denominator k) at grade >= relevant_min_grade, unjudged = 0, a repeated id keeps its
    slot but earns nothing and is never relevant, `duplicates` counts the repeats in the top k, judged@k is
    the judged share of the top min(k, n) (a repeat of a judged id is still judged).
    """
    if len(judgments) != len(ranked):
        raise ValueError(f"{len(judgments)} judgment maps for {len(ranked)} ranked lists")
    _check(k, relevant_min_grade)
    queries = len(ranked)
    n = np.fromiter(map(len, ranked), dtype=np.int64, count=queries)
    with gc_paused():
        top, repeats = top_grades(judgments, ranked, k)
        sizes = np.fromiter(map(len, judgments), dtype=np.int64, count=queries)
        judged = np.fromiter(
            chain.from_iterable(map(methodcaller("values"), judgments)),
            dtype=np.int64,
            count=int(sizes.sum()),
        )
    ideal = ideal_grades(judged, np.repeat(np.arange(queries), sizes), queries, k)
    return score_top(top, repeats, n, ideal, k=k, relevant_min_grade=relevant_min_grade)


def top_grades(
    judgments: Sequence[Mapping[str, int]], ranked: Sequence[Sequence[str]], k: int
) -> tuple[NDArray[np.int64], NDArray[np.bool_] | None]:
    """The (k, queries) grade of each top-k slot (UNJUDGED where the document has no judgment, or past the
    list's end), and where repeats of an earlier id in the list stand (None when no list repeats one)."""
    tops = list(map(itemgetter(slice(0, k)), ranked))
    looked_up = chain.from_iterable(
        map(map, map(attrgetter("get"), judgments), tops, repeat(repeat(UNJUDGED)))
    )
    flat = np.fromiter(looked_up, dtype=np.int64, count=sum(map(len, tops)))
    return top_slots(flat, tops, k)


def top_slots(
    flat: NDArray[np.int64], tops: Sequence[Sequence[str]], k: int
) -> tuple[NDArray[np.int64], NDArray[np.bool_] | None]:
    """`top_grades` from the grade of each slot of the lists' top k (`tops`), one list after another in
    `flat`: that matrix, and the repeats."""
    queries = len(tops)
    depth = np.fromiter(map(len, tops), dtype=np.int64, count=queries)
    distinct = np.fromiter(map(len, map(set, tops)), dtype=np.int64, count=queries)
    grades = _by_position(flat, depth, k)
    repeated = np.flatnonzero(depth - distinct)
    if not repeated.size:
        return grades, None
    repeats = np.zeros((k, queries), dtype=bool)
    for column in repeated.tolist():  # rare: the exact, slow path only where repeats exist
        seen: set[str] = set()
        for position, doc_id in enumerate(tops[column]):
            repeats[position, column] = doc_id in seen
            seen.add(doc_id)
    return grades, repeats


def _check(k: int, relevant_min_grade: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if relevant_min_grade < 1:
        # With a cutoff of 0 every unjudged document (rel 0) would count as relevant.
        raise ValueError(f"relevant_min_grade must be >= 1, got {relevant_min_grade!r}")


def score_top(
    grades: NDArray[np.int64],
    repeats: NDArray[np.bool_] | None,
    n: NDArray[np.int64],
    ideal: NDArray[np.int64],
    *,
    k: int,
    relevant_min_grade: int,
) -> MetricArrays:
    """The metrics of `score_lists` from its inputs as arrays: `grades` (k, queries) of each top-k slot
    (UNJUDGED for an unjudged document or past the end), `repeats` (k, queries) where a slot repeats an
    earlier id of its list (or None: no repeat anywhere), `n` each list's length and `ideal` (k, queries)
    each query's judged grades best first (`ideal_grades`)."""
    _check(k, relevant_min_grade)
    depth = np.minimum(n, k)
    judged_slots = grades != UNJUDGED
    scoring = np.where(judged_slots, grades, 0)
    if repeats is None:
        duplicates = np.zeros(len(n), dtype=np.int64)
    else:
        scoring[repeats] = 0
        duplicates = repeats.sum(axis=0).astype(np.int64)
    discounts = _discounts(k)
    dcg = _dcg(scoring, discounts)
    idcg = _dcg(ideal, discounts)
    ndcg = np.divide(dcg, idcg, out=np.zeros(len(n)), where=idcg > 0)
    relevant = scoring >= relevant_min_grade
    first = relevant.argmax(axis=0)
    rr = np.where(relevant.any(axis=0), 1.0 / (first + 1), 0.0)
    p = relevant.sum(axis=0) / k
    with np.errstate(invalid="ignore", divide="ignore"):
        judged = np.where(depth > 0, judged_slots.sum(axis=0) / depth, np.nan)
    return MetricArrays(ndcg=ndcg, rr=rr, p=p, n=n, duplicates=duplicates, judged=judged)


def score_query(
    grades: Mapping[str, int], ranked: Sequence[str], *, k: int, relevant_min_grade: int
) -> QueryScores:
    """One query through `score_lists` (the same arithmetic, as plain Python numbers)."""
    arrays = score_lists([grades], [ranked], k=k, relevant_min_grade=relevant_min_grade)
    judged = float(arrays.judged[0])
    return QueryScores(
        ndcg=float(arrays.ndcg[0]),
        rr=float(arrays.rr[0]),
        p=float(arrays.p[0]),
        n=int(arrays.n[0]),
        duplicates=int(arrays.duplicates[0]),
        judged=None if math.isnan(judged) else judged,
    )


def first_ranks(ranked: Sequence[str], doc_ids: Iterable[str]) -> dict[str, int | None]:
    """1-based rank of each doc id's first occurrence in the whole list, None when it was not returned."""
    # Built from the end, so a repeated id keeps its first (best) rank.
    position = dict(zip(reversed(ranked), range(len(ranked), 0, -1), strict=True))
    return {doc_id: position.get(doc_id) for doc_id in doc_ids}
