"""The demo's data, loaded once per test session (it is read-only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.golden.format import load
from assay.golden.model import GoldenFile
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
