"""The run pages: runs (list with live progress, trigger form, report, side-by-side, cancel, baseline
promotion, rebaseline, queueing unjudged documents, a query's evidence), targets (list, detail with its
nightly schedules, form, trend charts), budgets, baseline history and API tokens.

Who sees what is `evaluation.runs.access` (the API's rules too): those who review a golden set (admins,
and the reviewer role on the set's list: `labeling.roles`) see its runs, targets, budgets and baselines;
everyone else gets 404 (grading is blind). Views are thin:
look the object up through access, call one service or selector, render. The report page's tables are
`evaluation.runs.report_page`, the forms `evaluation.runs.forms`, the trend charts' geometry `assay.charts`.

One module per part: `runs`, `evidence`, `targets`, `sets` (budgets, baselines), `tokens`, and the
lookups they share in `access_helpers`. Every view is re-exported here for `evaluation/runs/urls.py`; a
new page goes in a module of its own and one import line here.
"""

from __future__ import annotations

from evaluation.runs.views.evidence import run_query_evidence
from evaluation.runs.views.runs import (
    run_cancel,
    run_compare,
    run_detail,
    run_list,
    run_new,
    run_new_plan,
    run_progress,
    run_promote,
    run_report_download,
    run_rescore_baseline,
    run_row,
    run_unjudged_ask_judge,
    run_unjudged_queue,
)
from evaluation.runs.views.sets import baseline_list, budgets_download, budgets_edit
from evaluation.runs.views.targets import (
    target_detail,
    target_edit,
    target_list,
    target_schedule,
    target_trend,
)
from evaluation.runs.views.tokens import token_revoke, tokens

__all__ = [
    "baseline_list",
    "budgets_download",
    "budgets_edit",
    "run_cancel",
    "run_compare",
    "run_detail",
    "run_list",
    "run_new",
    "run_new_plan",
    "run_progress",
    "run_promote",
    "run_query_evidence",
    "run_report_download",
    "run_rescore_baseline",
    "run_row",
    "run_unjudged_ask_judge",
    "run_unjudged_queue",
    "target_detail",
    "target_edit",
    "target_list",
    "target_schedule",
    "target_trend",
    "token_revoke",
    "tokens",
]
