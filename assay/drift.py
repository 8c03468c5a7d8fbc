"""The drift gate's one import: budgets, the gate and its renderings, by the names callers use (pure).

`assay gate`, the web app and the docs say `assay.drift` (`assay.drift.compare`, the `assay.drift`
budgets format); the code is in these modules, each of a size a reader takes in at once:

- `assay.budgets`: the budgets file's two forms, validated and normalized (`load_budgets`);
- `assay.gate`: a current report against a baseline report, the findings and the verdict (`compare`;
  its findings and their evidence in `assay.gate_findings`, its rules on single queries in
  `assay.gate_queries`, its top losers in `assay.gate_losers`);
- `assay.gate_render`: the result as the CI log, a pull-request comment and GitHub annotations.

Which metrics are gated, which way is worse and their labels are the metric table's
(`assay.metric_table`); the rules are docs/metrics.md, "The drift gate".
"""

from __future__ import annotations

from assay.budgets import (
    DEFAULT_BUDGETS,
    DEFAULT_CRITICAL_RANK,
    DEFAULT_MAX_ERROR_RATE,
    Budget,
    Budgets,
    BudgetsError,
    load_budgets,
)
from assay.changes import IDENTITY_FIELDS, TOLERANCE
from assay.gate import ArtifactError, GateResult, Verdict, compare, validate_artifact
from assay.gate_findings import Finding
from assay.gate_render import github_annotations, render_markdown, render_text

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_CRITICAL_RANK",
    "DEFAULT_MAX_ERROR_RATE",
    "IDENTITY_FIELDS",
    "TOLERANCE",
    "ArtifactError",
    "Budget",
    "Budgets",
    "BudgetsError",
    "Finding",
    "GateResult",
    "Verdict",
    "compare",
    "github_annotations",
    "load_budgets",
    "render_markdown",
    "render_text",
    "validate_artifact",
]
