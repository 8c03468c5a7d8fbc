"""Reads of a run's unjudged documents: the documents of its top k with no label in its golden version,
and what each waits for in the labeling set now (docs/runs.md, "Unjudged documents")."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from evaluation.runs.models import EvaluationRun, QueryRunResult
from evaluation.runs.selectors.runs import resolved_golden
from labeling.models import Assignment, GoldenSet
from labeling.selectors.labels import labels_consolidated


class Waiting(StrEnum):
    """Why a document of a run's unjudged top k has no label in the run's golden version, read in the
    labeling set now (docs/runs.md, "Unjudged documents")."""

    LABELED = "labeled"  # labeled since the version was frozen: a new version would score it
    REVIEWER = "reviewer"  # graded, and a reviewer decides (a disagreement, a proposed change)
    SECOND_RATER = "second_rater"  # graded once, the second rater of a dual-sampled query has not
    THIRD_RATER = "third_rater"  # two grades disagree, a third rater's is coming
    GRADING = "grading"  # no grade yet: an open assignment covers it
    SKIPPED = "skipped"  # no grade, and every assignment covering it is done
    UNASSIGNED = "unassigned"  # no assignment covers its query: nobody will grade it


@dataclass(frozen=True, slots=True)
class UnjudgedRow:
    query_id: str
    text: str
    documents: list[tuple[str, int]]  # (doc id, rank) of the unjudged documents in the top k


def unjudged_in_top_k(*, run: EvaluationRun) -> list[UnjudgedRow]:
    """Per query, the documents in the run's top k that have no judgment of any grade (judged@k < 1):
    the labels are going stale there. Errored queries have no list and are left out."""
    golden = resolved_golden(run).golden
    results = {
        r.query_id: r
        for r in QueryRunResult.objects.filter(run=run, error__isnull=True).only("query_id", "ids")
    }
    rows = []
    for query in golden.queries:
        result = results.get(query.id)
        if result is None:
            continue
        judged = query.grades
        docs = [(d, rank) for rank, d in enumerate(result.ids[: golden.k], start=1) if d not in judged]
        # A repeated id is one document to judge.
        unique = list({d: (d, rank) for d, rank in reversed(docs)}.values())[::-1]
        if unique:
            rows.append(UnjudgedRow(query.id, query.text, sorted(unique, key=lambda x: x[1])))
    return rows


def unjudged_waiting(
    *, golden_set: GoldenSet, pairs: Collection[tuple[int, int]]
) -> tuple[dict[tuple[int, int], Waiting], dict[int, list[str]]]:
    """What each (query pk, document pk) of the set, unjudged in a run's version, waits for, read now:
    its consolidation (`labels_consolidated`, the one reading of what counts as a label and who decides
    an unresolved one), else the live assignments covering it. With the raters of the open ones per
    query (their names are for reviewers only: the report page's actions are theirs)."""
    if not pairs:
        return {}, {}
    query_pks = {q for q, _ in pairs}
    consolidated = labels_consolidated(
        golden_set=golden_set, query_ids=query_pks, document_ids={d for _, d in pairs}
    )
    labeled = {(label.query_id, label.document_id) for label in consolidated.labels}
    awaiting = {(u.query_id, u.document_id): u.awaiting for u in consolidated.unresolved}
    live = (
        Assignment.objects.everyday()
        .filter(query_id__in=query_pks)
        .exclude(status=Assignment.Status.REASSIGNED)
        .exclude(kind=Assignment.Kind.GOLD)
    )
    scopes: dict[int, set[int]] = {}
    for pk, document_id in live.filter(scope__isnull=False).values_list("pk", "scope__document_id"):
        scopes.setdefault(pk, set()).add(document_id)
    by_query: dict[int, list[tuple[int, int]]] = {}
    for pair in pairs:
        by_query.setdefault(pair[0], []).append(pair)
    covering: dict[tuple[int, int], set[str]] = {}  # pair -> statuses of the assignments covering it
    raters: dict[int, list[str]] = {}
    for pk, query_pk, status, rater in live.values_list("pk", "query_id", "status", "rater__username"):
        for pair in by_query[query_pk]:
            if pk not in scopes or pair[1] in scopes[pk]:
                covering.setdefault(pair, set()).add(status)
        if status == Assignment.Status.OPEN and rater not in raters.get(query_pk, []):
            raters.setdefault(query_pk, []).append(rater)
    named = {"reviewer": Waiting.REVIEWER, "second_rater": Waiting.SECOND_RATER}
    named["third_rater"] = Waiting.THIRD_RATER
    states: dict[tuple[int, int], Waiting] = {}
    for pair in pairs:
        statuses = covering.get(pair, set())
        if pair in labeled:
            states[pair] = Waiting.LABELED
        elif pair in awaiting and awaiting[pair] in named:
            states[pair] = named[awaiting[pair]]
        elif Assignment.Status.OPEN in statuses:
            states[pair] = Waiting.GRADING
        elif pair in awaiting:  # graded, waiting for something consolidation names another way
            states[pair] = Waiting.REVIEWER
        elif statuses:
            states[pair] = Waiting.SKIPPED
        else:
            states[pair] = Waiting.UNASSIGNED
    return states, {q: sorted(names) for q, names in raters.items()}
