"""Grant a golden set a secret variable, withdraw it, or list its grants (docs/deployment.md, "Secrets")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from labeling.management.commands._common import golden_set_get
from labeling.selectors.secrets import secret_grants
from labeling.services.secrets import SecretGrantError, secret_grant_create, secret_grant_withdraw


class Command(BaseCommand):
    help = (
        "Let a golden set's judges, targets, webhooks and git export use a secret environment variable "
        "(ASSAY_SECRET_...): `secret_grant SET VARIABLE`; `--withdraw` takes it back; no VARIABLE lists "
        "the set's grants."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("golden_set")
        parser.add_argument("variable", nargs="?", default="")
        parser.add_argument("--withdraw", action="store_true", help="withdraw the grant instead")
        parser.add_argument("--note", default="", help="what the secret is for (shown in the admin)")

    def handle(
        self, *args: Any, golden_set: str, variable: str, withdraw: bool, note: str, **options: Any
    ) -> None:
        target = golden_set_get(golden_set)
        if not variable:
            if withdraw:
                raise CommandError("--withdraw: name the variable to withdraw")
            granted = secret_grants(golden_set=target)
            self.stdout.write("\n".join(granted) if granted else f"{target.slug} holds no secret grant")
            return
        if withdraw:
            if not secret_grant_withdraw(golden_set=target, variable=variable):
                raise CommandError(f"{target.slug} holds no grant of {variable}")
            self.stdout.write(f"withdrew {variable} from {target.slug}: its next use is refused")
            return
        try:
            _, created = secret_grant_create(golden_set=target, variable=variable, note=note)
        except SecretGrantError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"granted {variable} to {target.slug}" if created else f"{target.slug} holds {variable} already"
        )
