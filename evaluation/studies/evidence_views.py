"""A study's query opened onto its evidence (docs/sxs.md, "Evidence"): the two lists as the raters saw
them, with their frozen labels, the nDCG change, the overlap and every rater's answer un-blinded, drawn by
the evidence pages' one helper (`evaluation.runs.evidence`). Who: those who review the study's set
(`evaluation.studies.access`); everyone else gets 404, raters included.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from assay.sxs import REASON_LABELS
from evaluation.runs.evidence import (
    EvidenceList,
    evidence_context,
    evidence_query_id,
    golden_query,
    grades_of,
)
from evaluation.runs.selectors import resolved_golden
from evaluation.studies.access import get_study
from evaluation.studies.models import StudyTask, SxsStudy


def _answer_row(task: StudyTask, study: SxsStudy) -> dict[str, Any]:
    """One rater's answer, un-blinded: which run was on the left, the preference as shown and in the
    candidate's favour, the reasons, junk per run and the note."""
    left, right = ("B", "A") if task.candidate_left else ("A", "B")
    row: dict[str, Any] = {
        "rater": task.rater.username,
        "left": left,
        "right": right,
        "answered": task.answered,
        "reasons": [REASON_LABELS.get(tag, tag) for tag in task.reasons],
        "note": task.note,
    }
    if task.answered and task.preference is not None:
        undone = task.undone()
        row.update(
            {
                "shown": task.preference,
                "preference": undone["preference"],
                "junk": [
                    side
                    for side, junk in (("A", undone["junk_baseline"]), ("B", undone["junk_candidate"]))
                    if junk
                ],
            }
        )
    return row


@require_GET
def study_query_evidence(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_study(request.user, pk)
    query_id = evidence_query_id(request)
    item = study.queries.filter(query_id=query_id).first()
    if item is None:
        raise Http404(f"study {study.pk} has no query {query_id!r}")
    labels = [resolved_golden(run).golden for run in (study.run_a, study.run_b)]
    sides = [
        EvidenceList(
            name=run.label,
            role=role,
            link=reverse("evaluation:run_detail", args=[run.pk]),
            ids=[card["id"] for card in cards],
            titles=[card.get("title", "") for card in cards],
            grades=grades_of(golden, query_id),
        )
        for run, role, cards, golden in (
            (study.run_a, "the baseline", item.cards_a, labels[0]),
            (study.run_b, "the candidate", item.cards_b, labels[1]),
        )
    ]
    tasks = item.tasks.select_related("rater").order_by("rater__username")
    context = evidence_context(
        query=golden_query(labels[0], query_id),
        a=sides[0],
        b=sides[1],
        k=study.shown,
        ndcg_change=item.ndcg_change,
        back=(
            reverse("evaluation:study_detail", args=[study.pk]) + "#study-results",
            f"Study {study.pk}: {study.name}",
        ),
        where=f"as the raters saw them (the top {study.shown} of each run)",
    )
    context.update(
        {
            "study": study,
            "item": item,
            "answers": [_answer_row(task, study) for task in tasks],
            "title": f"Study {study.pk}, query {query_id}",
        }
    )
    return render(request, "evaluation/runs/evidence.html", context)
