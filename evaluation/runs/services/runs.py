"""Runs: create (the start is queued once the row commits), cancel, fail, and the start task's step:
claim a queued run, read its durable keys once, plan its chunks (docs/runs.md, "How a run moves")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from assay.golden.keys import resolve_keys
from assay.storable import json_problem
from assay.targets import TargetError, TargetSpec, harness_config, params_secret_problems, spec_problems
from evaluation.runs.enqueue import run_start_on_commit
from evaluation.runs.models import EvaluationRun, QueryRunResult, RunSchedule, SearchTarget
from evaluation.runs.selectors import golden_of
from evaluation.runs.services.leases import chunk_leases_create
from evaluation.runs.services.targets import target_secret_problems
from golden_io.models import GoldenVersion

Status = EvaluationRun.Status


# Chunking: enough chunks to spread a run over the workers, each big enough that the per-task overhead
# (a few database round trips, an HTTP client) stays small next to its searches.
CHUNKS_PER_RUN = 16
MIN_CHUNK_PER_CONCURRENCY = 4  # a chunk keeps its `concurrency` requests in flight for >= 4 rounds
MAX_CHUNK = 500


class RunError(ValueError):
    """A run that cannot be created or changed; `problems` names each reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def params_problems(params: object) -> list[str]:
    if not isinstance(params, Mapping):
        return [f"params: expected an object of name -> value, got {type(params).__name__}"]
    problems = []
    for key, value in params.items():
        if not isinstance(key, str) or not key:
            problems.append(f"params: names must be non-empty strings, got {key!r}")
        elif not _json_value(value):
            problems.append(f"params.{key}: expected a JSON value, got {type(value).__name__}")
    unstorable = json_problem(params, "params")  # a NUL or a lone surrogate: no database stores it
    return problems + ([unstorable] if unstorable else []) + params_secret_problems(params)


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
def target_use_problems(target: SearchTarget, golden_version: GoldenVersion) -> list[str]:
    """Why `target` cannot be searched for `golden_version` now (a run, an experiment): not set up for its
    set, a setting the harness refuses, or a secret not granted to the set (labeling.selectors.secrets;
    each chunk checks the grant again)."""
    problems = []
    if not target.golden_sets.filter(pk=golden_version.golden_set_id).exists():
        problems.append(
            f"target {target.name} is not set up for golden set {golden_version.golden_set.slug} "
            "(add the set to the target first)"
        )
    spec = target.spec()
    spec_issues = spec_problems(spec)
    spec_issues += target_secret_problems(
        headers=spec.headers, golden_sets=[golden_version.golden_set], besides=spec_issues
    )
    return problems + [f"target {target.name}: {p}" for p in spec_issues]


def run_create(
    *,
    golden_version: GoldenVersion,
    target: SearchTarget,
    triggered_by: Any = None,
    trigger: str = EvaluationRun.Trigger.WEB,
    params: Mapping[str, Any] | None = None,
    rebaseline: bool = False,
    rescore_baseline: bool = False,
    schedule: RunSchedule | None = None,
) -> EvaluationRun:
    """Queue an evaluation of `golden_version` on `target` (the task starts once this commits).

    `triggered_by` is the user who asked (None for the schedule); `trigger` says how (web, api, ci,
    schedule). `params` override the target's params and stages for this run only. `rescore_baseline`:
    when the baseline in force is on another golden version, gate against it re-scored on this one
    (`evaluation.runs.selectors.gate_plan` says beforehand whether it can be). The target must list
    the version's golden set. Raises RunError naming every problem; nothing is created then.
    """
    problems: list[str] = []
    if trigger not in EvaluationRun.Trigger.values:
        problems.append(f"trigger: {trigger!r} is not one of {', '.join(EvaluationRun.Trigger.values)}")
    overrides = dict(params or {})
    problems += params_problems(overrides)
    problems += target_use_problems(target, golden_version)
    spec = target.spec()
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
        # A nightly schedule's opt-in holds for each of its runs.
        rescore_baseline=rescore_baseline or (schedule is not None and schedule.rescore_baseline),
        trigger=trigger,
        triggered_by=triggered_by,
        schedule=schedule,
    )
    run_start_on_commit(run.pk)
    return run


def end_if_active(model: type[models.Model], pk: int, status: str, message: str) -> bool:
    """Give a queued or running run or experiment its final `status` and `message`, in one conditional
    update; False when it had already finished (a cancel or failure never overwrites an end). `model` is
    `EvaluationRun` or `Experiment`, each with its `ACTIVE` statuses (runs import no experiment)."""
    active = model.ACTIVE  # type: ignore[attr-defined]
    return (
        model._default_manager.filter(pk=pk, status__in=active).update(
            status=status, finished_at=timezone.now(), error_message=message[:5000]
        )
        == 1
    )


def cancelled_text(by: Any = None) -> str:
    return f"cancelled by {by.get_username()}" if by is not None else "cancelled"


def run_cancel(*, run: EvaluationRun, by: Any = None) -> bool:
    """Cancel a queued or running run; False when it had already finished. Chunks stop at their next
    progress check and finalize leaves a cancelled run alone."""
    changed = end_if_active(EvaluationRun, run.pk, Status.CANCELLED, cancelled_text(by))
    run.refresh_from_db()
    return changed


def run_fail(*, run_id: int, message: str) -> bool:
    """The final status for a run whose task hit an unexpected error (the tasks' wrapper calls this)."""
    return end_if_active(EvaluationRun, run_id, Status.FAILED, message)


def plan_chunks(query_ids: Sequence[str], *, concurrency: int, one_chunk_rounds: int = 0) -> list[list[str]]:
    """Split a run's queries into chunk tasks: about CHUNKS_PER_RUN chunks, each at least
    MIN_CHUNK_PER_CONCURRENCY rounds of `concurrency` requests and at most MAX_CHUNK queries; a run of at
    most `one_chunk_rounds` rounds of `concurrency` (and MAX_CHUNK queries) is one chunk."""
    ids = list(query_ids)
    if len(ids) <= min(concurrency * one_chunk_rounds, MAX_CHUNK):
        return [ids] if ids else []
    size = max(concurrency * MIN_CHUNK_PER_CONCURRENCY, math.ceil(len(ids) / CHUNKS_PER_RUN), 1)
    size = min(size, MAX_CHUNK)
    return [ids[i : i + size] for i in range(0, len(ids), size)]


@dataclass(frozen=True, slots=True)
class RunPlan:
    """The chunks to send. `sequential`: one after another (a chain), not fanned out (a chord): a
    rate-limited target's limit is a promise to the engine that one limiter at a time keeps, and more
    workers could not go faster than the limit anyway. `indices`: each chunk's lease
    (`evaluation.runs.models.ChunkLease`), the chunk task's `chunk` argument."""

    run_id: int
    chunks: list[list[str]]
    sequential: bool = False
    indices: tuple[int, ...] = ()

    @property
    def single(self) -> tuple[list[str], int] | None:
        """The one chunk and its lease of a run planned as one chunk (the start task searches it
        itself), else None (the chunks are sent)."""
        if len(self.chunks) == 1 and len(self.indices) == 1:
            return self.chunks[0], self.indices[0]
        return None


def plan_run(run: EvaluationRun, query_ids: Sequence[str]) -> RunPlan:
    """Split the queries into chunks and create a waiting lease for each (the caller sends them)."""
    spec = TargetSpec.from_dict(run.target_snapshot)
    # A small run is one chunk, which the start task searches itself (evaluation/runs/tasks.py): settings.py's
    # ASSAY_RUN_ONE_CHUNK_ROUNDS says why.
    chunks = plan_chunks(
        query_ids, concurrency=spec.concurrency, one_chunk_rounds=settings.ASSAY_RUN_ONE_CHUNK_ROUNDS
    )
    indices = chunk_leases_create(run_id=run.pk, chunks=chunks)
    return RunPlan(run.pk, chunks, sequential=spec.rate_limited, indices=tuple(indices))


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
    return plan_run(run, ids)


def run_missing_queries(*, run: EvaluationRun) -> list[str]:
    """The run's golden queries that have no result yet, in golden order."""
    have = set(QueryRunResult.objects.filter(run=run).values_list("query_id", flat=True))
    return [q.id for q in golden_of(run.golden_version).queries if q.id not in have]
