"""Bearer token authentication for the API (`Authorization: Bearer assay_…`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from evaluation.models import ApiToken
from evaluation.tokens import api_token_authenticate

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
    """Tells drf-spectacular how the token is sent, so the schema and Swagger UI's Authorize work."""

    target_class = "evaluation.api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (`manage.py api_token_create` or the Tokens page), "
            "sent as `Authorization: Bearer assay_…`.",
        }
