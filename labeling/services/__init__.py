"""Everything that writes labeling rows, one module per part of the work:

- `imports`: rubrics, documents and query logs (golden files are golden_io's: `golden_io.services`);
- `pools`: candidate pools from run files, live search endpoints and earlier judgments;
- `assignments`: giving queries to raters (the dual sample, gold items), reassigning, progress;
- `grading`: saving a grade (blind; the grading endpoint's hot path);
- `done`: marking a query done, reopening it, and the proposed label changes made then;
- `review`: tier moves, retirement, adjudication, proposal decisions, the dispute check, third raters,
  re-judgments, gold items.

Every public name is re-exported here, so callers write `from labeling import services` and
`services.judgment_submit(...)` whichever module a service lives in.
"""

from __future__ import annotations

from labeling.services.assignments import (
    SCOPED_KINDS,
    AssignmentError,
    AssignReport,
    assignment_candidates,
    assignment_progress,
    assignment_reassign,
    assignments_create,
    dual_sampled,
    gold_distribute,
)
from labeling.services.done import (
    LABEL_KINDS,
    DoneResult,
    Incomplete,
    Overturn,
    ReopenError,
    assignment_done,
    assignment_reopen,
    overturns_list,
    single_rater,
)
from labeling.services.grading import (
    BUSY_MESSAGE,
    LOCKED_MESSAGE,
    MAX_NOTE,
    MAX_TIME_PER_SAVE_MS,
    REASSIGNED_MESSAGE,
    RETIRED_MESSAGE,
    Busy,
    GradingError,
    Locked,
    NotFound,
    OffScale,
    Reassigned,
    Retired,
    SubmitResult,
    judgment_submit,
)
from labeling.services.imports import SamplingOptions, documents_import, query_log_import, rubric_import
from labeling.services.pools import (
    JUDGED_SYSTEM,
    POOL_DEPTH,
    PoolEntry,
    candidates_add,
    pool_add_judged,
    pool_fetch,
    pool_import_rankings,
    pool_import_run,
    pool_merge,
)
from labeling.services.review import (
    ReviewError,
    adjudication_create,
    assignment_rejudge_create,
    disputes_check_all,
    gold_mark,
    gold_unmark,
    golden_set_thresholds_set,
    proposal_decide,
    proposals_decide_query,
    query_dispute_check,
    query_move_tier,
    query_retire,
    retired_work_reopen,
    thresholds_of,
)

__all__ = [
    "BUSY_MESSAGE",
    "JUDGED_SYSTEM",
    "LABEL_KINDS",
    "LOCKED_MESSAGE",
    "MAX_NOTE",
    "MAX_TIME_PER_SAVE_MS",
    "POOL_DEPTH",
    "REASSIGNED_MESSAGE",
    "RETIRED_MESSAGE",
    "SCOPED_KINDS",
    "AssignReport",
    "AssignmentError",
    "Busy",
    "DoneResult",
    "GradingError",
    "Incomplete",
    "Locked",
    "NotFound",
    "OffScale",
    "Overturn",
    "PoolEntry",
    "Reassigned",
    "ReopenError",
    "Retired",
    "ReviewError",
    "SamplingOptions",
    "SubmitResult",
    "adjudication_create",
    "assignment_candidates",
    "assignment_done",
    "assignment_progress",
    "assignment_reassign",
    "assignment_rejudge_create",
    "assignment_reopen",
    "assignments_create",
    "candidates_add",
    "disputes_check_all",
    "documents_import",
    "dual_sampled",
    "gold_distribute",
    "gold_mark",
    "gold_unmark",
    "golden_set_thresholds_set",
    "judgment_submit",
    "overturns_list",
    "pool_add_judged",
    "pool_fetch",
    "pool_import_rankings",
    "pool_import_run",
    "pool_merge",
    "proposal_decide",
    "proposals_decide_query",
    "query_dispute_check",
    "query_log_import",
    "query_move_tier",
    "query_retire",
    "retired_work_reopen",
    "rubric_import",
    "single_rater",
    "thresholds_of",
]
