"""Which judge labels may count, and where (docs/judge.md, "What a qualified judge does").

A judge's label counts only where the judge holds an `active` `JudgeQualification` whose scope covers the
query (its stratum and locale), and only while the document is what the judge graded (the label's content
hash is the document's). Where several qualified judges graded one pair, the one qualified most recently
speaks. Everything that uses a judge's grades (consolidation's fill-ins, the report with and without them,
"ask the judge", pre-grading) reads them here, so the rule is written once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import F

from labeling.models import FrozenLabel, GoldenSet, Judge, JudgeJobItem, JudgeLabel, JudgeQualification, Query


@dataclass(frozen=True, slots=True)
class CountedJudgeLabel:
    query_id: int
    document_id: int
    grade: int
    reason: str
    judge_id: int
    judge_name: str
    stand_in: bool
    qualification_id: int


def qualified_judge_labels(
    *, golden_set: GoldenSet, query_ids: Iterable[int] | None = None
) -> dict[tuple[int, int], CountedJudgeLabel]:
    """The judge labels of the set that count, by (query pk, document pk), in two statements."""
    qualifications = list(
        JudgeQualification.objects.filter(
            judge__golden_set=golden_set, status=JudgeQualification.Status.ACTIVE
        ).order_by("-at", "-id")
    )
    if not qualifications:
        return {}
    by_judge: dict[int, list[JudgeQualification]] = {}
    for qualification in qualifications:  # newest first, per judge too
        by_judge.setdefault(qualification.judge_id, []).append(qualification)
    rank = {q.pk: i for i, q in enumerate(qualifications)}  # 0: the newest
    labels = JudgeLabel.objects.filter(judge_id__in=by_judge, content_hash=F("document__content_hash"))
    if query_ids is not None:
        labels = labels.filter(query_id__in=list(query_ids))
    rows = labels.values_list(
        "query_id",
        "document_id",
        "grade",
        "reason",
        "judge_id",
        "judge__name",
        "judge__stand_in",
        "query__stratum",
        "query__locale",
    )
    counted: dict[tuple[int, int], CountedJudgeLabel] = {}
    for query_id, document_id, grade, reason, judge_id, name, stand_in, stratum, locale in rows:
        covering = next((q for q in by_judge[judge_id] if q.covers(stratum, locale)), None)
        if covering is None:
            continue
        key = (query_id, document_id)
        held = counted.get(key)
        if held is None or rank[covering.pk] < rank[held.qualification_id]:
            counted[key] = CountedJudgeLabel(
                query_id, document_id, grade, reason, judge_id, name, stand_in, covering.pk
            )
    return counted


def judge_qualified_for(*, judge_id: int, stratum: str, locale: str) -> JudgeQualification | None:
    """The judge's newest active qualification covering a query of this stratum and locale, if any."""
    active = JudgeQualification.objects.filter(judge_id=judge_id, status=JudgeQualification.Status.ACTIVE)
    return next((q for q in active.order_by("-at", "-id") if q.covers(stratum, locale)), None)


def newest_qualified_judges(*, golden_set: GoldenSet, queries: Iterable[Query]) -> dict[int, Judge]:
    """Per query (pk), the judge of the newest active qualification covering its stratum and locale: who
    "ask the judge" sends the query's pairs to. A query no qualification covers is absent."""
    qualifications = list(
        JudgeQualification.objects.filter(
            judge__golden_set=golden_set, status=JudgeQualification.Status.ACTIVE
        )
        .select_related("judge")
        .order_by("-at", "-id")
    )
    out: dict[int, Judge] = {}
    for query in queries:
        covering = next((q for q in qualifications if q.covers(query.stratum, query.locale)), None)
        if covering is not None:
            out[query.pk] = covering.judge
    return out


# How far a counted judge label must be from the humans' frozen label for its query to be graded first.
PREGRADE_GAP = 2


def pregrade_first(*, golden_set: GoldenSet) -> set[int]:
    """The queries (pks) whose human work comes first (docs/judge.md, "Pre-grading"): a counted judge label
    two or more grades from the pair's frozen label humans decided, or an answer of a judge qualified for
    the query that broke the answer contract. Only the order of assignment uses it: raters are never shown
    a judge's grade, its errors, or that a judge exists."""
    counted = qualified_judge_labels(golden_set=golden_set)
    frozen = FrozenLabel.objects.filter(
        query__golden_set=golden_set, query__status=Query.Status.ACTIVE
    ).exclude(source="judge")
    first = {
        query_id
        for query_id, document_id, grade in frozen.values_list("query_id", "document_id", "grade")
        if (label := counted.get((query_id, document_id))) is not None
        and abs(label.grade - grade) >= PREGRADE_GAP
    }
    qualifications = list(
        JudgeQualification.objects.filter(
            judge__golden_set=golden_set, status=JudgeQualification.Status.ACTIVE
        )
    )
    if qualifications:
        erred = (
            JudgeJobItem.objects.filter(
                job__judge_id__in={q.judge_id for q in qualifications}, query__status=Query.Status.ACTIVE
            )
            .exclude(answer__error="")
            .exclude(answer__isnull=True)
            .values_list("query_id", "job__judge_id", "query__stratum", "query__locale")
            .distinct()
        )
        for query_id, judge_id, stratum, locale in erred:
            if any(q.judge_id == judge_id and q.covers(stratum, locale) for q in qualifications):
                first.add(query_id)
    return first
