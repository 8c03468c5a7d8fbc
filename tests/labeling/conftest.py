"""Fixtures for the labeling tests beyond the root cast."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from demo import search_service


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
