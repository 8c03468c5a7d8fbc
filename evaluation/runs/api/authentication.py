"""Bearer token authentication for the API (`Authorization: Bearer assay_…`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from evaluation.runs.models import ApiToken
from evaluation.runs.tokens import api_token_authenticate

KEYWORDS = ("bearer", "token")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>` (or `Token <token>`). A request without such a header is left to
    the next authenticator (the session); a header with a bad token is refused outright, so a CI job with
    a revoked token gets 401 instead of silently acting as nobody."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in KEYWORDS:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization: expected 'Bearer <token>'")
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Authorization: the token is not ASCII") from None
        token = api_token_authenticate(raw)
        if token is None:
            raise exceptions.AuthenticationFailed("invalid, revoked or expired token")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Tells drf-spectacular how the token is sent, so the schema and Swagger UI's Authorize work.

    drf-spectacular lists security schemes by name and Swagger UI's Authorize dialog shows them in that
    order: the name sorts before the session's `cookieAuth`, so the token's field comes first and a token
    pasted into the first field is sent as `Authorization: Bearer …`, not as a session cookie."""

    target_class = "evaluation.runs.api.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`manage.py api_token_create` or the Tokens page), "
            "sent as `Authorization: Bearer assay_…`.",
        }


class BrowserSessionScheme(OpenApiAuthenticationExtension):
    """The session, described for Swagger UI's Authorize dialog: the browser sends it by itself."""

    target_class = "rest_framework.authentication.SessionAuthentication"
    name = "cookieAuth"
    priority = 1  # over drf-spectacular's own SessionScheme, which has no description

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": "The signed-in browser session: sent by the browser on its own while you are "
            "signed in. Paste an API token into apiToken above, never here.",
        }
