"""Login everywhere but the health check: every URL the project routes, asked by a stranger, is either
sent to the login page (pages) or refused with 401/403 (the API), and answers nothing else."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

# Open by design: the health check, the login page itself and the site's icon. /metrics has a token or
# an address list instead, tests/config/test_metrics.py.
PUBLIC = {"health/", "accounts/login/", "favicon.ico"}
# Single sign-on's start and callback, open to a stranger who signs in: nothing while it is off (as here, the
# default); on, they lead to the provider and back (tests/config/test_sso.py).
SIGN_IN = {"oidc/authenticate/", "oidc/callback/"}
SAMPLE = {"int": "1", "slug": "help-center", "str": "x", "path": "x"}


def _routes(resolver: URLResolver, prefix: str = "") -> Iterator[str]:
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route.startswith("admin/"):
                continue  # the admin's own login wall, tested below by its index
            yield from _routes(entry, route)
        elif isinstance(entry, URLPattern):
            yield route


def _concrete(route: str) -> str:
    path = re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLE[m.group(1) or "str"], route)
    return "/" + path.lstrip("^").rstrip("$").replace("\\Z", "")


ROUTES = sorted({_concrete(r) for r in _routes(get_resolver())} | {"/admin/"})


def test_the_walk_finds_the_pages_and_the_api() -> None:
    assert {"/", "/queue/", "/runs/", "/api/v1/runs/", "/api/schema/", "/api/docs/", "/admin/"} <= set(ROUTES)


@pytest.mark.parametrize("path", ROUTES)
def test_a_stranger_gets_nothing_but_the_login_page(path: str) -> None:
    if path.lstrip("/") in PUBLIC:
        assert Client().get(path).status_code == 200
        return
    if path == "/metrics" or path.lstrip("/") in SIGN_IN:
        # /metrics: its own check instead of the login (config/metrics.py); single sign-on's pages: the
        # provider's. Both off by default, a 404.
        assert Client().get(path).status_code == 404
        return
    response = Client().get(path)
    if path.startswith("/api/") and path != "/api/docs/":
        assert response.status_code in (401, 403), (path, response.status_code)
    else:
        assert response.status_code == 302, (path, response.status_code)
        assert "/login/" in response["Location"], (path, response["Location"])
