"""Reads of runs: who sees which runs, run lists and progress, trends, side-by-side data for one query,
near-duplicate titles, targets, and a run's golden file (parsed once per process).

Runs show target names and rankings, which raters must never see (grading is blind): a run is visible
to those who review its golden set (the one rule of `labeling.roles`: admins, and holders of the
reviewer role on the set's list), and to nobody else, whoever started it.

Reads import no service (the services read through here), so nothing here can write by accident.
"""

from __future__ import annotations

from typing import Any

import msgspec
from django.db.models import ExpressionWrapper, F, QuerySet, TextField

from assay.golden.keys import ResolvedGolden, resolve_keys
from assay.golden.model import GoldenFile, GoldenQuery
from assay.memory import gc_paused
from assay.metric_table import METRIC_KEYS, WEIGHTED_METRICS, WEIGHTED_PREFIX
from assay.report import NEAR_DUPLICATE_SIMILARITY, near_duplicate_groups
from assay.results import QueryResult
from evaluation.runs.models import EvaluationRun, QueryRunResult, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from labeling.roles import reviewed_filter
from labeling.selectors import progress

# The trend page charts every metric of the metric table.
# The trend's series: each metric's core mean, then the traffic-weighted twins (`weighted_<metric>`).
TREND_METRICS = METRIC_KEYS + tuple(f"{WEIGHTED_PREFIX}{m}" for m in WEIGHTED_METRICS)


def runs_visible(*, user: Any) -> QuerySet[EvaluationRun]:
    """Every run `user` may see: the runs of the sets they review (see the module docstring)."""
    return EvaluationRun.objects.filter(reviewed_filter(user, "golden_version__golden_set"))


def run_list(
    *,
    user: Any,
    golden_set: GoldenSet | None = None,
    target: SearchTarget | None = None,
    status: str | None = None,
) -> QuerySet[EvaluationRun]:
    """Runs `user` may see, newest first, optionally of one set, target or status. The report and gate
    JSON are deferred: a list never needs them."""
    runs = runs_visible(user=user)
    if golden_set is not None:
        runs = runs.filter(golden_version__golden_set=golden_set)
    if target is not None:
        runs = runs.filter(target=target)
    if status is not None:
        runs = runs.filter(status=status)
    return (
        runs.select_related("golden_version__golden_set", "target", "triggered_by")
        .defer("report", "gate", "key_map")
        .order_by("-created", "-id")
    )


def run_get(*, user: Any, run_id: int) -> EvaluationRun | None:
    """The run if `user` may see it, else None (a view answers 404 either way)."""
    return (
        runs_visible(user=user)
        .select_related("golden_version__golden_set", "target", "triggered_by", "baseline__run")
        # The golden file and its document map (megabytes on a large set) load only when a page reads them
        # (`golden_of` parses a version once per process); the baseline's run is read for its id and
        # version, its report once by the report page (`report_page._baseline_report`), not twice.
        .defer(
            "golden_version__content",
            "golden_version__documents",
            "baseline__run__report",
            "baseline__run__gate",
            "baseline__run__key_map",
        )
        .filter(pk=run_id)
        .first()
    )


def run_progress(*, run: EvaluationRun) -> dict[str, Any]:
    """What a progress bar polls: fresh from the database (a chunk may have written since `run` was read),
    and `poll_ms`, when to ask again."""
    row: dict[str, Any] = dict(
        EvaluationRun.objects.filter(pk=run.pk)
        .values("status", "done", "total", "errors", "verdict", "error_message", "finished_at", "created")
        .get()
    )
    total, done = row["total"], row["done"]
    final = row["status"] in EvaluationRun.FINAL
    row["percent"] = 100.0 * done / total if total else (100.0 if final else 0.0)
    row["final"] = final
    row["poll_ms"] = progress.poll_ms(row.pop("created"))
    return row


def golden_of(version: GoldenVersion) -> GoldenFile:
    """The version's golden file, parsed once per process (`GoldenVersion.golden`)."""
    return version.golden()


def resolved_golden(run: EvaluationRun) -> ResolvedGolden:
    """The run's golden file with durable keys resolved through the map read when the run started."""
    return resolve_keys(golden_of(run.golden_version), run.key_map or {})


# Every row's `ids` (or `titles`) of a run, joined into one JSON array of arrays: decoded in one call.
_LISTS = msgspec.json.Decoder(list[tuple])


def run_results(*, run: EvaluationRun) -> dict[str, QueryResult]:
    """Query id -> what the engine returned for it in `run` (its stored rows), as the report scores it.

    Read as tuples, not model instances, and every row's `ids` and `titles` as the column's text,
    decoded all at once by msgspec rather than by one `json.loads` per value in the field's converter:
    finalize reads every row of a run (100,000 in docs/benchmarks.md's largest run)."""
    as_text = {name: ExpressionWrapper(F(name), output_field=TextField()) for name in ("ids", "titles")}
    rows = list(
        QueryRunResult.objects.filter(run=run)
        .order_by("id")
        .values_list(
            "query_id",
            as_text["ids"],
            "error",
            "http_status",
            "latency_ms",
            "attempts",
            "index_generation",
            "model_id",
            as_text["titles"],
        )
        .iterator(chunk_size=5000)
    )
    with gc_paused():  # 100,000 results of small tuples, none in a cycle
        ids = _LISTS.decode("[" + ",".join([row[1] for row in rows]) + "]")
        titles = _LISTS.decode("[" + ",".join([row[8] for row in rows]) + "]")
        results = {}
        for row, listed, named in zip(rows, ids, titles, strict=True):
            query_id, _, error, status, latency_ms, attempts, generation, model_id, _ = row
            results[query_id] = QueryResult(
                query_id=query_id,
                ids=listed,
                error=error,
                status=status,
                latency_ms=latency_ms,
                attempts=attempts,
                index_generation=generation or None,
                model_id=model_id or None,
                titles=named,
            )
    return results


def run_trend(
    *, target: SearchTarget, golden_set: GoldenSet, metrics: tuple[str, ...] = TREND_METRICS
) -> list[dict[str, Any]]:
    """Each finished run of `target` on `golden_set`, oldest first: its core-tier means (docs/metrics.md's
    unweighted values, the gate's, and the traffic-weighted ones for product review), its label, the golden
    version (a trend line breaks where it changes: values under two versions are not comparable) and the
    verdict."""
    runs = (
        EvaluationRun.objects.filter(
            target=target, golden_version__golden_set=golden_set, status=EvaluationRun.Status.SUCCEEDED
        )
        .select_related("golden_version", "target")
        .order_by("finished_at", "id")
    )
    points = []
    for run in runs:
        report = run.report or {}
        core = (report.get("tiers") or {}).get("core") or {}
        points.append(
            {
                "run_id": run.pk,
                "label": run.label,
                "finished_at": run.finished_at,
                "golden_version": run.golden_version.name,
                "verdict": run.verdict,
                "params": run.effective_params,
                **{m: _core_value(core, m) for m in metrics},
            }
        )
    return points


def _core_value(core: dict[str, Any], series: str) -> float | None:
    """One trend series' value from a report's core aggregate: a metric, or its weighted twin."""
    if series.startswith(WEIGHTED_PREFIX):
        return ((core.get("weighted") or {}).get(series.removeprefix(WEIGHTED_PREFIX)) or {}).get("value")
    return (core.get(series) or {}).get("value")


def _per_query(run: EvaluationRun, query_id: str) -> dict[str, Any] | None:
    for row in (run.report or {}).get("per_query", []):
        if row["id"] == query_id:
            return dict(row)
    return None


def run_compare_query(*, run_a: EvaluationRun, run_b: EvaluationRun, query_id: str) -> dict[str, Any]:
    """Side-by-side data for one query in two runs: each run's ranked list (id, title, grade, whether
    judged) and metrics, and for every document in either list its rank in each (None = absent) with
    the change. Raises KeyError when neither run has the query."""
    sides = []
    grades: dict[str, int] = {}
    query: GoldenQuery | None = None
    for run in (run_a, run_b):
        golden = resolved_golden(run).golden
        q = next((q for q in golden.queries if q.id == query_id), None)
        if q is not None:
            query = query or q
            grades.update(q.grades)
        result = QueryRunResult.objects.filter(run=run, query_id=query_id).first()
        ids = list(result.ids[: golden.k]) if result else []
        titles = list(result.titles) if result else []
        judged = q.grades if q is not None else {}
        sides.append(
            {
                "run_id": run.pk,
                "target": run.target.name,
                "params": run.effective_params,
                "error": result.error if result else None,
                "metrics": _per_query(run, query_id),
                "hits": [
                    {
                        "rank": i,
                        "doc_id": doc_id,
                        "title": titles[i - 1] if i - 1 < len(titles) else "",
                        "grade": judged.get(doc_id),
                        "judged": doc_id in judged,
                    }
                    for i, doc_id in enumerate(ids, start=1)
                ],
            }
        )
    if query is None:
        raise KeyError(query_id)
    ranks = [{h["doc_id"]: h["rank"] for h in side["hits"]} for side in sides]
    docs = list(dict.fromkeys([*ranks[0], *ranks[1]]))
    changes = []
    for doc_id in docs:
        before, after = ranks[0].get(doc_id), ranks[1].get(doc_id)
        changes.append(
            {
                "doc_id": doc_id,
                "grade": grades.get(doc_id),
                "rank_a": before,
                "rank_b": after,
                "moved": None if before is None or after is None else before - after,
            }
        )
    return {
        "query": {
            "id": query.id,
            "text": query.text,
            "locale": query.locale,
            "filters": dict(query.filters),
            "stratum": query.stratum,
            "tier": query.tier,
        },
        "a": sides[0],
        "b": sides[1],
        "documents": changes,
    }


def near_duplicate_titles(
    *, run: EvaluationRun, similarity: float = NEAR_DUPLICATE_SIMILARITY
) -> list[dict[str, Any]]:
    """Per query, groups of near-identical titles in the top k (`report.near_duplicate_groups`). Only
    engines that return titles can be checked."""
    k = golden_of(run.golden_version).k
    found = []
    for result in QueryRunResult.objects.filter(run=run, error__isnull=True).order_by("id"):
        groups = near_duplicate_groups(result.ids[:k], result.titles[:k], similarity=similarity)
        if groups:
            found.append({"query_id": result.query_id, "groups": groups})
    return found


def target_list(*, golden_set: GoldenSet | None = None) -> QuerySet[SearchTarget]:
    targets = SearchTarget.objects.all()
    if golden_set is not None:
        targets = targets.filter(golden_sets=golden_set)
    return targets.order_by("name")
