"""Unjudged top-k documents (a run's, on the report page's buttons; an experiment's, docs/experiments.md
"Coverage"): queued for rating, or sent to the judge qualified for their queries (docs/runs.md, "Judge
labels in the report"). Whose documents they are is a `Gaps`: the set, the rows, the provenance."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.display import in_number
from evaluation.runs.models import EvaluationRun
from evaluation.runs.selectors import UnjudgedRow, Waiting, unjudged_in_top_k, unjudged_waiting

if TYPE_CHECKING:
    from labeling.models import GoldenSet, Judge, JudgeJob, Query
    from labeling.services import PoolEntry


@dataclass(frozen=True, slots=True)
class Gaps:
    """Unjudged top-k documents to have labeled: the golden set whose labeling set rates them, per query
    the documents and their ranks, and the provenance their pool entries record (raters never see it)."""

    golden_set: GoldenSet
    rows: list[UnjudgedRow]
    system: str


def run_gaps(run: EvaluationRun, rows: list[UnjudgedRow] | None = None) -> Gaps:
    """The run's unjudged top-k documents (`rows`, when the caller has read them already)."""
    found = unjudged_in_top_k(run=run) if rows is None else rows
    return Gaps(run.golden_version.golden_set, found, f"run:{run.pk}")


@dataclass
class UnjudgedQueued:
    """What queueing did, document by document (the words are the caller's: the report page's message,
    or another client's). Every known (query id, doc id) of the run's unjudged top k is in `states`;
    the ones this action added to their pools are also in `new`."""

    added: int = 0  # new pool candidates
    queued: dict[str, list[str]] = field(default_factory=dict)  # query id -> doc ids queued
    unknown_documents: list[tuple[str, str]] = field(default_factory=list)  # (query id, doc id) not imported
    unknown_queries: list[str] = field(default_factory=list)  # golden queries not in the labeling set
    new: set[tuple[str, str]] = field(default_factory=set)  # (query id, doc id) added to its pool now
    reopened: int = 0  # finished assignments given back to their raters because their pool grew
    states: dict[tuple[str, str], Waiting] = field(default_factory=dict)  # what each document waits for
    raters: dict[str, list[str]] = field(default_factory=dict)  # query id -> raters of its open assignments
    query_pks: dict[str, int] = field(default_factory=dict)  # query id -> labeling query pk (for links)

    def waiting(self, reason: Waiting, *, new: bool = False) -> dict[str, list[str]]:
        """The documents (per query id) in this state that were (`new`) or were not added now."""
        found: dict[str, list[str]] = {}
        for (query_id, doc_id), state in self.states.items():
            if state == reason and ((query_id, doc_id) in self.new) == new:
                found.setdefault(query_id, []).append(doc_id)
        return found


@dataclass
class UnjudgedAsked(UnjudgedQueued):
    """`queued`: the pairs sent to a judge; `jobs`: one judge job per judge asked; `no_judge`: the queries
    (ids) no judge is qualified for, whose documents were neither sent nor pooled."""

    jobs: list[JudgeJob] = field(default_factory=list)
    no_judge: list[str] = field(default_factory=list)
    no_judge_documents: int = 0  # the documents of the `no_judge` queries
    # Not sent again: (query id, doc id) pairs still waiting in an unfinished job of their judge, by job.
    already_asked: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    # Not sent: pairs labeled since the run's version was frozen (by humans or a judge).
    labeled: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class JudgeOffer:
    """What "ask the judge" would do for a run: how many unjudged pairs a qualified judge would grade and
    which judges, or why it is not offered (`reason`, when `pairs` is 0)."""

    pairs: int
    judges: tuple[str, ...]
    reason: str = ""


def _unjudged_pools(
    gaps: Gaps, outcome: UnjudgedQueued
) -> tuple[dict[str, Query], dict[int, list[PoolEntry]]]:
    """The unjudged top-k documents the labeling set knows, as pool entries per query pk (with the gaps'
    provenance, which raters never see), and the set's queries by id; the documents and queries it does
    not know are listed on `outcome` (import them first), never invented."""
    from labeling.models import Document, Query
    from labeling.services import PoolEntry

    golden_set, rows = gaps.golden_set, gaps.rows
    if not rows:
        return {}, {}
    queries = {
        q.external_id: q
        for q in Query.objects.filter(golden_set=golden_set, external_id__in=[r.query_id for r in rows])
    }
    wanted = {d for r in rows for d, _ in r.documents}
    documents = {d.doc_id: d for d in Document.objects.filter(golden_set=golden_set, doc_id__in=wanted)}
    outcome.query_pks = {qid: q.pk for qid, q in queries.items()}
    system = gaps.system
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


def _record_states(
    gaps: Gaps,
    outcome: UnjudgedQueued,
    queries: dict[str, Query],
    pools: dict[int, list[PoolEntry]],
    added: Collection[tuple[int, int]],
) -> None:
    external = {q.pk: qid for qid, q in queries.items()}
    pairs = {
        (q, entry.document.pk): entry.document.doc_id for q, entries in pools.items() for entry in entries
    }
    states, raters = unjudged_waiting(golden_set=gaps.golden_set, pairs=pairs)
    for (query_pk, document_pk), doc_id in pairs.items():
        key = (external[query_pk], doc_id)
        outcome.states[key] = states[(query_pk, document_pk)]
        if (query_pk, document_pk) in added:
            outcome.new.add(key)
    outcome.raters = {external[q]: names for q, names in raters.items() if q in external}


def unjudged_queue(*, run: EvaluationRun, by: Any = None) -> UnjudgedQueued:
    """`gaps_queue` of the run's unjudged top-k documents."""
    return gaps_queue(gaps=run_gaps(run), by=by)


def gaps_queue(*, gaps: Gaps, by: Any = None) -> UnjudgedQueued:
    """Queue unjudged top-k documents for rating: each joins its query's candidate pool, reopening
    finished assignments of that query. The outcome says, per document, whether it was added and what
    it waits for now (`Waiting`): a document already in its pool changes nothing."""
    from labeling.services import PoolMerged, pool_merge

    outcome = UnjudgedQueued()
    queries, pools = _unjudged_pools(gaps, outcome)
    external = {q.pk: qid for qid, q in queries.items()}
    for query_pk, entries in pools.items():
        outcome.queued[external[query_pk]] = [entry.document.doc_id for entry in entries]
    merged = pool_merge(pools=pools) if pools else PoolMerged()
    outcome.added, outcome.reopened = len(merged.added), merged.reopened
    _record_states(gaps, outcome, queries, pools, merged.added)
    return outcome


def _judge_plan(
    gaps: Gaps, outcome: UnjudgedAsked
) -> tuple[dict[int, Query], dict[int, Judge], dict[int, list[PoolEntry]]]:
    """What "ask the judge" would send, written nowhere: the set's queries by pk, the judge of each
    query a judge is qualified for, and the pool entries to send per query pk. What is left out, and
    why, goes on `outcome` (`no_judge`, `already_asked`, `labeled`; `queued` lists what would be sent)."""
    from labeling.models import JudgeJob, JudgeJobItem
    from labeling.selectors.judge_scope import newest_qualified_judges

    queries, pools = _unjudged_pools(gaps, outcome)
    by_pk = {q.pk: q for q in queries.values()}
    judges = newest_qualified_judges(golden_set=gaps.golden_set, queries=[by_pk[pk] for pk in pools])
    states, _ = unjudged_waiting(
        golden_set=gaps.golden_set,
        pairs=[(q, entry.document.pk) for q, entries in pools.items() if q in judges for entry in entries],
    )
    waiting = {
        (query_pk, document_pk, judge_pk): job_pk
        for query_pk, document_pk, job_pk, judge_pk in JudgeJobItem.objects.filter(
            query_id__in=list(judges),
            done=False,
            job__status__in=[JudgeJob.Status.QUEUED, JudgeJob.Status.RUNNING],
        ).values_list("query_id", "document_id", "job_id", "job__judge_id")
    }
    sent: dict[int, list[PoolEntry]] = {}
    for query_pk, entries in pools.items():
        query = by_pk[query_pk]
        judge = judges.get(query_pk)
        if judge is None:
            outcome.no_judge.append(query.external_id)
            outcome.no_judge_documents += len(entries)
            continue
        for entry in entries:
            pair = (query.external_id, entry.document.doc_id)
            job_pk = waiting.get((query_pk, entry.document.pk, judge.pk))
            if job_pk is not None:  # asking again would pay for the same answer twice
                outcome.already_asked.setdefault(job_pk, []).append(pair)
            elif states[(query_pk, entry.document.pk)] == Waiting.LABELED:  # a judge label would not count
                outcome.labeled.append(pair)
            else:
                sent.setdefault(query_pk, []).append(entry)
        if query_pk in sent:
            outcome.queued[query.external_id] = [entry.document.doc_id for entry in sent[query_pk]]
    return by_pk, judges, sent


def unjudged_ask_judge(*, run: EvaluationRun, by: Any = None) -> UnjudgedAsked:
    """`gaps_ask_judge` of the run's unjudged top-k documents."""
    return gaps_ask_judge(gaps=run_gaps(run), by=by)


def gaps_ask_judge(*, gaps: Gaps, by: Any = None) -> UnjudgedAsked:
    """Send unjudged top-k documents to a judge: per query, the judge of the newest active
    qualification covering it (`labeling.selectors.judge_scope`), one job per judge over exactly those
    (query, document) pairs (`judge_job_create`). The documents join their pools, since a judge's label
    fills only a pool pair no human labeled, but unlike `unjudged_queue` no finished assignment is reopened:
    the judge is asked, not the raters. A query no judge is qualified for is listed in `no_judge` and left
    alone; a pair still waiting in an unfinished job of its judge (`already_asked`) or labeled since the
    version was frozen (`labeled`: a judge label would not count) is not sent."""
    from labeling.services import pool_merge
    from labeling.services.judges import judge_job_create

    outcome = UnjudgedAsked()
    by_pk, judges, sent = _judge_plan(gaps, outcome)
    asked: dict[int, tuple[Judge, list[tuple[int, int]]]] = {}
    for query_pk, entries in sent.items():
        judge = judges[query_pk]
        asked.setdefault(judge.pk, (judge, []))[1].extend((query_pk, entry.document.pk) for entry in entries)
    outcome.added = len(pool_merge(pools=sent, reopen=False).added) if sent else 0
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


def unjudged_judge_offer(*, run: EvaluationRun, rows: list[UnjudgedRow] | None = None) -> JudgeOffer:
    """`gaps_judge_offer` of the run's unjudged top-k documents (`rows`, when read already)."""
    return gaps_judge_offer(gaps=run_gaps(run, rows))


def gaps_judge_offer(*, gaps: Gaps) -> JudgeOffer:
    """What "ask the judge" would send, or why it is not offered (the pages' buttons): the same plan the
    button carries out (`_judge_plan`), so the offer counts what a press would send."""
    probe = UnjudgedAsked()
    _, judges, sent = _judge_plan(gaps, probe)
    if not (sent or probe.no_judge or probe.already_asked or probe.labeled):
        return JudgeOffer(0, (), "none of the unjudged documents is a document of the labeling set")
    if not judges:
        return JudgeOffer(
            0,
            (),
            "no judge is qualified for the strata and locales of these queries (qualify one on its page)",
        )
    if not sent:
        waiting = sum(len(pairs) for pairs in probe.already_asked.values())
        jobs = ", ".join(str(pk) for pk in sorted(probe.already_asked))
        reasons = (
            [f"{waiting} still wait in judge {in_number(len(probe.already_asked), 'job')} {jobs}"]
            if waiting
            else []
        )
        reasons += (
            [f"{len(probe.labeled)} are labeled since this version was frozen"] if probe.labeled else []
        )
        return JudgeOffer(0, (), "nothing left to send: " + "; ".join(reasons))
    pairs = sum(len(entries) for entries in sent.values())
    return JudgeOffer(pairs, tuple(sorted({judges[pk].name for pk in sent})))
