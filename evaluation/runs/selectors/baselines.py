"""Reads of baselines: the one in force for a set and target and the history, a set's budgets, the noise
floor of a baseline's configuration (docs/metrics.md, "Noise floor"), and what a new run will be gated
against (`gate_plan`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from assay.drift import Budgets, load_budgets
from assay.noise import (
    MIN_RUNS,
    NOT_ENOUGH_RUNS,
    NoiseError,
    NoiseFloor,
    configuration_differences,
    noise_floor,
)
from evaluation.runs.models import Baseline, BudgetSet, EvaluationRun, SearchTarget
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet

# A baseline's run without its report-sized JSON (tens of megabytes on a large set) nor its golden
# version's file, with its target (`run.label` reads the name): most readers of a baseline want its run's
# label, version name and parameters;
# `baseline.run.report` reads the report on first use (once: the instance keeps it), which only the gate,
# the noise floor and a promotion do.
_RUN_DOCUMENTS = (
    "run__report",
    "run__gate",
    "run__key_map",
    "run__golden_version__content",
    "run__golden_version__documents",
)


def baseline_get(*, golden_set: GoldenSet, target: SearchTarget) -> Baseline | None:
    """The baseline in force for (set, target): the newest promotion (its run's report read on use)."""
    return (
        Baseline.objects.filter(golden_set=golden_set, target=target)
        .select_related("run__golden_version", "run__target", "approved_by")
        .defer(*_RUN_DOCUMENTS)
        .order_by("-approved_at", "-id")
        .first()
    )


def baseline_list(*, golden_set: GoldenSet, target: SearchTarget | None = None) -> QuerySet[Baseline]:
    """Every promotion (the history), newest first."""
    rows = Baseline.objects.filter(golden_set=golden_set)
    if target is not None:
        rows = rows.filter(target=target)
    return (
        rows.select_related("run__golden_version", "run__target", "target", "approved_by")
        .defer(*_RUN_DOCUMENTS)
        .order_by("-approved_at", "-id")
    )


def budgets_get(*, golden_set: GoldenSet) -> Budgets:
    """The set's budgets, or docs/metrics.md's defaults when it has none."""
    row = BudgetSet.objects.filter(golden_set=golden_set).first()
    return load_budgets(row.data if row else None)


# --- the noise floor of a baseline's configuration (docs/metrics.md, "Noise floor")

# The newest runs a floor is measured from: enough to see the noise (the range only grows with more runs),
# and a bounded cost (each run's report is loaded) for the finalize step and the budgets page.
NOISE_RUNS = 10


@dataclass(frozen=True)
class NoiseMeasure:
    """The runs of a baseline's configuration (A/A runs, newest first) and the floor measured from them."""

    baseline: Baseline
    runs: list[EvaluationRun]
    floor: NoiseFloor | None  # None: `problem` says why
    problem: str = ""


def baselines_in_force(*, golden_set: GoldenSet) -> list[Baseline]:
    """The baseline in force of each target of the set that has one, by target name."""
    rows = (
        Baseline.objects.filter(golden_set=golden_set)
        .select_related("target", "run__golden_version", "run__target")
        .defer(*_RUN_DOCUMENTS)
        .order_by("target__name", "target_id", "-approved_at", "-id")
    )
    newest: dict[int, Baseline] = {}
    for row in rows:
        newest.setdefault(row.target_id, row)
    return list(newest.values())


def noise_runs(*, baseline: Baseline, limit: int = NOISE_RUNS) -> list[EvaluationRun]:
    """The baseline's configuration run again: succeeded runs of its target on its golden version with its
    effective parameters and the same system called (`assay.noise.configuration_differences` on the
    reports), without an errored query (errors leave the means: not noise); the newest `limit`."""
    reference = baseline.run.report or {}
    candidates = (
        EvaluationRun.objects.filter(
            target_id=baseline.target_id,
            golden_version_id=baseline.run.golden_version_id,
            effective_params=baseline.run.effective_params,
            status=EvaluationRun.Status.SUCCEEDED,
            errors=0,
            report__isnull=False,
        )
        .defer("report", "gate", "key_map")
        .order_by("-finished_at", "-id")
    )
    runs: list[EvaluationRun] = []
    for candidate in candidates.iterator(chunk_size=limit):
        # The baseline's own run (usually among them) is read already; another's report is read here,
        # one run at a time, and kept only with a run of the configuration.
        run = baseline.run if candidate.pk == baseline.run_id else candidate
        if not configuration_differences([reference, run.report or {}], ["baseline", "run"]):
            runs.append(run)
            if len(runs) == limit:
                break
    return runs


def noise_measure(*, baseline: Baseline) -> NoiseMeasure:
    """The noise floor of the baseline's configuration, or why there is none yet."""
    runs = noise_runs(baseline=baseline)
    if len(runs) < MIN_RUNS:
        count = f"{len(runs)} run" if len(runs) == 1 else f"{len(runs)} runs"
        return NoiseMeasure(
            baseline, runs, None, f"{count} of the baseline's configuration so far: {NOT_ENOUGH_RUNS}"
        )
    try:
        floor = noise_floor([run.report for run in runs], names=[f"run {run.pk}" for run in runs])
    except NoiseError as exc:  # reports of an older format: say so rather than fail the finalize step
        return NoiseMeasure(baseline, runs, None, "; ".join(exc.problems))
    return NoiseMeasure(baseline, runs, floor)


@dataclass(frozen=True)
class GatePlan:
    """What a new run of (golden version, target) will be gated against, known before it starts: the
    Start-a-run form and the API say it before a run is made, so no verdict comes as a surprise.

    `baseline` is the one in force (None: the run will have nothing to compare with, and passes on its
    own errors only). When it is on another golden version the gate refuses to compare unless the run
    re-scores the baseline on the run's version (`rescore_problem` says why it cannot, None when it can)
    or is gated as a rebaseline."""

    golden_version: GoldenVersion
    target: SearchTarget
    baseline: Baseline | None
    rescore_problem: str | None = None

    @property
    def other_version(self) -> bool:
        return self.baseline is not None and self.baseline.run.golden_version_id != self.golden_version.pk

    def describe(self, *, via: PlanWords | None = None) -> str:
        """One sentence for the form and the API's refusals; `via` names the choices as the caller
        offers them (the form's boxes by default)."""
        words = via or FORM_WORDS
        version = self.golden_version.name
        if self.baseline is None:
            return (
                f"{self.target.name} has no baseline on {self.golden_version.golden_set.slug} yet: the "
                "run is gated on its own errors only (promote a run to compare the next ones with it)."
            )
        run, base_version = self.baseline.run, self.baseline.run.golden_version.name
        if not self.other_version:
            return f"Gated against the baseline, {run.label}, on version {version}."
        if self.rescore_problem is None:
            return (
                f"The baseline, {run.label}, is on version {base_version}, not {version}: the gate refuses "
                f"to compare unless its stored lists are re-scored on {version}'s labels ({words.rescore}), "
                f"or the run is gated as a rebaseline ({words.rebaseline}); or pick {base_version}."
            )
        return (
            f"The baseline, {run.label}, is on version {base_version}, not {version}, and cannot be "
            f"re-scored on it ({self.rescore_problem}): pick {base_version}, or gate the run as a rebaseline "
            f"({words.rebaseline})."
        )

    def problems(self, *, rescore: bool, rebaseline: bool, via: PlanWords | None = None) -> list[str]:
        """Why a run with these choices would end in a refusal rather than a comparison (empty: it will
        compare, or it has nothing to compare with)."""
        if not self.other_version or rebaseline:
            return []
        if rescore and self.rescore_problem is None:
            return []
        return [self.describe(via=via)]


@dataclass(frozen=True)
class PlanWords:
    """How a caller offers the two choices, for `GatePlan.describe`."""

    rescore: str
    rebaseline: str


FORM_WORDS = PlanWords("tick 'Re-score the baseline'", "tick 'Gate as a rebaseline'")
API_WORDS = PlanWords(
    '"rescore_baseline": true; assay remote run --rescore-baseline',
    '"rebaseline": true; assay remote run --rebaseline',
)


def gate_plan(*, golden_version: GoldenVersion, target: SearchTarget) -> GatePlan:
    baseline = baseline_get(golden_set=golden_version.golden_set, target=target)
    if baseline is None or baseline.run.golden_version_id == golden_version.pk:
        return GatePlan(golden_version, target, baseline)
    # Only the report's k (a 100,000-query report is tens of megabytes; this runs on every Start page).
    scored = list(
        EvaluationRun.objects.filter(pk=baseline.run_id, report__isnull=False).values_list(
            "report__k", flat=True
        )
    )
    problem = None
    if not scored:
        problem = f"{baseline.run.label} has no report"
    elif scored[0] != golden_version.k:
        problem = (
            f"it was scored at k={scored[0]} and version {golden_version.name} scores at k={golden_version.k}"
        )
    return GatePlan(golden_version, target, baseline, problem)


def baseline_version_for(*, target: SearchTarget) -> GoldenVersion | None:
    """The golden version of the target's newest baseline in force (the Start-a-run form's default: a
    run on it compares like with like)."""
    newest = (
        Baseline.objects.filter(target=target)
        .select_related("run__golden_version")
        .order_by("-approved_at", "-id")
    ).first()
    return newest.run.golden_version if newest is not None else None
