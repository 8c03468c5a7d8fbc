"""Candidate pools: per query, the union of several systems' top results plus everything judged for it
before (docs/labeling.md, "Candidate pools")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from django.db import transaction
from django.utils import timezone

from assay.display import counted
from assay.problems import ImportReport, decode_utf8
from assay.run_meta import redact_url
from labeling.models import Assignment, Candidate, Document, FrozenLabel, GoldenSet, Judgment, Query

POOL_DEPTH = 20
JUDGED_SYSTEM = "judged"  # provenance of a document that was judged for the query before


@dataclass(frozen=True, slots=True)
class PoolEntry:
    document: Document
    system: str
    rank: int | None  # None: no system ranked it (judged before, queued by hand)


@dataclass(frozen=True, slots=True)
class PoolMerged:
    """What a merge changed: the candidates it added (query id, document id) and how many finished
    assignments it reopened because their pool grew."""

    added: frozenset[tuple[int, int]] = frozenset()
    reopened: int = 0


def candidates_add(*, query: Query, entries: Iterable[PoolEntry]) -> int:
    """Add entries to one query's pool; returns how many candidates are new."""
    return len(pool_merge(pools={query.pk: list(entries)}).added)


@transaction.atomic
def pool_merge(*, pools: Mapping[int, Sequence[PoolEntry]], reopen: bool = True) -> PoolMerged:
    """Union the entries into the pools of the given query ids; returns the new candidates and how many
    assignments were reopened.

    A system appears once per candidate: a rebuilt pool replaces that system's rank instead of adding a
    second entry, so rebuilding is idempotent. Open work is kept honest: a finished assignment whose pool
    grew is open again, unless `reopen=False` (documents sent to a judge instead of the raters: its label
    fills a pool pair no human labeled, and raters who finished the query are not asked again).
    """
    existing = {
        (c.query_id, c.document_id): c for c in Candidate.objects.filter(query_id__in=list(pools)).order_by()
    }
    new, changed = pool_merged(pools, existing)
    Candidate.objects.bulk_create(new.values(), batch_size=1000)
    Candidate.objects.bulk_update(changed.values(), ["provenance", "best_rank"], batch_size=1000)
    grown = {query_id for query_id, _ in new}
    reopened = 0
    if grown and reopen:
        reopened = Assignment.objects.filter(
            query_id__in=grown, status=Assignment.Status.DONE, scope__isnull=True
        ).update(status=Assignment.Status.OPEN, completed=None, reopened=timezone.now())
    return PoolMerged(frozenset(new), reopened)


def pool_merged(
    pools: Mapping[int, Sequence[PoolEntry]], existing: Mapping[tuple[int, int], Candidate]
) -> tuple[dict[tuple[int, int], Candidate], dict[int, Candidate]]:
    """`pool_merge`'s rule, writing nothing: the candidates the entries add (by (query id, document id))
    and the `existing` ones whose provenance they change (by pk). A query id need not be a row's yet
    (golden_io's import builds the candidates of the queries it creates before it creates them)."""
    new: dict[tuple[int, int], Candidate] = {}
    changed: dict[int, Candidate] = {}
    for query_id, entries in pools.items():
        for entry in entries:
            pair = (query_id, entry.document.pk)
            candidate = existing.get(pair) or new.get(pair)
            if candidate is None:
                candidate = new[pair] = Candidate(query_id=query_id, document_id=pair[1], provenance=[])
            merged = [p for p in candidate.provenance if p["system"] != entry.system]
            merged.append({"system": entry.system, "rank": entry.rank})
            merged.sort(key=lambda p: p["system"])
            if merged != candidate.provenance:
                candidate.provenance = merged
                ranks = [p["rank"] for p in merged if p["rank"] is not None]
                candidate.best_rank = min(ranks) if ranks else None
                if candidate.pk:
                    changed[candidate.pk] = candidate
    return new, changed


def pool_add_judged(*, golden_set: GoldenSet) -> int:
    """Every document judged for a query before (frozen labels, raters' judgments) joins its pool."""
    pools: dict[int, list[PoolEntry]] = {}
    for label in FrozenLabel.objects.filter(query__golden_set=golden_set).select_related("document"):
        pools.setdefault(label.query_id, []).append(PoolEntry(label.document, JUDGED_SYSTEM, None))
    judged = Judgment.objects.filter(assignment__query__golden_set=golden_set).select_related(
        "document", "assignment"
    )
    for judgment in judged:
        pools.setdefault(judgment.assignment.query_id, []).append(
            PoolEntry(judgment.document, JUDGED_SYSTEM, None)
        )
    return len(pool_merge(pools=pools).added)


def _pools_from_rankings(
    *,
    golden_set: GoldenSet,
    rankings: Mapping[str, Sequence[str]],
    system: str,
    depth: int,
    report: ImportReport,
    where: str,
) -> dict[int, list[PoolEntry]]:
    """Top `depth` of each ranking as pool entries; unknown documents are problems, unknown queries notes."""
    queries = {q.external_id: q.pk for q in golden_set.queries.all()}
    documents = {d.doc_id: d for d in golden_set.documents.all()}
    pools: dict[int, list[PoolEntry]] = {}
    unknown_queries = sorted(set(rankings) - set(queries))
    if unknown_queries:
        report.notes.append(
            f"{counted(len(unknown_queries), 'query id')} not in the golden set, skipped: "
            + ", ".join(unknown_queries[:20])
        )
    for qid in sorted(set(rankings) & set(queries)):
        for rank, doc_id in enumerate(list(rankings[qid])[:depth], start=1):
            doc = documents.get(doc_id)
            if doc is None:
                report.add(
                    f"{where} query {qid} rank {rank}",
                    f"{doc_id} is not a document of golden set {golden_set.slug} "
                    "(import the documents first)",
                )
                continue
            pools.setdefault(queries[qid], []).append(PoolEntry(doc, system, rank))
    return pools


def pool_import_run(
    *, golden_set: GoldenSet, data: bytes, source: str, system: str | None = None, depth: int = POOL_DEPTH
) -> ImportReport:
    """One system's top `depth` per query from a TREC run file, plus the judged documents."""
    from assay.golden.trec import TrecFormatError, read_run

    report = ImportReport(kind="run", source=source)
    system = (system or PurePath(source).stem).strip()
    if not system:
        report.add("system", "name the system this run comes from")
    text = decode_utf8(data, report)
    if text is None or not report.ok:
        return report
    try:
        run = read_run(text)
    except TrecFormatError as exc:
        for problem in exc.problems:
            where, sep, message = problem.partition(": ")
            report.add(where if sep else "", message if sep else problem)
        return report
    rankings = {qid: list(run[qid]) for qid in run}
    return pool_import_rankings(
        golden_set=golden_set, rankings=rankings, system=system, depth=depth, report=report
    )


@dataclass(frozen=True, slots=True)
class _HarnessQuery:
    id: str
    text: str
    locale: str | None
    filters: Mapping[str, Any] = field(default_factory=dict)


def pool_fetch(
    *,
    golden_set: GoldenSet,
    url: str,
    system: str,
    depth: int = POOL_DEPTH,
    params: Mapping[str, Any] | None = None,
    adapter: str = "http_json",
    concurrency: int = 8,
) -> ImportReport:
    """One system's top `depth` for every active query, by calling its search endpoint with the harness.
    A query the endpoint failed to answer is a problem: nothing is written then (rerun when it is up)."""
    from assay.harness import search_all_sync
    from assay.harness_config import HarnessConfig

    report = ImportReport(kind="run", source=f"{system} at {redact_url(url)}")
    queries = [
        _HarnessQuery(q.external_id, q.text, q.locale or None, q.filters)
        for q in golden_set.queries.filter(status=Query.Status.ACTIVE).order_by("external_id")
    ]
    try:
        config = HarnessConfig(
            url=url, adapter=adapter, size=depth, params=dict(params or {}), concurrency=concurrency
        )
    except ValueError as exc:  # a malformed URL, or one the address policy refuses (assay.netpolicy)
        report.add("search URL", str(exc))
        return report
    results = search_all_sync(queries, config)
    for result in results:
        if result.error:
            report.add(f"query {result.query_id}", f"search failed: {result.error}")
    if not report.ok:
        return report
    rankings = {r.query_id: list(r.ids) for r in results}
    return pool_import_rankings(
        golden_set=golden_set, rankings=rankings, system=system, depth=depth, report=report
    )


@transaction.atomic
def pool_import_rankings(
    *,
    golden_set: GoldenSet,
    rankings: Mapping[str, Sequence[str]],
    system: str,
    depth: int = POOL_DEPTH,
    report: ImportReport | None = None,
) -> ImportReport:
    """One system's ranked ids per query (external ids) into the pools, plus the judged documents."""
    report = report or ImportReport(kind="run", source=system)
    pools = _pools_from_rankings(
        golden_set=golden_set, rankings=rankings, system=system, depth=depth, report=report, where=system
    )
    if not report.ok:
        return report
    report.count("queries pooled", len(pools))
    report.count("pool entries", sum(len(v) for v in pools.values()))
    merged = pool_merge(pools=pools)
    report.count("candidates added", len(merged.added))
    report.count("assignments reopened", merged.reopened)
    report.count("judged candidates added", pool_add_judged(golden_set=golden_set))
    return report
