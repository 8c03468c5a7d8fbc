"""Single sign-on's identities (labeling.models.accounts, docs/deployment.md "Single sign-on")."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0013_judgment_event_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SsoIdentity',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('issuer', models.CharField(max_length=255)),
                ('subject', models.CharField(max_length=255)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('groups', models.JSONField(blank=True, default=list, help_text="the groups claim's values at the last sign-in")),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='sso_identity', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'SSO identity',
                'verbose_name_plural': 'SSO identities',
                'constraints': [models.UniqueConstraint(fields=('issuer', 'subject'), name='sso_identity_issuer_subject_unique')],
            },
        ),
    ]
