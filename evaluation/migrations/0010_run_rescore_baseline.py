from __future__ import annotations

from typing import Any

from django.db import migrations, models


def from_schedules(apps: Any, schema_editor: Any) -> None:
    """Runs of a schedule that opted in keep being gated against the re-scored baseline: finalize now
    reads the run's own flag, which scheduled runs copy from their schedule."""
    run = apps.get_model("evaluation", "EvaluationRun")
    run.objects.filter(schedule__rescore_baseline=True).update(rescore_baseline=True)


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0009_http_json_contract_label"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluationrun",
            name="rescore_baseline",
            field=models.BooleanField(
                default=False,
                help_text="when the baseline is on another golden version, gate against its stored lists "
                "re-scored on this run's version instead of refusing to compare",
            ),
        ),
        migrations.RunPython(from_schedules, migrations.RunPython.noop),
    ]
