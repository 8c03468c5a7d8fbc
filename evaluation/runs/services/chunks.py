"""The chunk task's step: search a chunk's queries that have no result yet and write each as it
finishes, with progress, heartbeat, the cancel check and the chunk's lease (docs/runs.md, "How a run
moves", step 3, and "Worker loss")."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Q, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from assay.golden.model import GoldenFile
from assay.harness import search_all
from assay.loop_thread import LoopThread
from assay.results import QueryResult
from assay.targets import TargetError, TargetSpec, harness_config
from evaluation.runs.models import EvaluationRun, QueryRunResult
from evaluation.runs.selectors import golden_of
from evaluation.runs.services.leases import LEASE_RENEW_EVERY_S, ChunkHold, chunk_lease_claim
from evaluation.runs.services.targets import target_secret_problems

logger = logging.getLogger(__name__)

Status = EvaluationRun.Status


# A chunk writes its finished queries at least this often (a killed worker loses at most this much of
# finished work, which the redelivered chunk searches again) and in batches, so a fast engine costs a
# database round trip per batch rather than per query.
WRITE_EVERY_S = 0.1
WRITE_BATCH = 200
# The heartbeat and the cancel check: at most this often per chunk.
TOUCH_EVERY_S = 0.5
# Progress, counted from the run's result rows: a count costs in proportion to the rows (about 30 ms at
# 100,000 on PostgreSQL), so less often; with several chunks at work the run's progress still moves
# about every TOUCH_EVERY_S. Between counts each heartbeat raises it to what its chunk knows of (its own
# rows, no count), so the bar of a run of one chunk (searched by its start task) moves every heartbeat.
PROGRESS_EVERY_S = 2.0
# Results read from the search thread at most at once, so the heartbeat and the lease are never far behind.
READ_MOST = 500


@dataclass(frozen=True, slots=True)
class ChunkOutcome:
    written: int  # result rows this chunk inserted
    skipped: int  # queries that already had a result (a redelivered chunk)
    stopped: bool  # the run was no longer RUNNING (cancelled, failed, finished), or the lease was lost
    complete: bool  # every query of the run has a result now: finalize may go
    # The chunk's lease was finished or held by another live delivery: this one did nothing.
    duplicate: bool = False


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


def _beat(run_id: int, done: int = 0, errors: int = 0) -> bool:
    """The heartbeat without a count: progress raised to at least `done` and `errors` (the rows the chunk
    knows of: a lower bound, so never more than the count would say). False when the run is no longer
    RUNNING."""
    return (
        EvaluationRun.objects.filter(pk=run_id, status=Status.RUNNING).update(
            done=Greatest(F("done"), Value(done)),
            errors=Greatest(F("errors"), Value(errors)),
            heartbeat_at=timezone.now(),
        )
        == 1
    )


def stream(
    search: LoopThread[Any],
    hold: ChunkHold | None,
    *,
    write: Callable[[list[Any]], None],
    touch: Callable[[bool], bool],
    label: str,
) -> bool:
    """Write the search's results as they come (`write`, at least every WRITE_EVERY_S or WRITE_BATCH)
    until it is done, with the heartbeat (`touch(count)`, False once the work is no longer RUNNING;
    `count`: also count the progress, every PROGRESS_EVERY_S) and the chunk's lease renewed; True when
    the work stopped being RUNNING meanwhile or another delivery took the chunk over (the search is then
    told to stop). `label` names the work in the log."""
    pending: list[Any] = []
    last_write = last_touch = last_count = last_renew = time.monotonic()
    while True:
        batch, finished = search.arrived(READ_MOST, wait=0.05)
        pending += batch
        now = time.monotonic()
        if pending and (finished or len(pending) >= WRITE_BATCH or now - last_write >= WRITE_EVERY_S):
            write(pending)
            pending, last_write = [], now
        if now - last_touch >= TOUCH_EVERY_S:
            last_touch = now
            counting = now - last_count >= PROGRESS_EVERY_S
            if counting:
                last_count = now
            if not touch(counting):
                search.cancel()
                return True
        if hold is not None and now - last_renew >= LEASE_RENEW_EVERY_S:
            last_renew = now
            if not hold.renew():
                logger.warning("%s: chunk %s was taken over by another delivery; stopping", label, hold.index)
                search.cancel()
                return True
        if finished and not pending:
            return False


def search_through(
    search: LoopThread[Any],
    hold: ChunkHold | None,
    *,
    write: Callable[[list[Any]], None],
    touch: Callable[[bool], bool],
    label: str,
    stopped_with: Callable[[str], int],
) -> tuple[bool, int]:
    """Start the search and write it as it comes (`stream`); (stopped, errors written). An unexpected
    error (a bug, the soft time limit) is handed to `stopped_with(message)`, which writes it as the error
    of everything of the chunk still without a result (so the run's gate fails closed, and nothing is left
    waiting for them) and says how many."""
    try:
        search.start()
        stopped = stream(search, hold, write=write, touch=touch, label=label)
        if search.error is not None:
            raise search.error
        return stopped, 0
    except Exception as exc:
        search.cancel()
        search.join(30)
        logger.exception("%s: chunk stopped", label)
        return False, stopped_with(f"chunk stopped: {type(exc).__name__}: {exc}")
    finally:
        search.cancel()
        search.join(30)


def _error_results(query_ids: Iterable[str], message: str) -> list[QueryResult]:
    return [QueryResult(query_id=qid, error=message, attempts=0) for qid in query_ids]


def run_chunk_process(
    *, run_id: int, query_ids: Sequence[str], chunk: int | None = None, worker: str = ""
) -> ChunkOutcome:
    """Search the chunk's queries that have no result yet and write each as it finishes.

    Never raises for a query's failure: a search error, a target that cannot be called here (a missing
    environment variable) or an unexpected error in the chunk becomes that query's error row, so the run
    completes and its gate fails closed. Stops early (cancelling requests in flight) once the run is no
    longer RUNNING.

    `chunk` names the chunk's lease (`evaluation.runs.services.leases`; None for a message sent before leases
    existed): the chunk is claimed for this delivery (by `worker`, the worker's name) and renewed while
    it works. A delivery that cannot claim it (finished, or held by another live delivery) does nothing.
    """
    run = EvaluationRun.objects.select_related("golden_version__golden_set").filter(pk=run_id).first()
    if run is None or run.status != Status.RUNNING:
        return ChunkOutcome(0, 0, stopped=True, complete=False)
    # Parsed before the claim: the first parse of a large golden file in a process may take longer than
    # a lease, during which nothing would renew it.
    golden = golden_of(run.golden_version)
    hold = None
    if chunk is not None:
        hold = chunk_lease_claim(run_id=run_id, index=chunk, worker=worker)
        if hold is None:
            return ChunkOutcome(0, 0, stopped=False, complete=False, duplicate=True)
    try:
        outcome = _chunk_search(run, golden, query_ids, hold)
    except BaseException:
        if hold is not None:
            hold.release()
        raise
    if hold is not None:
        hold.finish()
    return outcome


def _chunk_search(
    run: EvaluationRun, golden: GoldenFile, query_ids: Sequence[str], hold: ChunkHold | None
) -> ChunkOutcome:
    run_id = run.pk
    existing = set(
        QueryRunResult.objects.filter(run_id=run_id, query_id__in=list(query_ids)).values_list(
            "query_id", flat=True
        )
    )
    todo = [qid for qid in dict.fromkeys(query_ids) if qid not in existing]
    by_id = {q.id: q for q in golden.queries}
    unknown = [qid for qid in todo if qid not in by_id]
    queries = [by_id[qid] for qid in todo if qid in by_id]
    written = 0
    if unknown:
        _write(run_id, _error_results(unknown, f"not a query of golden version {run.golden_version.name}"))
        written += len(unknown)
    stopped = False
    try:
        spec = TargetSpec.from_dict(run.target_snapshot)
        # Granted to the run's set still (a grant withdrawn since the run was created stops it here,
        # before any request): labeling.selectors.secrets.
        refused = target_secret_problems(headers=spec.headers, golden_sets=[run.golden_version.golden_set])
        if refused:
            raise TargetError(refused)
        config = harness_config(spec, size=golden.k, params=run.params)
    except (TargetError, ValueError) as exc:
        # The same on every worker that lacks the variable: recorded, not retried.
        _write(run_id, _error_results([q.id for q in queries], f"target cannot be called: {exc}"))
        written += len(queries)
        queries = []
    if queries:
        search: LoopThread[QueryResult] = LoopThread(
            lambda put: search_all(queries, config, on_result=put), name="assay-harness"
        )
        seen: set[str] = set()
        known = len(existing) + written  # the chunk's queries with a row before the search
        errors = 0

        def write(batch: list[QueryResult]) -> None:
            nonlocal errors
            _write(run_id, batch)
            seen.update(r.query_id for r in batch)
            errors += sum(1 for r in batch if r.error is not None)

        def fail(message: str) -> int:
            missing = [q.id for q in queries if q.id not in seen]
            _write(run_id, _error_results(missing, message))
            return len(missing)

        stopped, failed = search_through(
            search,
            hold,
            write=write,
            # Between counts the beat raises the bar to the rows this chunk knows of (a lower bound), so
            # a run of one chunk shows progress before its first count.
            touch=lambda counting: (
                _touch(run_id)[0] if counting else _beat(run_id, known + len(seen), errors)
            ),
            label=f"run {run_id}",
            stopped_with=fail,
        )
        written += failed + len(seen)
    still_running, done, total = _touch(run_id)
    return ChunkOutcome(
        written,
        len(existing),
        stopped=stopped or not still_running,
        complete=still_running and total > 0 and done >= total,
    )
