"""Pytest fixtures over the stub server.

Registered for every test by `pytest_plugins` in tests/conftest.py: a test asks for `stub_server`.
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
