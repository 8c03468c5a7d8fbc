"""Reads of runs (this package re-exports every public name of its modules; tests/config/test_reexports.py
holds it): `runs` (who sees which runs, run lists and progress, trends, one query's side-by-side data,
near-duplicate titles, targets, a run's golden file parsed once per process), `unjudged` (a run's
unjudged documents and what each waits for), `baselines` (the baseline in force and the history, budgets,
the noise floor, what a new run will be gated against).

Runs show target names and rankings, which raters must never see (grading is blind): a run is visible
to those who review its golden set (the one rule of `labeling.roles`: admins, and holders of the
reviewer role on the set's list), and to nobody else, whoever started it.

Reads import no service (the services read through here), so nothing here can write by accident.
"""

from __future__ import annotations

from evaluation.runs.selectors.baselines import (
    API_WORDS,
    FORM_WORDS,
    NOISE_RUNS,
    GatePlan,
    NoiseMeasure,
    PlanWords,
    baseline_get,
    baseline_list,
    baseline_version_for,
    baselines_in_force,
    budgets_get,
    gate_plan,
    noise_measure,
    noise_runs,
)
from evaluation.runs.selectors.runs import (
    TREND_METRICS,
    golden_of,
    near_duplicate_titles,
    resolved_golden,
    run_compare_query,
    run_get,
    run_list,
    run_progress,
    run_results,
    run_trend,
    runs_visible,
    target_list,
)
from evaluation.runs.selectors.unjudged import (
    UnjudgedRow,
    Waiting,
    unjudged_in_top_k,
    unjudged_waiting,
)

__all__ = [
    "API_WORDS",
    "FORM_WORDS",
    "NOISE_RUNS",
    "TREND_METRICS",
    "GatePlan",
    "NoiseMeasure",
    "PlanWords",
    "UnjudgedRow",
    "Waiting",
    "baseline_get",
    "baseline_list",
    "baseline_version_for",
    "baselines_in_force",
    "budgets_get",
    "gate_plan",
    "golden_of",
    "near_duplicate_titles",
    "noise_measure",
    "noise_runs",
    "resolved_golden",
    "run_compare_query",
    "run_get",
    "run_list",
    "run_progress",
    "run_results",
    "run_trend",
    "runs_visible",
    "target_list",
    "unjudged_in_top_k",
    "unjudged_waiting",
]
