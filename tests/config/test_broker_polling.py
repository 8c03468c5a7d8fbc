"""`make run`'s filesystem broker: its consumers look at an empty queue every ASSAY_BROKER_POLL_S (0.1 s),
not Kombu's second (docs/runs.md, "Brokers"). Read from the transport Celery builds from the settings, in
a process of its own whose environment names no Redis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    "from config.celery import app\n"
    "with app.connection_for_read() as conn:\n"
    "    print(conn.transport_cls, conn.transport.polling_interval)\n"
)


def _probe(tmp_path: Path, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "REDIS_URL"))}
    environment |= {"ASSAY_VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", **env}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=environment, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_the_filesystem_broker_polls_ten_times_a_second(tmp_path: Path) -> None:
    assert _probe(tmp_path) == "config.broker:Transport 0.1"


def test_the_polling_interval_is_set_by_the_environment(tmp_path: Path) -> None:
    assert _probe(tmp_path, ASSAY_BROKER_POLL_S="0.5") == "config.broker:Transport 0.5"
