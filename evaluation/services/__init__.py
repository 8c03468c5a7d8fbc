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
last result triggers it too (a chunk sent again after a worker was killed can make the chord fire early
or never). Each chunk task holds its chunk's lease while it works (`leases`); `runs_sweep` sends again
the chunks whose lease ran out (their worker was lost) and re-sends the missing work of a run that
stopped making progress.

One module per part (this package re-exports their public names, so `services.run_create(...)` reads
the same everywhere): `targets`, `budgets`, `runs` (create, cancel, fail, the start step and chunk
plans), `chunks`, `leases` (chunk leases), `finalize`, `sweep`, `baselines` (promotion, rebaseline),
`schedules`, `unjudged`, `notifications` (a fail or warn verdict told by email and webhook), `rescore`
(a baseline's lists re-scored on a new golden version; finalize's hook for opted-in nightly runs).
Services read through `evaluation.selectors` and queue tasks through `evaluation.enqueue`; they never
import `evaluation.tasks`.
"""

from __future__ import annotations

from assay.drift import BudgetsError
from assay.targets import TargetError
from evaluation.services.baselines import (
    BaselineError,
    Regated,
    baseline_promote,
    rebaseline_branch,
    rebaseline_write,
    relevance_notes,
    run_regate_rescored,
)
from evaluation.services.budgets import budgets_set
from evaluation.services.chunks import ChunkOutcome, run_chunk_process
from evaluation.services.finalize import FINALIZE_LEASE, run_finalize_process, run_gate, run_report_build
from evaluation.services.leases import CHUNK_LEASE, ChunkHold, chunk_lease_claim, chunk_leases_create
from evaluation.services.notifications import (
    NOTIFY_ATTEMPTS,
    NotificationRetry,
    notification_deliver,
    notifications_prepare,
    verdict_message,
)
from evaluation.services.rescore import BaselineRescoreError, baseline_rescore_get_or_create
from evaluation.services.runs import (
    RunError,
    RunPlan,
    plan_chunks,
    run_begin,
    run_cancel,
    run_create,
    run_fail,
    run_missing_queries,
)
from evaluation.services.schedules import (
    runs_nightly,
    schedule_delete,
    schedule_problems,
    schedule_set,
    schedules_due,
)
from evaluation.services.sweep import MAX_LEASE_LOSSES, SweepActions, runs_sweep
from evaluation.services.targets import (
    TARGET_FIELDS,
    target_create,
    target_name_problems,
    target_secret_problems,
    target_secrets,
    target_update,
)
from evaluation.services.unjudged import (
    JudgeOffer,
    UnjudgedAsked,
    UnjudgedQueued,
    Waiting,
    unjudged_ask_judge,
    unjudged_judge_offer,
    unjudged_queue,
)

__all__ = [
    "CHUNK_LEASE",
    "FINALIZE_LEASE",
    "MAX_LEASE_LOSSES",
    "NOTIFY_ATTEMPTS",
    "TARGET_FIELDS",
    "BaselineError",
    "BaselineRescoreError",
    "BudgetsError",
    "ChunkHold",
    "ChunkOutcome",
    "JudgeOffer",
    "NotificationRetry",
    "Regated",
    "RunError",
    "RunPlan",
    "SweepActions",
    "TargetError",
    "UnjudgedAsked",
    "UnjudgedQueued",
    "Waiting",
    "baseline_promote",
    "baseline_rescore_get_or_create",
    "budgets_set",
    "chunk_lease_claim",
    "chunk_leases_create",
    "notification_deliver",
    "notifications_prepare",
    "plan_chunks",
    "rebaseline_branch",
    "rebaseline_write",
    "relevance_notes",
    "run_begin",
    "run_cancel",
    "run_chunk_process",
    "run_create",
    "run_fail",
    "run_finalize_process",
    "run_gate",
    "run_missing_queries",
    "run_regate_rescored",
    "run_report_build",
    "runs_nightly",
    "runs_sweep",
    "schedule_delete",
    "schedule_problems",
    "schedule_set",
    "schedules_due",
    "target_create",
    "target_name_problems",
    "target_secret_problems",
    "target_secrets",
    "target_update",
    "unjudged_ask_judge",
    "unjudged_judge_offer",
    "unjudged_queue",
    "verdict_message",
]
