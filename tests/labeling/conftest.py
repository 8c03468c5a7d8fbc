"""Fixtures for the labeling tests beyond the root cast."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from demo import search_service
from labeling.models import GoldenSet, Judge
from labeling.services import judges
from tests.support.judge_stub import judge_settings, judge_stub
from tests.support.stub_server import StubServer


@pytest.fixture
def search_url() -> Iterator[str]:
    """The demo search engine on a loopback port: 30 documents d1..d30 that all match "refund"."""
    docs = [
        search_service.Document(id=f"d{i}", title=f"Refund article {i}", body="refund money back")
        for i in range(1, 31)
    ]
    server = search_service.make_server(search_service.build_index(docs), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"{server.url}/search"
    server.shutdown()
    server.server_close()


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A judge's chat endpoint on loopback (tests/support/judge_stub.py); a module with a stub of its own
    defines one."""
    with judge_stub() as server:
        yield server


@pytest.fixture
def judge(golden_set: GoldenSet, stub: StubServer) -> Judge:
    """A stand-in judge of `golden_set` on `stub`."""
    made, _ = judges.judge_save(
        golden_set=golden_set,
        settings=judge_settings(stub.url, name="Judge Quillfeather"),
        by=None,
        stand_in=True,
    )
    return made
