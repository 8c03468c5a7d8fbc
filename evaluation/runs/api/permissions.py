"""Token scopes, checked per view. Object permissions are the pages' (evaluation.runs.access): what a
user may not see is looked up through their visible querysets and is a 404."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from evaluation.runs.models import ApiToken

# HEAD and OPTIONS read: they need what GET needs.
_READ_ALIASES = {"HEAD": "GET", "OPTIONS": "GET"}


def required_scope(view: Any, method: str) -> str | None:
    """The scope `view` asks for `method` (its `required_scopes`), None when it names none."""
    scopes: dict[str, str] = getattr(view, "required_scopes", {})
    return scopes.get(_READ_ALIASES.get(method, method))


class TokenScopes(BasePermission):
    """A token must carry the view's scope for the method; a view that names no scope refuses every
    token (deny by default). Session users are not limited by scopes: their roles decide, per object."""

    message = "this token lacks the scope this endpoint needs"

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        scope = required_scope(view, request.method or "GET")
        if scope is None:
            self.message = f"{request.method} here is not open to API tokens"
            return False
        if not token.has_scope(scope):
            holders = [scope, *(held for held, implied in ApiToken.IMPLIED.items() if scope in implied)]
            self.message = (
                f"this token lacks the scope {' or '.join(repr(held) for held in holders)} "
                f"(it has: {', '.join(token.scopes) or 'none'})"
            )
            return False
        return True
