"""The judge calls a worker makes, counted where they happen (docs/deployment.md, "Metrics").

A call's outcome is known only in the process that made it, so these are prometheus-client counters and a
histogram in that process; with PROMETHEUS_MULTIPROC_DIR set (prometheus-client's multiprocess mode) each
process writes them to its own file in that directory and /metrics adds up every file of the machine
(config/metrics.py). Everything else /metrics shows is read from the database and the broker at scrape
time (config/metrics_collector.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import Counter, Histogram

from assay.judge.client import Reply

# The outcomes of one pair's call: a grade; an answer that broke the contract (paid, unusable); no answer
# (an HTTP error, a timeout, after the retries).
GRADED, UNUSABLE, FAILED = "graded", "unusable", "failed"

JUDGE_CALLS = Counter("assay_judge_calls", "Judge calls (one per pair asked), by outcome", ["outcome"])
JUDGE_CALL_RETRIES = Counter("assay_judge_call_retries", "Attempts of judge calls after their first")
JUDGE_CALL_SECONDS = Histogram(
    "assay_judge_call_seconds",
    "Seconds a judge call took, from its first attempt to its answer or last failure, retries included",
    buckets=(0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
)


for _outcome in (GRADED, UNUSABLE, FAILED):  # every outcome shown from the start, at 0
    JUDGE_CALLS.labels(_outcome)


def outcome(reply: Reply) -> str:
    if reply.answer is None:
        return FAILED
    return GRADED if reply.answer.grade is not None else UNUSABLE


def judge_calls_count(replies: Sequence[Reply]) -> None:
    """Count the replies of calls made (never the cache's answers: nothing was called for those)."""
    for reply in replies:
        JUDGE_CALLS.labels(outcome(reply)).inc()
        JUDGE_CALL_RETRIES.inc(max(reply.attempts - 1, 0))
        JUDGE_CALL_SECONDS.observe(reply.latency_ms / 1000)
