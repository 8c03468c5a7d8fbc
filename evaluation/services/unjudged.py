"""Queueing a run's unjudged top-k documents for rating (the report page's button)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluation.models import EvaluationRun


@dataclass
class UnjudgedQueued:
    added: int = 0  # new pool candidates
    queued: dict[str, list[str]] = field(default_factory=dict)  # query id -> doc ids queued
    unknown_documents: list[tuple[str, str]] = field(default_factory=list)  # (query id, doc id) not imported
    unknown_queries: list[str] = field(default_factory=list)  # golden queries not in the labeling set


def unjudged_queue(*, run: EvaluationRun, by: Any = None) -> UnjudgedQueued:
    """Queue the run's unjudged top-k documents for rating: each joins its query's candidate pool (with
    the run as provenance, which raters never see), reopening finished assignments of that query.
    Documents the labeling set does not know are listed (import them first), never invented."""
    from evaluation.selectors import unjudged_in_top_k
    from labeling.models import Document, Query
    from labeling.services import PoolEntry, pool_merge

    golden_set = run.golden_version.golden_set
    rows = unjudged_in_top_k(run=run)
    outcome = UnjudgedQueued()
    if not rows:
        return outcome
    queries = {
        q.external_id: q
        for q in Query.objects.filter(golden_set=golden_set, external_id__in=[r.query_id for r in rows])
    }
    wanted = {d for r in rows for d, _ in r.documents}
    documents = {d.doc_id: d for d in Document.objects.filter(golden_set=golden_set, doc_id__in=wanted)}
    system = f"run:{run.pk}"
    pools: dict[int, list[PoolEntry]] = {}
    for row in rows:
        query = queries.get(row.query_id)
        if query is None:
            outcome.unknown_queries.append(row.query_id)
            continue
        for doc_id, rank in row.documents:
            document = documents.get(doc_id)
            if document is None:
                outcome.unknown_documents.append((row.query_id, doc_id))
                continue
            pools.setdefault(query.pk, []).append(PoolEntry(document, system, rank))
            outcome.queued.setdefault(row.query_id, []).append(doc_id)
    outcome.added = pool_merge(pools=pools) if pools else 0
    return outcome
