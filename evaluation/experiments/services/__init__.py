"""Writes of experiments (docs/experiments.md): `experiments` (create, begin, advance, conclude, cancel,
the sweeper's step), `chunks` (a chunk's search, holding its lease as a run's chunk does), `adopt` (Use
this configuration and its revert) and `coverage` (the gaps and the re-score). This package re-exports
every public name of each (`tests/config/test_reexports.py`); targets, runs and the chunk lease are
`evaluation.runs`'.
"""

from __future__ import annotations

from evaluation.experiments.services.adopt import (
    adoptable_configurations,
    adoption_revert,
    adoption_runs,
    experiment_adopt,
)
from evaluation.experiments.services.chunks import (
    SENT,
    ExperimentChunkOutcome,
    experiment_chunk_process,
)
from evaluation.experiments.services.coverage import (
    experiment_gaps,
    experiment_rescore,
    experiment_result_current,
    rescore_version,
)
from evaluation.experiments.services.experiments import (
    ExperimentError,
    ExperimentPlan,
    ExperimentSweep,
    experiment_advance,
    experiment_begin,
    experiment_cancel,
    experiment_create,
    experiment_echoes,
    experiment_fail,
    experiment_resume,
    experiment_runs,
    experiment_score,
    experiment_settings,
    experiments_sweep,
    grid_read,
    no_winner_text,
    plan_work,
    results_by_slot,
)

__all__ = [
    "SENT",
    "ExperimentChunkOutcome",
    "ExperimentError",
    "ExperimentPlan",
    "ExperimentSweep",
    "adoptable_configurations",
    "adoption_revert",
    "adoption_runs",
    "experiment_adopt",
    "experiment_advance",
    "experiment_begin",
    "experiment_cancel",
    "experiment_chunk_process",
    "experiment_create",
    "experiment_echoes",
    "experiment_fail",
    "experiment_gaps",
    "experiment_rescore",
    "experiment_result_current",
    "experiment_resume",
    "experiment_runs",
    "experiment_score",
    "experiment_settings",
    "experiments_sweep",
    "grid_read",
    "no_winner_text",
    "plan_work",
    "rescore_version",
    "results_by_slot",
]
