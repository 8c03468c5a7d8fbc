"""A run's query opened onto its evidence (docs/runs.md, "Evidence"): the run's list beside its
baseline's, each with the labels it was scored on, the nDCG change and the overlap, drawn by the evidence
pages' one helper (`evaluation.runs.evidence`, `templates/evaluation/runs/evidence.html`; a study's and an
experiment's evidence pages are `evaluation.studies.evidence_views` and
`evaluation.experiments.evidence_views`).

Who: those who review the run's set (`evaluation.runs.access`); everyone else gets 404, raters included
(the pages name systems and ranks). The query is `?query=<id>`: an id that names no query of the run is a
404 that says so.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from evaluation.runs import access
from evaluation.runs.evidence import (
    EvidenceList,
    evidence_context,
    evidence_query_id,
    golden_query,
    grades_of,
)
from evaluation.runs.list_specs import per_query_found
from evaluation.runs.models import EvaluationRun, QueryRunResult
from evaluation.runs.report_page import baseline_report
from evaluation.runs.selectors import resolved_golden


def _run_side(run: EvaluationRun, query_id: str, role: str, grades: dict[str, int]) -> EvidenceList:
    result = QueryRunResult.objects.filter(run=run, query_id=query_id).first()
    return EvidenceList(
        name=run.label,
        role=role,
        link=reverse("evaluation:run_detail", args=[run.pk]),
        ids=list(result.ids) if result else [],
        titles=list(result.titles) if result else [],
        grades=grades,
        error=result.error if result is not None else "not searched in this run",
    )


def _ndcg_in(report: dict[str, Any] | None, query_id: str) -> float | None:
    row = next((r for r in (report or {}).get("per_query", []) if r["id"] == query_id), None)
    return None if row is None else row.get("ndcg")


@require_GET
def run_query_evidence(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run's list for one query beside its baseline's (the run the gate compared it with), labeled
    with the labels each was scored on there (the baseline re-scored on the run's version when the gate
    re-scored it)."""
    run = access.get_run(request.user, run_id)
    query_id = evidence_query_id(request)
    if run.report is None:
        raise Http404(f"run {run.pk} has no report yet")
    baseline_run, base_report = baseline_report(run)
    if baseline_run is None or not access.runs_for(request.user).filter(pk=baseline_run.pk).exists():
        raise Http404(f"run {run.pk} was not compared with a baseline")
    golden = resolved_golden(run).golden
    query = golden_query(golden, query_id)
    base_golden = golden if run.baseline_rescore is not None else resolved_golden(baseline_run).golden
    a = _run_side(baseline_run, query_id, "the baseline", grades_of(base_golden, query_id))
    b = _run_side(run, query_id, "this run", query.grades)
    before, after = _ndcg_in(base_report, query_id), _ndcg_in(run.report, query_id)
    context = evidence_context(
        query=query,
        a=a,
        b=b,
        k=golden.k,
        ndcg_change=None if before is None or after is None else after - before,
        # Back to the report's list of every query, open on this query's row.
        back=(reverse("evaluation:run_detail", args=[run.pk]) + per_query_found(query_id), run.label),
        where=f"as the runs returned them (the top {golden.k})",
    )
    context["title"] = f"Run {run.pk}, query {query_id}"
    return render(request, "evaluation/runs/evidence.html", context)
