from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_health_check_needs_no_login(client: Client) -> None:
    response = client.get("/health/")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


@pytest.mark.django_db
def test_home_redirects_anonymous_user_to_login(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_login_page_renders(client: Client, db: None) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="username"' in response.content


def test_logged_in_user_sees_home(client: Client, alice) -> None:
    client.force_login(alice)
    response = client.get("/")
    assert response.status_code == 200
    assert b"alice" in response.content


def test_login_needs_csrf_token(alice) -> None:
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/accounts/login/", {"username": "alice", "password": "x"})
    assert response.status_code == 403


def test_missing_csrf_token_gets_json_for_json_clients(alice) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    response = strict.post("/accounts/logout/", data="{}", content_type="application/json")
    assert response.status_code == 403
    assert response.json()["error"] == "csrf_failed"


def test_missing_csrf_token_gets_an_html_page_in_the_browser(alice) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    response = strict.post("/accounts/logout/")
    assert response.status_code == 403
    assert b"CSRF check failed" in response.content
