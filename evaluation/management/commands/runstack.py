"""`make run`: start the web app, a Celery worker and the demo search service in one terminal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand

from labeling.management.commands.demo_load import demo_logins, render_logins


class Command(BaseCommand):
    help = "Start web, Celery worker (and what later parts add) until Ctrl-C."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        python = sys.executable
        commands = {
            "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            "worker": [python, "-m", "celery", "-A", "config", "worker", "-B", "-l", "warning", "-c", "2"],
            "search": [
                python,
                "-m",
                "demo.search_service",
                "--corpus",
                "demo/corpus.jsonl",
                "--port",
                "8765",
            ],
        }
        procs = {name: subprocess.Popen(cmd) for name, cmd in commands.items()}
        self.stdout.write(self.style.SUCCESS(f"\nAssay is up at http://{host}:{port}/"))
        self.stdout.write(f"Health check: http://{host}:{port}/health/")
        self.stdout.write("Demo search service (the seed's http_json contract): http://127.0.0.1:8765/search")
        self.stdout.write(render_logins(demo_logins()))
        self.stdout.write("Press Ctrl-C to stop.\n")
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"{name} exited with code {proc.returncode}; stopping the rest")
                        stopping = True
                time.sleep(0.5)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()
            for proc in procs.values():
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
