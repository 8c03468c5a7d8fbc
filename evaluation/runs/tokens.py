"""API tokens: create (the secret is returned once), list, authenticate, revoke.

The tokens page, the admin, `manage.py api_token_create` and the API's authentication use these; they
live outside `evaluation.api` so that the pages never import the API package."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluation.runs.models import ApiToken

TOKEN_PREFIX = "assay_"  # noqa: S105  (the marker every token starts with, not a secret)
# last_used is written at most this often per token: a CI job polling every second would otherwise
# write the token row on every request.
LAST_USED_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    """A token that cannot be created or changed; `problems` names each reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def scope_problems(scopes: Iterable[str]) -> list[str]:
    problems = []
    listed = list(scopes)
    if not listed:
        problems.append(f"scopes: give at least one of {', '.join(ApiToken.SCOPES)}")
    for scope in listed:
        if scope not in ApiToken.SCOPES:
            problems.append(f"scopes: {scope!r} is not one of {', '.join(ApiToken.SCOPES)}")
    return problems


@transaction.atomic
def api_token_create(*, user: Any, name: str, scopes: Iterable[str]) -> tuple[ApiToken, str]:
    """A new token for `user`; returns the row and the token itself, which is never stored or shown again.
    Raises TokenError naming every problem (nothing is created then)."""
    wanted = list(dict.fromkeys(scopes))
    problems = scope_problems(wanted)
    name = name.strip()
    if not name:
        problems.insert(0, "name: say what the token is for")
    elif len(name) > 100:
        problems.insert(0, "name: at most 100 characters")
    if not getattr(user, "is_active", False):
        problems.append("user: an inactive user cannot hold a token")
    if problems:
        raise TokenError(problems)
    prefix = secrets.token_hex(6)
    raw = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user, name=name, prefix=prefix, hashed=_digest(raw), scopes=sorted(wanted)
    )
    return token, raw


def api_token_authenticate(raw: str) -> ApiToken | None:
    """The active token `raw` is, or None (malformed, unknown, wrong secret, revoked, inactive user)."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    prefix, sep, secret = raw[len(TOKEN_PREFIX) :].partition("_")
    if not sep or not prefix or not secret:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=prefix, revoked__isnull=True).first()
    if token is None or not hmac.compare_digest(token.hashed, _digest(raw)):
        return None
    if not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used is None or now - token.last_used >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
    return token


def api_token_revoke(*, token: ApiToken) -> bool:
    """Revoke a token (False when it already was). Revoked tokens stay, for the record."""
    changed = ApiToken.objects.filter(pk=token.pk, revoked__isnull=True).update(revoked=timezone.now())
    token.refresh_from_db()
    return changed == 1


def api_token_list(*, user: Any) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user).order_by("-created", "-id"))
