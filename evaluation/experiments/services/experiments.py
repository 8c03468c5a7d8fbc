"""Experiments: create (the start is queued once the row commits), cancel, fail, and the steps of the
tasks that move one: start (claim, plan the tuning chunks), advance (once a phase's answers are all in:
rank and plan the held-out chunks, then conclude) and the sweeper (docs/experiments.md, "In the app").

The method is `assay.experiment`'s, the code `assay sweep` runs: the grid's checks and refusals
(`parse_grid`, `grid_problems`, `settings_problem`), the split, the ranking, the confirmation with Holm's
adjustment and the optimism (`rank`, `conclude`). Only the searching differs: chunks of (configurations,
queries) on the workers (`evaluation.experiments.services.chunks`), leased as a run's chunks are.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.utils import timezone

from assay.experiment import (
    DEFAULT_ALPHA,
    DEFAULT_COVERAGE_MARGIN,
    MAX_CONFIGS,
    SweepError,
    SweepSettings,
    conclude,
    echoes,
    echoes_record,
    grid_problems,
    parse_grid,
    part_columns,
    part_report,
    rank,
    settings_problem,
    split_queries,
    tuning_summaries,
)
from assay.golden.model import GoldenFile
from assay.jsonin import JsonInputError, json_loads
from assay.results import QueryResult
from assay.run_meta import redact_url
from assay.storable import json_problem
from assay.targets import (
    TargetError,
    TargetSpec,
    harness_config,
    params_secret_problems,
)
from evaluation.experiments.enqueue import experiment_start_on_commit
from evaluation.experiments.models import Experiment, ExperimentChunk, ExperimentResult
from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.runs.selectors import golden_of
from evaluation.runs.services.leases import (
    leases_close,
    leases_create,
    leases_expired,
    leases_quiet,
)
from evaluation.runs.services.runs import (
    CHUNKS_PER_RUN,
    MAX_CHUNK,
    MIN_CHUNK_PER_CONCURRENCY,
    cancelled_text,
    end_if_active,
    target_use_problems,
)
from evaluation.runs.services.sweep import MAX_REDISPATCHES, QUEUED_GRACE, STALL_AFTER, queued_claim
from golden_io.models import GoldenVersion

Status = Experiment.Status
Phase = Experiment.Phase

# As a run's, the same facts (evaluation/runs/services/sweep.py): a queued experiment whose start may be lost
# (QUEUED_GRACE), a stalled phase (STALL_AFTER), a chunk that keeps losing its worker (MAX_LEASE_LOSSES),
# and how often the missing answers of a stalled phase are sent again (MAX_REDISPATCHES).


class ExperimentError(ValueError):
    """An experiment that cannot be created or changed; `problems` names each reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


# ------------------------------------------------------------------------------------------- create


def grid_read(grid: object) -> tuple[Any, list[dict[str, Any]]]:
    """The grid as given (JSON text from a form, or the decoded object from the API) and its
    configurations; ExperimentError in `assay sweep`'s words (`assay.experiment.parse_grid`)."""
    data = grid
    if isinstance(grid, str | bytes):
        if not grid.strip():
            raise ExperimentError(['grid: empty; expected {"params": {...}} or {"configs": [...]}'])
        try:
            data = json_loads(grid)
        except JsonInputError as exc:
            raise ExperimentError([f"grid: not JSON: {exc}"]) from None
    try:
        configs = parse_grid(data, limit=MAX_CONFIGS)
    except SweepError as exc:
        raise ExperimentError([f"grid: {exc}"]) from None
    problems = [p for p in (json_problem(data, "grid"),) if p]
    for i, config in enumerate(configs, start=1):
        problems += params_secret_problems(config, where=f"grid configuration {i}")
    if problems:
        raise ExperimentError(problems)
    return data, configs


@transaction.atomic
def experiment_create(
    *,
    golden_version: GoldenVersion,
    target: SearchTarget,
    grid: object,
    created_by: Any = None,
    fraction: float = 0.7,
    seed: int = 0,
    top: int = 3,
    metric: str = "ndcg",
    alpha: float = DEFAULT_ALPHA,
    coverage_margin: float = DEFAULT_COVERAGE_MARGIN,
) -> Experiment:
    """Queue a sweep of `grid` on `target` over `golden_version` (the task starts once this commits).
    Refuses, naming every problem and creating nothing, what `assay sweep` refuses (a grid that is not
    JSON or not one of its two shapes, more than 500 configurations, an empty list of values, a
    configuration the target's adapter would refuse, a split that leaves a part empty) and what a run
    refuses (a target that does not list the set, its secrets not granted to it)."""
    data, configs = grid_read(grid)
    settings = SweepSettings(
        fraction=fraction, seed=seed, top=top, metric=metric, alpha=alpha, coverage_margin=coverage_margin
    )
    problems = [p for p in (settings_problem(settings),) if p]
    problems += target_use_problems(target, golden_version)
    spec = target.spec()
    golden = golden_of(golden_version)
    if not problems:
        try:
            config = harness_config(spec, size=golden.k, redact=True)
        except (TargetError, ValueError) as exc:
            problems.append(f"target {target.name}: {exc}")
        else:
            refused = grid_problems(config, configs)
            problems += [f"grid: {p}" for p in refused[:10]]
            if len(refused) > 10:
                problems.append(f"grid: and {len(refused) - 10} more configurations refused")
    split = None
    try:
        split = split_queries(golden.queries, fraction, seed)
    except SweepError as exc:
        problems.append(str(exc))
    if problems or split is None:
        raise ExperimentError(problems)
    confirmed = min(top, len(configs))
    experiment = Experiment.objects.create(
        golden_version=golden_version,
        target=target,
        target_snapshot=spec.to_dict(),
        grid=data,
        configs=configs,
        fraction=fraction,
        seed=seed,
        top=top,
        metric=metric,
        alpha=alpha,
        coverage_margin=coverage_margin,
        split=split.to_dict(),
        total=(len(configs) + 1) * len(split.tuning) + (confirmed + 1) * len(split.holdout),
        created_by=created_by,
    )
    experiment_start_on_commit(experiment.pk)
    return experiment


def experiment_cancel(*, experiment: Experiment, by: Any = None) -> bool:
    """Cancel a queued or running experiment; False when it had already finished. Its chunks stop at
    their next heartbeat (at most 0.5 s) and no phase advances a cancelled experiment."""
    changed = end_if_active(Experiment, experiment.pk, Status.CANCELLED, cancelled_text(by))
    experiment.refresh_from_db()
    return changed


def no_winner_text(result: Mapping[str, Any]) -> str:
    """Why a finished experiment names no winner (docs/experiments.md, "The winner")."""
    return (
        "No configuration beat the baseline on the held-out queries (a gain with p (Holm) below "
        f"{result['alpha']:g})"
    )


def experiment_fail(*, experiment_id: int, message: str) -> bool:
    return end_if_active(Experiment, experiment_id, Status.FAILED, message)


# ------------------------------------------------------------------------------------------- chunks


@dataclass(frozen=True, slots=True)
class ExperimentPlan:
    """Chunks to send: their lease indices (the chunk task's argument)."""

    experiment_id: int
    indices: tuple[int, ...] = ()


def plan_work(
    pairs: Sequence[tuple[int, Sequence[str]]], *, concurrency: int
) -> list[tuple[list[int], list[str]]]:
    """(slots, query ids) chunks for the (slot, queries) to search: like a run's chunks (about
    CHUNKS_PER_RUN of them, each at least MIN_CHUNK_PER_CONCURRENCY rounds of `concurrency` and at most
    MAX_CHUNK searches), whole configurations together when they fit, so a chunk's SharedSearch sends a
    request that two of its configurations share once."""
    searches = sum(len(ids) for _, ids in pairs)
    if not searches:
        return []
    size = max(concurrency * MIN_CHUNK_PER_CONCURRENCY, math.ceil(searches / CHUNKS_PER_RUN), 1)
    size = min(size, MAX_CHUNK)
    chunks: list[tuple[list[int], list[str]]] = []
    # Slots asking for the same queries group together; a slot with more queries than a chunk holds is
    # cut into pieces of its queries.
    by_queries: dict[tuple[str, ...], list[int]] = {}
    for slot, ids in pairs:
        by_queries.setdefault(tuple(ids), []).append(slot)
    for ids, slots in by_queries.items():
        if len(ids) >= size:
            for slot in slots:
                chunks += [([slot], list(ids[i : i + size])) for i in range(0, len(ids), size)]
            continue
        per = max(1, size // len(ids))
        chunks += [(slots[i : i + per], list(ids)) for i in range(0, len(slots), per)]
    return chunks


def _chunks_create(
    experiment: Experiment, phase: str, pairs: Sequence[tuple[int, Sequence[str]]]
) -> ExperimentPlan:
    spec = TargetSpec.from_dict(experiment.target_snapshot)
    chunks = plan_work(pairs, concurrency=spec.concurrency)
    rows = [{"phase": phase, "slots": slots, "query_ids": ids} for slots, ids in chunks]
    indices = leases_create(ExperimentChunk, experiment.pk, rows)
    return ExperimentPlan(experiment.pk, tuple(indices))


def _phase_pairs(experiment: Experiment, phase: str) -> list[tuple[int, list[str]]]:
    """The (slot, query ids) a phase searches: every slot on the tuning part; the baseline and the
    confirmed configurations on the held-out part."""
    if phase == Phase.TUNING:
        ids = list(experiment.split["tuning"])
        return [(slot, ids) for slot in range(len(experiment.configs) + 1)]
    ids = list(experiment.split["holdout"])
    return [(0, ids), *((i + 1, ids) for i in experiment.ranking[: experiment.top])]


@transaction.atomic
def experiment_begin(*, experiment_id: int) -> ExperimentPlan | None:
    """Claim a queued experiment (QUEUED -> RUNNING; None when another task had it or it was cancelled)
    and plan its tuning chunks, in one transaction (a worker lost in between leaves it QUEUED)."""
    now = timezone.now()
    claimed = Experiment.objects.filter(pk=experiment_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now
    )
    if claimed != 1:
        return None
    experiment = Experiment.objects.get(pk=experiment_id)
    return _chunks_create(experiment, Phase.TUNING, _phase_pairs(experiment, Phase.TUNING))


# ------------------------------------------------------------------------------------------- advance


def results_by_slot(
    experiment: Experiment, ids: Sequence[str], slots: Sequence[int] | None = None
) -> Iterator[tuple[int, dict[str, QueryResult]]]:
    """Per slot in order, its answers on `ids`: read in batches, one slot at a time, so a grid of 500
    configurations never holds more than one configuration's answers (memory flat in the grid)."""
    rows = ExperimentResult.objects.filter(experiment=experiment, query_id__in=list(ids))
    if slots is not None:
        rows = rows.filter(slot__in=list(slots))
    values = rows.order_by("slot", "id").values_list(
        "slot", "query_id", "ids", "error", "http_status", "latency_ms", "attempts", "titles"
    )
    for slot, group in itertools.groupby(values.iterator(chunk_size=2000), key=lambda row: row[0]):
        yield (
            slot,
            {
                qid: QueryResult(
                    query_id=qid,
                    ids=tuple(found),
                    error=error,
                    status=status,
                    latency_ms=latency,
                    attempts=attempts,
                    titles=tuple(titles),
                )
                for _, qid, found, error, status, latency, attempts, titles in group
            },
        )


def _echo_counts(experiment: Experiment) -> dict[int, tuple[int, int]]:
    """Per configuration (grid index) with an answer to compare, `assay.experiment.same_answers` read
    in SQL from the answers stored so far: (queries both it and the baseline answered, of those the
    ones with the same ids in the same order). Cheap enough to read on every poll of a running one."""
    baseline = ExperimentResult.objects.filter(
        experiment=experiment, slot=0, query_id=OuterRef("query_id"), error__isnull=True
    ).values("ids")[:1]
    rows = (
        ExperimentResult.objects.filter(experiment=experiment, slot__gt=0, error__isnull=True)
        .annotate(baseline_ids=Subquery(baseline))
        .filter(baseline_ids__isnull=False)
        .values("slot")
        .annotate(compared=Count("id"), same=Count("id", filter=Q(ids=F("baseline_ids"))))
        .order_by()
    )
    return {row["slot"] - 1: (row["compared"], row["same"]) for row in rows}


def experiment_echoes(*, experiment: Experiment) -> list[dict[str, Any]]:
    """The configurations that returned the baseline's results on every query they searched
    (`assay.experiment.echoes`): the stored result's once it is done, else read from the answers so
    far, so the first chunk's answers already show it."""
    if experiment.result is not None:
        found: list[dict[str, Any]] = experiment.result.get("echoes", [])
        return found
    return echoes(experiment.fixed_params, experiment.configs, _echo_counts(experiment))


def _phase_missing(experiment: Experiment, phase: str) -> list[tuple[int, list[str]]]:
    have: dict[int, set[str]] = {}
    pairs = _phase_pairs(experiment, phase)
    ids = pairs[0][1] if pairs else []
    for slot, qid in ExperimentResult.objects.filter(experiment=experiment, query_id__in=ids).values_list(
        "slot", "query_id"
    ):
        have.setdefault(slot, set()).add(qid)
    missing = []
    for slot, wanted in pairs:
        left = [q for q in wanted if q not in have.get(slot, ())]
        if left:
            missing.append((slot, left))
    return missing


def experiment_settings(experiment: Experiment) -> SweepSettings:
    return SweepSettings(
        fraction=experiment.fraction,
        seed=experiment.seed,
        top=experiment.top,
        metric=experiment.metric,
        alpha=experiment.alpha,
        coverage_margin=experiment.coverage_margin,
    )


def experiment_advance(*, experiment_id: int) -> ExperimentPlan | None:
    """Move a running experiment whose phase has every answer: after the tuning phase, rank the
    configurations and plan the held-out chunks (returned, for the task to send); after the held-out
    phase, conclude and write the result (SUCCEEDED). Does nothing while answers are missing or when
    another advance got there first (conditional updates on the phase), so it is safe to call twice."""
    experiment = Experiment.objects.select_related("golden_version").filter(pk=experiment_id).first()
    if (
        experiment is None
        or experiment.status != Status.RUNNING
        or _phase_missing(experiment, experiment.phase)
    ):
        return None
    golden = golden_of(experiment.golden_version)
    settings = experiment_settings(experiment)
    spec = TargetSpec.from_dict(experiment.target_snapshot)
    config = harness_config(spec, size=golden.k, redact=True)
    if experiment.phase == Phase.TUNING:
        part = part_columns(golden, experiment.split["tuning"])
        summaries = tuning_summaries(  # one configuration's answers at a time, the baseline's kept
            part,
            (rows for _, rows in results_by_slot(experiment, experiment.split["tuning"])),
            k=golden.k,
            seed=settings.seed,
        )
        try:
            ranking = rank(summaries[0], summaries[1:], settings.metric)
        except SweepError as exc:
            experiment_fail(experiment_id=experiment_id, message=str(exc))
            return None
        with transaction.atomic():
            moved = Experiment.objects.filter(
                pk=experiment_id, status=Status.RUNNING, phase=Phase.TUNING
            ).update(phase=Phase.HOLDOUT, tuning=summaries, ranking=ranking, heartbeat_at=timezone.now())
            if moved != 1:
                return None
            experiment.phase, experiment.tuning, experiment.ranking = Phase.HOLDOUT, summaries, ranking
            return _chunks_create(experiment, Phase.HOLDOUT, _phase_pairs(experiment, Phase.HOLDOUT))
    if experiment.phase != Phase.HOLDOUT:
        return None
    result = experiment_score(experiment, golden, experiment.tuning)
    now = timezone.now()
    started = experiment.started_at or experiment.created
    result["requests"] = {
        "asked": experiment.total,
        "sent": experiment.sent,
        "shared": experiment.total - experiment.sent,
    }
    result["run"] = {
        "search_url": redact_url(config.url),
        "adapter": config.adapter,
        "concurrency": config.concurrency,
        "started_at": started.isoformat(),
        "duration_s": (now - started).total_seconds(),
        "experiment_id": experiment.pk,
        "target": spec.name,
        "golden_set": experiment.golden_version.golden_set.slug,
    }
    result["golden_file"] = f"{experiment.golden_version.golden_set.slug}@{experiment.golden_version.name}"
    # A cancel meanwhile wins over a late result.
    Experiment.objects.filter(pk=experiment_id, status=Status.RUNNING, phase=Phase.HOLDOUT).update(
        status=Status.SUCCEEDED, phase=Phase.DONE, result=result, finished_at=now
    )
    return None


def experiment_score(
    experiment: Experiment, golden: GoldenFile, tuning: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The result of a searched experiment scored on `golden`'s labels, from its stored answers and its
    ranking (`tuning`: each slot's values there, the baseline first): the confirmation, the winner, the
    coverage (`assay.experiment.conclude`), the best one's strata and the echoes; `requests` and `run`
    are the caller's. Its own version when it concludes; a newer one when it is re-scored."""
    settings = experiment_settings(experiment)
    part = part_columns(golden, experiment.split["holdout"])
    confirmed = list(experiment.ranking[: experiment.top])
    reports = {
        slot: part_report(part, rows, settings.seed)
        for slot, rows in results_by_slot(
            experiment, experiment.split["holdout"], [0, *(i + 1 for i in confirmed)]
        )
    }
    split = split_queries(golden_of(experiment.golden_version).queries, experiment.fraction, experiment.seed)
    result = conclude(
        golden=golden,
        fixed=experiment.fixed_params,
        grid=experiment.configs,
        settings=settings,
        split=split,
        baseline_tuning=tuning[0],
        tuning=tuning[1:],
        ranking=experiment.ranking,
        held=[reports[0], *(reports[i + 1] for i in confirmed)],
    )
    result["best_strata"] = _strata(
        reports[0], reports[experiment.ranking[result["best"]["rank"] - 1] + 1], settings.metric
    )
    echoes_record(result, _echo_counts(experiment))
    return result


def _strata(baseline: Mapping[str, Any], winner: Mapping[str, Any], metric: str) -> list[dict[str, Any]]:
    """The best configuration against the baseline per stratum on the held-out queries (the page's
    strata): each stratum's queries counted and both means of the metric (the reports' slices)."""
    base = baseline["slices"].get("stratum", {})
    won = winner["slices"].get("stratum", {})
    rows = []
    for name in sorted(won):
        b, w = base.get(name, {}).get(metric, {}), won[name].get(metric, {})
        before, after = b.get("value"), w.get("value")
        rows.append(
            {
                "stratum": name,
                "n": won[name].get("n_queries", 0),
                "baseline": before,
                "winner": after,
                "delta": None if before is None or after is None else after - before,
            }
        )
    return rows


# ------------------------------------------------------------------------------------------- the sweeper


@dataclass
class ExperimentSweep:
    """What `experiments_sweep` found; the task sends these."""

    start: list[int] = field(default_factory=list)
    advance: list[int] = field(default_factory=list)
    resend: dict[int, ExperimentPlan] = field(default_factory=dict)
    failed: list[int] = field(default_factory=list)


def experiments_sweep(
    *, now: datetime | None = None, stall_after: timedelta = STALL_AFTER
) -> ExperimentSweep:
    """Experiments that stopped moving, and how to move them (as `runs_sweep` does for runs; all safe to
    repeat): queued past QUEUED_GRACE -> start again; a chunk whose lease ran out (its worker was lost)
    -> back to waiting and sent again, or after MAX_LEASE_LOSSES fail the experiment; running with no
    open chunk for a lease (the advance the last chunk sends was lost) or with no live lease and no
    heartbeat for `stall_after` -> advance, which plans the missing answers again when there are any."""
    now = now or timezone.now()
    actions = ExperimentSweep()
    actions.start = queued_claim(Experiment, now=now, grace=QUEUED_GRACE)
    lost = leases_expired(
        ExperimentChunk,
        running=Q(experiment__status=Status.RUNNING),
        fail=lambda experiment_id, message: experiment_fail(experiment_id=experiment_id, message=message),
        now=now,
    )
    actions.failed = lost.failed
    actions.resend = {
        experiment_id: ExperimentPlan(experiment_id, tuple(chunk.index for chunk in chunks))
        for experiment_id, chunks in lost.resend.items()
    }
    stalled = Experiment.objects.filter(
        leases_quiet(ExperimentChunk, now=now, stall_after=stall_after), status=Status.RUNNING
    ).exclude(pk__in=[*actions.resend, *actions.failed])
    actions.advance = list(stalled.values_list("pk", flat=True))
    return actions


def experiment_resume(*, experiment_id: int, now: datetime | None = None) -> ExperimentPlan | None:
    """The sweeper's advance of a quiet experiment: the phase's missing answers as new chunks (the old
    ones finished, so a late delivery of one does nothing), at most MAX_REDISPATCHES times; None when
    nothing is missing (the caller advances it)."""
    now = now or timezone.now()
    experiment = Experiment.objects.filter(pk=experiment_id, status=Status.RUNNING).first()
    if experiment is None:
        return None
    missing = _phase_missing(experiment, experiment.phase)
    if not missing:
        return None
    if experiment.redispatches >= MAX_REDISPATCHES:
        experiment_fail(
            experiment_id=experiment_id,
            message=f"stalled: {sum(len(ids) for _, ids in missing)} searches still without an answer after "
            f"{experiment.redispatches} re-sends",
        )
        return None
    with transaction.atomic():
        claimed = Experiment.objects.filter(
            pk=experiment_id, status=Status.RUNNING, heartbeat_at=experiment.heartbeat_at
        ).update(redispatches=F("redispatches") + 1, heartbeat_at=now)
        if claimed != 1:
            return None
        leases_close(ExperimentChunk, experiment.pk, now=now)
        return _chunks_create(experiment, experiment.phase, missing)


def experiment_runs(*, experiment: Experiment) -> list[EvaluationRun]:
    """The full runs started by **Use this configuration** on this experiment, newest first."""
    ids = [a.run_id for a in experiment.adoptions.all() if a.run_id is not None]
    return list(EvaluationRun.objects.filter(pk__in=ids).order_by("-created"))
