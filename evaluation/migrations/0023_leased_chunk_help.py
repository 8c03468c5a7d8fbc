# A run's and an experiment's chunk leases share one abstract model (evaluation/runs/models.py,
# `LeasedChunk`): the same help texts on both. State only: no column changes.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0022_study_rater_name"),
    ]

    operations = [
        migrations.AlterField(
            model_name="chunklease",
            name="index",
            field=models.PositiveIntegerField(help_text="the chunk's number within its run or experiment, from 0"),
        ),
        migrations.AlterField(
            model_name="experimentchunk",
            name="holder",
            field=models.CharField(blank=True, help_text="the delivery holding the lease", max_length=32),
        ),
        migrations.AlterField(
            model_name="experimentchunk",
            name="index",
            field=models.PositiveIntegerField(help_text="the chunk's number within its run or experiment, from 0"),
        ),
        migrations.AlterField(
            model_name="experimentchunk",
            name="losses",
            field=models.PositiveIntegerField(default=0, help_text="times its lease ran out and it was sent again"),
        ),
        migrations.AlterField(
            model_name="experimentchunk",
            name="worker",
            field=models.CharField(blank=True, help_text="the worker that claimed it last", max_length=200),
        ),
    ]
