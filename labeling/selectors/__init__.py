"""Reads for the labeling pages, one module per part. Each page's data comes from a fixed number of
queries (no N+1).

- `grading`: a rater's queue, the grading page (blind) and the saved grades;
- `sets`: a golden set's pages for reviewers: the sets, their queries, one query's pool;
- `labels`: the consolidated labels (final grades, or why there is none yet), which a freeze reads;
- `review`: the agreement dashboard, the review queue and the adjudication page;
- `proposals`: the proposed label changes waiting for reviewers.

Every public name is re-exported here, so callers write `from labeling import selectors` and
`selectors.labels_consolidated(...)` whichever module a read lives in.
"""

from __future__ import annotations

from labeling.selectors.grading import (
    QUEUE_STATES,
    TOKEN_LENGTH,
    GradingItem,
    GradingPage,
    RaterDay,
    assignment_list,
    assignment_next,
    assignment_previous,
    candidate_for_token,
    candidate_token,
    count_subquery,
    grades_get,
    grading_page_get,
    rater_day_get,
    shuffle_key,
)
from labeling.selectors.labels import (
    DUAL_KINDS,
    FROZEN,
    NOT_DONE,
    REJUDGE,
    Consolidated,
    FinalLabel,
    KindGrade,
    NotDone,
    PairLabel,
    Unresolved,
    grade_counts,
    labels_consolidated,
    single_rater_work,
    third_counted,
)
from labeling.selectors.proposals import (
    DECIDED_ROWS,
    OTHER_GRADE_NAMES,
    ProposalRow,
    ProposalsPage,
    proposals_page_get,
    proposals_pending_count,
)
from labeling.selectors.review import (
    ADJUDICATION_STATES,
    COLUMN_NAMES,
    AdjudicationPage,
    AdjudicationRow,
    AgreementDashboard,
    DisputedQuery,
    QueueItem,
    RaterGrade,
    RaterRow,
    ReviewQueue,
    adjudication_order,
    adjudication_page_get,
    agreement_dashboard_get,
    dispute_next,
    labels_summary_get,
    ratings_list,
    review_queue_get,
)
from labeling.selectors.sets import (
    QUERY_PROGRESS,
    ReviewRow,
    golden_set_list,
    golden_set_queries,
    query_review_get,
)

__all__ = [
    "ADJUDICATION_STATES",
    "COLUMN_NAMES",
    "DECIDED_ROWS",
    "DUAL_KINDS",
    "FROZEN",
    "NOT_DONE",
    "OTHER_GRADE_NAMES",
    "QUERY_PROGRESS",
    "QUEUE_STATES",
    "REJUDGE",
    "TOKEN_LENGTH",
    "AdjudicationPage",
    "AdjudicationRow",
    "AgreementDashboard",
    "Consolidated",
    "DisputedQuery",
    "FinalLabel",
    "GradingItem",
    "GradingPage",
    "KindGrade",
    "NotDone",
    "PairLabel",
    "ProposalRow",
    "ProposalsPage",
    "QueueItem",
    "RaterDay",
    "RaterGrade",
    "RaterRow",
    "ReviewQueue",
    "ReviewRow",
    "Unresolved",
    "adjudication_order",
    "adjudication_page_get",
    "agreement_dashboard_get",
    "assignment_list",
    "assignment_next",
    "assignment_previous",
    "candidate_for_token",
    "candidate_token",
    "count_subquery",
    "dispute_next",
    "golden_set_list",
    "golden_set_queries",
    "grade_counts",
    "grades_get",
    "grading_page_get",
    "labels_consolidated",
    "labels_summary_get",
    "proposals_page_get",
    "proposals_pending_count",
    "query_review_get",
    "rater_day_get",
    "ratings_list",
    "review_queue_get",
    "shuffle_key",
    "single_rater_work",
    "third_counted",
]
