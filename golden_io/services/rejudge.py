"""Re-judging: documents whose content changed since a version was frozen, queued again for rating.

Part of `golden_io.services`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count

from golden_io import selectors
from golden_io.models import (
    GoldenVersion,
)
from golden_io.services.freeze import REJUDGE_SYSTEM, FreezeError
from labeling.models import Assignment, Document, Query
from labeling.roles import raters_of
from labeling.services import (
    PoolEntry,
    assignment_rejudge_create,
    candidates_add,
)

# ------------------------------------------------------------------------------------------ re-judging


@dataclass(slots=True)
class RequeueReport:
    assignments: int = 0
    candidates_added: int = 0
    queued: list[str] = field(default_factory=list)  # "q-1: doc-7, doc-9 -> bob"
    notes: list[str] = field(default_factory=list)


@transaction.atomic
def stale_requeue(*, version: GoldenVersion, doc_ids: Sequence[str] | None = None) -> RequeueReport:
    """Queue the version's stale documents (all, or `doc_ids`) for re-judging.

    Per query that judged them, one assignment scoped to those documents goes to a rater of the set who
    has not held the query (nobody grades a query twice; see labeling's Assignment constraint), the
    least loaded first. A query with no such rater left is reported, not skipped silently.
    """
    golden_set = version.golden_set
    stale = selectors.stale_documents(version=version)
    if doc_ids is not None:
        wanted = set(doc_ids)
        unknown = wanted - {s.doc_id for s in stale}
        if unknown:
            raise FreezeError([f"{d} is not a stale document of {version}" for d in sorted(unknown)])
        stale = [s for s in stale if s.doc_id in wanted]
    report = RequeueReport()
    if not stale:
        report.notes.append(f"{version} has no stale documents")
        return report
    by_query: dict[str, list[str]] = {}
    for s in stale:
        if s.live_doc_id is not None:
            for qid in s.queries:
                by_query.setdefault(qid, []).append(s.live_doc_id)
    raters = list(raters_of(golden_set).order_by("id"))
    load = dict(
        Assignment.objects.filter(rater__in=raters, status=Assignment.Status.OPEN)
        .values_list("rater")
        .annotate(n=Count("id"))
        .values_list("rater", "n")
    )
    queries = {
        q.external_id: q
        for q in Query.objects.filter(golden_set=golden_set, external_id__in=list(by_query)).prefetch_related(
            "assignments"
        )
    }
    for qid, live_ids in sorted(by_query.items()):
        query = queries.get(qid)
        if query is None or query.status != Query.Status.ACTIVE:
            report.notes.append(f"query {qid} is retired or gone: not queued")
            continue
        docs = list(Document.objects.filter(golden_set=golden_set, doc_id__in=live_ids))
        report.candidates_added += candidates_add(
            query=query, entries=[PoolEntry(d, REJUDGE_SYSTEM, None) for d in docs]
        )
        held = {a.rater_id for a in query.assignments.all() if a.calibration_round_id is None}
        free = [r for r in raters if r.pk not in held]
        if not free:
            report.notes.append(f"query {qid}: every rater of the set has graded it before; add a rater")
            continue
        rater = min(free, key=lambda r: (load.get(r.pk, 0), r.pk))
        assignment_rejudge_create(query=query, rater=rater, documents=docs)
        load[rater.pk] = load.get(rater.pk, 0) + 1
        report.assignments += 1
        report.queued.append(f"{qid}: {', '.join(sorted(d.doc_id for d in docs))} -> {rater.username}")
    return report
