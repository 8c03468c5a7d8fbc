"""**Use this configuration**: an experiment's winner saved on its target, recorded (who, when, why, the
params before and after) and a full run of the golden version started with it through the usual start
(`run_create`), so it becomes the baseline only through the usual review (docs/experiments.md)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from assay.targets import TargetError
from evaluation.models import EvaluationRun, Experiment, ExperimentAdoption
from evaluation.services.experiment_coverage import experiment_result_current
from evaluation.services.experiments import ExperimentError, no_winner_text
from evaluation.services.runs import RunError, run_create
from evaluation.services.targets import target_update
from labeling.roles import reviews


@transaction.atomic
def experiment_adopt(
    *, experiment: Experiment, by: Any, rationale: str, trigger: str = EvaluationRun.Trigger.WEB
) -> ExperimentAdoption:
    """Save the winner's parameters on the experiment's target (over the target's own params and stage
    toggles, which the experiment's baseline sent; the newest re-score's winner once it was re-scored),
    record the adoption (`params_before` and `params_after`: what the target sends, params and stages),
    and start a full run with them. Raises
    ExperimentError naming each problem (nothing saved then): an experiment without a winner, no
    rationale, someone who does not review the set, a target or run the services refuse."""
    problems = []
    result, _ = experiment_result_current(experiment)  # a re-score's figures, once there is one
    if experiment.status != Experiment.Status.SUCCEEDED or not result:
        problems.append(f"experiment {experiment.pk} has no winner ({experiment.status}): nothing to use")
    elif result["winner"] is None:
        problems.append(no_winner_text(result) + ": nothing to use")
    if not rationale.strip():
        problems.append("rationale: say why this configuration should be used (it is recorded)")
    if not reviews(by, experiment.golden_version.golden_set):
        problems.append("only the golden set's reviewers and admins use an experiment's configuration")
    if problems:
        raise ExperimentError(problems)
    assert result is not None
    target = experiment.target
    params, stages = dict(target.params or {}), dict(target.stages or {})
    before = {**params, **stages}  # what the target sends, as the experiment's baseline sent it
    for name, value in result["winner"]["grid"].items():
        # A stage toggle stays one when the winner gives it true or false; anything else is a param (a
        # name is in one of the two, never both: assay.targets.spec_problems).
        if name in stages and isinstance(value, bool):
            stages[name] = value
        else:
            stages.pop(name, None)
            params[name] = value
    after = {**params, **stages}
    hidden = [s for s in target.golden_sets.all() if not reviews(by, s)]
    try:
        target_update(target=target, params=params, stages=stages, hidden_sets=hidden)
        run = run_create(
            golden_version=experiment.golden_version, target=target, triggered_by=by, trigger=trigger
        )
    except (TargetError, RunError) as exc:
        raise ExperimentError(exc.problems) from None
    return ExperimentAdoption.objects.create(
        experiment=experiment,
        target=target,
        params_before=before,
        params_after=after,
        rationale=rationale.strip(),
        adopted_by=by,
        run=run,
    )
