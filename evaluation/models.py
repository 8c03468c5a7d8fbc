"""Evaluation's models, as Django finds them: every model of the app imported here, each defined in its
capability's folder (`evaluation.runs.models`: targets, runs and their results, chunk leases, baselines,
budgets, schedules, notifications, API tokens; `evaluation.studies.models`: side-by-side studies;
`evaluation.experiments.models`: experiments; `evaluation.home.models`: the home page's visits). A model
defined in a module of the `evaluation` package belongs to the `evaluation` app, so its table
(`evaluation_*`) and the migrations are the app's as before.

This module is the registry only: code imports a model from its capability's module (runs never import
studies or experiments: pyproject.toml's import contracts); tests and the shell may import any from here.
"""

from __future__ import annotations

from evaluation.experiments.models import (
    Experiment,
    ExperimentAdoption,
    ExperimentChunk,
    ExperimentRescore,
    ExperimentResult,
)
from evaluation.home.models import HomeSeen
from evaluation.runs.models import (
    ApiToken,
    Baseline,
    BaselineRescore,
    BudgetSet,
    ChunkLease,
    EvaluationRun,
    Notification,
    QueryRunResult,
    RunSchedule,
    SearchTarget,
    scope_held,
)
from evaluation.studies.models import (
    PendingStudy,
    StudyEvent,
    StudyInstructions,
    StudyQuery,
    StudySetting,
    StudyTask,
    SxsStudy,
)

__all__ = [
    "ApiToken",
    "Baseline",
    "BaselineRescore",
    "BudgetSet",
    "ChunkLease",
    "EvaluationRun",
    "Experiment",
    "ExperimentAdoption",
    "ExperimentChunk",
    "ExperimentRescore",
    "ExperimentResult",
    "HomeSeen",
    "Notification",
    "PendingStudy",
    "QueryRunResult",
    "RunSchedule",
    "SearchTarget",
    "StudyEvent",
    "StudyInstructions",
    "StudyQuery",
    "StudySetting",
    "StudyTask",
    "SxsStudy",
    "scope_held",
]
