"""The 403, 404 and 500 pages: in the app's layout, worded, under DEBUG too for everyone but a superuser
(config.middleware.HideTechnicalPages), the API's error shape under /api/; and /favicon.ico."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500
from config.urls import urlpatterns as app_urls

pytestmark = pytest.mark.django_db


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the secret cause, with a setting's value in it")


# This module is also the URLconf of the tests marked with it: the app's addresses and two that fail.
urlpatterns = [path("boom/", boom), path("api/v1/boom/", boom), *app_urls]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]

TECHNICAL = ("URLconf", "Using the URLconf", "Traceback", "DJANGO_SETTINGS_MODULE", "the secret cause")


def _client(user: User | None) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _styled(response: Any, status: int, title: str) -> str:
    page = response.content.decode()
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    assert f'<h1 id="error-title">{title}' in page and '<header class="topbar">' in page, page[:500]
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert not any(word in page for word in TECHNICAL), page
    return page


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("/promote/nothing/", "There is no page at /promote/nothing/."),  # no URL pattern matches
        ("/runs/", "Nothing here."),  # the view's Http404: raters see no runs
    ],
)
def test_a_raters_404_is_the_apps_page(
    alice: User, settings: Any, debug: bool, address: str, said: str
) -> None:
    settings.DEBUG = debug
    page = _styled(_client(alice).get(address), 404, "Page not found")
    assert said in page
    assert "runs/" not in page and "targets/" not in page  # no URL pattern of the reviewers' pages
    assert '<span class="who">alice</span>' in page  # the layout of a signed-in page, nav and all


def test_a_missing_slash_is_still_redirected_under_debug(alice: User, settings: Any) -> None:
    settings.DEBUG = True
    response = _client(alice).get("/queue")
    assert response.status_code == 301 and response["Location"] == "/queue/"


def test_a_superuser_keeps_djangos_technical_404_under_debug(settings: Any) -> None:
    settings.DEBUG = True
    ada = User.objects.create_superuser(username="ada", password="x" * 12, email="ada@example.org")
    response = _client(ada).get("/promote/nothing/")
    assert response.status_code == 404 and b"Using the URLconf" in response.content


def test_without_debug_a_superuser_gets_the_apps_page_too(settings: Any) -> None:
    ada = User.objects.create_superuser(username="ada", password="x" * 12, email="ada@example.org")
    _styled(_client(ada).get("/promote/nothing/"), 404, "Page not found")


def test_a_stranger_gets_the_404_page_without_the_nav(db: None, settings: Any) -> None:
    settings.DEBUG = True
    page = _styled(_client(None).get("/promote/nothing/"), 404, "Page not found")
    assert "<nav>" not in page


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("debug", [False, True])
def test_a_server_error_is_the_apps_500_page_and_is_logged(
    alice: User, settings: Any, debug: bool, caplog: pytest.LogCaptureFixture
) -> None:
    settings.DEBUG = debug
    page = _styled(_client(alice).get("/boom/"), 500, "Server error")
    assert "it was logged" in page
    logged = [r for r in caplog.records if r.name == "django.request" and r.levelname == "ERROR"]
    assert len(logged) == 1 and logged[0].exc_info is not None  # once, with the traceback


@pytest.mark.urls(__name__)
def test_a_superuser_keeps_djangos_technical_500_under_debug(settings: Any) -> None:
    settings.DEBUG = True
    ada = User.objects.create_superuser(username="ada", password="x" * 12, email="ada@example.org")
    response = _client(ada).get("/boom/")
    assert response.status_code == 500 and b"the secret cause" in response.content


def test_an_error_no_view_raised_is_the_apps_page_under_debug_too(alice: User, settings: Any) -> None:
    settings.DEBUG = True  # a Host header not in ALLOWED_HOSTS: refused by a middleware, not a view
    page = _styled(_client(alice).get("/queue/", HTTP_HOST="evil.example"), 400, "Bad request")
    assert "DisallowedHost" not in page and "ALLOWED_HOSTS" not in page


@pytest.mark.parametrize("debug", [False, True])
def test_a_403_is_the_apps_page_with_the_reason(charlie: User, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    page = _styled(_client(charlie).get("/queue/"), 403, "Not allowed")
    assert "Grading is for raters." in page


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("debug", [False, True])
def test_the_api_keeps_its_error_shape(alice: User, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    client = _client(alice)
    missing = client.get("/api/nothing/")
    assert missing.status_code == 404
    assert missing.json() == {"detail": "page not found", "problems": ["There is no page at /api/nothing/."]}
    assert set(client.get("/api/v1/nothing/").json()) == {"detail", "problems"}
    broken = client.get("/api/v1/boom/")
    assert broken.status_code == 500 and broken.json()["detail"] == "server error"
    assert "secret" not in broken.content.decode()


def test_a_script_asking_for_json_gets_json(alice: User, settings: Any) -> None:
    settings.DEBUG = True
    response = _client(alice).get("/promote/nothing/", headers={"Accept": "application/json"})
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_the_favicon_is_served_at_the_root_to_anyone_and_linked_from_every_page(alice: User) -> None:
    icon = Client().get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/vnd.microsoft.icon"
    assert icon.getvalue()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    home = _client(alice).get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.ico"' in home
