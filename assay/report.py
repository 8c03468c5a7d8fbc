"""The evaluation artifact: per-query values and every aggregate of docs/metrics.md in one JSON (pure).

Who counts where (docs/metrics.md, "Per-query values", "Query flags" and "Aggregates"; each metric's
`over` in the metric table, `assay.metric_table`):
- an errored query is left out of every mean and counted only in `error_rate` (over all the group's queries);
- an `expect_empty` query is left out of the nDCG / RR / P means and of `empty_rate`, but docs/metrics.md
  does not exclude it from `lt3_rate` or `judged_at_k`, so it stays in those;
- a query without any positive judgment is flagged and still counted (its zeros are real);
- `judged_at_k` is averaged over the queries that returned something (it is undefined for an empty list).
The top-level fields (`n`, `ndcg`, `mrr`, ...) are the core tier's unweighted values; slices are taken
over the core tier, the gate set. Nothing is rounded; a mean over no query is null, never NaN.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from assay.changes import DEFAULT_SEED, LEVEL, RESAMPLES, bootstrap_means, percentile_interval
from assay.golden.format import natural_key
from assay.golden.model import TIERS, GoldenFile, GoldenQuery
from assay.metric_table import METRIC_KEYS, METRICS
from assay.metrics import first_ranks, score_lists
from assay.results import QueryResult

METRICS_SPEC = "1"
DEFAULT_CRITICAL_RANK = 3
BOOTSTRAP_RESAMPLES = RESAMPLES
BOOTSTRAP_LEVEL = LEVEL
# The default seed of a report's intervals (the app passes one per run); recorded as `ci.seed`, and every
# change against this report resamples with it, so a page is reproducible.
BOOTSTRAP_SEED = DEFAULT_SEED


@dataclass(frozen=True, slots=True)
class _Columns:
    """Per-query values as arrays (golden order), so each aggregate is a masked mean."""

    # Metric key of the metric table -> its per-query values (judged_at_k: NaN where undefined).
    values: Mapping[str, NDArray[np.float64]]
    errored: NDArray[np.bool_]
    expect_empty: NDArray[np.bool_]
    weight: NDArray[np.float64]


def _mean(
    values: NDArray[np.float64], mask: NDArray[np.bool_], weights: NDArray[np.float64] | None = None
) -> dict[str, Any]:
    count = int(mask.sum())
    if count == 0:
        return {"value": None, "n": 0}
    if weights is None:
        return {"value": float(values[mask].mean()), "n": count}
    return {"value": float(np.average(values[mask], weights=weights[mask])), "n": count}


def _aggregate(cols: _Columns, group: NDArray[np.bool_]) -> dict[str, Any]:
    """AGG of docs/metrics.md for the queries selected by `group`: each metric of the metric table over
    the queries its `over` names, and the weighted twins."""
    answered = group & ~cols.errored
    over = {
        "scored": answered & ~cols.expect_empty,  # the nDCG / RR / P means and empty_rate
        "answered": answered,
        "all": group,
        "returned": answered & ~np.isnan(cols.values["judged_at_k"]),
    }
    agg: dict[str, Any] = {"n_queries": int(group.sum())}
    for metric in METRICS:
        agg[metric.key] = _mean(cols.values[metric.key], over[metric.over])
    agg["weighted"] = {
        m.key: _mean(cols.values[m.key], over[m.over], cols.weight) for m in METRICS if m.weighted
    }
    return agg


def bootstrap_interval(
    values: Sequence[float] | NDArray[np.float64],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = BOOTSTRAP_LEVEL,
) -> dict[str, Any]:
    """Percentile bootstrap interval of the mean: `resamples` draws with replacement, numpy default_rng(seed)
    (the draws of every change's interval, `assay.changes`). Also gives the plain `mean` and `n`; low, high
    and mean are null when there is no value. An interval of an absolute value: shown without a sign."""
    data = np.asarray(values, dtype=np.float64)
    result: dict[str, Any] = {"low": None, "high": None, "level": level, "resamples": resamples, "seed": seed}
    result["n"] = int(data.size)
    result["mean"] = float(data.mean()) if data.size else None
    if data.size:
        result["low"], result["high"] = percentile_interval(
            bootstrap_means(data, resamples=resamples, seed=seed), level
        )
    return result


def _ordered_unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _critical_entry(
    query: GoldenQuery, ranks: Mapping[str, int | None], critical_rank: int
) -> dict[str, Any]:
    grades = query.grades
    best_grade = max(grades.values(), default=None)
    best_docs = (
        sorted((d for d, g in grades.items() if g == best_grade), key=natural_key)
        if best_grade is not None and best_grade >= 1
        else []
    )
    found = [rank for d in best_docs if (rank := ranks.get(d)) is not None]
    rank = min(found) if found else None
    return {
        "id": query.id,
        "best_grade": best_grade,
        "best_docs": best_docs,
        "rank": rank,
        "critical_rank": critical_rank,
        "ok": rank is not None and rank <= critical_rank,
    }


def build_report(
    golden: GoldenFile,
    results: Mapping[str, QueryResult],
    *,
    run: Mapping[str, Any] | None = None,
    extra_queries: Sequence[str] = (),
    critical_rank: int = DEFAULT_CRITICAL_RANK,
    bootstrap_seed: int = BOOTSTRAP_SEED,
    compact_ranks: bool = False,
) -> dict[str, Any]:
    """Score `results` (query id -> what the search returned) against `golden` into the artifact.

    A golden query absent from `results` returned nothing (n = 0). Result ids the golden file lacks, and
    `extra_queries` (ids a run file holds that the golden lacks), are listed under `unknown_queries` and
    not scored. `run` is copied as is into the artifact (parameters, times, index generation, model id).
    `compact_ranks` keeps in each query's `ranks` and `grades` only the graded documents in the top k
    (a much smaller artifact for deep runs; the gate then reads an absent document as "not in the top k").
    """
    queries = golden.queries
    answers = [results.get(q.id) or QueryResult(query_id=q.id) for q in queries]
    errored = np.array([not a.ok for a in answers], dtype=bool)
    ranked = [() if not a.ok else a.ids for a in answers]
    grades = [q.grades for q in queries]
    scores = score_lists(grades, ranked, k=golden.k, relevant_min_grade=golden.relevant_min_grade)
    n = scores.n
    # Each metric's per-query values (a new metric of the metric table adds its line here).
    values = {
        "ndcg": scores.ndcg,
        "mrr": scores.rr,
        "precision_at_k": scores.p,
        # An errored query is never empty (docs/metrics.md); it is masked out of these anyway.
        "empty_rate": ((n == 0) & ~errored).astype(np.float64),
        "lt3_rate": ((n < 3) & ~errored).astype(np.float64),
        "error_rate": errored.astype(np.float64),
        "judged_at_k": np.where(errored, np.nan, scores.judged),
    }
    cols = _Columns(
        values=values,
        errored=errored,
        expect_empty=np.array([q.expect_empty for q in queries], dtype=bool),
        weight=np.array([q.weight for q in queries], dtype=np.float64),
    )

    per_query: list[dict[str, Any]] = []
    critical: list[dict[str, Any]] = []
    flags: dict[str, Any] = {
        "no_positive_judgments": [],
        "unexpected_hits": [],
        "unknown_queries": [],
        "errors": [],
    }
    for i, (query, answer) in enumerate(zip(queries, answers, strict=True)):
        graded = {d: g for d, g in grades[i].items() if g >= 1}
        ranks = first_ranks(ranked[i], graded)
        failed = bool(errored[i])
        judged = float(values["judged_at_k"][i])
        per_query.append(
            {
                "id": query.id,
                "text": query.text,
                "ndcg": None if failed else float(scores.ndcg[i]),
                "mrr": None if failed else float(scores.rr[i]),
                "p_at_k": None if failed else float(scores.p[i]),
                "empty": bool(values["empty_rate"][i]),
                "lt3": bool(values["lt3_rate"][i]),
                "n": int(n[i]),
                "duplicates": int(scores.duplicates[i]),
                "judged_at_k": None if np.isnan(judged) else judged,
                "error": answer.error,
                "tier": query.tier,
                "stratum": query.stratum,
                "traffic_band": query.traffic_band,
                "failure_mode": query.failure_mode,
                "locale": query.locale,
                "has_filters": bool(query.filters),
                "weight": query.weight,
                "expect_empty": query.expect_empty,
                "critical": query.critical,
                "ids": list(ranked[i][: golden.k]),
                **(_top_k_ranks(ranks, graded, golden.k) if compact_ranks else {"ranks": ranks}),
                # Lets the gate show each graded document's grade beside its rank change.
                **({} if compact_ranks else {"grades": graded}),
            }
        )
        if failed:
            flags["errors"].append({"id": query.id, "error": answer.error})
        if not query.has_positive_judgment and not query.expect_empty:
            flags["no_positive_judgments"].append(query.id)
        if query.expect_empty and not failed and n[i] > 0:
            flags["unexpected_hits"].append(query.id)
        if query.critical:
            critical.append(_critical_entry(query, ranks, critical_rank))
    golden_ids = {q.id for q in queries}
    flags["unknown_queries"] = _ordered_unique(
        [*extra_queries, *(qid for qid in results if qid not in golden_ids)]
    )

    tiers = np.array([q.tier for q in queries], dtype=object)
    core = tiers == "core"
    core_agg = _aggregate(cols, core)
    scored_core = core & ~errored & ~cols.expect_empty
    report: dict[str, Any] = {
        "metrics_spec": METRICS_SPEC,
        "golden_version": golden.version,
        "k": golden.k,
        "relevant_min_grade": golden.relevant_min_grade,
        "scale": {"min": golden.scale.min, "max": golden.scale.max},
        "n": core_agg["n_queries"],
        **{name: core_agg[name]["value"] for name in METRIC_KEYS},
        "tiers": {tier: _aggregate(cols, tiers == tier) for tier in TIERS if (tiers == tier).any()},
        "all": _aggregate(cols, np.ones(len(queries), dtype=bool)),
        "slices": _slices(queries, cols, core),
        "ci": {
            "seed": bootstrap_seed,
            "ndcg": bootstrap_interval(scores.ndcg[scored_core], seed=bootstrap_seed),
        },
        "flags": flags,
        "critical": critical,
        "per_query": per_query,
        # A diversity note: near-identical titles in the top k, for human review (not gated).
        "near_duplicates": [
            {"id": query.id, "groups": groups}
            for query, answer in zip(queries, answers, strict=True)
            if answer.error is None
            and (groups := near_duplicate_groups(answer.ids[: golden.k], answer.titles[: golden.k]))
        ],
        "run": dict(run) if run is not None else {},
    }
    return report


def _top_k_ranks(ranks: Mapping[str, int | None], graded: Mapping[str, int], k: int) -> dict[str, Any]:
    """`ranks` and `grades` of the graded documents returned in the top k only (`compact_ranks`)."""
    top = {d: rank for d, rank in ranks.items() if rank is not None and rank <= k}
    return {"ranks": top, "grades": {d: graded[d] for d in top}}


def _slices(queries: Sequence[GoldenQuery], cols: _Columns, core: NDArray[np.bool_]) -> dict[str, Any]:
    """Core-tier aggregates by stratum (the vertical), traffic band, failure mode and locale (queries without
    one are in no slice), and by filter presence."""
    slices: dict[str, Any] = {}
    for field in ("stratum", "traffic_band", "failure_mode", "locale"):
        labels = np.array([getattr(q, field) for q in queries], dtype=object)
        names = sorted({str(v) for v in labels[core] if v is not None}, key=natural_key)
        slices[field] = {name: _aggregate(cols, core & (labels == name)) for name in names}
    with_filters = np.array([bool(q.filters) for q in queries], dtype=bool)
    slices["filters"] = {
        "with_filters": _aggregate(cols, core & with_filters),
        "without_filters": _aggregate(cols, core & ~with_filters),
    }
    return slices


NEAR_DUPLICATE_SIMILARITY = 0.8


def _title_tokens(title: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", title.casefold()))


def near_duplicate_groups(
    ids: Sequence[str], titles: Sequence[str | None], *, similarity: float = NEAR_DUPLICATE_SIMILARITY
) -> list[list[dict[str, Any]]]:
    """Groups of results whose titles are near-identical (word sets with Jaccard similarity >=
    `similarity`), each result as {rank, doc_id, title}: three copies of one article at ranks 1-3 look
    fine to P@k and still make users scroll. Results without a title are left out."""
    hits = [
        (rank, doc_id, title)
        for rank, (doc_id, title) in enumerate(zip(ids, titles, strict=False), start=1)
        if title and title.strip()
    ]
    tokens = [_title_tokens(title) for _, _, title in hits]
    groups: list[list[int]] = []
    placed: set[int] = set()
    for i in range(len(hits)):
        if i in placed or not tokens[i]:
            continue
        group = [i]
        for j in range(i + 1, len(hits)):
            union = tokens[i] | tokens[j]
            if j not in placed and union and len(tokens[i] & tokens[j]) / len(union) >= similarity:
                group.append(j)
        if len(group) > 1:
            placed.update(group)
            groups.append(group)
    return [
        [{"rank": hits[i][0], "doc_id": hits[i][1], "title": hits[i][2]} for i in group] for group in groups
    ]
