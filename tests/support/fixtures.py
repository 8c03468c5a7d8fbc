"""Pytest fixtures over the stub server.

A test module imports `stub_server_fixture` (unused name, so no F811 clash with the parameter) and asks
for `stub_server`: `from tests.support.fixtures import stub_server_fixture  # noqa: F401`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.stub_server import StubServer


@pytest.fixture(name="stub_server")
def stub_server_fixture() -> Iterator[StubServer]:
    """A started StubServer (default reply: hits d1, d2, d3), stopped after the test."""
    with StubServer() as server:
        yield server
