"""What the budgets page shows beside the budgets (display only): the noise floor of a target's baseline
configuration per scope (the core tier, each stratum) and gated metric, the budget in force, the suggested
budgets and which thresholds are below the floor (docs/metrics.md, "Noise floor").

The floor is measured per target (`evaluation.runs.selectors.noise_measure`: the baseline's configuration run
again); the budgets are the set's, so the page shows one target's floor at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import Http404

from assay.budgets import Budget, Budgets
from assay.metric_table import BY_KEY, GATED_METRICS, format_budget
from assay.noise import NOT_ENOUGH_RUNS, MetricNoise, below_floor, suggest_budgets
from evaluation.runs import selectors
from evaluation.runs.numbers_page import Num, num
from labeling.models import GoldenSet


@dataclass
class NoiseLine:
    """One gated metric in one scope: its budget, its noise and the suggestion."""

    scope: str  # as the gate names it: "core", "stratum billing"
    metric: str
    label: str
    budget: str  # "0.01 / 0.025", "off", "not gated" (a stratum the budgets do not name)
    floor: Num  # how far the metric moved between the runs of the baseline's configuration
    suggested: str
    below: list[str]  # the levels whose threshold is below the floor: "warn", "fail"


@dataclass
class NoisePanel:
    baselines: list[Any]  # the baseline in force of each target of the set that has one
    measure: selectors.NoiseMeasure | None  # the chosen target's (None: no baseline in the set)
    lines: list[NoiseLine] = field(default_factory=list)
    suggested: Budgets | None = None

    @property
    def advice(self) -> str:
        """What to do when there is no floor to show."""
        if self.measure is None:
            return f"No baseline in this set yet: promote a run to baseline, then {NOT_ENOUGH_RUNS}."
        return self.measure.problem

    @property
    def below(self) -> int:
        """How many thresholds in force are below the floor."""
        return sum(len(line.below) for line in self.lines)


def _budget_text(budget: Budget | None) -> str:
    if budget is None:
        return "not gated"
    return format_budget(budget.warn, budget.fail) or "off"


def _lines(measure: selectors.NoiseMeasure, budgets: Budgets, suggested: Budgets) -> list[NoiseLine]:
    assert measure.floor is not None
    below: dict[tuple[str, str], list[str]] = {}
    for found in below_floor(budgets, measure.floor):
        below.setdefault((found.scope, found.metric), []).append(found.level)
    lines = []
    for scope, name, noise in measure.floor.scopes():
        current: Mapping[str, Budget] | None = budgets.core if name is None else budgets.strata.get(name)
        proposed = suggested.core if name is None else suggested.strata[name]
        for metric in GATED_METRICS:
            measured = noise.get(metric, MetricNoise())
            why = "not measured: no query counted here"
            lines.append(
                NoiseLine(
                    scope=scope,
                    metric=metric,
                    label=BY_KEY[metric].label,
                    budget=_budget_text(current[metric] if current is not None else None),
                    floor=num(measured.floor, why=why, metric=metric),
                    suggested=_budget_text(proposed[metric]),
                    below=below.get((scope, metric), []),
                )
            )
    return lines


def noise_panel(*, golden_set: GoldenSet, budgets: Budgets, target_id: str | None) -> NoisePanel:
    """The noise beside `budgets` for the chosen target (`target_id`, default: the first by name with a
    baseline). Raises Http404 for a target id that has no baseline in the set."""
    baselines = selectors.baselines_in_force(golden_set=golden_set)
    if target_id:
        chosen = [b for b in baselines if str(b.target_id) == target_id]
        if not chosen:
            raise Http404("no baseline of that target in this set")
        baseline = chosen[0]
    elif baselines:
        baseline = baselines[0]
    else:
        return NoisePanel(baselines=[], measure=None)
    measure = selectors.noise_measure(baseline=baseline)
    panel = NoisePanel(baselines=baselines, measure=measure)
    if measure.floor is not None:
        panel.suggested = suggest_budgets(measure.floor, budgets)
        panel.lines = _lines(measure, budgets, panel.suggested)
    return panel


def suggested_budgets(panel: NoisePanel, budgets: Budgets) -> tuple[Budgets | None, list[str]]:
    """`budgets` (the form's, unsaved) with the suggestions of the noise floor filled in, or why there are
    none: no floor to suggest from."""
    if panel.measure is None or panel.measure.floor is None:
        return None, [f"no noise floor to suggest budgets from: {panel.advice}"]
    return suggest_budgets(panel.measure.floor, budgets), []
