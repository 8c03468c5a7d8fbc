"""Secret grants (labeling.selectors.secrets). The grants that keep today's settings working are made
by evaluation's 0011_secret_grants_from_settings, which can read every app's settings."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0011_judge_job_heartbeat'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SecretGrant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('variable', models.CharField(help_text="the environment variable's NAME, e.g. ASSAY_SECRET_OPENAI", max_length=100)),
                ('note', models.CharField(blank=True, help_text='what it is for, who asked', max_length=300)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('golden_set', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='secret_grants', to='labeling.goldenset')),
                ('granted_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['golden_set', 'variable'],
                'constraints': [models.UniqueConstraint(fields=('golden_set', 'variable'), name='secret_grant_set_variable_unique')],
            },
        ),
    ]
