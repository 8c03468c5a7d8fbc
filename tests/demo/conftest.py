"""The demo's data, loaded once per test session (it is read-only), and its judge stand-in on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from assay.golden.format import load
from assay.golden.model import GoldenFile
from demo import judge_service
from demo.search_service import Document, SearchIndex, SynonymPack, build_index, load_corpus, load_synonyms

DEMO = Path(__file__).resolve().parents[2] / "demo"


@pytest.fixture(scope="session")
def demo_docs() -> list[Document]:
    return load_corpus(DEMO / "corpus.jsonl")


@pytest.fixture(scope="session")
def demo_index(demo_docs: list[Document]) -> Iterator[SearchIndex]:
    index = build_index(demo_docs)
    yield index
    index.close()


@pytest.fixture(scope="session")
def demo_synonyms() -> SynonymPack:
    return load_synonyms(DEMO / "synonyms.json")


@pytest.fixture(scope="session")
def demo_golden() -> GoldenFile:
    return load(DEMO / "golden.json")


@pytest.fixture(scope="session")
def demo_budgets() -> dict[str, Any]:
    return dict(json.loads((DEMO / "budgets.json").read_text()))


@pytest.fixture
def stand_in() -> Iterator[str]:
    """The stand-in on a free loopback port, in a thread with its own event loop."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(judge_service.make_app(), access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.run_until_complete(runner.cleanup())
    loop.close()
