"""Writes of side-by-side studies (docs/sxs.md): `studies` (creation from two finished runs, and the
refusals every study service raises), `answers` (a rater's answer and its undo), `analysis` (the
analysis kept on the study, the studies of a run, the set's "a passed study before a baseline" setting),
`close` (closing and reopening one, and what a promotion to baseline asks of a study), `export` (the
answers as CSV and JSON lines), `planning` (the interval a study's size will likely give) and `pending`
(a study on two targets searched now, made when both runs have finished). This package re-exports every
public name of each (`tests/config/test_reexports.py`); runs are started and read through
`evaluation.runs`.
"""

from __future__ import annotations

from evaluation.studies.services.analysis import (
    ANSWER_FIELDS,
    run_studies,
    study_analysis,
    study_answers,
    study_setting_set,
    sxs_inputs,
)
from evaluation.studies.services.answers import (
    ALREADY,
    CLOSED,
    NOTE_MAX,
    SECOND_TAB,
    Answer,
    answer_problems,
    rater_open_tasks,
    rater_tasks,
    study_answer,
    study_undo,
)
from evaluation.studies.services.close import (
    WHY_MAX,
    StudyStateError,
    baseline_studies_close,
    baseline_study_problems,
    study_close,
    study_reopen,
)
from evaluation.studies.services.export import (
    EXPORT_FIELDS,
    study_export_csv,
    study_export_jsonl,
    study_export_rows,
)
from evaluation.studies.services.pending import (
    OPTIONS,
    pending_resolve,
    pending_studies_resolve,
    study_on_targets,
)
from evaluation.studies.services.planning import (
    study_created_expectation,
    study_expectation,
)
from evaluation.studies.services.studies import (
    DEFAULT_EXAMPLES,
    DEFAULT_INSTRUCTIONS,
    MAX_SEED,
    AnswerRefused,
    StudyError,
    StudySpec,
    compared_systems,
    instructions_get_or_create,
    option_problems,
    rater_name_problems,
    study_create,
)

__all__ = [
    "ALREADY",
    "ANSWER_FIELDS",
    "CLOSED",
    "DEFAULT_EXAMPLES",
    "DEFAULT_INSTRUCTIONS",
    "EXPORT_FIELDS",
    "MAX_SEED",
    "NOTE_MAX",
    "OPTIONS",
    "SECOND_TAB",
    "WHY_MAX",
    "Answer",
    "AnswerRefused",
    "StudyError",
    "StudySpec",
    "StudyStateError",
    "answer_problems",
    "baseline_studies_close",
    "baseline_study_problems",
    "compared_systems",
    "instructions_get_or_create",
    "option_problems",
    "pending_resolve",
    "pending_studies_resolve",
    "rater_name_problems",
    "rater_open_tasks",
    "rater_tasks",
    "run_studies",
    "study_analysis",
    "study_answer",
    "study_answers",
    "study_close",
    "study_create",
    "study_created_expectation",
    "study_expectation",
    "study_export_csv",
    "study_export_jsonl",
    "study_export_rows",
    "study_on_targets",
    "study_reopen",
    "study_setting_set",
    "study_undo",
    "sxs_inputs",
]
