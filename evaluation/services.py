"""Writes for evaluation: targets, runs (create, cancel, and the steps the Celery tasks run), budgets,
baselines, the rebaseline workflow, nightly schedules and queueing unjudged documents for rating.

How a run moves (docs/runs.md has the whole story):

    run_create ──on commit──> task run_start ─ run_begin: QUEUED -> RUNNING (conditional update), keys
    resolved, queries split into chunks ─> chord(run_chunk x N)(run_finalize)
    run_chunk ─ run_chunk_process: skips queries that already have a result, calls the engine through
    the harness and writes each finished query at once (unique (run, query): a redelivered chunk re-does
    nothing), stops early when the run is no longer RUNNING (cancel)
    run_finalize ─ run_finalize_process: only when every query has a result; RUNNING -> FINALIZING
    (conditional update), report + gate against the baseline, -> SUCCEEDED.

Every step is safe to run twice. The chord is the normal trigger of finalize; the chunk that writes the
last result triggers it too (a chunk redelivered after a worker was killed can make the chord fire early
or never), and `runs_sweep` re-sends the missing work of a run that stopped making progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import queue
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from assay.drift import Budgets, BudgetsError, compare, load_budgets, render_markdown
from assay.golden.keys import ResolvedGolden, resolve_keys
from assay.golden.model import GoldenFile
from assay.harness import HarnessConfig, run_meta, search_all
from assay.report import build_report
from assay.results import QueryResult
from assay.targets import (
    SPEC_FIELDS,
    TargetError,
    TargetSpec,
    harness_config,
    params_secret_problems,
    spec_problems,
)
from evaluation.models import (
    Baseline,
    BudgetSet,
    EvaluationRun,
    QueryRunResult,
    RunSchedule,
    SearchTarget,
)
from evaluation.selectors import baseline_get, budgets_get
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet

logger = logging.getLogger(__name__)

Status = EvaluationRun.Status

# Chunking: enough chunks to spread a run over the workers, each big enough that the per-task overhead
# (a few database round trips, an HTTP client) stays small next to its searches.
CHUNKS_PER_RUN = 16
MIN_CHUNK_PER_CONCURRENCY = 4  # a chunk keeps its `concurrency` requests in flight for >= 4 rounds
MAX_CHUNK = 500
# How long a claimed finalize may take before another finalize may take over (its worker died).
FINALIZE_LEASE = timedelta(minutes=10)
# A RUNNING run without progress for this long has lost work (a chunk's worker died and the broker has
# not redelivered it yet): the sweeper re-sends the queries that have no result.
STALL_AFTER = timedelta(minutes=10)
QUEUED_GRACE = timedelta(minutes=10)
MAX_REDISPATCHES = 3
# A chunk writes its finished queries at least this often (a killed worker loses at most this much of
# finished work, which the redelivered chunk searches again) and in batches, so a fast engine costs a
# database round trip per batch rather than per query.
WRITE_EVERY_S = 0.1
WRITE_BATCH = 200
# Progress, heartbeat and the cancel check: at most this often per chunk.
TOUCH_EVERY_S = 0.5


class RunError(ValueError):
    """A run that cannot be created or changed; `problems` names each reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class BaselineError(RunError):
    """A run that cannot become a baseline, or a promotion this user may not make."""


# ------------------------------------------------------------------------------------------- targets

_TARGET_EXTRA = ("description",)


def _target_values(values: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(values) - set(SPEC_FIELDS) - set(_TARGET_EXTRA))
    if unknown:
        raise TargetError([f"{name}: not a target setting" for name in unknown])
    return dict(values)


def _target_save(target: SearchTarget, golden_sets: Iterable[GoldenSet] | None) -> SearchTarget:
    problems = spec_problems(target.spec())
    clash = SearchTarget.objects.filter(name=target.name).exclude(pk=target.pk)
    if target.name and clash.exists():
        problems.insert(0, f"name: a target named {target.name!r} exists")
    if problems:
        raise TargetError(problems)
    target.save()
    if golden_sets is not None:
        target.golden_sets.set(list(golden_sets))
    return target


@transaction.atomic
def target_create(
    *,
    name: str,
    url: str,
    owner: Any = None,
    golden_sets: Iterable[GoldenSet] = (),
    **settings: Any,
) -> SearchTarget:
    """A new target; `settings` are SearchTarget fields (adapter, headers, params, stages, timeout, ...).
    Raises TargetError naming every bad field; a secret header must be given as {"env": "VAR"}."""
    values = _target_values(settings)
    target = SearchTarget(name=name.strip(), url=url.strip(), owner=owner, **values)
    return _target_save(target, golden_sets)


@transaction.atomic
def target_update(
    *, target: SearchTarget, golden_sets: Iterable[GoldenSet] | None = None, **changes: Any
) -> SearchTarget:
    """Change settings of a target (runs already created keep the snapshot they were created with)."""
    values = _target_values(changes)
    locked = SearchTarget.objects.select_for_update().get(pk=target.pk)
    for name, value in values.items():
        setattr(locked, name, value.strip() if name in ("name", "url") and isinstance(value, str) else value)
    saved = _target_save(locked, golden_sets)
    target.refresh_from_db()
    return saved


# ------------------------------------------------------------------------------------------- budgets


@transaction.atomic
def budgets_set(*, golden_set: GoldenSet, data: Mapping[str, Any] | None, by: Any = None) -> BudgetSet:
    """Replace the set's budgets (nested or the seed's flat form; None = the defaults). Stored in the
    normalized nested form so a reader sees every effective threshold. Raises BudgetsError listing
    every bad key or value, and nothing is stored then."""
    budgets = load_budgets(data)
    row, _ = BudgetSet.objects.select_for_update().get_or_create(golden_set=golden_set)
    row.data = budgets.to_dict()
    row.updated_by = by
    row.save()
    return row


# ------------------------------------------------------------------------------------------- runs


def _params_problems(params: object) -> list[str]:
    if not isinstance(params, Mapping):
        return [f"params: expected an object of name -> value, got {type(params).__name__}"]
    problems = []
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            problems.append(f"params: names must be non-empty strings, got {key!r}")
        elif not _json_value(value):
            problems.append(f"params.{key}: expected a JSON value, got {type(value).__name__}")
    return problems + params_secret_problems(params)


def _json_value(value: object) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_value(v) for k, v in value.items())
    return False


@transaction.atomic
def run_create(
    *,
    golden_version: GoldenVersion,
    target: SearchTarget,
    triggered_by: Any = None,
    trigger: str = EvaluationRun.Trigger.WEB,
    params: Mapping[str, Any] | None = None,
    rebaseline: bool = False,
    schedule: RunSchedule | None = None,
) -> EvaluationRun:
    """Queue an evaluation of `golden_version` on `target` (the task starts once this commits).

    `triggered_by` is the user who asked (None for the schedule); `trigger` says how (web, api, ci,
    schedule). `params` override the target's params and stages for this run only. The target must list
    the version's golden set. Raises RunError naming every problem; nothing is created then.
    """
    problems: list[str] = []
    if trigger not in EvaluationRun.Trigger.values:
        problems.append(f"trigger: {trigger!r} is not one of {', '.join(EvaluationRun.Trigger.values)}")
    overrides = dict(params or {})
    problems += _params_problems(overrides)
    if not target.golden_sets.filter(pk=golden_version.golden_set_id).exists():
        problems.append(
            f"target {target.name} is not set up for golden set {golden_version.golden_set.slug} "
            "(add the set to the target first)"
        )
    spec = target.spec()
    spec_issues = spec_problems(spec)
    problems += [f"target {target.name}: {p}" for p in spec_issues]
    effective: dict[str, Any] = {}
    if not problems:
        try:
            config = harness_config(spec, size=golden_version.k, params=overrides, redact=True)
            effective = dict(config.params)
        except (TargetError, ValueError) as exc:
            problems.append(f"params: {exc}")
    if problems:
        raise RunError(problems)
    run = EvaluationRun.objects.create(
        golden_version=golden_version,
        target=target,
        target_snapshot=spec.to_dict(),
        params=overrides,
        effective_params=effective,
        rebaseline=rebaseline,
        trigger=trigger,
        triggered_by=triggered_by,
        schedule=schedule,
    )
    from evaluation.tasks import run_start

    run_id = run.pk
    transaction.on_commit(lambda: run_start.delay(run_id))
    return run


def run_cancel(*, run: EvaluationRun, by: Any = None) -> bool:
    """Cancel a queued or running run; False when it had already finished. Chunks stop at their next
    progress check and finalize leaves a cancelled run alone."""
    who = f" by {by.get_username()}" if by is not None else ""
    changed = EvaluationRun.objects.filter(pk=run.pk, status__in=EvaluationRun.ACTIVE).update(
        status=Status.CANCELLED, finished_at=timezone.now(), error_message=f"cancelled{who}"
    )
    run.refresh_from_db()
    return changed == 1


def run_fail(*, run_id: int, message: str) -> bool:
    """The final status for a run whose task hit an unexpected error (the tasks' wrapper calls this)."""
    return (
        EvaluationRun.objects.filter(pk=run_id, status__in=EvaluationRun.ACTIVE).update(
            status=Status.FAILED, finished_at=timezone.now(), error_message=message[:5000]
        )
        == 1
    )


# --- golden files, parsed once per process (versions are immutable, so a cached parse never goes stale)

_GOLDEN_CACHE: dict[tuple[int, str], GoldenFile] = {}
_GOLDEN_CACHE_SIZE = 8


def golden_of(version: GoldenVersion) -> GoldenFile:
    key = (version.pk, version.sha256)
    golden = _GOLDEN_CACHE.get(key)
    if golden is None:
        golden = version.golden()
        if len(_GOLDEN_CACHE) >= _GOLDEN_CACHE_SIZE:
            _GOLDEN_CACHE.pop(next(iter(_GOLDEN_CACHE)))
        _GOLDEN_CACHE[key] = golden
    return golden


def resolved_golden(run: EvaluationRun) -> ResolvedGolden:
    """The run's golden file with durable keys resolved through the map read when the run started."""
    return resolve_keys(golden_of(run.golden_version), run.key_map or {})


def plan_chunks(query_ids: Sequence[str], *, concurrency: int) -> list[list[str]]:
    """Split a run's queries into chunk tasks: about CHUNKS_PER_RUN chunks, each at least
    MIN_CHUNK_PER_CONCURRENCY rounds of `concurrency` requests and at most MAX_CHUNK queries."""
    ids = list(query_ids)
    size = max(concurrency * MIN_CHUNK_PER_CONCURRENCY, math.ceil(len(ids) / CHUNKS_PER_RUN), 1)
    size = min(size, MAX_CHUNK)
    return [ids[i : i + size] for i in range(0, len(ids), size)]


@dataclass(frozen=True, slots=True)
class RunPlan:
    """The chunks to send. `sequential`: one after another (a chain), not fanned out (a chord): a
    rate-limited target's limit is a promise to the engine that one limiter at a time keeps, and more
    workers could not go faster than the limit anyway."""

    run_id: int
    chunks: list[list[str]]
    sequential: bool = False


def _plan(run: EvaluationRun, query_ids: Sequence[str]) -> RunPlan:
    spec = TargetSpec.from_dict(run.target_snapshot)
    return RunPlan(run.pk, plan_chunks(query_ids, concurrency=spec.concurrency), sequential=spec.rate_limited)


@transaction.atomic
def run_begin(*, run_id: int) -> RunPlan | None:
    """Claim a queued run (QUEUED -> RUNNING; None when another task had it or it was cancelled), read
    the live durable keys once, and plan its chunks.

    One transaction: a worker that dies between the claim and writing the total and key map leaves the
    run QUEUED (the sweeper starts it again), never RUNNING with no total and no keys to score with."""
    now = timezone.now()
    claimed = EvaluationRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now
    )
    if claimed != 1:
        return None
    run = EvaluationRun.objects.select_related("golden_version__golden_set").get(pk=run_id)
    from golden_io.selectors import live_keys

    golden = golden_of(run.golden_version)
    wanted = {j.key for q in golden.queries for j in q.judgments if j.key is not None}
    live = live_keys(run.golden_version.golden_set)
    key_map = {key: live[key] for key in sorted(wanted) if key in live}
    resolved = resolve_keys(golden, key_map)
    ids = [q.id for q in golden.queries]
    EvaluationRun.objects.filter(pk=run_id, status=Status.RUNNING).update(
        total=len(ids), key_map=key_map, keys=resolved.to_dict()
    )
    return _plan(run, ids)


def run_missing_queries(*, run: EvaluationRun) -> list[str]:
    """The run's golden queries that have no result yet, in golden order."""
    have = set(QueryRunResult.objects.filter(run=run).values_list("query_id", flat=True))
    return [q.id for q in golden_of(run.golden_version).queries if q.id not in have]


# --- chunks


@dataclass(frozen=True, slots=True)
class ChunkOutcome:
    written: int  # result rows this chunk inserted
    skipped: int  # queries that already had a result (a redelivered chunk)
    stopped: bool  # the run was no longer RUNNING (cancelled, failed, finished)
    complete: bool  # every query of the run has a result now: finalize may go


def _result_row(run_id: int, result: QueryResult) -> QueryRunResult:
    return QueryRunResult(
        run_id=run_id,
        query_id=result.query_id,
        ids=list(result.ids),
        titles=list(result.titles),
        error=result.error,
        http_status=result.status,
        latency_ms=result.latency_ms,
        attempts=result.attempts,
        index_generation=result.index_generation or "",
        model_id=result.model_id or "",
    )


def _write(run_id: int, results: Sequence[QueryResult]) -> None:
    # ON CONFLICT DO NOTHING on (run, query_id): a result another delivery of this chunk already wrote
    # stays as it was; each query has exactly one row whatever the redeliveries.
    QueryRunResult.objects.bulk_create([_result_row(run_id, r) for r in results], ignore_conflicts=True)


def _touch(run_id: int) -> tuple[bool, int, int]:
    """Write progress from the result rows (never lower than before: chunks race) and the heartbeat.
    Returns (still RUNNING, done, total); False is how a chunk learns of a cancel."""
    counts = QueryRunResult.objects.filter(run_id=run_id).aggregate(
        done=Count("id"), errors=Count("id", filter=Q(error__isnull=False))
    )
    updated = EvaluationRun.objects.filter(pk=run_id, status=Status.RUNNING).update(
        done=Greatest(F("done"), Value(counts["done"])),
        errors=Greatest(F("errors"), Value(counts["errors"])),
        heartbeat_at=timezone.now(),
    )
    total = EvaluationRun.objects.filter(pk=run_id).values_list("total", flat=True).first() or 0
    return updated == 1, counts["done"], total


class _Search:
    """The harness on an event loop in its own thread, handing each finished query to the caller's thread
    through a queue, so the caller (which owns the database connection) writes it at once."""

    def __init__(self, queries: Sequence[Any], config: HarnessConfig) -> None:
        self.queries, self.config = queries, config
        self.results: queue.SimpleQueue[QueryResult] = queue.SimpleQueue()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="assay-harness", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # handed to the caller's thread, which records it per query
            self.error = exc

    async def _main(self) -> None:
        task = asyncio.ensure_future(search_all(self.queries, self.config, on_result=self.results.put))
        while not task.done():
            if self.stop.is_set():
                task.cancel()
                break
            await asyncio.wait({task}, timeout=0.05)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def drain(self, timeout: float) -> list[QueryResult]:
        batch: list[QueryResult] = []
        try:
            batch.append(self.results.get(timeout=timeout))
            while len(batch) < 500:
                batch.append(self.results.get_nowait())
        except queue.Empty:
            pass
        return batch


def _stream(run_id: int, search: _Search, seen: set[str]) -> bool:
    """Write the search's results as they come (adding their ids to `seen`) until it is done; True when
    the run stopped being RUNNING meanwhile (the search is then told to stop)."""
    pending: list[QueryResult] = []
    last_write = last_touch = time.monotonic()
    while True:
        finished = not search.thread.is_alive()
        pending += search.drain(timeout=0.05)
        now = time.monotonic()
        if pending and (finished or len(pending) >= WRITE_BATCH or now - last_write >= WRITE_EVERY_S):
            _write(run_id, pending)
            seen.update(r.query_id for r in pending)
            pending, last_write = [], now
        if now - last_touch >= TOUCH_EVERY_S:
            last_touch = now
            if not _touch(run_id)[0]:
                search.stop.set()
                return True
        if finished and not pending and search.results.empty():
            return False


def _error_results(query_ids: Iterable[str], message: str) -> list[QueryResult]:
    return [QueryResult(query_id=qid, error=message, attempts=0) for qid in query_ids]


def run_chunk_process(*, run_id: int, query_ids: Sequence[str]) -> ChunkOutcome:
    """Search the chunk's queries that have no result yet and write each as it finishes.

    Never raises for a query's failure: a search error, a target that cannot be called here (a missing
    environment variable) or an unexpected error in the chunk becomes that query's error row, so the run
    completes and its gate fails closed. Stops early (cancelling requests in flight) once the run is no
    longer RUNNING.
    """
    run = EvaluationRun.objects.select_related("golden_version").filter(pk=run_id).first()
    if run is None or run.status != Status.RUNNING:
        return ChunkOutcome(0, 0, stopped=True, complete=False)
    existing = set(
        QueryRunResult.objects.filter(run_id=run_id, query_id__in=list(query_ids)).values_list(
            "query_id", flat=True
        )
    )
    todo = [qid for qid in dict.fromkeys(query_ids) if qid not in existing]
    golden = golden_of(run.golden_version)
    by_id = {q.id: q for q in golden.queries}
    unknown = [qid for qid in todo if qid not in by_id]
    queries = [by_id[qid] for qid in todo if qid in by_id]
    written = 0
    if unknown:
        _write(run_id, _error_results(unknown, f"not a query of golden version {run.golden_version.name}"))
        written += len(unknown)
    stopped = False
    try:
        config = harness_config(TargetSpec.from_dict(run.target_snapshot), size=golden.k, params=run.params)
    except (TargetError, ValueError) as exc:
        # The same on every worker that lacks the variable: recorded, not retried.
        _write(run_id, _error_results([q.id for q in queries], f"target cannot be called: {exc}"))
        written += len(queries)
        queries = []
    if queries:
        search = _Search(queries, config)
        seen: set[str] = set()
        try:
            search.thread.start()
            stopped = _stream(run_id, search, seen)
            if search.error is not None:
                raise search.error
        except Exception as exc:
            # Unexpected (a bug, a soft time limit): every query of the chunk still without a result gets
            # this error so the gate fails closed; the run is not left waiting for them.
            search.stop.set()
            search.thread.join(30)
            logger.exception("run %s: chunk stopped", run_id)
            missing = [q.id for q in queries if q.id not in seen]
            _write(run_id, _error_results(missing, f"chunk stopped: {type(exc).__name__}: {exc}"))
            written += len(missing)
        finally:
            search.stop.set()
            if search.thread.is_alive():
                search.thread.join(30)
            written += len(seen)
    still_running, done, total = _touch(run_id)
    return ChunkOutcome(
        written,
        len(existing),
        stopped=stopped or not still_running,
        complete=still_running and total > 0 and done >= total,
    )


# --- finalize


def _results_of(run: EvaluationRun) -> dict[str, QueryResult]:
    return {
        row.query_id: QueryResult(
            query_id=row.query_id,
            ids=tuple(row.ids),
            error=row.error,
            status=row.http_status,
            latency_ms=row.latency_ms,
            attempts=row.attempts,
            index_generation=row.index_generation or None,
            model_id=row.model_id or None,
            titles=tuple(row.titles),
        )
        for row in QueryRunResult.objects.filter(run=run).order_by("id")
    }


def run_report_build(*, run: EvaluationRun) -> dict[str, Any]:
    """The run's report artifact from its result rows (METRICS.md), with the keys that did not resolve."""
    golden = golden_of(run.golden_version)
    results = _results_of(run)
    resolved = resolve_keys(golden, run.key_map or {})
    spec = TargetSpec.from_dict(run.target_snapshot)
    config = harness_config(spec, size=golden.k, params=run.params, redact=True)
    started = run.started_at or run.created
    ordered = [results[q.id] for q in golden.queries if q.id in results]
    meta = run_meta(config, ordered, started_at=started, duration=(timezone.now() - started).total_seconds())
    meta.update(
        {
            "run_id": run.pk,
            "target": spec.name,
            "golden_set": run.golden_version.golden_set.slug,
            "trigger": run.trigger,
            "triggered_by": run.triggered_by.get_username() if run.triggered_by else None,
        }
    )
    report = build_report(resolved.golden, results, run=meta)
    # Every report that scores resolved judgments lists the keys that did not resolve (DESIGN.md).
    report["keys"] = resolved.to_dict()
    return report


def run_gate(
    *, report: dict[str, Any], baseline: Baseline | None, budgets: Budgets, rebaseline: bool
) -> tuple[str, dict[str, Any]]:
    """(verdict, gate JSON) for a report. Without a baseline the means cannot be compared, but errors and
    critical queries still fail the run (fail closed); otherwise its verdict is "none"."""
    if baseline is None or baseline.run.report is None:
        gate = compare(report, report, budgets)
        data = gate.to_dict()
        data["baseline_run"] = None
        data["notes"] = [
            "no baseline for this golden set and target: only errors and critical queries were checked",
            *data["notes"],
        ]
        verdict = "fail" if gate.verdict == "fail" else EvaluationRun.Verdict.NONE
        data["verdict"] = verdict
        return verdict, data
    gate = compare(report, baseline.run.report, budgets, rebaseline=rebaseline)
    data = gate.to_dict()
    data["baseline_run"] = baseline.run_id
    data["baseline_id"] = baseline.pk
    return gate.verdict, data


def run_finalize_process(*, run_id: int) -> str:
    """Build the report and verdict once every query has a result. Returns "finalized", "waiting" (results
    missing: a chunk is still running or will be re-sent) or "skipped" (finished, cancelled, or another
    finalize holds the lease)."""
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None or run.status not in (Status.RUNNING, Status.FINALIZING):
        return "skipped"
    count = QueryRunResult.objects.filter(run_id=run_id).count()
    if count < run.total:
        return "waiting"
    now = timezone.now()
    claimed = (
        EvaluationRun.objects.filter(pk=run_id)
        .filter(
            Q(status=Status.RUNNING) | Q(status=Status.FINALIZING, finalizing_at__lt=now - FINALIZE_LEASE)
        )
        .update(status=Status.FINALIZING, finalizing_at=now, done=count)
    )
    if claimed != 1:
        return "skipped"
    run = EvaluationRun.objects.select_related("golden_version__golden_set", "target", "triggered_by").get(
        pk=run_id
    )
    golden_set = run.golden_version.golden_set
    report = run_report_build(run=run)
    baseline = baseline_get(golden_set=golden_set, target=run.target)
    verdict, gate = run_gate(
        report=report,
        baseline=baseline,
        budgets=budgets_get(golden_set=golden_set),
        rebaseline=run.rebaseline,
    )
    with transaction.atomic():
        locked = EvaluationRun.objects.select_for_update().get(pk=run_id)
        if locked.status != Status.FINALIZING:
            return "skipped"  # cancelled meanwhile: a cancel wins over a late report
        locked.report = report
        locked.gate = gate
        locked.verdict = verdict
        locked.baseline = baseline
        locked.errors = sum(1 for row in report["per_query"] if row["error"] is not None)
        locked.status = Status.SUCCEEDED
        locked.finished_at = timezone.now()
        locked.save(
            update_fields=["report", "gate", "verdict", "baseline", "errors", "status", "finished_at"]
        )
    return "finalized"


# --- sweeper


@dataclass
class SweepActions:
    """What `runs_sweep` found; the task sends these (services never talk to the broker themselves)."""

    start: list[int] = field(default_factory=list)
    finalize: list[int] = field(default_factory=list)
    redispatch: dict[int, RunPlan] = field(default_factory=dict)
    failed: list[int] = field(default_factory=list)


def runs_sweep(
    *,
    now: datetime | None = None,
    stall_after: timedelta = STALL_AFTER,
    queued_grace: timedelta = QUEUED_GRACE,
    max_redispatches: int = MAX_REDISPATCHES,
) -> SweepActions:
    """Find runs that stopped moving and say how to move them again (all of it is safe to repeat):
    queued too long (the start message was lost) -> start; running with every result in but no finalize
    -> finalize; running without progress for `stall_after` -> re-send the queries without a result (a
    chunk's worker died and the broker has not redelivered it) or, after `max_redispatches`, fail the run;
    finalizing past its lease -> finalize again."""
    now = now or timezone.now()
    actions = SweepActions()
    actions.start = list(
        EvaluationRun.objects.filter(status=Status.QUEUED, created__lt=now - queued_grace).values_list(
            "pk", flat=True
        )
    )
    actions.finalize = list(
        EvaluationRun.objects.filter(
            status=Status.FINALIZING, finalizing_at__lt=now - FINALIZE_LEASE
        ).values_list("pk", flat=True)
    )
    stalled = EvaluationRun.objects.filter(status=Status.RUNNING, heartbeat_at__lt=now - stall_after)
    for run in stalled.select_related("golden_version"):
        missing = run_missing_queries(run=run)
        if not missing:
            actions.finalize.append(run.pk)
            continue
        if run.redispatches >= max_redispatches:
            if run_fail(
                run_id=run.pk,
                message=f"stalled: {len(missing)} queries still without a result after "
                f"{run.redispatches} re-sends",
            ):
                actions.failed.append(run.pk)
            continue
        # Conditional on the heartbeat seen: two sweepers at once re-send the work once.
        claimed = EvaluationRun.objects.filter(
            pk=run.pk, status=Status.RUNNING, heartbeat_at=run.heartbeat_at
        ).update(redispatches=F("redispatches") + 1, heartbeat_at=now)
        if claimed == 1:
            actions.redispatch[run.pk] = _plan(run, missing)
    return actions


# ------------------------------------------------------------------------------------------- baselines


def can_review(user: Any, golden_set: GoldenSet) -> bool:
    """Reviewers of the set and admins approve baselines (and see runs of the set)."""
    from labeling.roles import is_admin

    if not getattr(user, "is_authenticated", False):
        return False
    return is_admin(user) or golden_set.reviewers.filter(pk=user.pk).exists()


def _promotion_problems(run: EvaluationRun, by: Any, rationale: str) -> list[str]:
    problems = []
    golden_set = run.golden_version.golden_set
    if not can_review(by, golden_set):
        problems.append(f"only a reviewer of {golden_set.slug} can approve a baseline")
    if not rationale.strip():
        problems.append("rationale: say why this run becomes the baseline")
    if run.status != Status.SUCCEEDED or run.report is None:
        problems.append(f"run {run.pk} is {run.status}: only a finished run with a report can be a baseline")
    elif run.errors:
        problems.append(
            f"run {run.pk} has {run.errors} errored queries: a baseline must have seen every answer "
            "(rerun it when the engine is healthy)"
        )
    return problems


@transaction.atomic
def baseline_promote(
    *, run: EvaluationRun, by: Any, rationale: str, git: Mapping[str, Any] | None = None
) -> Baseline:
    """Make `run` the baseline of its (golden set, target), recording who approved it and why. The
    previous baseline stays as history. Raises BaselineError naming every reason it cannot."""
    run = EvaluationRun.objects.select_related("golden_version__golden_set", "target").get(pk=run.pk)
    problems = _promotion_problems(run, by, rationale)
    if problems:
        raise BaselineError(problems)
    golden_set = GoldenSet.objects.select_for_update().get(pk=run.golden_version.golden_set_id)
    previous = baseline_get(golden_set=golden_set, target=run.target)
    git = git or {}
    return Baseline.objects.create(
        golden_set=golden_set,
        target=run.target,
        run=run,
        approved_by=by,
        rationale=rationale.strip(),
        previous=previous,
        git_branch=git.get("branch", ""),
        git_commit=git.get("commit", ""),
        git_message=git.get("message", ""),
        git_pushed=bool(git.get("pushed", False)),
        git_push_error=git.get("push_error", ""),
    )


def relevance_notes(
    *, run: EvaluationRun, previous: Baseline | None, by: Any, rationale: str, budgets: Budgets
) -> str:
    """RELEVANCE_NOTES.md for a rebaseline: who approved what and why, the before/after tables (the gate
    of the new run against the baseline it replaces, as a rebaseline), and the durable keys that did not
    resolve (the seed: a rebaseline lists id resolution failures as explicitly as metric drops)."""
    assert run.report is not None
    version = run.golden_version
    lines = [
        f"# Relevance rebaseline: {version.golden_set.slug} golden@{version.name} on {run.target.name}",
        "",
        f"- New baseline: run {run.pk} (finished {_iso(run.finished_at)}), golden `{version.name}` "
        f"(sha256 `{version.sha256[:12]}`)",
        f"- Replaces: {_previous_text(previous)}",
        f"- Approved by: {by.get_username()} on {_iso(timezone.now())}",
        f"- Engine parameters: `{_compact(run.effective_params)}`",
        "",
        "## Rationale",
        "",
        rationale.strip(),
        "",
        "## Before / after",
        "",
    ]
    if previous is None or previous.run.report is None:
        lines += ["No earlier baseline: nothing to compare with.", ""]
    else:
        gate = compare(run.report, previous.run.report, budgets, rebaseline=True)
        lines += [
            render_markdown(gate).replace("### Relevance gate", "### Gate against the old baseline"),
            "",
        ]
    keys = run.report.get("keys", {})
    unresolved = keys.get("unresolved", [])
    lines += ["## Durable keys that did not resolve", ""]
    if not unresolved:
        lines += ["None: every judged document's key resolved to a live id.", ""]
    else:
        lines += ["| query | key | old doc id | grade | scored | why |", "|---|---|---|---:|---|---|"]
        for u in unresolved:
            lines.append(
                f"| {u['query_id']} | {u['key'] or '-'} | {u['doc_id']} | {u['grade']} | "
                f"{'yes' if u['kept'] else 'no'} | {u['detail']} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _iso(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if when else "-"


def _previous_text(previous: Baseline | None) -> str:
    if previous is None:
        return "nothing (first baseline)"
    return (
        f"run {previous.run_id}, golden `{previous.run.golden_version.name}`, approved by "
        f"{previous.approved_by.get_username()} on {_iso(previous.approved_at)}"
    )


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def rebaseline_branch(version: GoldenVersion) -> str:
    return f"rebaseline/golden@{version.name}"


def rebaseline_write(*, run: EvaluationRun, by: Any, rationale: str) -> Baseline:
    """The rebaseline workflow: write `baseline/relevance.json` (the run's artifact) and
    `RELEVANCE_NOTES.md` on the branch `rebaseline/golden@<version>` (started from the version's tag, else
    the export branch) of the golden set's git export, push it when a remote is set, then record the run
    as the baseline with who approved it and the commit. Nothing is recorded when the git write fails;
    a failed push keeps the local commit and is recorded on the baseline. Raises BaselineError."""
    from assay.artifacts import dump_artifact
    from assay.git_export import Author, GitExportError, Remote, git_write
    from golden_io.models import GitExportConfig

    run = EvaluationRun.objects.select_related("golden_version__golden_set", "target").get(pk=run.pk)
    problems = _promotion_problems(run, by, rationale)
    golden_set = run.golden_version.golden_set
    config = GitExportConfig.objects.filter(golden_set=golden_set).first()
    if config is None:
        problems.append(f"golden set {golden_set.slug} has no git export configured")
    if problems:
        raise BaselineError(problems)
    assert config is not None and run.report is not None
    previous = baseline_get(golden_set=golden_set, target=run.target)
    notes = relevance_notes(
        run=run, previous=previous, by=by, rationale=rationale, budgets=budgets_get(golden_set=golden_set)
    )
    version = run.golden_version
    branch = rebaseline_branch(version)
    message = (
        f"Rebaseline {golden_set.slug} on {run.target.name} to golden@{version.name} (run {run.pk})"
        f"\n\n{rationale.strip()}\n\nApproved-by: {by.get_username()}"
    )
    files = {
        "baseline/relevance.json": dump_artifact(run.report).encode(),
        "RELEVANCE_NOTES.md": notes.encode(),
    }
    remote = (
        Remote(config.remote_url, config.username_env, config.password_env) if config.remote_url else None
    )
    try:
        written = git_write(
            repository_path=config.repository_path,
            branch=branch,
            files=files,
            message=message,
            author=Author(by.get_full_name() or by.get_username(), by.email or ""),
            remote=remote,
            start_from=[f"refs/tags/{version.tag}", f"refs/heads/{config.branch}"],
        )
    except (GitExportError, OSError) as exc:
        raise BaselineError([f"git export to {config.repository_path}: {exc}"]) from exc
    return baseline_promote(
        run=run,
        by=by,
        rationale=rationale,
        git={
            "branch": branch,
            "commit": written.commit,
            "message": message,
            "pushed": written.pushed,
            "push_error": written.push_error or "",
        },
    )


# ------------------------------------------------------------------------------------------- schedules


def schedule_problems(
    *, golden_set: GoldenSet, target: SearchTarget, hour: object, minute: object, params: object
) -> list[str]:
    """Every reason a nightly schedule could not start its run (the service and the admin form)."""
    problems = []
    if not (isinstance(hour, int) and 0 <= hour <= 23):
        problems.append(f"hour: {hour!r} is not 0..23 (UTC)")
    if not (isinstance(minute, int) and 0 <= minute <= 59):
        problems.append(f"minute: {minute!r} is not 0..59")
    problems += _params_problems({} if params is None else params)
    if not target.golden_sets.filter(pk=golden_set.pk).exists():
        problems.append(f"target {target.name} is not set up for golden set {golden_set.slug}")
    return problems


@transaction.atomic
def schedule_set(
    *,
    golden_set: GoldenSet,
    target: SearchTarget,
    hour: int = 2,
    minute: int = 0,
    enabled: bool = True,
    params: Mapping[str, Any] | None = None,
    by: Any = None,
) -> RunSchedule:
    """Create or change the nightly run of (golden set, target) at hour:minute UTC."""
    problems = schedule_problems(
        golden_set=golden_set, target=target, hour=hour, minute=minute, params=params
    )
    if problems:
        raise RunError(problems)
    schedule, _ = RunSchedule.objects.select_for_update().get_or_create(
        golden_set=golden_set, target=target, defaults={"created_by": by}
    )
    schedule.hour, schedule.minute, schedule.enabled = hour, minute, enabled
    schedule.params = dict(params or {})
    schedule.save()
    return schedule


def schedule_delete(*, golden_set: GoldenSet, target: SearchTarget) -> bool:
    """Remove the nightly run of (golden set, target); False when there was none. Its runs stay."""
    deleted, _ = RunSchedule.objects.filter(golden_set=golden_set, target=target).delete()
    return deleted > 0


def _today_at(now: datetime, hour: int, minute: int) -> datetime:
    utc = now.astimezone(UTC)
    return utc.replace(hour=hour, minute=minute, second=0, microsecond=0)


def schedules_due(*, now: datetime | None = None) -> list[RunSchedule]:
    """Enabled schedules whose time (UTC) has come today and that have not started a run today."""
    now = now or timezone.now()
    today: date = now.astimezone(UTC).date()
    candidates = RunSchedule.objects.filter(enabled=True).filter(
        Q(last_run_on__isnull=True) | Q(last_run_on__lt=today)
    )
    return [
        s
        for s in candidates.select_related("golden_set", "target")
        if _today_at(now, s.hour, s.minute) <= now
    ]


def runs_nightly(*, now: datetime | None = None) -> list[EvaluationRun]:
    """Start the due schedules' runs on each set's newest golden version (at most one a day each, even
    with two beat processes: the day is claimed with a conditional update first). A refused run (no
    golden version, run_create's problems) is recorded in the schedule's `last_error`/`last_error_at`;
    a started run clears them."""
    from golden_io.selectors import version_latest

    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    runs = []
    for schedule in schedules_due(now=now):
        claimed = RunSchedule.objects.filter(pk=schedule.pk, last_run_on=schedule.last_run_on).update(
            last_run_on=today
        )
        if claimed != 1:
            continue
        # The day stays claimed when the run is refused: the reason is kept on the schedule (the target
        # page shows it) and the next attempt is tomorrow's.
        mine = RunSchedule.objects.filter(pk=schedule.pk)
        version = version_latest(golden_set=schedule.golden_set)
        if version is None:
            logger.warning("nightly %s: golden set has no version yet, nothing to run", schedule)
            mine.update(
                last_error=f"golden set {schedule.golden_set.slug} has no golden version yet: nothing to run",
                last_error_at=now,
            )
            continue
        try:
            run = run_create(
                golden_version=version,
                target=schedule.target,
                trigger=EvaluationRun.Trigger.SCHEDULE,
                params=schedule.params,
                schedule=schedule,
            )
        except (RunError, IntegrityError) as exc:
            logger.error("nightly %s: run not created: %s", schedule, exc)
            mine.update(last_error=f"run not created: {exc}", last_error_at=now)
        except Exception as exc:  # one schedule's bug must not cost the other schedules their night
            logger.exception("nightly %s: run not created", schedule)
            mine.update(last_error=f"run not created: {type(exc).__name__}: {exc}", last_error_at=now)
        else:
            mine.update(last_error="", last_error_at=None)
            runs.append(run)
    return runs


# ------------------------------------------------------------------------------------------- unjudged


@dataclass
class UnjudgedQueued:
    added: int = 0  # new pool candidates
    queued: dict[str, list[str]] = field(default_factory=dict)  # query id -> doc ids queued
    unknown_documents: list[tuple[str, str]] = field(default_factory=list)  # (query id, doc id) not imported
    unknown_queries: list[str] = field(default_factory=list)  # golden queries not in the labeling set


def unjudged_queue(*, run: EvaluationRun, by: Any = None) -> UnjudgedQueued:
    """Queue the run's unjudged top-k documents for rating: each joins its query's candidate pool (with
    the run as provenance, which raters never see), reopening finished assignments of that query.
    Documents the labeling set does not know are listed (import them first), never invented."""
    from evaluation.selectors import unjudged_in_top_k
    from labeling.models import Document, Query
    from labeling.services import PoolEntry, pool_merge

    golden_set = run.golden_version.golden_set
    rows = unjudged_in_top_k(run=run)
    outcome = UnjudgedQueued()
    if not rows:
        return outcome
    queries = {
        q.external_id: q
        for q in Query.objects.filter(golden_set=golden_set, external_id__in=[r.query_id for r in rows])
    }
    wanted = {d for r in rows for d, _ in r.documents}
    documents = {d.doc_id: d for d in Document.objects.filter(golden_set=golden_set, doc_id__in=wanted)}
    system = f"run:{run.pk}"
    pools: dict[int, list[PoolEntry]] = {}
    for row in rows:
        query = queries.get(row.query_id)
        if query is None:
            outcome.unknown_queries.append(row.query_id)
            continue
        for doc_id, rank in row.documents:
            document = documents.get(doc_id)
            if document is None:
                outcome.unknown_documents.append((row.query_id, doc_id))
                continue
            pools.setdefault(query.pk, []).append(PoolEntry(document, system, rank))
            outcome.queued.setdefault(row.query_id, []).append(doc_id)
    outcome.added = pool_merge(pools=pools) if pools else 0
    return outcome


__all__ = [
    "BaselineError",
    "BudgetsError",
    "RunError",
    "TargetError",
    "baseline_promote",
    "budgets_set",
    "rebaseline_write",
    "run_cancel",
    "run_create",
    "runs_nightly",
    "schedule_delete",
    "schedule_set",
    "schedules_due",
    "target_create",
    "target_update",
    "unjudged_queue",
]
