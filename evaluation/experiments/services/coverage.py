"""An experiment's coverage (docs/experiments.md, "Coverage"): the unjudged documents in the top k of its
baseline and confirmed configurations, on both parts, as `Gaps` that the runs' buttons queue for rating
or send to the set's qualified judge (`evaluation.runs.services.unjudged`); and, once they are labeled and
frozen into a newer version of the set, the experiment re-scored on it from its stored answers, without
searching again (`ExperimentRescore`, the figures before and after side by side)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from assay.experiment import part_columns, part_report, part_summary
from evaluation.experiments.models import Experiment, ExperimentRescore, ExperimentResult
from evaluation.experiments.services.experiments import (
    ExperimentError,
    experiment_score,
    experiment_settings,
    results_by_slot,
)
from evaluation.runs.selectors import UnjudgedRow, golden_of
from evaluation.runs.services.unjudged import Gaps
from golden_io import selectors as golden_selectors
from golden_io.models import GoldenVersion


def _confirmed_slots(experiment: Experiment) -> list[int]:
    """The baseline (slot 0) and the confirmed configurations: the slots searched on both parts."""
    return [0, *(i + 1 for i in experiment.ranking[: experiment.top])]


def experiment_gaps(*, experiment: Experiment) -> Gaps:
    """Per query, the documents without a label in the experiment's version that the baseline's or a
    confirmed configuration's top k holds (each at its best rank among them); errored answers have no
    list. The baseline's are among them: its own unjudged documents make its figures too low as well."""
    golden = golden_of(experiment.golden_version)
    best: dict[str, dict[str, int]] = {}
    answers = ExperimentResult.objects.filter(
        experiment=experiment, slot__in=_confirmed_slots(experiment), error__isnull=True
    ).values_list("query_id", "ids")
    for query_id, ids in answers.iterator():
        ranks = best.setdefault(query_id, {})
        for rank, doc in enumerate(ids[: golden.k], start=1):
            ranks[doc] = min(rank, ranks.get(doc, rank))
    rows = []
    for query in golden.queries:
        judged = query.grades
        unjudged = sorted(
            ((doc, rank) for doc, rank in best.get(query.id, {}).items() if doc not in judged),
            key=lambda pair: (pair[1], pair[0]),
        )
        if unjudged:
            rows.append(UnjudgedRow(query.id, query.text, unjudged))
    return Gaps(experiment.golden_version.golden_set, rows, f"experiment:{experiment.pk}")


def rescore_version(*, experiment: Experiment) -> GoldenVersion | None:
    """The version a re-score would use: the set's newest, when it is not the experiment's own."""
    newest = golden_selectors.version_latest(golden_set=experiment.golden_version.golden_set)
    return None if newest is None or newest.pk == experiment.golden_version_id else newest


def experiment_rescore(
    *, experiment: Experiment, by: Any = None, golden_version: GoldenVersion | None = None
) -> ExperimentRescore:
    """Score the experiment's stored answers on `golden_version` (default: the set's newest) without a
    single search: every configuration's tuning values, and the confirmation, the winner and the coverage
    (`experiment_score`) of the configurations it confirmed (the ranking is kept: another one would need
    held-out answers nobody searched). The one made before for that version is returned as it is.
    Raises ExperimentError naming each problem."""
    problems = []
    if experiment.status != Experiment.Status.SUCCEEDED or experiment.result is None:
        problems.append(
            f"experiment {experiment.pk} has no result ({experiment.status}): nothing to re-score"
        )
    version = golden_version or rescore_version(experiment=experiment)
    if version is None or version.pk == experiment.golden_version_id:
        problems.append(
            f"no newer version of {experiment.golden_version.golden_set.slug} than "
            f"{experiment.golden_version.name}: freeze the new labels first"
        )
    elif version.golden_set_id != experiment.golden_version.golden_set_id:
        problems.append(f"version {version.name} is not a version of the experiment's golden set")
    elif version.created < experiment.golden_version.created:
        problems.append(
            f"version {version.name} is older than the experiment's {experiment.golden_version.name}: "
            "re-score on a newer one"
        )
    if problems:
        raise ExperimentError(problems)
    assert version is not None and experiment.result is not None
    existing = ExperimentRescore.objects.filter(experiment=experiment, golden_version=version).first()
    if existing is not None:
        return existing
    golden = golden_of(version)
    if golden.k != experiment.result["k"]:
        raise ExperimentError(
            [f"version {version.name} scores the top {golden.k}; the experiment kept the top "
             f"{experiment.result['k']} of each answer"]
        )  # fmt: skip
    part = part_columns(golden, experiment.split["tuning"])
    seed = experiment_settings(experiment).seed
    tuning = [
        part_summary(part_report(part, rows, seed))
        for _, rows in results_by_slot(experiment, experiment.split["tuning"])
    ]
    result = experiment_score(experiment, golden, tuning)
    for kept in ("requests", "run"):  # nothing was searched: the experiment's own
        result[kept] = experiment.result[kept]
    result["golden_file"] = f"{version.golden_set.slug}@{version.name}"
    result["rescored"] = {
        "from_version": experiment.golden_version.name,
        "golden_version": version.name,
        "by": by.get_username() if by is not None else None,
        "at": timezone.now().isoformat(),
    }
    try:
        with transaction.atomic():
            return ExperimentRescore.objects.create(
                experiment=experiment, golden_version=version, result=result, created_by=by
            )
    except IntegrityError:  # two presses at once: the unique pair keeps one
        return ExperimentRescore.objects.get(experiment=experiment, golden_version=version)


def experiment_result_current(
    experiment: Experiment,
) -> tuple[dict[str, Any] | None, ExperimentRescore | None]:
    """The figures that stand: the newest re-score's result, else the experiment's own."""
    rescore = experiment.rescores.select_related("golden_version").first()
    return (rescore.result, rescore) if rescore is not None else (experiment.result, None)
