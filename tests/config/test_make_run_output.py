"""What `make run` prints: the demo logins once, at the end with the address; the development server's
request lines only with ASSAY_LOG_REQUESTS=true and each 404 once either way; Celery without banners or
its root-user warning unless ASSAY_CELERY_LOG_LEVEL asks; pyproject.toml's license in the form setuptools
reads without a deprecation warning."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command

from evaluation.management.commands import runstack
from labeling.management.demo_users import DEMO_USERS
from tests.support.processes import REPO, free_port

WAIT_S = 120.0


def test_pyproject_names_its_license_as_an_spdx_string() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"  # a table is what setuptools warns about
    assert project["build-system"]["requires"] == ["setuptools>=77"]  # the first that reads the string


@pytest.mark.django_db
def test_demo_load_leaves_the_logins_to_runstack_when_told(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path
    out = io.StringIO()
    call_command("demo_load", "--no-logins", stdout=out)
    assert "Demo loaded:" in out.getvalue() and "Demo logins" not in out.getvalue()


def test_the_last_lines_are_the_address_and_the_logins(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path
    command = runstack.Command(stdout=io.StringIO())
    text = command._up(
        "http://127.0.0.1:8000", "http://127.0.0.1:8765", str(tmp_path / "mail"), "http://127.0.0.1:18766/v1"
    )
    lines = text.splitlines()
    assert text.count("Assay is up at http://127.0.0.1:8000/") == 1 and text.count("Demo logins") == 1
    assert [line.split()[0] for line in lines[-len(DEMO_USERS) :]] == list(DEMO_USERS)
    assert "the default HTTP JSON contract" in text and f"{tmp_path / 'mail'}/" in text
    assert "demo judge stand-in (OpenAI-compatible chat completions): http://127.0.0.1:18766/v1" in text
    assert "ASSAY_LOG_REQUESTS=true" in text and "ASSAY_CELERY_LOG_LEVEL=info" in text


def test_the_demo_stand_ins_listen_on_the_ports_of_their_settings(settings: Any) -> None:
    # Two stacks on one machine: each one's search service and judge stand-in on its own ports.
    settings.ASSAY_DEMO_SEARCH_URL = "http://127.0.0.1:18765/search"
    settings.ASSAY_DEMO_JUDGE_URL = "http://127.0.0.1:18766/v1"
    parser = runstack.Command().create_parser("manage.py", "runstack")
    options = parser.parse_args([])
    assert (options.search_port, options.judge_port) == (18765, 18766)
    commands = runstack.stack_commands("python", "127.0.0.1:8000", 18765, "warning", 18766)
    assert commands["search"][-2:] == ["--port", "18765"]
    assert commands["judge"][-2:] == ["--port", "18766"]


def test_celery_is_quiet_unless_asked() -> None:
    quiet = runstack.stack_commands("python", "127.0.0.1:8000", 8765, "warning")
    for name in ("worker", "beat"):
        assert quiet[name][:3] == ["python", "-W", runstack.ROOT_WARNING]
        assert "--quiet" in quiet[name] and quiet[name][quiet[name].index("-l") + 1] == "warning"
    told = runstack.stack_commands("python", "127.0.0.1:8000", 8765, "info")
    assert "--quiet" not in told["worker"] and "-W" not in told["worker"]


@contextmanager
def _process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _until(check: Any, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        time.sleep(0.2)
    raise AssertionError(f"not ready:\n{log.read_text(errors='replace')[-3000:]}")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_LOG_", "ASSAY_CELERY_"))}
    db = f"sqlite:///{tmp_path / 'assay.sqlite3'}"
    return {**env, "DJANGO_DEBUG": "true", "ASSAY_VAR_DIR": str(tmp_path), "DATABASE_URL": db, **extra}


def _answered(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.integration
@pytest.mark.parametrize("requests_logged", [False, True])
def test_the_development_server_logs_each_404_once(tmp_path: Path, requests_logged: bool) -> None:
    port = free_port()
    env = _env(tmp_path, **({"ASSAY_LOG_REQUESTS": "true"} if requests_logged else {}))
    args = runstack.stack_commands(sys.executable, f"127.0.0.1:{port}", 0, "warning")["web"]
    log = tmp_path / "web.log"
    with _process(args, env, log) as proc:
        _until(lambda: _answered(f"http://127.0.0.1:{port}/health/"), proc, log)
        assert httpx.get(f"http://127.0.0.1:{port}/nothing/here/").status_code == 404
        assert _answered(f"http://127.0.0.1:{port}/favicon.ico")
        # A request line is written after its response is sent: wait for every line this case expects.
        expected = ["nothing/here", *(["GET /health/", "favicon"] if requests_logged else [])]
        _until(lambda: all(line in log.read_text(errors="replace") for line in expected), proc, log)
    text = log.read_text(errors="replace")
    assert text.count("/nothing/here/") == 1, text  # one line, not Django's and the server's
    assert ("GET /health/" in text) == requests_logged and ("favicon" in text) == requests_logged
    assert "AXES" not in text


@pytest.mark.integration
@pytest.mark.skipif(
    not settings.CELERY_BROKER_URL.startswith("redis://"),
    reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
)
def test_the_worker_starts_without_its_banner_or_the_root_warning(tmp_path: Path) -> None:
    env = _env(tmp_path, CELERY_BROKER_URL=settings.CELERY_BROKER_URL)
    args = runstack.stack_commands(sys.executable, "127.0.0.1:0", 0, "warning")["worker"]
    args += ["-n", f"quiet-{os.getpid()}@%h", "--without-mingle", "--without-gossip"]
    from config.celery import app

    log = tmp_path / "worker.log"
    name = f"quiet-{os.getpid()}@"

    def answers() -> bool:
        return any(name in key for reply in app.control.ping(timeout=0.5) or [] for key in reply)

    with _process(args, env, log) as proc:
        _until(answers, proc, log)
    text = log.read_text(errors="replace")
    assert "superuser" not in text and "-------------- celery@" not in text and "[queues]" not in text, text


@pytest.mark.parametrize(
    "ports",
    [(8765, 8765, 8766), (8766, 8765, 8766), (8000, 8001, 8001)],
    ids=["search", "judge", "both-demo"],
)
def test_two_servers_on_one_port_are_refused_before_anything_starts(ports: tuple[int, int, int]) -> None:
    from django.core.management.base import CommandError

    port, search_port, judge_port = ports
    with pytest.raises(CommandError, match="two servers on one port"):
        call_command("runstack", port=port, search_port=search_port, judge_port=judge_port, no_demo_runs=True)
