"""Login throttling glue for django-axes (docs/deployment.md, "Login throttling")."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest


class LoginThrottleBackend(AxesStandaloneBackend):
    """Refuses a login whose account and address are locked out; lets every other one through to the
    password check.

    An `authenticate()` without a request (the test client's `login()`, a shell) has no address to count
    by, so it is not throttled; axes' own backend would raise instead. Every login over HTTP (the login
    page, the admin's) passes its request. API tokens never call `authenticate()` at all
    (evaluation/runs/api/authentication.py), so they neither count failures nor get locked out.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_ip(request: HttpRequest) -> str | None:
    """The address a login counts by: REMOTE_ADDR, or behind a proxy the last address of the header named
    by ASSAY_CLIENT_IP_HEADER (the one the proxy appended: earlier ones are whatever the client sent)."""
    header = settings.ASSAY_CLIENT_IP_HEADER
    if header:
        meta_key = "HTTP_" + header.upper().replace("-", "_")
        forwarded = [part.strip() for part in request.META.get(meta_key, "").split(",") if part.strip()]
        if forwarded:
            return forwarded[-1]
    return request.META.get("REMOTE_ADDR")
