"""An asyncio coroutine on its own event loop in its own thread, its results handed to the caller's thread
through a queue (pure).

The caller's thread owns what the work must not touch (a database connection): it reads the results as
they come and writes them at once. A run's chunk searches this way (`evaluation.runs.services.chunks`, and an
experiment's chunk in `evaluation.experiments.services.chunks`), and so does a judge job's chunk
(`labeling.services.judges`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _End(enum.Enum):
    MARK = enum.auto()  # put in the queue after the work's last result, however the work ended


class LoopThread(Generic[T]):
    """`work(put)` on an event loop in a daemon thread: each result it hands to `put` reaches the caller
    through `arrived`, once and in order, and the end comes as a mark after the last one.

    `start()` starts it; `arrived(most, wait=...)` reads it; `cancel()` stops it from the caller's thread at
    any time (before `start`, while it works, after it ended); `join(timeout)` waits for the thread;
    `error` is the exception the work raised (None when it ended or was cancelled), which the caller
    re-raises or records.
    """

    def __init__(
        self, work: Callable[[Callable[[T], None]], Awaitable[Any]], *, name: str = "assay-loop"
    ) -> None:
        self._work = work
        self._results: queue.SimpleQueue[T | _End] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.ended = False  # the end mark was read: every result is handed over
        # `cancel` and the loop's thread meet under this lock: the task is set only while its loop runs,
        # so a cancel never reaches a closed loop, and a cancel before the task exists is not lost.
        self._lock = threading.Lock()
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[Any] | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # handed to the caller's thread, which re-raises or records it
            self.error = exc
        finally:
            self._results.put(_End.MARK)

    async def _main(self) -> None:
        with self._lock:
            if self._cancelled:  # cancelled before it started: the work is never begun
                return
            self._loop = asyncio.get_running_loop()
            self._task = task = asyncio.ensure_future(self._work(self._results.put))
        try:
            # A cancelled work ends without an error, as a finished one does (its results so far are
            # handed over; the caller knows it asked for the cancel).
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            with self._lock:
                self._task = None

    def arrived(self, most: int, *, wait: float) -> tuple[list[T], bool]:
        """The results handed over meanwhile (waiting up to `wait` for the first; at most `most`) and
        whether the work has ended. The end is a mark in the queue, so the caller learns it the moment the
        last result is handed over, not a `wait` later (a 2,000-query run waited out a 50 ms poll at the
        end of each of its 16 chunks; a 123-pair judge job, 50 ms of it)."""
        results: list[T] = []
        if self.ended:
            return results, True
        with contextlib.suppress(queue.Empty):
            item = self._results.get(timeout=wait)
            while item is not _End.MARK:
                results.append(item)
                if len(results) == most:
                    return results, False
                item = self._results.get_nowait()
            self.ended = True
        return results, self.ended

    def cancel(self) -> None:
        """Stop the work: its task is cancelled on its loop at once, so requests in flight are dropped and
        the end mark follows promptly. Safe from any thread and at any time; a cancel before `start`
        means the work never begins, one after the end does nothing.

        Why a cancel rather than a flag the loop polls (the run's chunk polled a `threading.Event` every
        50 ms): the cancel reaches the work as soon as the loop is free, not up to a poll later, and the
        loop is not woken 20 times a second for nothing while the work runs."""
        with self._lock:
            self._cancelled = True
            if self._task is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)

    def join(self, timeout: float | None = None) -> None:
        """Wait up to `timeout` for the thread to end (nothing to wait for when it never started)."""
        if self._thread.is_alive():
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()
