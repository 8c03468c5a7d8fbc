"""Granting a golden set a secret variable, and withdrawing it (the check: `labeling.selectors.secrets`).

Imported as `labeling.services.secrets` (not re-exported by `labeling.services`).
"""

from __future__ import annotations

from typing import Any

from assay.secrets import secret_env_name_problem
from labeling.models import GoldenSet, SecretGrant


class SecretGrantError(ValueError):
    """A variable that cannot be granted (not a name, or without the secret prefix)."""


def secret_grant_create(
    *, golden_set: GoldenSet, variable: str, by: Any = None, note: str = ""
) -> tuple[SecretGrant, bool]:
    """Grant `variable` to the set; returns (grant, created). Granting it again changes nothing."""
    variable = variable.strip()
    if refused := secret_env_name_problem(variable):
        raise SecretGrantError(f"{variable or '(empty)'}: {refused}")
    return SecretGrant.objects.get_or_create(
        golden_set=golden_set, variable=variable, defaults={"granted_by": by, "note": note.strip()}
    )


def secret_grant_withdraw(*, golden_set: GoldenSet, variable: str) -> bool:
    """Withdraw the set's grant of `variable`; False when it held none. The next use is refused."""
    deleted, _ = SecretGrant.objects.filter(golden_set=golden_set, variable=variable.strip()).delete()
    return deleted > 0
