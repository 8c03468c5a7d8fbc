"""Reads for evaluation: who sees which runs, run lists and progress, trends, side-by-side data for one
query, unjudged documents in the top k, baselines, budgets and the noise floor of a baseline's
configuration, targets, and a run's golden file (parsed once per process).

Runs show target names and rankings, which raters must never see (grading is blind): a run is visible
to those who review its golden set (the one rule of `labeling.roles`: admins, and holders of the
reviewer role on the set's list), and to nobody else, whoever started it.

Reads import no service (the services read through here), so nothing here can write by accident.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import msgspec
from django.db.models import ExpressionWrapper, F, QuerySet, TextField

from assay.drift import Budgets, load_budgets
from assay.golden.keys import ResolvedGolden, resolve_keys
from assay.golden.model import GoldenFile, GoldenQuery
from assay.memory import gc_paused
from assay.metric_table import METRIC_KEYS, WEIGHTED_METRICS, WEIGHTED_PREFIX
from assay.noise import (
    MIN_RUNS,
    NOT_ENOUGH_RUNS,
    NoiseError,
    NoiseFloor,
    configuration_differences,
    noise_floor,
)
from assay.report import NEAR_DUPLICATE_SIMILARITY, near_duplicate_groups
from assay.results import QueryResult
from evaluation.runs.models import Baseline, BudgetSet, EvaluationRun, QueryRunResult, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import Assignment, GoldenSet
from labeling.roles import reviewed_filter
from labeling.selectors import progress
from labeling.selectors.labels import labels_consolidated

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


class Waiting(StrEnum):
    """Why a document of a run's unjudged top k has no label in the run's golden version, read in the
    labeling set now (docs/runs.md, "Unjudged documents")."""

    LABELED = "labeled"  # labeled since the version was frozen: a new version would score it
    REVIEWER = "reviewer"  # graded, and a reviewer decides (a disagreement, a proposed change)
    SECOND_RATER = "second_rater"  # graded once, the second rater of a dual-sampled query has not
    THIRD_RATER = "third_rater"  # two grades disagree, a third rater's is coming
    GRADING = "grading"  # no grade yet: an open assignment covers it
    SKIPPED = "skipped"  # no grade, and every assignment covering it is done
    UNASSIGNED = "unassigned"  # no assignment covers its query: nobody will grade it


@dataclass(frozen=True, slots=True)
class UnjudgedRow:
    query_id: str
    text: str
    documents: list[tuple[str, int]]  # (doc id, rank) of the unjudged documents in the top k


def unjudged_in_top_k(*, run: EvaluationRun) -> list[UnjudgedRow]:
    """Per query, the documents in the run's top k that have no judgment of any grade (judged@k < 1):
    the labels are going stale there. Errored queries have no list and are left out."""
    golden = resolved_golden(run).golden
    results = {
        r.query_id: r
        for r in QueryRunResult.objects.filter(run=run, error__isnull=True).only("query_id", "ids")
    }
    rows = []
    for query in golden.queries:
        result = results.get(query.id)
        if result is None:
            continue
        judged = query.grades
        docs = [(d, rank) for rank, d in enumerate(result.ids[: golden.k], start=1) if d not in judged]
        # A repeated id is one document to judge.
        unique = list({d: (d, rank) for d, rank in reversed(docs)}.values())[::-1]
        if unique:
            rows.append(UnjudgedRow(query.id, query.text, sorted(unique, key=lambda x: x[1])))
    return rows


def unjudged_waiting(
    *, golden_set: GoldenSet, pairs: Collection[tuple[int, int]]
) -> tuple[dict[tuple[int, int], Waiting], dict[int, list[str]]]:
    """What each (query pk, document pk) of the set, unjudged in a run's version, waits for, read now:
    its consolidation (`labels_consolidated`, the one reading of what counts as a label and who decides
    an unresolved one), else the live assignments covering it. With the raters of the open ones per
    query (their names are for reviewers only: the report page's actions are theirs)."""
    if not pairs:
        return {}, {}
    query_pks = {q for q, _ in pairs}
    consolidated = labels_consolidated(
        golden_set=golden_set, query_ids=query_pks, document_ids={d for _, d in pairs}
    )
    labeled = {(label.query_id, label.document_id) for label in consolidated.labels}
    awaiting = {(u.query_id, u.document_id): u.awaiting for u in consolidated.unresolved}
    live = (
        Assignment.objects.everyday()
        .filter(query_id__in=query_pks)
        .exclude(status=Assignment.Status.REASSIGNED)
        .exclude(kind=Assignment.Kind.GOLD)
    )
    scopes: dict[int, set[int]] = {}
    for pk, document_id in live.filter(scope__isnull=False).values_list("pk", "scope__document_id"):
        scopes.setdefault(pk, set()).add(document_id)
    by_query: dict[int, list[tuple[int, int]]] = {}
    for pair in pairs:
        by_query.setdefault(pair[0], []).append(pair)
    covering: dict[tuple[int, int], set[str]] = {}  # pair -> statuses of the assignments covering it
    raters: dict[int, list[str]] = {}
    for pk, query_pk, status, rater in live.values_list("pk", "query_id", "status", "rater__username"):
        for pair in by_query[query_pk]:
            if pk not in scopes or pair[1] in scopes[pk]:
                covering.setdefault(pair, set()).add(status)
        if status == Assignment.Status.OPEN and rater not in raters.get(query_pk, []):
            raters.setdefault(query_pk, []).append(rater)
    named = {"reviewer": Waiting.REVIEWER, "second_rater": Waiting.SECOND_RATER}
    named["third_rater"] = Waiting.THIRD_RATER
    states: dict[tuple[int, int], Waiting] = {}
    for pair in pairs:
        statuses = covering.get(pair, set())
        if pair in labeled:
            states[pair] = Waiting.LABELED
        elif pair in awaiting and awaiting[pair] in named:
            states[pair] = named[awaiting[pair]]
        elif Assignment.Status.OPEN in statuses:
            states[pair] = Waiting.GRADING
        elif pair in awaiting:  # graded, waiting for something consolidation names another way
            states[pair] = Waiting.REVIEWER
        elif statuses:
            states[pair] = Waiting.SKIPPED
        else:
            states[pair] = Waiting.UNASSIGNED
    return states, {q: sorted(names) for q, names in raters.items()}


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


# A baseline's run without its report-sized JSON (tens of megabytes on a large set) nor its golden
# version's file, with its target (`run.label` reads the name): most readers of a baseline want its run's
# label, version name and parameters;
# `baseline.run.report` reads the report on first use (once: the instance keeps it), which only the gate,
# the noise floor and a promotion do.
_RUN_DOCUMENTS = (
    "run__report",
    "run__gate",
    "run__key_map",
    "run__golden_version__content",
    "run__golden_version__documents",
)


def baseline_get(*, golden_set: GoldenSet, target: SearchTarget) -> Baseline | None:
    """The baseline in force for (set, target): the newest promotion (its run's report read on use)."""
    return (
        Baseline.objects.filter(golden_set=golden_set, target=target)
        .select_related("run__golden_version", "run__target", "approved_by")
        .defer(*_RUN_DOCUMENTS)
        .order_by("-approved_at", "-id")
        .first()
    )


def baseline_list(*, golden_set: GoldenSet, target: SearchTarget | None = None) -> QuerySet[Baseline]:
    """Every promotion (the history), newest first."""
    rows = Baseline.objects.filter(golden_set=golden_set)
    if target is not None:
        rows = rows.filter(target=target)
    return (
        rows.select_related("run__golden_version", "run__target", "target", "approved_by")
        .defer(*_RUN_DOCUMENTS)
        .order_by("-approved_at", "-id")
    )


def budgets_get(*, golden_set: GoldenSet) -> Budgets:
    """The set's budgets, or docs/metrics.md's defaults when it has none."""
    row = BudgetSet.objects.filter(golden_set=golden_set).first()
    return load_budgets(row.data if row else None)


# --- the noise floor of a baseline's configuration (docs/metrics.md, "Noise floor")

# The newest runs a floor is measured from: enough to see the noise (the range only grows with more runs),
# and a bounded cost (each run's report is loaded) for the finalize step and the budgets page.
NOISE_RUNS = 10


@dataclass(frozen=True)
class NoiseMeasure:
    """The runs of a baseline's configuration (A/A runs, newest first) and the floor measured from them."""

    baseline: Baseline
    runs: list[EvaluationRun]
    floor: NoiseFloor | None  # None: `problem` says why
    problem: str = ""


def baselines_in_force(*, golden_set: GoldenSet) -> list[Baseline]:
    """The baseline in force of each target of the set that has one, by target name."""
    rows = (
        Baseline.objects.filter(golden_set=golden_set)
        .select_related("target", "run__golden_version", "run__target")
        .defer(*_RUN_DOCUMENTS)
        .order_by("target__name", "target_id", "-approved_at", "-id")
    )
    newest: dict[int, Baseline] = {}
    for row in rows:
        newest.setdefault(row.target_id, row)
    return list(newest.values())


def noise_runs(*, baseline: Baseline, limit: int = NOISE_RUNS) -> list[EvaluationRun]:
    """The baseline's configuration run again: succeeded runs of its target on its golden version with its
    effective parameters and the same system called (`assay.noise.configuration_differences` on the
    reports), without an errored query (errors leave the means: not noise); the newest `limit`."""
    reference = baseline.run.report or {}
    candidates = (
        EvaluationRun.objects.filter(
            target_id=baseline.target_id,
            golden_version_id=baseline.run.golden_version_id,
            effective_params=baseline.run.effective_params,
            status=EvaluationRun.Status.SUCCEEDED,
            errors=0,
            report__isnull=False,
        )
        .defer("report", "gate", "key_map")
        .order_by("-finished_at", "-id")
    )
    runs: list[EvaluationRun] = []
    for candidate in candidates.iterator(chunk_size=limit):
        # The baseline's own run (usually among them) is read already; another's report is read here,
        # one run at a time, and kept only with a run of the configuration.
        run = baseline.run if candidate.pk == baseline.run_id else candidate
        if not configuration_differences([reference, run.report or {}], ["baseline", "run"]):
            runs.append(run)
            if len(runs) == limit:
                break
    return runs


def noise_measure(*, baseline: Baseline) -> NoiseMeasure:
    """The noise floor of the baseline's configuration, or why there is none yet."""
    runs = noise_runs(baseline=baseline)
    if len(runs) < MIN_RUNS:
        count = f"{len(runs)} run" if len(runs) == 1 else f"{len(runs)} runs"
        return NoiseMeasure(
            baseline, runs, None, f"{count} of the baseline's configuration so far: {NOT_ENOUGH_RUNS}"
        )
    try:
        floor = noise_floor([run.report for run in runs], names=[f"run {run.pk}" for run in runs])
    except NoiseError as exc:  # reports of an older format: say so rather than fail the finalize step
        return NoiseMeasure(baseline, runs, None, "; ".join(exc.problems))
    return NoiseMeasure(baseline, runs, floor)


def target_list(*, golden_set: GoldenSet | None = None) -> QuerySet[SearchTarget]:
    targets = SearchTarget.objects.all()
    if golden_set is not None:
        targets = targets.filter(golden_sets=golden_set)
    return targets.order_by("name")


@dataclass(frozen=True)
class GatePlan:
    """What a new run of (golden version, target) will be gated against, known before it starts: the
    Start-a-run form and the API say it before a run is made, so no verdict comes as a surprise.

    `baseline` is the one in force (None: the run will have nothing to compare with, and passes on its
    own errors only). When it is on another golden version the gate refuses to compare unless the run
    re-scores the baseline on the run's version (`rescore_problem` says why it cannot, None when it can)
    or is gated as a rebaseline."""

    golden_version: GoldenVersion
    target: SearchTarget
    baseline: Baseline | None
    rescore_problem: str | None = None

    @property
    def other_version(self) -> bool:
        return self.baseline is not None and self.baseline.run.golden_version_id != self.golden_version.pk

    def describe(self, *, via: PlanWords | None = None) -> str:
        """One sentence for the form and the API's refusals; `via` names the choices as the caller
        offers them (the form's boxes by default)."""
        words = via or FORM_WORDS
        version = self.golden_version.name
        if self.baseline is None:
            return (
                f"{self.target.name} has no baseline on {self.golden_version.golden_set.slug} yet: the "
                "run is gated on its own errors only (promote a run to compare the next ones with it)."
            )
        run, base_version = self.baseline.run, self.baseline.run.golden_version.name
        if not self.other_version:
            return f"Gated against the baseline, {run.label}, on version {version}."
        if self.rescore_problem is None:
            return (
                f"The baseline, {run.label}, is on version {base_version}, not {version}: the gate refuses "
                f"to compare unless its stored lists are re-scored on {version}'s labels ({words.rescore}), "
                f"or the run is gated as a rebaseline ({words.rebaseline}); or pick {base_version}."
            )
        return (
            f"The baseline, {run.label}, is on version {base_version}, not {version}, and cannot be "
            f"re-scored on it ({self.rescore_problem}): pick {base_version}, or gate the run as a rebaseline "
            f"({words.rebaseline})."
        )

    def problems(self, *, rescore: bool, rebaseline: bool, via: PlanWords | None = None) -> list[str]:
        """Why a run with these choices would end in a refusal rather than a comparison (empty: it will
        compare, or it has nothing to compare with)."""
        if not self.other_version or rebaseline:
            return []
        if rescore and self.rescore_problem is None:
            return []
        return [self.describe(via=via)]


@dataclass(frozen=True)
class PlanWords:
    """How a caller offers the two choices, for `GatePlan.describe`."""

    rescore: str
    rebaseline: str


FORM_WORDS = PlanWords("tick 'Re-score the baseline'", "tick 'Gate as a rebaseline'")
API_WORDS = PlanWords(
    '"rescore_baseline": true; assay remote run --rescore-baseline',
    '"rebaseline": true; assay remote run --rebaseline',
)


def gate_plan(*, golden_version: GoldenVersion, target: SearchTarget) -> GatePlan:
    baseline = baseline_get(golden_set=golden_version.golden_set, target=target)
    if baseline is None or baseline.run.golden_version_id == golden_version.pk:
        return GatePlan(golden_version, target, baseline)
    # Only the report's k (a 100,000-query report is tens of megabytes; this runs on every Start page).
    scored = list(
        EvaluationRun.objects.filter(pk=baseline.run_id, report__isnull=False).values_list(
            "report__k", flat=True
        )
    )
    problem = None
    if not scored:
        problem = f"{baseline.run.label} has no report"
    elif scored[0] != golden_version.k:
        problem = (
            f"it was scored at k={scored[0]} and version {golden_version.name} scores at k={golden_version.k}"
        )
    return GatePlan(golden_version, target, baseline, problem)


def baseline_version_for(*, target: SearchTarget) -> GoldenVersion | None:
    """The golden version of the target's newest baseline in force (the Start-a-run form's default: a
    run on it compares like with like)."""
    newest = (
        Baseline.objects.filter(target=target)
        .select_related("run__golden_version")
        .order_by("-approved_at", "-id")
    ).first()
    return newest.run.golden_version if newest is not None else None
