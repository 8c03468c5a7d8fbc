"""What each pytest-xdist worker (`pytest -n 2`, as `make test` runs) has of its own, so that two workers
never meet: pytest-django gives each its own test database (`test_<name>_gw0`, `_gw1`...) and pytest its
own temporary directories; here each gets its own Redis database and its own range of loopback ports.

Redis: worker N uses REDIS_URL's database plus N (`redis://host:6379/13`: gw0 13, gw1 14), for the broker
and the result backend both. The Celery workers the integration tests start consume that database, and
the tests flush it, so the workers of one xdist process never take the tasks of another's, nor lose them.
The settings read REDIS_URL before any conftest runs; `isolate_redis` rewrites what they made of it (and
the environment the tests' subprocesses inherit). Without xdist nothing changes.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from typing import Any

# The settings and environment variables that name the Redis database the broker and results live in.
REDIS_NAMES = ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
_DB = re.compile(r"^(rediss?://[^/?#]*)(?:/(\d*))?([?#].*)?$")


def worker_index() -> int:
    """0, 1, ... for xdist's workers gw0, gw1, ...; 0 without xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def worker_redis_url(url: str, index: int) -> str:
    """The Redis URL with its database moved `index` up; any other URL (a filesystem broker) unchanged."""
    found = _DB.match(url)
    if not found or index == 0:
        return url
    base, db, rest = found.groups()
    return f"{base}/{int(db or 0) + index}{rest or ''}"


def isolate_redis(settings: Any, environ: MutableMapping[str, str], index: int) -> None:
    """Point this worker's settings, Celery app and environment at its own Redis database."""
    if index == 0:
        return
    for name in REDIS_NAMES:
        if name in environ:
            environ[name] = worker_redis_url(environ[name], index)
        value = getattr(settings, name, None)
        if isinstance(value, str):
            setattr(settings, name, worker_redis_url(value, index))

    from config.celery import app

    if getattr(app, "configured", False):  # read the settings already: told again
        app.conf.update(broker_url=settings.CELERY_BROKER_URL, result_backend=settings.CELERY_RESULT_BACKEND)


def ephemeral_low() -> int:
    """The lowest port the kernel hands out for bind(0) and outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Each worker's own ports for free_port (tests/support/processes.py), just below the ephemeral ones.
PORT_SPAN = 2000


def port_range(index: int) -> range:
    top = ephemeral_low() - PORT_SPAN * index
    return range(max(top - PORT_SPAN, 1024), top)
