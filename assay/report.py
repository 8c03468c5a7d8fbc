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

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from assay.golden.columns import GoldenColumns
from assay.golden.format import natural_key
from assay.golden.model import JUDGE, TIERS, GoldenFile, GoldenQuery
from assay.memo import ByIdentity
from assay.memory import gc_paused
from assay.metric_table import METRIC_KEYS, METRICS
from assay.metrics import MetricArrays, ideal_grades, score_top
from assay.ranked import Matched, match_results
from assay.resampling import DEFAULT_SEED, LEVEL, RESAMPLES, bootstrap_means_of, percentile_interval
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


@dataclass(frozen=True, slots=True, eq=False)
class _Prepared:
    """What a report reads of its golden file alone, worked out once per golden object: a worker scores
    every run of a golden version against the one object it parsed (never changed: rows get copies)."""

    columns: GoldenColumns
    ideal: NDArray[np.int64]  # `ideal_grades`
    expect_empty: NDArray[np.bool_]
    weight: NDArray[np.float64]
    tiers: dict[str, NDArray[np.bool_]]  # each tier the file holds (TIERS order) -> its queries
    core: NDArray[np.bool_]
    # The core tier's slices: by stratum (the vertical), traffic band, failure mode and locale (queries
    # without one are in no slice), and by filter presence: field -> slice name -> its queries.
    slices: dict[str, dict[str, NDArray[np.bool_]]]
    no_positive: list[str]  # the flag's query ids
    # Per query: the row's fields the golden query alone gives (`_per_query`); its graded documents
    # (grade >= 1, natural order), where they stand in the columns, and their grades.
    heads: list[tuple[Any, ...]]
    graded: list[tuple[str, ...]]
    graded_at: NDArray[np.intp]
    graded_grades: list[dict[str, int]]
    critical: list[int]  # the critical queries' places


def _prepare(golden: GoldenFile | GoldenColumns) -> _Prepared:
    columns = golden if isinstance(golden, GoldenColumns) else GoldenColumns.from_file(golden)
    queries = columns.queries
    count = len(queries)
    expect_empty = np.array([q.expect_empty for q in queries], dtype=bool)
    tier_of = np.array([q.tier for q in queries], dtype=object)
    tiers = {tier: tier_of == tier for tier in TIERS if (tier_of == tier).any()}
    core = tier_of == "core"
    slices: dict[str, dict[str, NDArray[np.bool_]]] = {}
    for field in ("stratum", "traffic_band", "failure_mode", "locale"):
        labels = np.array([getattr(q, field) for q in queries], dtype=object)
        names = sorted({str(v) for v in labels[core] if v is not None}, key=natural_key)
        slices[field] = {name: core & (labels == name) for name in names}
    with_filters = np.array([bool(q.filters) for q in queries], dtype=bool)
    slices["filters"] = {"with_filters": core & with_filters, "without_filters": core & ~with_filters}
    positive = columns.has_positive()
    graded_at = np.flatnonzero(columns.grades >= 1)
    bounds = np.searchsorted(graded_at, columns.bounds).tolist()
    docs = [columns.doc_ids[j] for j in graded_at.tolist()]
    grades = columns.grades[graded_at].tolist()
    return _Prepared(
        columns=columns,
        ideal=ideal_grades(columns.grades, columns.owner, count, columns.k),
        expect_empty=expect_empty,
        weight=np.array([q.weight for q in queries], dtype=np.float64),
        tiers=tiers,
        core=core,
        slices=slices,
        no_positive=[
            q.id for q, pos in zip(queries, positive.tolist(), strict=True) if not pos and not q.expect_empty
        ],
        heads=[
            (
                q.id,
                q.text,
                q.tier,
                q.stratum,
                q.traffic_band,
                q.failure_mode,
                q.locale,
                bool(q.filters),
                q.weight,
                q.expect_empty,
                q.critical,
            )
            for q in queries
        ],
        graded=[tuple(docs[start:end]) for start, end in pairwise(bounds)],
        graded_at=graded_at,
        graded_grades=[
            dict(zip(docs[start:end], grades[start:end], strict=True)) for start, end in pairwise(bounds)
        ],
        critical=[i for i, q in enumerate(queries) if q.critical],
    )


# Two: a worker holds few golden versions at a time, and a large one's rows and lookups are large.
_prepared: ByIdentity[GoldenFile | GoldenColumns, _Prepared] = ByIdentity(_prepare, size=2)


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
    (the draws of every change's interval, `assay.resampling`). Also gives the plain `mean` and `n`; low, high
    and mean are null when there is no value. An interval of an absolute value: shown without a sign."""
    return bootstrap_intervals([values], resamples=resamples, seed=seed, level=level)[0]


def bootstrap_intervals(
    samples: Sequence[Sequence[float] | NDArray[np.float64]],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = BOOTSTRAP_LEVEL,
) -> list[dict[str, Any]]:
    """`bootstrap_interval` of each of several samples of one size (figures of the same queries), from one
    set of draws: each the very interval it gets alone."""
    data = [np.asarray(values, dtype=np.float64) for values in samples]
    size = data[0].size if data else 0
    if any(values.size != size for values in data):
        raise ValueError("bootstrap_intervals: the samples differ in size")
    found = []
    means = bootstrap_means_of(data, resamples=resamples, seed=seed) if size else [None] * len(data)
    for values, drawn in zip(data, means, strict=True):
        result: dict[str, Any] = {
            "low": None,
            "high": None,
            "level": level,
            "resamples": resamples,
            "seed": seed,
        }
        result["n"] = int(values.size)
        result["mean"] = float(values.mean()) if values.size else None
        if drawn is not None:
            result["low"], result["high"] = percentile_interval(drawn, level)
        found.append(result)
    return found


def _ordered_unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _critical_entry(
    query: GoldenQuery, docs: Sequence[str], grades: Sequence[int], ranks: Sequence[int], critical_rank: int
) -> dict[str, Any]:
    """Where a critical query's best document ranks: its judgments' `docs` (natural order), `grades` and
    first `ranks` (0: not returned)."""
    best_grade = max(grades, default=None)
    best = (
        [i for i, g in enumerate(grades) if g == best_grade]
        if best_grade is not None and best_grade >= 1
        else []
    )
    found = [ranks[i] for i in best if ranks[i]]
    rank = min(found) if found else None
    return {
        "id": query.id,
        "best_grade": best_grade,
        "best_docs": [docs[i] for i in best],
        "rank": rank,
        "critical_rank": critical_rank,
        "ok": rank is not None and rank <= critical_rank,
    }


# Its lists and rows are 10^5 small acyclic objects in a large run: collecting meanwhile only walks them.
@gc_paused()
def build_report(
    golden: GoldenFile | GoldenColumns,
    results: Mapping[str, QueryResult] | Matched,
    *,
    run: Mapping[str, Any] | None = None,
    extra_queries: Sequence[str] = (),
    critical_rank: int = DEFAULT_CRITICAL_RANK,
    bootstrap_seed: int = BOOTSTRAP_SEED,
    compact_ranks: bool = False,
) -> dict[str, Any]:
    """Score `results` (query id -> what the search returned, or lists already matched to the judgments:
    `assay.ranked`) against `golden` into the artifact.

    A golden query absent from `results` returned nothing (n = 0). Result ids the golden file lacks, and
    `extra_queries` (ids a run file holds that the golden lacks), are listed under `unknown_queries` and
    not scored. `run` is copied as is into the artifact (parameters, times, index generation, model id).
    `compact_ranks` keeps in each query's `ranks` and `grades` only the graded documents in the top k
    (a much smaller artifact for deep runs; the gate then reads an absent document as "not in the top k").
    """
    prepared = _prepared(golden)
    columns = prepared.columns
    matched = results if isinstance(results, Matched) else match_results(columns, results)
    queries = columns.queries
    k = columns.k
    count = len(queries)
    errored = np.array([e is not None for e in matched.errors], dtype=bool)
    scores = score_top(
        matched.grades,
        matched.repeats,
        matched.n,
        prepared.ideal,
        k=k,
        relevant_min_grade=columns.relevant_min_grade,
    )
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
    expect_empty = prepared.expect_empty
    cols = _Columns(values=values, errored=errored, expect_empty=expect_empty, weight=prepared.weight)
    core = prepared.core
    scored_core = core & ~errored & ~cols.expect_empty
    # The interval's resampling (numpy, outside the GIL) runs beside the rows' Python work.
    with ThreadPoolExecutor(1) as pool:
        interval = pool.submit(bootstrap_interval, scores.ndcg[scored_core], seed=bootstrap_seed)
        per_query, critical = _per_query(prepared, matched, scores, values, compact_ranks, critical_rank)
        ndcg_interval = interval.result()
    ids = [q.id for q in queries]
    flags: dict[str, Any] = {
        "no_positive_judgments": list(prepared.no_positive),
        "unexpected_hits": [ids[i] for i in np.flatnonzero(expect_empty & ~errored & (n > 0)).tolist()],
        "unknown_queries": _ordered_unique([*extra_queries, *matched.unknown]),
        "errors": [{"id": ids[i], "error": matched.errors[i]} for i in np.flatnonzero(errored).tolist()],
    }

    core_agg = _aggregate(cols, core)
    titles = matched.titles
    report: dict[str, Any] = {
        "metrics_spec": METRICS_SPEC,
        "golden_version": columns.version,
        "k": k,
        "relevant_min_grade": columns.relevant_min_grade,
        "scale": {"min": columns.scale.min, "max": columns.scale.max},
        "n": core_agg["n_queries"],
        **{name: core_agg[name]["value"] for name in METRIC_KEYS},
        "tiers": {tier: _aggregate(cols, group) for tier, group in prepared.tiers.items()},
        "all": _aggregate(cols, np.ones(count, dtype=bool)),
        "slices": {
            field: {name: _aggregate(cols, group) for name, group in groups.items()}
            for field, groups in prepared.slices.items()
        },
        "ci": {
            "seed": bootstrap_seed,
            "ndcg": ndcg_interval,
        },
        "flags": flags,
        "critical": critical,
        "per_query": per_query,
        # A diversity note: near-identical titles in the top k, for human review (not gated).
        "near_duplicates": []
        if titles is None
        else [
            {"id": query.id, "groups": groups}
            for query, error, ids, top_titles in zip(
                queries, matched.errors, matched.top_ids, titles, strict=True
            )
            if error is None and (groups := near_duplicate_groups(ids, top_titles))
        ],
        "run": dict(run) if run is not None else {},
    }
    return report


def _or_none(values: NDArray[Any], missing: NDArray[np.bool_]) -> list[Any]:
    """`values` as Python numbers, None where `missing`."""
    out = values.astype(object)
    out[missing] = None
    return out.tolist()


def _per_query(
    prepared: _Prepared,
    matched: Matched,
    scores: MetricArrays,
    values: Mapping[str, NDArray[np.float64]],
    compact_ranks: bool,
    critical_rank: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The artifact's row per query, and the critical queries' entries."""
    columns = prepared.columns
    k = columns.k
    first_rank = matched.first_rank
    # The graded judgments (grade >= 1), query by query: the documents each row's `ranks` and `grades` name.
    if compact_ranks:
        graded = (columns.grades >= 1) & (first_rank > 0) & (first_rank <= k)
        shown = np.flatnonzero(graded)
        bounds = np.searchsorted(shown, columns.bounds).tolist()
        shown_docs = [columns.doc_ids[j] for j in shown.tolist()]
        shown_grades = columns.grades[shown].tolist()
        docs: Sequence[Sequence[str]] = [shown_docs[start:end] for start, end in pairwise(bounds)]
        grades = [
            dict(zip(shown_docs[start:end], shown_grades[start:end], strict=True))
            for start, end in pairwise(bounds)
        ]
    else:
        shown = prepared.graded_at
        docs = prepared.graded
        grades = list(map(dict.copy, prepared.graded_grades))
    shown_ranks = first_rank[shown]
    # Each row's `ranks` takes the next len(docs) of these: zip stops at the end of the row's documents
    # without drawing from the iterator.
    ranks = iter(_or_none(shown_ranks, shown_ranks == 0))
    failed = np.array([e is not None for e in matched.errors], dtype=bool)
    judged = values["judged_at_k"]
    rows = [
        {
            "id": qid,
            "text": text,
            "ndcg": ndcg,
            "mrr": rr,
            "p_at_k": p,
            "empty": empty,
            "lt3": lt3,
            "n": n,
            "duplicates": duplicates,
            "judged_at_k": judged_at_k,  # None: undefined
            "error": error,
            "tier": tier,
            "stratum": stratum,
            "traffic_band": band,
            "failure_mode": failure_mode,
            "locale": locale,
            "has_filters": has_filters,
            "weight": weight,
            "expect_empty": expect_empty,
            "critical": critical,
            "ids": ids,
            "ranks": dict(zip(row_docs, ranks, strict=False)),
            # Lets the gate show each graded document's grade beside its rank change.
            "grades": row_grades,
        }
        for (
            (
                qid,
                text,
                tier,
                stratum,
                band,
                failure_mode,
                locale,
                has_filters,
                weight,
                expect_empty,
                critical,
            ),
            ndcg,
            rr,
            p,
            empty,
            lt3,
            n,
            duplicates,
            judged_at_k,
            error,
            ids,
            row_docs,
            row_grades,
        ) in zip(
            prepared.heads,
            _or_none(scores.ndcg, failed),
            _or_none(scores.rr, failed),
            _or_none(scores.p, failed),
            values["empty_rate"].astype(bool).tolist(),
            values["lt3_rate"].astype(bool).tolist(),
            scores.n.tolist(),
            scores.duplicates.tolist(),
            _or_none(judged, np.isnan(judged)),
            matched.errors,
            matched.top_ids,
            docs,
            grades,
            strict=True,
        )
    ]
    critical_rows: list[dict[str, Any]] = []
    if prepared.critical:
        ends = columns.bounds.tolist()
        all_grades, first = columns.grades.tolist(), first_rank.tolist()
        for i in prepared.critical:
            start, end = ends[i], ends[i + 1]
            critical_rows.append(
                _critical_entry(
                    columns.queries[i],
                    columns.doc_ids[start:end],
                    all_grades[start:end],
                    first[start:end],
                    critical_rank,
                )
            )
    return rows, critical_rows


# The core metrics the run page shows with and without a judge's labels (docs/runs.md, "Judge labels in
# the report"): those the labels move (the rates count results, not labels).
JUDGE_EFFECT_METRICS = ("ndcg", "mrr", "precision_at_k", "judged_at_k")


def judge_label_effect(
    golden: GoldenFile, results: Mapping[str, QueryResult] | Matched, *, bootstrap_seed: int = BOOTSTRAP_SEED
) -> dict[str, Any] | None:
    """The core tier's metrics scored with the golden file's judge labels (`"source": "judge"`,
    docs/golden-format.md) and without them, their documents then unjudged (a 0, like any document
    nobody judged), or None when the file holds no judge label:
    `{"judge_labels", "n", "rows": [{"key", "with_judge", "without_judge", "difference"}]}`. Both sides are
    `build_report` of the same results, so "with" is the run's own report's figure."""
    judge_labels = golden.sources.get(JUDGE, 0)
    if not judge_labels:
        return None
    with_judge = build_report(golden, results, bootstrap_seed=bootstrap_seed)
    without = build_report(golden.without_source(JUDGE), results, bootstrap_seed=bootstrap_seed)
    rows = []
    for key in JUDGE_EFFECT_METRICS:
        a, b = with_judge[key], without[key]
        rows.append(
            {
                "key": key,
                "with_judge": a,
                "without_judge": b,
                "difference": None if a is None or b is None else a - b,
            }
        )
    return {"judge_labels": judge_labels, "n": with_judge["n"], "rows": rows}


NEAR_DUPLICATE_SIMILARITY = 0.8


def _title_words(title: str) -> list[str]:
    return re.findall(r"\w+", title.casefold())


def _title_similarity(a: list[str], b: list[str]) -> float:
    """How alike two titles read, word order included: twice the words they share in the same order
    (the longest such run of matching blocks) over the words of both, 0 to 1. "Refund policy for annual
    plans" and the same with "(copy)" score 0.91; "Switch from monthly to annual billing" and "Switch
    from annual to monthly billing", the same words meaning the opposite, 0.67 (as word sets: 1.0)."""
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def near_duplicate_groups(
    ids: Sequence[str], titles: Sequence[str | None], *, similarity: float = NEAR_DUPLICATE_SIMILARITY
) -> list[list[dict[str, Any]]]:
    """Groups of results whose titles are near-identical (`_title_similarity` >= `similarity`: the same
    words in the same order, give or take a word), each result as {rank, doc_id, title}: three copies of
    one article at ranks 1-3 look fine to P@k and still make users scroll. Results without a title are
    left out. Word order counts: titles that reorder the same words to mean something else ("monthly to
    annual" against "annual to monthly") are two articles, not copies."""
    hits = [
        (rank, doc_id, title)
        for rank, (doc_id, title) in enumerate(zip(ids, titles, strict=False), start=1)
        if title and title.strip()
    ]
    words = [_title_words(title) for _, _, title in hits]
    groups: list[list[int]] = []
    placed: set[int] = set()
    for i in range(len(hits)):
        if i in placed or not words[i]:
            continue
        group = [i]
        for j in range(i + 1, len(hits)):
            if j not in placed and _title_similarity(words[i], words[j]) >= similarity:
                group.append(j)
        if len(group) > 1:
            placed.update(group)
            groups.append(group)
    return [
        [{"rank": hits[i][0], "doc_id": hits[i][1], "title": hits[i][2]} for i in group] for group in groups
    ]
