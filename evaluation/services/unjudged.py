"""A run's unjudged top-k documents (the report page's buttons): queued for rating, or sent to the judge
qualified for their queries (docs/runs.md, "Judge labels in the report")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaluation.models import EvaluationRun

if TYPE_CHECKING:
    from labeling.models import Judge, JudgeJob, Query
    from labeling.services import PoolEntry


@dataclass
class UnjudgedQueued:
    added: int = 0  # new pool candidates
    queued: dict[str, list[str]] = field(default_factory=dict)  # query id -> doc ids queued
    unknown_documents: list[tuple[str, str]] = field(default_factory=list)  # (query id, doc id) not imported
    unknown_queries: list[str] = field(default_factory=list)  # golden queries not in the labeling set


@dataclass
class UnjudgedAsked(UnjudgedQueued):
    """`queued`: the pairs sent to a judge; `jobs`: one judge job per judge asked; `no_judge`: the queries
    (ids) no judge is qualified for, whose documents were neither sent nor pooled."""

    jobs: list[JudgeJob] = field(default_factory=list)
    no_judge: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class JudgeOffer:
    """What "ask the judge" would do for a run: how many unjudged pairs a qualified judge would grade and
    which judges, or why it is not offered (`reason`, when `pairs` is 0)."""

    pairs: int
    judges: tuple[str, ...]
    reason: str = ""


def _unjudged_pools(
    run: EvaluationRun, outcome: UnjudgedQueued
) -> tuple[dict[str, Query], dict[int, list[PoolEntry]]]:
    """The run's unjudged top-k documents the labeling set knows, as pool entries per query pk (with the
    run as provenance, which raters never see), and the set's queries by id; the documents and queries
    it does not know are listed on `outcome` (import them first), never invented."""
    from evaluation.selectors import unjudged_in_top_k
    from labeling.models import Document, Query
    from labeling.services import PoolEntry

    golden_set = run.golden_version.golden_set
    rows = unjudged_in_top_k(run=run)
    if not rows:
        return {}, {}
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
    return queries, pools


def unjudged_queue(*, run: EvaluationRun, by: Any = None) -> UnjudgedQueued:
    """Queue the run's unjudged top-k documents for rating: each joins its query's candidate pool,
    reopening finished assignments of that query."""
    from labeling.services import pool_merge

    outcome = UnjudgedQueued()
    queries, pools = _unjudged_pools(run, outcome)
    external = {q.pk: qid for qid, q in queries.items()}
    for query_pk, entries in pools.items():
        outcome.queued[external[query_pk]] = [entry.document.doc_id for entry in entries]
    outcome.added = pool_merge(pools=pools) if pools else 0
    return outcome


def unjudged_ask_judge(*, run: EvaluationRun, by: Any = None) -> UnjudgedAsked:
    """Send the run's unjudged top-k documents to a judge: per query, the judge of the newest active
    qualification covering it (`labeling.selectors.judge_scope`), one job per judge over exactly those
    (query, document) pairs (`judge_job_create`). The documents join their pools, since a judge's label
    fills only a pool pair no human labeled, but unlike `unjudged_queue` no finished assignment is reopened:
    the judge is asked, not the raters. A query no judge is qualified for is listed in `no_judge` and left
    alone."""
    from labeling.selectors.judge_scope import newest_qualified_judges
    from labeling.services import pool_merge
    from labeling.services.judges import judge_job_create

    outcome = UnjudgedAsked()
    queries, pools = _unjudged_pools(run, outcome)
    by_pk = {q.pk: q for q in queries.values()}
    judges = newest_qualified_judges(
        golden_set=run.golden_version.golden_set, queries=[by_pk[pk] for pk in pools]
    )
    asked: dict[int, tuple[Judge, list[tuple[int, int]]]] = {}
    for query_pk, entries in pools.items():
        query = by_pk[query_pk]
        judge = judges.get(query_pk)
        if judge is None:
            outcome.no_judge.append(query.external_id)
            continue
        pairs = asked.setdefault(judge.pk, (judge, []))[1]
        pairs.extend((query_pk, entry.document.pk) for entry in entries)
        outcome.queued[query.external_id] = [entry.document.doc_id for entry in entries]
    sent = {pk: entries for pk, entries in pools.items() if pk in judges}
    outcome.added = pool_merge(pools=sent, reopen=False) if sent else 0
    for judge, pairs in asked.values():
        outcome.jobs.append(
            judge_job_create(
                judge=judge,
                queries=[by_pk[q] for q in dict.fromkeys(q for q, _ in pairs)],
                pairs=pairs,
                by=by,
            )
        )
    return outcome


def unjudged_judge_offer(*, run: EvaluationRun) -> JudgeOffer:
    """What "ask the judge" would send for this run, or why it is not offered (the report page's button)."""
    from labeling.selectors.judge_scope import newest_qualified_judges

    probe = UnjudgedQueued()
    queries, pools = _unjudged_pools(run, probe)
    if not pools:
        return JudgeOffer(0, (), "none of the unjudged documents is a document of the labeling set")
    by_pk = {q.pk: q for q in queries.values()}
    judges = newest_qualified_judges(
        golden_set=run.golden_version.golden_set, queries=[by_pk[pk] for pk in pools]
    )
    if not judges:
        return JudgeOffer(
            0,
            (),
            "no judge is qualified for the strata and locales of these queries (qualify one on its page)",
        )
    pairs = sum(len(entries) for pk, entries in pools.items() if pk in judges)
    return JudgeOffer(pairs, tuple(sorted({j.name for j in judges.values()})))
