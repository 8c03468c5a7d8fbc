"""One scheduler: a `celery beat` takes a lock for as long as it runs, and a second beat that cannot take
it exits (docs/deployment.md, "Processes").

Two beats would each send every periodic task: the sweeper twice a minute, and a due nightly schedule
checked twice. On PostgreSQL the lock is a session advisory lock on a connection of its own, so it holds
across machines and is released by the server when the beat's process dies, however it dies (SIGKILL
included). On SQLite (`make run`, one machine) it is an exclusive `flock` on a file beside the database,
released by the kernel when the process dies.
"""

from __future__ import annotations

import fcntl
import logging
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

# Any constant will do: the key of the advisory lock every Assay beat asks for.
ADVISORY_KEY = 4_243_001
# Held for the life of the process: dropping the object would release the lock.
_held: list[Any] = []


def _postgres_lock() -> bool:
    import psycopg

    db = settings.DATABASES["default"]
    connection = psycopg.connect(
        dbname=db["NAME"],
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        autocommit=True,
    )
    row = connection.execute("SELECT pg_try_advisory_lock(%s)", (ADVISORY_KEY,)).fetchone()
    if not row or not row[0]:
        connection.close()
        return False
    _held.append(connection)
    return True


def _file_lock(path: Path) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return False
    _held.append(handle)
    return True


def beat_lock_where() -> str:
    """Where the lock is, for the refusal message."""
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        return f"PostgreSQL advisory lock {ADVISORY_KEY}"
    return str(settings.ASSAY_BEAT_LOCK_FILE)


def beat_lock_take() -> bool:
    """Take the scheduler's lock for the rest of this process; False when another beat holds it."""
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        return _postgres_lock()
    return _file_lock(Path(settings.ASSAY_BEAT_LOCK_FILE))
