"""Runs of the demo engine made in-process, deterministic or jittered, as report artifacts: what the gate's
tests and benchmarks/bench_gate_noise.py gate against each other (docs/metrics.md, "Noise floor").

The demo engine (demo/search_service) is searched once per golden query and configuration; a jittered run
then swaps two of the top five hits of about one query in three, a different choice on each run from a
seeded generator (what approximate vector search, shard tie-breaking or a cache do). Each run is scored by
the real report builder and read back through JSON, as `assay gate` reads a run file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from assay.golden.format import load
from assay.golden.model import GoldenFile
from assay.report import build_report
from assay.results import QueryResult
from demo.build_golden import run_query
from demo.search_service import build_index, load_corpus, load_synonyms

DEMO = Path(__file__).resolve().parents[2] / "demo"
SHARE = 1 / 3  # of the queries whose hits are swapped on a run
DEPTH = 5  # the two swapped hits are among the top this many

Lists = Mapping[str, tuple[str, ...]]


@cache
def demo_golden() -> GoldenFile:
    return load(DEMO / "golden.json")


@cache
def demo_lists(*, rewrite: bool) -> Lists:
    """Each golden query's ranked ids from the demo engine, the rewriter on or off."""
    golden = demo_golden()
    index = build_index(load_corpus(DEMO / "corpus.jsonl"))
    try:
        synonyms = load_synonyms(DEMO / "synonyms.json")
        return {
            q.id: tuple(h.id for h in run_query(index, q, synonyms, rewrite=rewrite, k=golden.k).hits)
            for q in golden.queries
        }
    finally:
        index.close()


def jittered(lists: Lists, rng: np.random.Generator, share: float = SHARE) -> dict[str, tuple[str, ...]]:
    """`lists` with two of the top `DEPTH` hits swapped on about `share` of the queries (those with at
    least two hits), chosen by `rng`."""
    swapped = {}
    for query_id, ids in lists.items():
        found = list(ids)
        if len(found) >= 2 and rng.random() < share:
            a, b = rng.choice(min(DEPTH, len(found)), size=2, replace=False)
            found[a], found[b] = found[b], found[a]
        swapped[query_id] = tuple(found)
    return swapped


def report_of(lists: Lists, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report artifact of a run that returned `lists`, through JSON as a run file is read."""
    golden = demo_golden()
    results = {qid: QueryResult(query_id=qid, ids=ids) for qid, ids in lists.items()}
    return dict(json.loads(json.dumps(build_report(golden, results, run=dict(run or {})))))
