"""`make test` sets up its own machine: scripts/services-up starts PostgreSQL and Redis where they are
installed and down, leaves running or remote ones alone, and stops with the one command to run where it
cannot; `.ci/run` is `make test` and nothing else. The services' tools are stand-ins on PATH here (the
suite's own PostgreSQL and Redis stay untouched); each records how it was called."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO

SCRIPT = REPO / "scripts" / "services-up"
# What the script itself needs from the machine, linked into the stand-ins' PATH (nothing else is on it).
TOOLS = ("bash", "env", "seq", "sleep", "awk", "touch")

# A service is "up" once its marker exists: pg_isready and redis-cli answer by it, the starters make it.
STAND_INS = {
    "pg_isready": '[ -e "$STATE/pg" ]',
    "pg_lsclusters": 'echo "15  main    5432 down   postgres /var/lib/postgresql/15/main log"',
    "pg_ctlcluster": 'touch "$STATE/pg"',
    "redis-cli": '[ -e "$STATE/redis" ]',
    "redis-server": 'touch "$STATE/redis"',
    "id": "echo 0",  # root, as in CI: the starters run without sudo
}


def _machine(tmp_path: Path, *, installed: tuple[str, ...], up: tuple[str, ...] = ()) -> dict[str, str]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    for name in (*installed, "id"):
        script = bin_dir / name
        body = STAND_INS[name]
        script.write_text(f'#!{shutil.which("bash")}\necho "{name} $*" >> "$STATE/calls"\n{body}\n')
        script.chmod(0o755)
    for service in up:
        (state / service).touch()
    return {"PATH": str(bin_dir), "STATE": str(state), "SERVICES_WAIT_S": "3", "HOME": os.environ["HOME"]}


def _run(env: dict[str, str], *urls: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("bash") or "bash", str(SCRIPT), *urls],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "state" / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


ALL = ("pg_isready", "pg_lsclusters", "pg_ctlcluster", "redis-cli", "redis-server")


def test_services_that_are_down_are_started(tmp_path: Path) -> None:
    env = _machine(tmp_path, installed=ALL)
    done = _run(env)
    assert done.returncode == 0, done.stderr
    calls = _calls(tmp_path)
    assert "pg_ctlcluster --skip-systemctl-redirect 15 main start" in calls
    assert "redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save  --appendonly no" in calls
    assert "Starting PostgreSQL 15/main on port 5432" in done.stdout
    assert "Starting Redis on port 6379" in done.stdout


def test_running_services_are_left_alone(tmp_path: Path) -> None:
    env = _machine(tmp_path, installed=ALL, up=("pg", "redis"))
    done = _run(env)
    assert done.returncode == 0 and done.stdout == ""
    assert not any(call.startswith(("pg_ctlcluster", "redis-server")) for call in _calls(tmp_path))


def test_services_on_another_machine_are_not_touched(tmp_path: Path) -> None:
    env = _machine(tmp_path, installed=())
    done = _run(env, "postgres://ci:secret@db.internal:6432/assay", "redis://cache.internal:6380/3")
    assert done.returncode == 0 and done.stdout == done.stderr == ""


@pytest.mark.parametrize(
    ("installed", "said"),
    [
        ((), "run 'apt-get install postgresql' as root (or set TEST_DATABASE_URL), then make test"),
        (ALL[:3], "run 'apt-get install redis-server' as root (or set TEST_REDIS_URL), then make test"),
    ],
)
def test_a_service_missing_here_stops_with_the_command_to_run(
    tmp_path: Path, installed: tuple[str, ...], said: str
) -> None:
    done = _run(_machine(tmp_path, installed=installed))
    assert done.returncode == 1 and said in done.stderr


def test_ci_runs_make_test_and_nothing_else() -> None:
    lines = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert lines == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "exec make test"]
    makefile = (REPO / "Makefile").read_text()
    assert "\ntest: install chromium services node-tools lint\n" in makefile
    assert 'scripts/services-up "$(TEST_DATABASE_URL)" "$(TEST_REDIS_URL)"' in makefile
