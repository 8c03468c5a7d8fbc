"""Experiments get an alpha, and a stored result names a winner only when one beat the baseline on the
held-out queries (docs/experiments.md, "The winner"): a result concluded before keeps its figures under
`best`, `winner` becomes null unless its paired gain was above 0 with p (Holm) below 0.05, and the
configurations that returned the baseline's results are found from the stored answers."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from assay.experiment import DEFAULT_ALPHA, beat, echoes_record


def _echo_counts(results: Any, experiment_id: int) -> dict[int, tuple[int, int]]:
    answered = results.objects.filter(experiment_id=experiment_id, error__isnull=True)
    baseline = {qid: ids for qid, ids in answered.filter(slot=0).values_list("query_id", "ids")}
    counts: dict[int, tuple[int, int]] = {}
    for slot, qid, ids in answered.filter(slot__gt=0).values_list("slot", "query_id", "ids").iterator():
        if qid in baseline:
            compared, same = counts.get(slot - 1, (0, 0))
            counts[slot - 1] = (compared + 1, same + (ids == baseline[qid]))
    return counts


def forwards(apps: Any, schema_editor: Any) -> None:
    experiments = apps.get_model("evaluation", "Experiment")
    results = apps.get_model("evaluation", "ExperimentResult")
    for experiment in experiments.objects.filter(result__isnull=False).iterator():
        result = experiment.result
        if "best" in result:
            continue
        best = result["winner"]
        change = best["change"][result["metric"]]
        result["alpha"] = DEFAULT_ALPHA
        result["best"] = best
        result["winner"] = best if beat(change.get("delta"), best.get("p_adjusted"), DEFAULT_ALPHA) else None
        result["best_strata"] = result.pop("winner_strata", [])
        echoes_record(result, _echo_counts(results, experiment.pk))
        experiment.result = result
        experiment.save(update_fields=["result"])


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0016_study_three_outcomes"),
    ]

    operations = [
        migrations.AddField(
            model_name="experiment",
            name="alpha",
            field=models.FloatField(
                default=0.05, help_text="a winner's Holm-adjusted p-value is below it (docs/experiments.md)"
            ),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
