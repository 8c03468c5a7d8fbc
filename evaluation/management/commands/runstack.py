"""`make run`: start the web app, a Celery worker, celery beat, the demo search service and the demo's
stand-in judge (demo/judge_service.py) in one terminal,
then, once web and search answer their health checks, play the demo story (`manage.py demo_runs`), and
end with the addresses and the demo logins.

Quiet unless asked, so that what `make run` prints fits one screen: the development server's banner and
request lines only with ASSAY_LOG_REQUESTS=true, Celery's banners and its root-user warning only with
ASSAY_CELERY_LOG_LEVEL=info (or debug), the demo service's ready line never (its errors still show), and
run notifications written to var/mail/ rather than into the worker's log (when EMAIL_BACKEND is not
set). Errors and warnings of every process still reach the terminal."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from assay.urls import split_url
from demo.judge_service import DEFAULT_PORT as JUDGE_PORT
from demo.serving import WORKER_PROCESSES
from labeling.management.demo_users import demo_logins, render_logins

HEALTH_WAIT_S = 90.0
# Celery warns when its worker runs as root (as in a container or CI): harmless for the demo on loopback
# with JSON-only tasks (it refuses pickle as root anyway). A message filter because the warning's class is
# not importable when Python reads -W. Shown when ASSAY_CELERY_LOG_LEVEL asks for more.
ROOT_WARNING = "ignore:You're running the worker with superuser privileges"
QUIET_LEVELS = ("warning", "error", "critical", "fatal")
FILE_MAIL = "django.core.mail.backends.filebased.EmailBackend"
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


def stack_commands(
    python: str, address: str, search_port: int, celery_level: str, judge_port: int = JUDGE_PORT
) -> dict[str, list[str]]:
    """The processes `make run` starts, Celery's quiet unless `celery_level` asks for more."""
    quiet = celery_level in QUIET_LEVELS
    celery = [python, *(["-W", ROOT_WARNING] if quiet else []), "-m", "celery", "-A", "config"]
    celery += ["--quiet"] if quiet else []  # no banners
    corpus = ["--corpus", "demo/corpus.jsonl", "--port", str(search_port)]
    return {
        "web": [python, "manage.py", "runserver", address, "--noreload"],
        "worker": [*celery, "worker", "-l", celery_level, "-c", str(WORKER_PROCESSES)],
        # Its own process, not the worker's embedded -B: a killed worker never leaves a beat behind, and a
        # second beat refuses to start (config/beat_lock.py).
        "beat": [*celery, "beat", "-l", celery_level],
        "search": [python, "-m", "demo.search_service", *corpus],
        # The demo judge's endpoint (golden_io's demo_load points the stand-in judge rows at
        # ASSAY_DEMO_JUDGE_URL, whose port this is by default).
        "judge": [python, "-m", "demo.judge_service", "--port", str(judge_port)],
    }


class Command(BaseCommand):
    help = "Start web, Celery worker and demo search until Ctrl-C, and run the demo story once they are up."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--search-port",
            type=int,
            default=split_url(settings.ASSAY_DEMO_SEARCH_URL).port or 8765,
            help="the demo search service's port (default from ASSAY_DEMO_SEARCH_URL)",
        )
        parser.add_argument(
            "--judge-port",
            type=int,
            default=split_url(settings.ASSAY_DEMO_JUDGE_URL).port or JUDGE_PORT,
            help="the demo judge stand-in's port (default from ASSAY_DEMO_JUDGE_URL)",
        )
        parser.add_argument("--no-demo-runs", action="store_true", help="do not play the demo story")

    def handle(
        self,
        *args: Any,
        host: str,
        port: int,
        search_port: int,
        judge_port: int,
        no_demo_runs: bool,
        **options: Any,
    ) -> None:
        ports = {"web": port, "the demo search service": search_port, "the judge stand-in": judge_port}
        if len(set(ports.values())) < len(ports):
            shared = ", ".join(f"{name} {number}" for name, number in ports.items())
            raise CommandError(
                f"two servers on one port ({shared}): pick another PORT for `make run`, or set "
                "ASSAY_DEMO_SEARCH_URL / ASSAY_DEMO_JUDGE_URL to other ports (README, 'Configuration')"
            )
        python = sys.executable
        site = f"http://{host}:{port}"
        search = f"http://127.0.0.1:{search_port}"
        judge = f"http://127.0.0.1:{judge_port}/v1"
        commands = stack_commands(
            python, f"{host}:{port}", search_port, settings.ASSAY_CELERY_LOG_LEVEL, judge_port
        )
        # stdout only: the banners and the ready line. Every error goes to stderr, which stays.
        hidden: dict[str, IO[bytes] | int | None] = {
            "search": subprocess.DEVNULL,
            "judge": subprocess.DEVNULL,
        }
        if not settings.ASSAY_LOG_REQUESTS:
            hidden["web"] = subprocess.DEVNULL
        env = dict(os.environ)
        mail = ""
        if "EMAIL_BACKEND" not in os.environ and settings.EMAIL_BACKEND.endswith("console.EmailBackend"):
            env["EMAIL_BACKEND"] = FILE_MAIL  # a notification is a file to open, not a page of the log
            mail = str(Path(settings.EMAIL_FILE_PATH))
        procs = {
            name: subprocess.Popen(cmd, stdout=hidden.get(name), env=env) for name, cmd in commands.items()
        }
        self.stdout.write(
            f"Starting web ({site}/), a Celery worker and beat, the demo search service ({search}) and the"
            f" demo judge stand-in ({judge})..."
        )
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
                    self.stderr.write("web or demo search did not come up: see the errors above")
                return
            if not no_demo_runs and not stopping.is_set():
                self.stdout.write("Playing the demo story (manage.py demo_runs)...")
                story_cmd = ["manage.py", "demo_runs", "--search-url", f"{search}/search", "--site-url", site]
                played = subprocess.Popen([python, *story_cmd], env=env)
                story.append(played)
                played.wait()
            if not stopping.is_set():
                self.stdout.write(self._up(site, search, mail, judge))

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

    def _up(self, site: str, search: str, mail: str, judge: str) -> str:
        """The last lines `make run` prints: where everything is, how to see more, the logins."""
        more = [f"notification mail in {mail}/"] if mail else []
        if not settings.ASSAY_LOG_REQUESTS:
            more.append("request lines: ASSAY_LOG_REQUESTS=true")
        if settings.ASSAY_CELERY_LOG_LEVEL in QUIET_LEVELS:
            more.append("Celery's log: ASSAY_CELERY_LOG_LEVEL=info")
        lines = [
            "",
            self.style.SUCCESS(f"Assay is up at {site}/") + "  (Ctrl-C stops it all)",
            f"  API {site}/api/v1/ (Swagger UI {site}/api/docs/) · health {site}/health/",
            f"  demo search service (the default HTTP JSON contract): {search}/search",
            f"  demo judge stand-in (OpenAI-compatible chat completions): {judge}",
        ]
        if more:
            lines.append("  " + " · ".join(more))
        return "\n".join([*lines, render_logins(demo_logins())])
