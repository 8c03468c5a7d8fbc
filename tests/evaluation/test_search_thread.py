"""The chunk's search thread hands every result over and says when it ended (evaluation/services/chunks.py):
the chunk stops waiting the moment the last result is handed over (a 2,000-query run waited out a 50 ms
poll at the end of each of its 16 chunks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from assay.harness import HarnessConfig
from evaluation.services.chunks import SearchThread, stream

CONFIG = HarnessConfig(url="http://127.0.0.1:9/search")  # never called: each test hands its own work


def thread_of(items: list[Any], *, fail: bool = False) -> SearchThread:
    async def work(put: Callable[[Any], None]) -> None:
        for item in items:
            put(item)
        if fail:
            raise RuntimeError("engine adapter bug")

    return SearchThread([], CONFIG, work)


def test_the_end_is_read_with_the_last_result() -> None:
    search = thread_of([1, 2, 3])
    search.thread.start()
    search.thread.join(10)
    assert search.drain(timeout=0) == [1, 2, 3]
    assert search.ended


def test_a_batch_is_at_most_500_and_the_end_comes_after_the_rest() -> None:
    search = thread_of(list(range(501)))
    search.thread.start()
    search.thread.join(10)
    assert len(search.drain(timeout=0)) == 500
    assert not search.ended
    assert search.drain(timeout=0) == [500]
    assert search.ended


def test_a_failing_search_ends_too_and_keeps_its_error() -> None:
    search = thread_of([1], fail=True)
    search.thread.start()
    search.thread.join(10)
    assert search.drain(timeout=0) == [1]
    assert search.ended
    assert isinstance(search.error, RuntimeError)


@pytest.mark.parametrize("count", [0, 1, 7, 1200])
def test_stream_writes_every_result_once_and_returns_at_the_end(count: int) -> None:
    written: list[Any] = []
    search = thread_of(list(range(count)))
    search.thread.start()
    stopped = stream(search, None, write=written.extend, touch=lambda counting: True, label="test")
    assert stopped is False
    assert written == list(range(count))
    assert search.ended
