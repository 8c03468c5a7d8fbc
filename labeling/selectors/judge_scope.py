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

from labeling.models import GoldenSet, JudgeLabel, JudgeQualification


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
