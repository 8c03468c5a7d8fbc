"""**Use this configuration** and **Revert** (docs/experiments.md): a configuration of an experiment that
beat the baseline saved on its target, recorded (the configuration, who, when, why, the target's params
and stage toggles before and after) and a full run of the golden version started with it through the
usual start (`run_create`), so it becomes the baseline only through the usual review; and the way back,
the target's params and stage toggles written back exactly as they were, recorded the same way with the
runs that sent the adopted ones.

One adoption of an experiment stands at a time (its form is gone while it does), and adoptions of one
target are undone last first: a revert is refused when the target no longer sends what the adoption
saved, so it never overwrites a later change it does not know of."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from assay.display import params_text
from assay.experiment import beat_baseline
from assay.targets import TargetError
from evaluation.experiments.models import Experiment, ExperimentAdoption
from evaluation.experiments.services.coverage import experiment_result_current
from evaluation.experiments.services.experiments import ExperimentError, no_winner_text
from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.runs.services.runs import RunError, run_create
from evaluation.runs.services.targets import target_update
from labeling.roles import reviews


def adoptable_configurations(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The configurations of an experiment's current result that may be used: those that beat the
    baseline on the held-out queries (`assay.experiment.beat_baseline`), best tuning rank first."""
    return beat_baseline(result) if result else []


def _chosen(experiment: Experiment, result: dict[str, Any] | None, rank: int | None) -> tuple[Any, str]:
    """The configuration to use (the winner when `rank` is None) or the reason there is none."""
    if experiment.status != Experiment.Status.SUCCEEDED or not result:
        return None, f"experiment {experiment.pk} has no winner ({experiment.status}): nothing to use"
    if rank is None:
        if result["winner"] is None:
            return None, no_winner_text(result) + ": nothing to use"
        rank = result["winner"]["rank"]
    config = next((c for c in result["configs"] if c["rank"] == rank), None)
    if config is None:
        return (
            None,
            f"rank {rank}: experiment {experiment.pk} ranks its configurations 1 to {len(result['configs'])}",
        )
    shown = f"rank {rank} ({params_text(config['grid'])})"
    if config["holdout"] is None:
        return None, (
            f"{shown} was not confirmed on the held-out queries: only a confirmed configuration that beat "
            "the baseline can be used"
        )
    if config not in adoptable_configurations(result):
        return None, (
            f"{shown} did not beat the baseline on the held-out queries (a gain with p (Holm) below "
            f"{result['alpha']:g}): nothing to use"
        )
    return config, ""


@transaction.atomic
def experiment_adopt(
    *,
    experiment: Experiment,
    by: Any,
    rationale: str,
    rank: int | None = None,
    trigger: str = EvaluationRun.Trigger.WEB,
) -> ExperimentAdoption:
    """Save the configuration of tuning rank `rank` (the winner when None; any confirmed configuration
    that beat the baseline) on the experiment's target, over the target's own params and stage toggles
    (which the experiment's baseline sent; the newest re-score's figures once it was re-scored), record
    the adoption, and start a full run with it. Raises ExperimentError naming each problem (nothing saved
    then): a configuration that did not beat the baseline, no rationale, someone who does not review the
    set, an adoption of this experiment that still stands, a target or run the services refuse."""
    # The target's row first: two adoptions at once are taken one after the other, the second seeing the
    # first's record.
    target = SearchTarget.objects.select_for_update().get(pk=experiment.target_id)
    result, _ = experiment_result_current(experiment)  # a re-score's figures, once there is one
    config, problem = _chosen(experiment, result, rank)
    problems = [problem] if problem else []
    if not rationale.strip():
        problems.append("rationale: say why this configuration should be used (it is recorded)")
    if not reviews(by, experiment.golden_version.golden_set):
        problems.append("only the golden set's reviewers and admins use an experiment's configuration")
    standing = experiment.adoptions.filter(reverted_at__isnull=True).select_related("adopted_by").first()
    if standing is not None:
        same = config is not None and standing.configuration == config["grid"]
        problems.append(
            f"{standing.configuration_text} of experiment {experiment.pk} is "
            f"{'already ' if same else ''}in use on {target.name} (adopted by "
            f"{standing.adopted_by.get_username()}, {standing.adopted_at:%Y-%m-%d %H:%M}): "
            + ("nothing to do" if same else "revert it before using another")
        )
    if problems:
        raise ExperimentError(problems)
    assert config is not None
    params, stages = dict(target.params or {}), dict(target.stages or {})
    before, stages_before = {**params, **stages}, dict(stages)  # what the target sends, as it is now
    for name, value in config["grid"].items():
        # A stage toggle stays one when the configuration gives it true or false; anything else is a
        # param (a name is in one of the two, never both: assay.targets.spec_problems).
        if name in stages and isinstance(value, bool):
            stages[name] = value
        else:
            stages.pop(name, None)
            params[name] = value
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
        configuration=dict(config["grid"]),
        rank=config["rank"],
        params_before=before,
        params_after={**params, **stages},
        stages_before=stages_before,
        stages_after=stages,
        rationale=rationale.strip(),
        adopted_by=by,
        run=run,
    )


def adoption_runs(adoption: ExperimentAdoption) -> list[int]:
    """The runs that sent the adopted params: the target's runs from the confirming run on (until the
    revert, once reverted) whose target, as they recorded it (`target_snapshot`), sent the params and
    stage toggles the adoption saved; oldest first."""
    if adoption.reverted_at is not None:
        return list(adoption.revert_runs)
    after = adoption.target_fields(before=False)
    since = (
        Q(created__gte=adoption.adopted_at) | Q(pk=adoption.run_id)
        if adoption.run_id
        else Q(created__gte=adoption.adopted_at)
    )
    rows = EvaluationRun.objects.filter(since, target_id=adoption.target_id).order_by("created", "id")
    return [
        pk
        for pk, snapshot in rows.values_list("pk", "target_snapshot")
        if {"params": (snapshot or {}).get("params") or {}, "stages": (snapshot or {}).get("stages") or {}}
        == after
    ]


@transaction.atomic
def adoption_revert(*, adoption: ExperimentAdoption, by: Any, reason: str) -> ExperimentAdoption:
    """Write the target's params and stage toggles back exactly as they were before `adoption`, and
    record who, when, why and the runs that sent the adopted ones (`adoption_runs`). Raises
    ExperimentError naming each problem (nothing changed then): an adoption already reverted, no reason,
    someone who does not review the set, a target that no longer sends what the adoption saved (a later
    adoption stands, or it was edited since), a target the services refuse."""
    target = SearchTarget.objects.select_for_update().get(pk=adoption.target_id)
    locked = ExperimentAdoption.objects.select_for_update().get(pk=adoption.pk)
    problems = []
    if locked.reverted_at is not None:
        assert locked.reverted_by is not None
        problems.append(
            f"adoption {locked.pk} was reverted by {locked.reverted_by.get_username()} "
            f"({locked.reverted_at:%Y-%m-%d %H:%M}): nothing to revert"
        )
    if not reason.strip():
        problems.append("reason: say why the configuration is reverted (it is recorded)")
    if not reviews(by, locked.experiment.golden_version.golden_set):
        problems.append("only the golden set's reviewers and admins revert an experiment's configuration")
    now = {"params": target.params or {}, "stages": target.stages or {}}
    if not problems and now != locked.target_fields(before=False):
        later = (
            ExperimentAdoption.objects.filter(target=target, reverted_at__isnull=True, pk__gt=locked.pk)
            .order_by("-pk")
            .first()
        )
        problems.append(
            f"{target.name} has since been set by adoption {later.pk} (experiment {later.experiment_id}, "
            f"{later.params_text}): revert that one first"
            if later is not None
            else f"{target.name} was changed since this adoption: it sends "
            f"{params_text({**now['params'], **now['stages']})}, not {locked.params_text}; change it on "
            "the target's page instead"
        )
    if problems:
        raise ExperimentError(problems)
    before = locked.target_fields(before=True)
    hidden = [s for s in target.golden_sets.all() if not reviews(by, s)]
    try:
        target_update(target=target, params=before["params"], stages=before["stages"], hidden_sets=hidden)
    except TargetError as exc:
        raise ExperimentError(exc.problems) from None
    locked.revert_runs = adoption_runs(locked)
    locked.reverted_at = timezone.now()
    locked.reverted_by = by
    locked.revert_reason = reason.strip()
    locked.save(update_fields=["revert_runs", "reverted_at", "reverted_by", "revert_reason"])
    return locked
