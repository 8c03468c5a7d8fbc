"""The experiment chunk task's step: search a chunk's (configurations x queries) that have no answer
yet through one `SharedSearch` (a request two configurations share is sent once) and write each answer
as it comes, with the heartbeat, the cancel check and the chunk's lease, exactly as a run's chunk does
(`evaluation.runs.services.chunks`, docs/runs.md "Worker loss")."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Q, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from assay.harness import SharedSearch
from assay.loop_thread import LoopThread
from assay.results import QueryResult
from assay.targets import TargetError, TargetSpec, harness_config
from evaluation.experiments.models import Experiment, ExperimentChunk, ExperimentResult
from evaluation.runs.selectors import golden_of
from evaluation.runs.services.chunks import search_through
from evaluation.runs.services.leases import ChunkHold, lease_claim
from evaluation.runs.services.targets import target_secret_problems

logger = logging.getLogger(__name__)

Status = Experiment.Status
Answer = tuple[int, QueryResult]  # (slot, its answer to one query)
SENT = ("sent", None)  # in the search's queue: one request sent


@dataclass(frozen=True, slots=True)
class ExperimentChunkOutcome:
    written: int
    stopped: bool  # the experiment was no longer RUNNING, or the lease was lost
    complete: bool  # the chunk's phase has every answer now: advance may go
    duplicate: bool = False  # finished, or held by another live delivery: nothing done


def _write(experiment_id: int, answers: Sequence[Answer]) -> None:
    # ON CONFLICT DO NOTHING on (experiment, slot, query): each answer is written once, whoever searched it.
    ExperimentResult.objects.bulk_create(
        [
            ExperimentResult(
                experiment_id=experiment_id,
                slot=slot,
                query_id=r.query_id,
                ids=list(r.ids),
                titles=list(r.titles),
                error=r.error,
                http_status=r.status,
                latency_ms=r.latency_ms,
                attempts=r.attempts,
            )
            for slot, r in answers
        ],
        ignore_conflicts=True,
    )


def _touch(experiment_id: int, counting: bool) -> bool:
    """The heartbeat, and with `counting` the progress from the answer rows (never lowered); False once
    the experiment is no longer RUNNING (how a chunk learns of a cancel)."""
    changes: dict[str, Any] = {"heartbeat_at": timezone.now()}
    if counting:
        counts = ExperimentResult.objects.filter(experiment_id=experiment_id).aggregate(
            done=Count("id"), errors=Count("id", filter=Q(error__isnull=False))
        )
        changes["done"] = Greatest(F("done"), Value(counts["done"]))
        changes["errors"] = Greatest(F("errors"), Value(counts["errors"]))
    return Experiment.objects.filter(pk=experiment_id, status=Status.RUNNING).update(**changes) == 1


def _phase_complete(experiment: Experiment, phase: str) -> bool:
    done = ExperimentResult.objects.filter(experiment=experiment).count()
    tuning = (len(experiment.configs) + 1) * len(experiment.split["tuning"])
    return done >= (tuning if phase == Experiment.Phase.TUNING else experiment.total)


def experiment_chunk_process(*, experiment_id: int, chunk: int, worker: str = "") -> ExperimentChunkOutcome:
    """Search the chunk's (slot, query) pairs without an answer and write each answer as it comes.

    Never raises for a search's failure: a search error, a target that cannot be called here or an
    unexpected error in the chunk becomes that answer's error, so the experiment completes (an errored
    query is left out of a configuration's means and ranks it last, docs/experiments.md). The chunk's
    lease is claimed for this delivery and renewed while it works; a delivery that cannot claim it does
    nothing."""
    experiment = (
        Experiment.objects.select_related("golden_version__golden_set").filter(pk=experiment_id).first()
    )
    if experiment is None or experiment.status != Status.RUNNING:
        return ExperimentChunkOutcome(0, stopped=True, complete=False)
    golden = golden_of(experiment.golden_version)
    hold = lease_claim(ExperimentChunk, experiment_id, chunk, worker=worker)
    if hold is None:
        return ExperimentChunkOutcome(0, stopped=False, complete=False, duplicate=True)
    row = ExperimentChunk.objects.get(experiment_id=experiment_id, index=chunk)
    try:
        written, stopped = _chunk_search(experiment, golden, row, hold)
    except BaseException:
        hold.release()
        raise
    hold.finish()
    running = _touch(experiment_id, True)
    return ExperimentChunkOutcome(
        written, stopped=stopped or not running, complete=running and _phase_complete(experiment, row.phase)
    )


def _errors(pairs: Sequence[tuple[int, Sequence[str]]], message: str) -> list[Answer]:
    return [
        (slot, QueryResult(query_id=qid, error=message, attempts=0)) for slot, ids in pairs for qid in ids
    ]


def _chunk_search(
    experiment: Experiment, golden: Any, row: ExperimentChunk, hold: ChunkHold
) -> tuple[int, bool]:
    experiment_id = experiment.pk
    have: dict[int, set[str]] = {}
    for slot, qid in ExperimentResult.objects.filter(
        experiment_id=experiment_id, slot__in=row.slots, query_id__in=row.query_ids
    ).values_list("slot", "query_id"):
        have.setdefault(slot, set()).add(qid)
    todo = [(slot, [q for q in row.query_ids if q not in have.get(slot, ())]) for slot in row.slots]
    todo = [(slot, ids) for slot, ids in todo if ids]
    if not todo:
        return 0, False
    by_id = {q.id: q for q in golden.queries}
    try:
        spec = TargetSpec.from_dict(experiment.target_snapshot)
        refused = target_secret_problems(
            headers=spec.headers, golden_sets=[experiment.golden_version.golden_set]
        )
        if refused:
            raise TargetError(refused)
        config = harness_config(spec, size=golden.k)
    except (TargetError, ValueError) as exc:
        answers = _errors(todo, f"target cannot be called: {exc}")
        _write(experiment_id, answers)
        return len(answers), False
    jobs = [
        (experiment.configs[slot - 1] if slot else {}, [by_id[q] for q in ids if q in by_id])
        for slot, ids in todo
    ]
    slots = [slot for slot, _ in todo]

    def work(put: Callable[[Any], None]) -> Any:
        # Each request sent is counted ahead of the answers it gives (the queue keeps their order), so
        # `sent` is written no later than they are: once a phase has every answer, its count is in.
        async def search() -> None:
            async with SharedSearch(config) as shared:
                await shared.search(
                    jobs,
                    progress=lambda _requests: lambda _result: put(SENT),
                    on_answer=lambda job, result: put((slots[job], result)),
                )

        return search()

    search: LoopThread[Any] = LoopThread(work, name="assay-harness")
    seen: set[tuple[int, str]] = set()

    def write(batch: list[Any]) -> None:
        answers = [item for item in batch if item is not SENT]
        if sent := len(batch) - len(answers):
            Experiment.objects.filter(pk=experiment_id).update(sent=F("sent") + sent)
        _write(experiment_id, answers)
        seen.update((slot, r.query_id) for slot, r in answers)

    def fail(message: str) -> int:
        missing = [(slot, [q for q in ids if (slot, q) not in seen]) for slot, ids in todo]
        answers = _errors(missing, message)
        _write(experiment_id, answers)
        seen.update((slot, r.query_id) for slot, r in answers)
        return 0  # counted in `seen`

    stopped, _ = search_through(
        search,
        hold,
        write=write,
        touch=lambda counting: _touch(experiment_id, counting),
        label=f"experiment {experiment_id}",
        stopped_with=fail,
    )
    return len(seen), stopped
