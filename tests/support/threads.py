"""Races on the real database: callables run in threads released together by a barrier, each thread with
its own connection and transaction (as web workers and Celery workers have theirs)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection


def race(workers: Sequence[Callable[[], object]], timeout: float = 60) -> list[object]:
    """Each worker's result, or the exception it raised, in order. A worker still running after `timeout`
    seconds fails the test (a deadlock, say) instead of hanging it."""
    barrier = threading.Barrier(len(workers))
    results: list[object] = [None] * len(workers)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = workers[i]()
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()  # the thread's own connection: give it back

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), f"a racing worker was still running after {timeout} s"
    return results


def backend_state(pid: int) -> str:
    """PostgreSQL: what another connection's backend is doing (`pg_stat_activity.state`)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [pid])
        return str(cursor.fetchone()[0])


def grade_saved_while(held: threading.Thread, assignment: Any, candidate: Any) -> bool:
    """PostgreSQL: the rater of `assignment` saves a grade of `candidate` on this thread's connection with
    a lock timeout of one second (so a wait for a lock the held thread holds fails the save instead of
    waiting for it); whether `held` was still running when the save returned."""
    from labeling.services import judgment_submit

    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '1s'")
    try:
        judgment_submit(
            assignment_id=assignment.pk, rater=assignment.rater, candidate_id=candidate.pk, grade=2
        )
        return held.is_alive()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
