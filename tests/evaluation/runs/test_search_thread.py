"""The chunk's search, on its own loop thread (assay/loop_thread.py, held by tests/assay/test_loop_thread.py),
is written as it comes by `stream` (evaluation/runs/services/chunks.py): every result once and in order, the
return the moment the last one is handed over, and a cancel of the search once the run stops."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from assay.loop_thread import LoopThread
from evaluation.runs.services.chunks import stream


def thread_of(items: list[Any]) -> LoopThread[Any]:
    async def work(put: Callable[[Any], None]) -> None:
        for item in items:
            put(item)

    return LoopThread(work)


@pytest.mark.parametrize("count", [0, 1, 7, 1200])
def test_stream_writes_every_result_once_and_returns_at_the_end(count: int) -> None:
    written: list[Any] = []
    search = thread_of(list(range(count)))
    search.start()
    stopped = stream(search, None, write=written.extend, touch=lambda counting: True, label="test")
    assert stopped is False
    assert written == list(range(count))
    assert search.ended


def test_a_run_no_longer_running_cancels_the_search_in_flight() -> None:
    cancelled = threading.Event()

    async def work(put: Callable[[Any], None]) -> None:
        put(1)
        try:
            await asyncio.Event().wait()  # a request that never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise

    written: list[Any] = []
    touches: list[bool] = []

    def touch(counting: bool) -> bool:
        touches.append(counting)
        return False  # the run was cancelled

    search: LoopThread[Any] = LoopThread(work)
    search.start()
    stopped = stream(search, None, write=written.extend, touch=touch, label="test")
    assert stopped is True
    assert len(touches) == 1  # it stops at the first heartbeat that finds the run no longer running
    search.join(10)
    assert not search.is_alive()
    assert cancelled.is_set()
    assert written == [1]
    assert search.error is None
