"""Start a server process that announces `listening on URL` on stdout, and stop it afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused_url() -> str:
    """A loopback URL where nothing listens (connect errors). The port was free a moment ago; nothing
    in a test run binds ports other than 0, so it stays free."""
    return f"http://127.0.0.1:{free_port()}/search"


@contextmanager
def serving(
    args: Sequence[str], *, timeout: float = 60.0, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run `python args...` from the repository root until it prints `listening on URL`; yield URL.

    The process is killed on exit; the tail of its stderr is kept for the error message if it dies early.
    """
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    found: list[str] = []
    announced = threading.Event()
    # Drained continuously: a server logging every request to stderr would block on a full pipe.
    errors: deque[str] = deque(maxlen=50)

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            errors.append(line)

    def watch() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("listening on "):
                found.append(line.split("listening on ", 1)[1].strip())
                announced.set()
        announced.set()  # EOF: the process ended without announcing

    watchers = [threading.Thread(target=f, daemon=True) for f in (watch, drain)]
    for thread in watchers:
        thread.start()
    try:
        if not announced.wait(timeout) or not found:
            proc.kill()
            proc.wait(timeout=10)
            for thread in watchers:
                thread.join(5)
            raise RuntimeError(f"{' '.join(args)} did not start: {''.join(errors).strip()[-2000:]}")
        yield found[0]
    finally:
        proc.kill()
        proc.wait(timeout=10)
        for thread in watchers:
            thread.join(5)
