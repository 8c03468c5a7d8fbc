"""The one check every secret goes through before its value is read (docs/deployment.md, "Secrets").

A stored setting names a secret by environment variable: a judge's API key, a search target's secret
header and webhook, a git export's username and password. Who may type that name is whoever may edit the
setting, so the name alone must not be enough: an administrator grants a golden set the variables it may
use (`SecretGrant`, Django admin or `manage.py secret_grant`), and a setting used on behalf of a set may
name only a variable granted to it. Why per golden set, not per user: everything else in Assay is
shared by a set's reviewers (a target is edited by the reviewers of every set it lists, a judge and a git
export belong to one set), and the set is what every outbound call is made for; a grant to a person
would follow them off the set. Checked when a setting is saved and again when its value is about to be
read, so a grant withdrawn later stops the next use. The name's own rules (letters, digits, '_', the
`ASSAY_SECRET_` prefix) are the pure core's (`assay.secrets`) and come first.
"""

from __future__ import annotations

from collections.abc import Iterable

from assay.display import counted
from assay.secrets import SecretEnvError, secret_env_name_problem, secret_env_read
from labeling.models import GoldenSet, SecretGrant

HOW_TO_GRANT = (
    "an administrator grants a golden set the secrets it may use (Django admin, Secret grants, or "
    "manage.py secret_grant)"
)


def secret_problem(
    variable: str, *, golden_sets: Iterable[GoldenSet], unnamed: Iterable[GoldenSet] = ()
) -> str | None:
    """Why a setting used on behalf of `golden_sets` may not read `variable` (None when every one of them
    holds a grant for it). The message names the variable and the sets lacking the grant, never a value;
    those of them in `unnamed` (sets the person asking does not review) are counted, not named. No set at
    all is refused too: a grant is always to a set."""
    if refused := secret_env_name_problem(variable):
        return refused
    sets = list(golden_sets)
    if not sets:
        return f"{variable} may be used only for a golden set granted it, and this setting lists none"
    granted = set(
        SecretGrant.objects.filter(variable=variable, golden_set__in=[s.pk for s in sets]).values_list(
            "golden_set_id", flat=True
        )
    )
    hidden = {s.pk for s in unnamed}
    lacking = sorted(s.slug for s in sets if s.pk not in granted and s.pk not in hidden)
    others = len({s.pk for s in sets if s.pk not in granted and s.pk in hidden})
    parts = [f"golden set {', '.join(lacking)}"] if lacking else []
    if others:
        parts.append(f"{counted(others, 'golden set')} you do not review")
    if not parts:
        return None
    return f"{variable} is not granted to {' and '.join(parts)}: {HOW_TO_GRANT}"


def secret_read(variable: str, *, golden_set: GoldenSet) -> str:
    """The value of `variable` from this process's environment, read on behalf of `golden_set`, after
    `secret_problem`. SecretEnvError says why not (refused, or not set here); it never holds a value."""
    if refused := secret_problem(variable, golden_sets=[golden_set]):
        raise SecretEnvError(refused)
    return secret_env_read(variable)


def secret_grants(*, golden_set: GoldenSet) -> list[str]:
    """The variables granted to the set, by name."""
    return list(SecretGrant.objects.filter(golden_set=golden_set).values_list("variable", flat=True))
