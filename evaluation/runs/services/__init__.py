"""Writes of runs: targets, runs (create, cancel, and the steps the Celery tasks run), budgets,
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

One module per part (this package re-exports every public name of each, so `services.run_create(...)`
reads the same everywhere; `tests/config/test_reexports.py` holds it): `targets`, `budgets`, `runs`
(create, cancel, fail, the start step and chunk plans), `chunks`, `leases` (chunk leases), `finalize`,
`sweep`, `baselines` (promotion, rebaseline), `schedules`, `unjudged`, `notifications` (a fail or warn
verdict told by email and webhook), `rescore` (a baseline's lists re-scored on a new golden version;
finalize's hook for opted-in nightly runs). Services read through `evaluation.runs.selectors` and queue
tasks through `evaluation.runs.enqueue`; they never import `evaluation.runs.tasks`.
"""

from __future__ import annotations

from evaluation.runs.services.baselines import (
    BaselineError,
    Regated,
    baseline_promote,
    rebaseline_branch,
    rebaseline_write,
    relevance_notes,
    run_regate_rescored,
)
from evaluation.runs.services.budgets import (
    budgets_set,
)
from evaluation.runs.services.chunks import (
    PROGRESS_EVERY_S,
    READ_MOST,
    TOUCH_EVERY_S,
    WRITE_BATCH,
    WRITE_EVERY_S,
    ChunkOutcome,
    run_chunk_process,
    search_through,
    stream,
)
from evaluation.runs.services.finalize import (
    FINALIZE_LEASE,
    run_finalize_process,
    run_gate,
    run_outcome,
    run_report_build,
)
from evaluation.runs.services.leases import (
    CHUNK_LEASE,
    LEASE_RENEW_EVERY_S,
    MAX_LEASE_LOSSES,
    ChunkHold,
    LeasesLost,
    chunk_lease_claim,
    chunk_leases_create,
    lease_claim,
    lease_requeue,
    leases_close,
    leases_create,
    leases_expired,
    leases_quiet,
)
from evaluation.runs.services.notifications import (
    MAX_RETRY_DELAY_S,
    NOTIFIED_STATUSES,
    NOTIFY_ATTEMPTS,
    NOTIFY_VERDICTS,
    WEBHOOK_REPLY_BYTES,
    NotificationRetry,
    VerdictMessage,
    notification_deliver,
    notifications_prepare,
    retry_delay,
    run_url,
    verdict_message,
    webhook_url_problem,
)
from evaluation.runs.services.rescore import (
    BaselineRescoreError,
    baseline_rescore_auto,
    baseline_rescore_get_or_create,
)
from evaluation.runs.services.runs import (
    CHUNKS_PER_RUN,
    MAX_CHUNK,
    MIN_CHUNK_PER_CONCURRENCY,
    RunError,
    RunPlan,
    cancelled_text,
    end_if_active,
    params_problems,
    plan_chunks,
    plan_run,
    run_begin,
    run_cancel,
    run_create,
    run_fail,
    run_missing_queries,
    target_use_problems,
)
from evaluation.runs.services.schedules import (
    runs_nightly,
    schedule_delete,
    schedule_problems,
    schedule_set,
    schedules_due,
)
from evaluation.runs.services.sweep import (
    MAX_REDISPATCHES,
    QUEUED_GRACE,
    STALL_AFTER,
    SweepActions,
    queued_claim,
    runs_sweep,
)
from evaluation.runs.services.targets import (
    TARGET_EXTRA,
    TARGET_FIELDS,
    target_create,
    target_name_problems,
    target_secret_problems,
    target_secrets,
    target_update,
    webhook_problems,
)
from evaluation.runs.services.unjudged import (
    Gaps,
    JudgeOffer,
    UnjudgedAsked,
    UnjudgedQueued,
    gaps_ask_judge,
    gaps_judge_offer,
    gaps_queue,
    run_gaps,
    unjudged_ask_judge,
    unjudged_judge_offer,
    unjudged_queue,
)

__all__ = [
    "CHUNKS_PER_RUN",
    "CHUNK_LEASE",
    "FINALIZE_LEASE",
    "LEASE_RENEW_EVERY_S",
    "MAX_CHUNK",
    "MAX_LEASE_LOSSES",
    "MAX_REDISPATCHES",
    "MAX_RETRY_DELAY_S",
    "MIN_CHUNK_PER_CONCURRENCY",
    "NOTIFIED_STATUSES",
    "NOTIFY_ATTEMPTS",
    "NOTIFY_VERDICTS",
    "PROGRESS_EVERY_S",
    "QUEUED_GRACE",
    "READ_MOST",
    "STALL_AFTER",
    "TARGET_EXTRA",
    "TARGET_FIELDS",
    "TOUCH_EVERY_S",
    "WEBHOOK_REPLY_BYTES",
    "WRITE_BATCH",
    "WRITE_EVERY_S",
    "BaselineError",
    "BaselineRescoreError",
    "ChunkHold",
    "ChunkOutcome",
    "Gaps",
    "JudgeOffer",
    "LeasesLost",
    "NotificationRetry",
    "Regated",
    "RunError",
    "RunPlan",
    "SweepActions",
    "UnjudgedAsked",
    "UnjudgedQueued",
    "VerdictMessage",
    "baseline_promote",
    "baseline_rescore_auto",
    "baseline_rescore_get_or_create",
    "budgets_set",
    "cancelled_text",
    "chunk_lease_claim",
    "chunk_leases_create",
    "end_if_active",
    "gaps_ask_judge",
    "gaps_judge_offer",
    "gaps_queue",
    "lease_claim",
    "lease_requeue",
    "leases_close",
    "leases_create",
    "leases_expired",
    "leases_quiet",
    "notification_deliver",
    "notifications_prepare",
    "params_problems",
    "plan_chunks",
    "plan_run",
    "queued_claim",
    "rebaseline_branch",
    "rebaseline_write",
    "relevance_notes",
    "retry_delay",
    "run_begin",
    "run_cancel",
    "run_chunk_process",
    "run_create",
    "run_fail",
    "run_finalize_process",
    "run_gaps",
    "run_gate",
    "run_missing_queries",
    "run_outcome",
    "run_regate_rescored",
    "run_report_build",
    "run_url",
    "runs_nightly",
    "runs_sweep",
    "schedule_delete",
    "schedule_problems",
    "schedule_set",
    "schedules_due",
    "search_through",
    "stream",
    "target_create",
    "target_name_problems",
    "target_secret_problems",
    "target_secrets",
    "target_update",
    "target_use_problems",
    "unjudged_ask_judge",
    "unjudged_judge_offer",
    "unjudged_queue",
    "verdict_message",
    "webhook_problems",
    "webhook_url_problem",
]
