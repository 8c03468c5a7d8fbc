"""`make run`: start the web app, a Celery worker, celery beat and the demo search service in one terminal,
then, once web and search answer their health checks, play the demo story (`manage.py demo_runs`)."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand

from labeling.management.demo_users import demo_logins, render_logins

HEALTH_WAIT_S = 90.0
# httpx logs every request at INFO: the health polls would fill the terminal.
logging.getLogger("httpx").setLevel(logging.WARNING)


def wait_healthy(url: str, timeout: float = HEALTH_WAIT_S, stop: threading.Event | None = None) -> bool:
    """True once `url` answers 200 (polled every 0.3 s), False after `timeout` or when `stop` is set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


class Command(BaseCommand):
    help = "Start web, Celery worker and demo search until Ctrl-C, and run the demo story once they are up."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--search-port",
            type=int,
            default=urlsplit(settings.ASSAY_DEMO_SEARCH_URL).port or 8765,
            help="the demo search service's port (default from ASSAY_DEMO_SEARCH_URL)",
        )
        parser.add_argument("--no-demo-runs", action="store_true", help="do not play the demo story")

    def handle(
        self, *args: Any, host: str, port: int, search_port: int, no_demo_runs: bool, **options: Any
    ) -> None:
        python = sys.executable
        site = f"http://{host}:{port}"
        search = f"http://127.0.0.1:{search_port}"
        commands = {
            "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            "worker": [python, "-m", "celery", "-A", "config", "worker", "-l", "warning", "-c", "2"],
            # Its own process, not the worker's embedded -B: a killed worker never leaves a beat behind,
            # and a second beat refuses to start (config/beat_lock.py).
            "beat": [python, "-m", "celery", "-A", "config", "beat", "-l", "warning"],
            "search": [
                python,
                "-m",
                "demo.search_service",
                "--corpus",
                "demo/corpus.jsonl",
                "--port",
                str(search_port),
            ],
        }
        procs = {name: subprocess.Popen(cmd) for name, cmd in commands.items()}
        self.stdout.write(self.style.SUCCESS(f"\nAssay is up at {site}/"))
        self.stdout.write(f"Health check: {site}/health/")
        self.stdout.write(f"Demo search service (http_json contract): {search}/search")
        self.stdout.write(f"API: {site}/api/v1/ (Swagger UI at {site}/api/docs/)")
        self.stdout.write(render_logins(demo_logins()))
        self.stdout.write("Press Ctrl-C to stop.\n")
        stopping = threading.Event()
        story: list[subprocess.Popen[bytes]] = []

        def play() -> None:
            # After the health waits: the worker needs no check of its own, demo_runs says when a run
            # stays queued (no worker) and waits for it.
            if not (
                wait_healthy(f"{site}/health/", stop=stopping)
                and wait_healthy(f"{search}/health", stop=stopping)
            ):
                if not stopping.is_set():
                    self.stderr.write("web or demo search did not come up: skipping the demo runs")
                return
            if stopping.is_set():
                return
            self.stdout.write("\nPlaying the demo story (manage.py demo_runs)...")
            story.append(
                subprocess.Popen(
                    [python, "manage.py", "demo_runs", "--search-url", f"{search}/search", "--site-url", site]
                )
            )

        if not no_demo_runs:
            threading.Thread(target=play, name="demo-runs", daemon=True).start()

        def stop(*_: object) -> None:
            stopping.set()

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping.is_set():
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"{name} exited with code {proc.returncode}; stopping the rest")
                        stopping.set()
                time.sleep(0.5)
        finally:
            running = [*procs.values(), *story]
            for proc in running:
                if proc.poll() is None:
                    proc.terminate()
            for proc in running:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
