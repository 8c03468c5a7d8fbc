"""Secret grants for what works today (labeling.selectors.secrets): from this change on, a golden set may
use a secret variable only when an administrator granted it. So that nothing working stops on upgrade,
every variable a setting names now is granted to the set(s) it is used for:

- a judge's key variable, to the judge's set;
- a git export's username and password variables, to the export's set;
- a search target's secret headers and webhook variable, to every set the target lists (a target listing
  none is used for no run, and gets none).

Names that break the name rule (not a name, or without the secret prefix) get no grant: they were refused
before this change too. Each grant's note says where it came from. Reversing leaves the grants (the table
goes with labeling's 0012 when that is reversed)."""

from __future__ import annotations

import os
import re
from typing import Any

from django.db import migrations

# Frozen here (assay.secrets holds the live rule): a migration does not follow later code.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


def _grantable(variable: object) -> bool:
    prefix = os.environ.get("ASSAY_SECRET_ENV_PREFIX", "ASSAY_SECRET_")
    return isinstance(variable, str) and bool(_NAME.match(variable)) and variable.startswith(prefix)


def grant_named_secrets(apps: Any, schema_editor: Any) -> None:
    SecretGrant = apps.get_model("labeling", "SecretGrant")

    def grant(golden_set_id: int, variable: object, why: str) -> None:
        if _grantable(variable):
            SecretGrant.objects.get_or_create(
                golden_set_id=golden_set_id,
                variable=variable,
                defaults={"note": f"granted on upgrade: {why}"[:300]},
            )

    for judge in apps.get_model("labeling", "Judge").objects.exclude(api_key_env="").order_by("pk"):
        grant(judge.golden_set_id, judge.api_key_env, f"the key of judge {judge.name!r} (#{judge.pk})")
    for config in apps.get_model("golden_io", "GitExportConfig").objects.order_by("pk"):
        for field in ("username_env", "password_env"):
            grant(config.golden_set_id, getattr(config, field), f"the git export's {field}")
    for target in apps.get_model("evaluation", "SearchTarget").objects.prefetch_related("golden_sets"):
        named = [
            (f"header {name}", value.get("env"))
            for name, value in (target.headers or {}).items()
            if isinstance(value, dict)
        ]
        if target.webhook_env:
            named.append(("webhook", target.webhook_env))
        for golden_set in target.golden_sets.all():
            for where, variable in named:
                grant(golden_set.pk, variable, f"{where} of target {target.name!r} (#{target.pk})")


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0010_run_rescore_baseline"),
        ("golden_io", "0003_goldenversion_base_manager"),
        ("labeling", "0012_secret_grant"),
    ]

    operations = [
        migrations.RunPython(grant_named_secrets, migrations.RunPython.noop),
    ]
