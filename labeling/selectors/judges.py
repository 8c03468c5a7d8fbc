"""Reads of machine judges for the reviewers' pages (docs/judge.md). Nothing here is shown to a rater.

Imported as `labeling.selectors.judges` (not re-exported by `labeling.selectors`).
"""

from __future__ import annotations

from django.db.models import Count, QuerySet

from labeling.models import GoldenSet, Judge, JudgeJob, JudgeJobItem, JudgeLabel, Query


def judge_list(*, golden_set: GoldenSet) -> QuerySet[Judge]:
    return (
        Judge.objects.filter(golden_set=golden_set)
        .select_related("previous", "created_by")
        .annotate(n_labels=Count("labels", distinct=True), n_jobs=Count("jobs", distinct=True))
    )


def judge_jobs(*, judge: Judge) -> QuerySet[JudgeJob]:
    return JudgeJob.objects.filter(judge=judge).select_related("created_by")


def judge_labels(*, judge: Judge) -> QuerySet[JudgeLabel]:
    return JudgeLabel.objects.filter(judge=judge).select_related("query", "document")


def judge_job_failures(*, job: JudgeJob, limit: int = 50) -> list[JudgeJobItem]:
    """The job's pairs that got no grade: a failure (no answer came) or an answer that broke the
    contract, in the job's order."""
    return list(
        JudgeJobItem.objects.filter(job=job, done=True)
        .exclude(failure="", answer__grade__isnull=False)
        .select_related("query", "document", "answer")
        .order_by("index")[:limit]
    )


def judge_query_choices(*, golden_set: GoldenSet) -> list[tuple[str, str]]:
    """The set's active queries with a pool, as (pk, "external id: text") choices."""
    rows = (
        Query.objects.filter(golden_set=golden_set, status=Query.Status.ACTIVE, candidates__isnull=False)
        .distinct()
        .order_by("external_id")
        .values_list("pk", "external_id", "text")
    )
    return [(str(pk), f"{external_id}: {text[:80]}") for pk, external_id, text in rows]
