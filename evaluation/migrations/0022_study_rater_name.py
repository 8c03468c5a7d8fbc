# The name raters read for a study (docs/sxs.md, "The name raters see"). Studies made before it are named
# by the day they were made, as a new study without a usable title is: their titles were written for
# reviewers only and may name the systems compared.

from django.db import migrations, models
from django.utils import timezone


def name_by_day(apps, schema_editor):
    SxsStudy = apps.get_model("evaluation", "SxsStudy")
    taken: dict[tuple[int, str], int] = {}
    for study in SxsStudy.objects.order_by("created", "id"):
        made = timezone.localtime(study.created)
        name = f"Study of {made.day} {made:%B %Y}"
        key = (study.golden_set_id, name)
        if key in taken:
            name = f"{name}, {made:%H:%M}"
        taken[key] = study.pk
        SxsStudy.objects.filter(pk=study.pk).update(rater_name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0021_home_seen"),
    ]

    operations = [
        migrations.AddField(
            model_name="sxsstudy",
            name="rater_name",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.RunPython(name_by_day, migrations.RunPython.noop),
    ]
