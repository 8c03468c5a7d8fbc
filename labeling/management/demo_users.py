"""The demo's users and their logins (`make run`): one user per role of labeling/roles.py, with
passwords generated once per machine and kept in var/demo-logins.json, never in the repository.

Here rather than in golden_io's `demo_load` command (which creates the users) because evaluation's
`runstack` prints the same logins, and labeling is the app both can import.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

# username -> (group, what they do); passwords are generated once per machine, never in the repo.
DEMO_USERS = {
    "rater1": ("raters", "grades queries"),
    "rater2": ("raters", "grades queries (the second rater on the dual sample)"),
    "reviewer": ("reviewers", "imports, assigns, reviews the help-center set"),
    "admin": ("admins", "everything, and the Django admin"),
}


def logins_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-logins.json"


def demo_logins() -> dict[str, str]:
    """username -> password, created on first use and kept in var/demo-logins.json (mode 600)."""
    path = logins_path()
    logins: dict[str, str] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(
                f"{path} is unreadable ({exc}); delete it to generate new demo passwords"
            ) from exc
        if isinstance(loaded, dict):
            logins = {k: v for k, v in loaded.items() if isinstance(v, str)}
    if set(DEMO_USERS) - set(logins):
        for name in DEMO_USERS:
            logins.setdefault(name, secrets.token_urlsafe(12))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(logins, out, indent=2)
    path.chmod(0o600)
    return logins


def render_logins(logins: dict[str, str]) -> str:
    lines = [f"Demo logins (kept in {logins_path()}):"]
    for name, (group, what) in DEMO_USERS.items():
        lines.append(f"  {name:<9} {logins[name]:<18} {group}: {what}")
    return "\n".join(lines)
