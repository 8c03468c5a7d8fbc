"""The chunk's search, on its own loop thread (assay/loop_thread.py, held by tests/assay/test_loop_thread.py),
is written as it comes by `stream` (evaluation/services/chunks.py): every result once and in order, the
return the moment the last one is handed over, and a cancel of the search once the run stops."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from assay.loop_thread import LoopThread
from evaluation.services.chunks import TOUCH_EVERY_S, stream


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
    search: LoopThread[Any] = LoopThread(work)
    search.start()
    started = time.monotonic()
    stopped = stream(search, None, write=written.extend, touch=lambda counting: False, label="test")
    assert stopped is True
    assert time.monotonic() - started < TOUCH_EVERY_S + 1
    search.join(10)
    assert not search.is_alive()
    assert cancelled.is_set()
    assert written == [1]
    assert search.error is None
