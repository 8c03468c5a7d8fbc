"""The production settings of docs/deployment.md: `check --deploy` is clean with them, and a server
started with them redirects to HTTPS except the health check, trusts the proxy's X-Forwarded-Proto, and
sends HSTS and the Content-Security-Policy."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.processes import REPO, serving


def _production_env(var_dir: Path) -> dict[str, str]:
    """The variables docs/deployment.md ("Production settings") lists, on a throwaway state directory."""
    return {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,assay.example.org",
        "DJANGO_CSRF_TRUSTED_ORIGINS": "https://assay.example.org",
        "ASSAY_SITE_URL": "https://assay.example.org",
        "DJANGO_DEBUG": "false",
        "ASSAY_HTTPS": "true",
        "ASSAY_PROXY_SSL_HEADER": "true",
        "ASSAY_HSTS_SECONDS": "31536000",
        "ASSAY_HSTS_PRELOAD": "true",
        "ASSAY_VAR_DIR": str(var_dir),
    }


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env={**os.environ, **_production_env(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_without_https_settings_check_deploy_warns(tmp_path: Path) -> None:
    tls = ("ASSAY_HTTPS", "ASSAY_HSTS_SECONDS", "ASSAY_HSTS_PRELOAD")
    env = {k: v for k, v in _production_env(tmp_path).items() if k not in tls}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "security.W004" in result.stderr and "security.W008" in result.stderr


def test_behind_a_tls_proxy_pages_are_served_and_the_health_check_is_not_redirected(tmp_path: Path) -> None:
    env = {**_production_env(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'assay.sqlite3'}"}
    server = serving(["-m", "tests.support.sqlite_server", str(tmp_path)], env=env, timeout=180)
    # A generous timeout: the first request loads the URL routes, which takes seconds on a busy machine.
    with server as url, httpx.Client(base_url=url, follow_redirects=False, timeout=60) as client:
        plain = client.get("/accounts/login/")
        assert plain.status_code == 301
        assert plain.headers["Location"] == f"https://{url.removeprefix('http://')}/accounts/login/"
        # The load balancer's health check speaks plain HTTP and must get the answer, not a redirect.
        health = client.get("/health/")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        # Through the proxy: it terminated TLS and said so.
        page = client.get("/accounts/login/", headers={"X-Forwarded-Proto": "https"})
    assert page.status_code == 200
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert page.cookies.get("csrftoken") is not None
    assert "secure" in page.headers["Set-Cookie"].lower()


def test_a_malformed_throttling_hsts_or_demo_setting_is_refused_with_its_name(tmp_path: Path) -> None:
    for name, value in [
        ("ASSAY_LOGIN_FAILURE_LIMIT", "0"),
        ("ASSAY_LOGIN_LOCKOUT_MINUTES", "-1"),
        ("ASSAY_HSTS_SECONDS", "-5"),
        ("ASSAY_DEMO_JUDGE_URL", "127.0.0.1:8766/v1"),
        ("ASSAY_DEMO_SEARCH_URL", "http://127.0.0.1:99999/search"),
    ]:
        env = {**os.environ, **_production_env(tmp_path), name: value}
        result = subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode != 0 and name in result.stderr, (name, result.stderr[-500:])
