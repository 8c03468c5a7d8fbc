"""The demo's servers accept the harness's whole burst of connections: their listen backlog holds every
request one `make run` worker may have in flight at once (demo/serving.py), so the kernel drops none
(a dropped connection request is sent again only a second later).

Read from the kernel with `ss`: for a listening socket Send-Q is its backlog and Recv-Q the connections
that completed their handshake and wait to be accepted."""

from __future__ import annotations

import errno
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from assay.harness_config import MAX_CONCURRENCY
from demo.search_service import Document, build_index, make_server
from demo.serving import LISTEN_BACKLOG, WORKER_PROCESSES

REPO = Path(__file__).resolve().parents[2]
BURST = MAX_CONCURRENCY * WORKER_PROCESSES  # every chunk of a worker opening its whole concurrency


def listen_queue(port: int) -> tuple[int, int]:
    """(connections waiting to be accepted, backlog) of the socket listening on loopback `port`."""
    out = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    match = re.match(r"\s*LISTEN\s+(\d+)\s+(\d+)\s", out)
    assert match, f"no listening socket on port {port}: {out!r}"
    return int(match[1]), int(match[2])


@contextmanager
def burst(port: int, count: int) -> Iterator[None]:
    """`count` connection requests to loopback `port` sent at once (non-blocking), held open."""
    with ExitStack() as stack:
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.setblocking(False)
            code = sock.connect_ex(("127.0.0.1", port))
            assert code in (0, errno.EINPROGRESS), errno.errorcode.get(code, code)
        yield


def test_the_backlog_is_the_harness_burst_of_a_worker() -> None:
    assert LISTEN_BACKLOG >= BURST


def test_a_burst_of_every_connection_a_worker_opens_is_queued_whole_by_the_search_service() -> None:
    index = build_index([Document(id="d1", title="t", body="b")])
    # Bound and listening, but not accepting yet: the kernel's accept queue alone holds the burst.
    server = make_server(index, port=0)
    try:
        port = server.server_address[1]
        assert listen_queue(port) == (0, LISTEN_BACKLOG)
        with burst(port, BURST):
            # The handshakes complete in the kernel; a dropped one would be sent again only after a
            # second and dropped again, so the queue would stay short of the burst.
            deadline = time.monotonic() + 10
            while listen_queue(port)[0] < BURST and time.monotonic() < deadline:
                time.sleep(0.05)
            assert listen_queue(port)[0] == BURST
    finally:
        server.server_close()
        index.close()


def test_the_judge_stand_in_listens_with_the_same_backlog() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "demo.judge_service", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r":(\d+)\s*$", line)
        assert match, line
        assert listen_queue(int(match[1]))[1] == LISTEN_BACKLOG
    finally:
        proc.terminate()
        proc.wait(10)
