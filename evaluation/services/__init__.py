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

One module per part (this package re-exports every public name of each, so `services.run_create(...)`
reads the same everywhere; `tests/config/test_reexports.py` holds it): `targets`, `budgets`, `runs`
(create, cancel, fail, the start step and chunk plans), `chunks`, `leases` (chunk leases), `finalize`,
`sweep`, `baselines` (promotion, rebaseline),
`schedules`, `unjudged`, `notifications` (a fail or warn verdict told by email and webhook), `rescore`
(a baseline's lists re-scored on a new golden version; finalize's hook for opted-in nightly runs),
`experiments`, `experiment_chunks` and `experiment_adopt` (parameter sweeps on the workers, and Use this
configuration: docs/experiments.md), `studies`, `study_export`, `study_planning` and `study_targets`
(side-by-side studies, the interval a study's size will likely give, and one on two targets searched now:
docs/sxs.md).
Services read through `evaluation.selectors` and queue tasks through `evaluation.enqueue`; they never
import `evaluation.tasks`.
"""

from __future__ import annotations

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
from evaluation.services.chunks import (
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
from evaluation.services.experiment_adopt import (
    experiment_adopt,
)
from evaluation.services.experiment_chunks import (
    SENT,
    ExperimentChunkOutcome,
    experiment_chunk_process,
)
from evaluation.services.experiments import (
    ExperimentError,
    ExperimentPlan,
    ExperimentSweep,
    experiment_advance,
    experiment_begin,
    experiment_cancel,
    experiment_create,
    experiment_fail,
    experiment_resume,
    experiment_runs,
    experiments_sweep,
    grid_read,
    plan_work,
)
from evaluation.services.finalize import (
    FINALIZE_LEASE,
    run_finalize_process,
    run_gate,
    run_outcome,
    run_report_build,
)
from evaluation.services.leases import (
    CHUNK_LEASE,
    LEASE_RENEW_EVERY_S,
    ChunkHold,
    chunk_lease_claim,
    chunk_leases_create,
    lease_requeue,
)
from evaluation.services.notifications import (
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
from evaluation.services.rescore import (
    BaselineRescoreError,
    baseline_rescore_auto,
    baseline_rescore_get_or_create,
)
from evaluation.services.runs import (
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
)
from evaluation.services.schedules import (
    runs_nightly,
    schedule_delete,
    schedule_problems,
    schedule_set,
    schedules_due,
)
from evaluation.services.studies import (
    ALREADY,
    ANSWER_FIELDS,
    DEFAULT_EXAMPLES,
    DEFAULT_INSTRUCTIONS,
    MAX_SEED,
    NOTE_MAX,
    SECOND_TAB,
    Answer,
    AnswerRefused,
    StudyError,
    StudySpec,
    answer_problems,
    baseline_study_problems,
    instructions_get_or_create,
    option_problems,
    run_studies,
    study_analysis,
    study_answer,
    study_answers,
    study_create,
    study_setting_set,
    study_undo,
    sxs_inputs,
)
from evaluation.services.study_export import (
    EXPORT_FIELDS,
    study_export_csv,
    study_export_jsonl,
    study_export_rows,
)
from evaluation.services.study_planning import study_created_expectation, study_expectation
from evaluation.services.study_targets import (
    OPTIONS,
    pending_resolve,
    pending_studies_resolve,
    study_on_targets,
)
from evaluation.services.sweep import (
    MAX_LEASE_LOSSES,
    MAX_REDISPATCHES,
    QUEUED_GRACE,
    STALL_AFTER,
    SweepActions,
    runs_sweep,
)
from evaluation.services.targets import (
    TARGET_EXTRA,
    TARGET_FIELDS,
    target_create,
    target_name_problems,
    target_secret_problems,
    target_secrets,
    target_update,
    webhook_problems,
)
from evaluation.services.unjudged import (
    JudgeOffer,
    UnjudgedAsked,
    UnjudgedQueued,
    unjudged_ask_judge,
    unjudged_judge_offer,
    unjudged_queue,
)

__all__ = [
    "ALREADY",
    "ANSWER_FIELDS",
    "CHUNKS_PER_RUN",
    "CHUNK_LEASE",
    "DEFAULT_EXAMPLES",
    "DEFAULT_INSTRUCTIONS",
    "EXPORT_FIELDS",
    "FINALIZE_LEASE",
    "LEASE_RENEW_EVERY_S",
    "MAX_CHUNK",
    "MAX_LEASE_LOSSES",
    "MAX_REDISPATCHES",
    "MAX_RETRY_DELAY_S",
    "MAX_SEED",
    "MIN_CHUNK_PER_CONCURRENCY",
    "NOTE_MAX",
    "NOTIFIED_STATUSES",
    "NOTIFY_ATTEMPTS",
    "NOTIFY_VERDICTS",
    "OPTIONS",
    "PROGRESS_EVERY_S",
    "QUEUED_GRACE",
    "READ_MOST",
    "SECOND_TAB",
    "SENT",
    "STALL_AFTER",
    "TARGET_EXTRA",
    "TARGET_FIELDS",
    "TOUCH_EVERY_S",
    "WEBHOOK_REPLY_BYTES",
    "WRITE_BATCH",
    "WRITE_EVERY_S",
    "Answer",
    "AnswerRefused",
    "BaselineError",
    "BaselineRescoreError",
    "ChunkHold",
    "ChunkOutcome",
    "ExperimentChunkOutcome",
    "ExperimentError",
    "ExperimentPlan",
    "ExperimentSweep",
    "JudgeOffer",
    "NotificationRetry",
    "Regated",
    "RunError",
    "RunPlan",
    "StudyError",
    "StudySpec",
    "SweepActions",
    "UnjudgedAsked",
    "UnjudgedQueued",
    "VerdictMessage",
    "answer_problems",
    "baseline_promote",
    "baseline_rescore_auto",
    "baseline_rescore_get_or_create",
    "baseline_study_problems",
    "budgets_set",
    "cancelled_text",
    "chunk_lease_claim",
    "chunk_leases_create",
    "end_if_active",
    "experiment_adopt",
    "experiment_advance",
    "experiment_begin",
    "experiment_cancel",
    "experiment_chunk_process",
    "experiment_create",
    "experiment_fail",
    "experiment_resume",
    "experiment_runs",
    "experiments_sweep",
    "grid_read",
    "instructions_get_or_create",
    "lease_requeue",
    "notification_deliver",
    "notifications_prepare",
    "option_problems",
    "params_problems",
    "pending_resolve",
    "pending_studies_resolve",
    "plan_chunks",
    "plan_run",
    "plan_work",
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
    "run_gate",
    "run_missing_queries",
    "run_outcome",
    "run_regate_rescored",
    "run_report_build",
    "run_studies",
    "run_url",
    "runs_nightly",
    "runs_sweep",
    "schedule_delete",
    "schedule_problems",
    "schedule_set",
    "schedules_due",
    "search_through",
    "stream",
    "study_analysis",
    "study_answer",
    "study_answers",
    "study_create",
    "study_created_expectation",
    "study_expectation",
    "study_export_csv",
    "study_export_jsonl",
    "study_export_rows",
    "study_on_targets",
    "study_setting_set",
    "study_undo",
    "sxs_inputs",
    "target_create",
    "target_name_problems",
    "target_secret_problems",
    "target_secrets",
    "target_update",
    "unjudged_ask_judge",
    "unjudged_judge_offer",
    "unjudged_queue",
    "verdict_message",
    "webhook_problems",
    "webhook_url_problem",
]
