"""The two stacks the demo benchmarks measure side by side (`make run`'s SQLite with the filesystem broker,
and PostgreSQL with Redis), each in a scratch state directory and database, the measuring done by the
section's own module in a child process (`python -m benchmarks.bench_X --inner FIGURES.json`) so that it
starts Django with that stack's settings."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_runs import REPO, scratch_database

STACKS = ("sqlite+filesystem", "postgresql+redis")


def each_stack(name: str, stacks: tuple[str, ...] = STACKS) -> dict[str, dict[str, Any]]:
    """`benchmarks.bench_<name> --inner` once per stack (of `stacks`); the figures each child wrote, by
    stack."""
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url.startswith("redis://"):
        raise SystemExit(f"bench_{name}: set REDIS_URL to a Redis database the benchmark may flush")
    figures = {}
    for stack in stacks:
        with tempfile.TemporaryDirectory() as var:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "REDIS_URL"))}
            env |= {"ASSAY_VAR_DIR": var, "ASSAY_LOG_LEVEL": "WARNING", "ASSAY_TARGET_ALLOW_PRIVATE": "true"}
            if stack == "sqlite+filesystem":
                figures[stack] = _inner(name, env | {"DATABASE_URL": f"sqlite:///{var}/db.sqlite3"})
            else:
                with scratch_database(os.environ.get("DATABASE_URL", "")) as database_url:
                    figures[stack] = _inner(
                        name, env | {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
                    )
    return figures


def _inner(name: str, env: dict[str, str]) -> dict[str, Any]:
    out = Path(env["ASSAY_VAR_DIR"]) / "figures.json"
    command = [sys.executable, "-m", f"benchmarks.bench_{name}", "--inner", str(out)]
    subprocess.run(command, cwd=REPO, env=env, check=True)
    return dict(json.loads(out.read_text()))


def demo_loaded() -> Path:
    """In the child: Django set up on this stack, its broker emptied, the database migrated and the demo
    loaded (as `make run` does); the stack's state directory."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if settings.CELERY_BROKER_URL.startswith("redis://"):
        import redis

        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    call_command("migrate", verbosity=0)
    call_command("demo_load", no_logins=True, verbosity=0, stdout=io.StringIO())
    return Path(os.environ["ASSAY_VAR_DIR"])
