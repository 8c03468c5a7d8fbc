"""A work on its own loop thread hands every result over once and in order and says when it ended
(assay/loop_thread.py): the caller stops waiting the moment the last result is handed over (a 2,000-query
run waited out a 50 ms poll at the end of each of its 16 chunks), and a cancel stops the work at once, from
the caller's thread, whenever it comes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from assay.loop_thread import LoopThread


def thread_of(items: list[int], *, fail: bool = False) -> LoopThread[int]:
    async def work(put: Callable[[int], None]) -> None:
        for item in items:
            put(item)
        if fail:
            raise RuntimeError("engine adapter bug")

    return LoopThread(work)


def forever(cancelled: threading.Event, begun: threading.Event | None = None) -> LoopThread[int]:
    """A work that hands over 1, then waits forever (a request that never answers) until it is
    cancelled; `cancelled` is set when the cancel reaches it, `begun` when it has begun."""

    async def work(put: Callable[[int], None]) -> None:
        put(1)
        if begun is not None:
            begun.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    return LoopThread(work)


def test_the_end_is_read_with_the_last_result() -> None:
    work = thread_of([1, 2, 3])
    work.start()
    work.join(10)
    assert work.arrived(500, wait=0) == ([1, 2, 3], True)
    assert work.ended
    assert work.error is None


def test_a_batch_is_at_most_most_and_the_end_comes_after_the_rest() -> None:
    work = thread_of(list(range(501)))
    work.start()
    work.join(10)
    batch, ended = work.arrived(500, wait=0)
    assert batch == list(range(500))
    assert not ended
    assert not work.ended
    assert work.arrived(500, wait=0) == ([500], True)
    assert work.ended


def test_the_end_once_read_stays_read() -> None:
    work = thread_of([1])
    work.start()
    work.join(10)
    assert work.arrived(10, wait=0) == ([1], True)
    assert work.arrived(10, wait=5) == ([], True)  # nothing can come after the end


def test_nothing_yet_is_not_the_end() -> None:
    begun, cancelled = threading.Event(), threading.Event()
    work = forever(cancelled, begun)
    work.start()
    assert begun.wait(10)
    assert work.arrived(10, wait=0) == ([1], False)
    assert work.arrived(10, wait=0.01) == ([], False)
    work.cancel()
    work.join(10)


def test_a_failing_work_ends_too_and_keeps_its_error() -> None:
    work = thread_of([1], fail=True)
    work.start()
    work.join(10)
    assert work.arrived(500, wait=0) == ([1], True)
    assert isinstance(work.error, RuntimeError)


def test_a_cancel_stops_a_work_that_waits_forever_and_the_end_arrives() -> None:
    begun, cancelled = threading.Event(), threading.Event()
    work = forever(cancelled, begun)
    work.start()
    assert begun.wait(10)
    work.cancel()
    work.join(10)
    assert not work.is_alive()  # (tests assert no wall-clock times: that the cancel is prompt is by design)
    assert cancelled.is_set()  # the cancel reached the work: its requests in flight are dropped
    assert work.arrived(500, wait=0) == ([1], True)
    assert work.error is None  # a cancel is not the work's failure


def test_a_cancel_right_after_start_is_not_lost() -> None:
    # Whether the work's task exists yet or not when the cancel comes, the work ends.
    for _ in range(50):
        work = forever(threading.Event())
        work.start()
        work.cancel()
        work.join(10)
        assert not work.is_alive()
        assert work.arrived(500, wait=0)[1] is True
        assert work.error is None


def test_a_cancel_before_start_means_the_work_never_begins() -> None:
    begun, cancelled = threading.Event(), threading.Event()
    work = forever(cancelled, begun)
    work.cancel()
    work.join(10)  # never started: nothing to wait for
    work.start()
    work.join(10)
    assert not work.is_alive()
    assert not begun.is_set()
    assert work.arrived(500, wait=0) == ([], True)
    assert work.error is None


def test_a_cancel_after_the_end_does_nothing() -> None:
    work = thread_of([1, 2])
    work.start()
    work.join(10)
    assert not work.is_alive()  # its loop is closed
    work.cancel()
    work.cancel()
    assert work.arrived(500, wait=0) == ([1, 2], True)
    assert work.error is None


def test_a_failing_work_keeps_its_error_when_cancelled_after_the_end() -> None:
    work = thread_of([], fail=True)
    work.start()
    work.join(10)
    work.cancel()
    assert work.arrived(500, wait=0) == ([], True)
    assert isinstance(work.error, RuntimeError)
