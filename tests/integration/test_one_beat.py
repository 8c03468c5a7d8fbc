"""One scheduler (config/beat_lock.py): a second `celery beat` refuses to start while one runs, and a beat
killed with SIGKILL frees the lock for its successor. Real beat processes against the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from config.beat_lock import ADVISORY_KEY, _file_lock
from tests.support.processes import REPO
from tests.support.workers import WAIT_S, database_url  # a wait returns once its condition holds


def _beat(tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], Path]:
    from config.celery import app

    log = tmp_path / f"{name}.log"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": str(app.conf.broker_url),
        "CELERY_BROKER_URL": str(app.conf.broker_url),
        "ASSAY_VAR_DIR": str(tmp_path / "var"),
    }
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    command = [sys.executable, "-m", "celery", "-A", "config", "beat", "-l", "info"]
    command += ["--schedule", str(tmp_path / f"{name}-schedule")]
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    return proc, log


def _lock_held() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            # This test database's lock only: pg_locks shows the whole server's, and the beats of other
            # databases (another xdist worker's workers, another run's) hold theirs meanwhile.
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [ADVISORY_KEY],
        )
        return bool(cursor.fetchone()[0])


def _wait(condition: object, timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


@pytest.mark.django_db(transaction=True)
def test_a_second_beat_exits_and_a_killed_beat_frees_the_lock(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the advisory lock is PostgreSQL's; SQLite's file lock is tested below")
    first, _ = _beat(tmp_path, "first")
    try:
        assert _wait(_lock_held), "the first beat never took the scheduler lock"
        second, log = _beat(tmp_path, "second")
        assert second.wait(timeout=WAIT_S) == 1
        assert "another beat holds the scheduler lock" in log.read_text()
        assert first.poll() is None  # the first one keeps scheduling

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=WAIT_S)
        assert _wait(lambda: not _lock_held()), "the server did not free a killed beat's lock"
        third, _ = _beat(tmp_path, "third")
        try:
            assert _wait(_lock_held) and third.poll() is None
        finally:
            third.terminate()
            third.wait(timeout=WAIT_S)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_on_sqlite_the_lock_is_a_file_lock_that_a_second_process_cannot_take(tmp_path: Path) -> None:
    path = tmp_path / "celerybeat.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert _file_lock(path) is False
    finally:
        holder.kill()
        holder.wait()
    assert _file_lock(path) is True  # the kernel freed the killed holder's lock
