"""Real `celery worker` processes for tests: started against the test database pytest-django made
(committed data, so the tests use `transactional_db`) and the suite's Redis broker (flushed first)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.support.processes import REPO

WAIT_S = 60.0


def needs_redis_broker() -> pytest.MarkDecorator:
    """The mark of a test that talks to Redis as the broker (CI and `make test` set REDIS_URL)."""
    from django.conf import settings

    return pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith("redis://"),
        reason="needs Redis as the broker: set REDIS_URL (CI and `make test` do)",
    )


# Broadcast chatter between workers is of no use to these tests and costs a second at start.
FAST_START = ("--without-mingle", "--without-gossip", "--without-heartbeat")


def database_url() -> str:
    """The test database pytest-django made, as DATABASE_URL for a process the tests start."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """The predicate's first true value, polled every 0.1 s; AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def swept(predicate: Callable[[], Any], every: float = 1.0) -> Callable[[], Any]:
    """The predicate, sending the sweeps through the broker at most every `every` seconds as it is polled:
    a lost worker's work moves within a second of its lease (or heartbeat) running out, not at beat's next
    tick up to 15 s later. For the tests of what the sweep recovers; beat's own timing, the promise of
    docs/runs.md ("Worker loss"), is tests/integration/test_runs_workers.py's killed-worker test's, which
    leaves the sweeps to beat."""
    from django.conf import settings

    from config.celery import app

    # What beat sends every 15 s to move a lost worker's work (config/settings.py).
    tasks = [str(entry["task"]) for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    sweeps = [task for task in tasks if task.endswith("_sweep")]
    sent = [-every]

    def check() -> Any:
        if time.monotonic() - sent[0] >= every:
            for task in sweeps:
                app.send_task(task)
            sent[0] = time.monotonic()
        return predicate()

    return check


class Worker:
    """One `celery worker` process (its own process group, so SIGKILL takes its pool children too), with
    beat embedded when `beat` (the periodic tasks, the sweeper's among them, as a deployment's beat sends
    them)."""

    def __init__(self, name: str, log: Path, env: dict[str, str], *, beat: bool = False) -> None:
        self.name, self.log = name, log
        self.handle = log.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-l",
                "info",
                "-c",
                "2",
                "-n",
                f"{name}@%h",
                *FAST_START,
                *(["-B"] if beat else []),
            ],
            cwd=REPO,
            env=env,
            stdout=self.handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.log.read_text(errors="replace"):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(
            f"worker {self.name} did not start:\n{self.log.read_text(errors='replace')[-3000:]}"
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        # Cold shutdown: nothing of a finished test is left to finish, and a warm one takes seconds.
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.handle.close()


StartWorker = Callable[..., Worker]


@pytest.fixture
def start_worker(transactional_db: None, tmp_path: Path) -> Iterator[StartWorker]:
    import redis

    from config.celery import app

    # The workers consume the broker this suite publishes to (REDIS_URL's database; under xdist one of
    # each worker's own, tests/support/parallel.py), flushed first so no earlier run's messages are
    # redelivered into this test.
    url = str(app.conf.broker_url)
    redis.Redis.from_url(url).flushdb()
    workers: list[Worker] = []

    def start(name: str, *, beat: bool = False, **env: str) -> Worker:
        environment = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": url,
            "CELERY_BROKER_URL": url,
            "CELERY_RESULT_BACKEND": str(app.conf.result_backend),
            "ASSAY_VAR_DIR": str(tmp_path / "var"),
            # A failing run's notification mail stays in the worker's memory unless a test says where
            # it goes (EMAIL_BACKEND, EMAIL_FILE_PATH): no test talks to an SMTP server.
            "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
            **env,
        }
        environment.pop("CELERY_TASK_ALWAYS_EAGER", None)
        worker = Worker(name, tmp_path / f"{name}.log", environment, beat=beat)
        workers.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()
