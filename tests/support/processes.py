"""Start a server process that announces `listening on URL` on stdout, and stop it afterwards."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.parallel import port_range, worker_index

REPO = Path(__file__).resolve().parents[2]


# The ports free_port handed out in this process, each once; the next one is tried after the last.
_handed_out: set[int] = set()
_next: list[int] = []


def free_port() -> int:
    """A loopback port nothing listens on, from this xdist worker's own range (tests/support/parallel.py)
    below the kernel's ephemeral ports: the servers a test run starts on port 0 and the outgoing
    connections never take it, nor does another worker's free_port, and this one hands it out once."""
    ports = port_range(worker_index())
    if not _next:
        _next.append(random.randrange(len(ports)))  # where to start: runs side by side rarely meet
    for _ in range(len(ports)):
        port = ports[_next[0] % len(ports)]
        _next[0] += 1
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port left in {ports}")


def refused_url() -> str:
    """A loopback URL where nothing listens (connect errors). The port was free a moment ago; nothing
    in a test run binds it on purpose but its test, so it stays free."""
    return f"http://127.0.0.1:{free_port()}/search"


@contextmanager
def serving(
    args: Sequence[str],
    *,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    program: str = sys.executable,
) -> Iterator[str]:
    """Run `program args...` (Python by default; `node` for the npm tools under tests/node/) from the
    repository root until it prints `listening on URL`; yield URL.

    The process is killed on exit; the tail of its stderr is kept for the error message if it dies early.
    """
    proc = subprocess.Popen(
        [program, *args],
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
