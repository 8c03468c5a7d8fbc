"""How many connection requests the demo's servers hold while they accept: enough for every request the
harness may have in flight at once, so none is dropped.

A chunk task opens up to `concurrency` connections at the same moment (at most
`assay.harness_config.MAX_CONCURRENCY`), and one worker of `make run` runs `WORKER_PROCESSES` chunks (or judge
chunks) at once. A listen backlog smaller than that burst (Python's socketserver default is 5) makes the
kernel drop the connection requests beyond it, and the client sends them again only after a second: a
search of a millisecond then takes 1.02 s.
"""

from __future__ import annotations

from assay.harness_config import MAX_CONCURRENCY

# `make run`'s Celery worker: its pool processes (`celery worker -c`), each running one chunk at a time
# (evaluation/management/commands/runstack.py starts it with this number).
WORKER_PROCESSES = 2
LISTEN_BACKLOG = MAX_CONCURRENCY * WORKER_PROCESSES
