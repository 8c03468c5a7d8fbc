"""Every figure opens onto its evidence: one query's two result lists side by side with their frozen
labels, nDCG change and overlap (`evaluation.evidence`, `templates/evaluation/evidence.html`), opened from
a study's results, a run's per-query rows and an experiment's per-query view of a configuration.

Who: those who review the set (the study's, the run's, the experiment's: `evaluation.access`,
`evaluation.study_access`); everyone else gets 404, raters included (the pages name systems and ranks).
The query is `?query=<id>`: an id that names no query of the object is a 404 that says so.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from assay.display import params_text
from assay.overlap import overlap
from assay.sxs import REASON_LABELS
from evaluation import access
from evaluation.evidence import EvidenceList, evidence_context, golden_query, grades_of, ndcg_of
from evaluation.experiment_models import Experiment, ExperimentResult
from evaluation.list_specs import per_query_found, picker_spec
from evaluation.models import EvaluationRun, QueryRunResult
from evaluation.overlap_page import note, query_shown, with_rbo
from evaluation.report_page import baseline_report, compare_choice_shown
from evaluation.selectors import golden_of, resolved_golden
from evaluation.services.experiment_coverage import experiment_result_current
from evaluation.study_access import get_study
from evaluation.study_models import StudyTask, SxsStudy
from labeling.lists import list_page


def _query_id(request: HttpRequest) -> str:
    query_id = request.GET.get("query", "")
    if not query_id:
        raise Http404("give a query: ?query=<id>")
    return query_id


# ------------------------------------------------------------------------------------- a study's query


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
    query_id = _query_id(request)
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
    return render(request, "evaluation/evidence.html", context)


# ------------------------------------------------------------------------------------- a run's query


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
    query_id = _query_id(request)
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
    return render(request, "evaluation/evidence.html", context)


# ------------------------------------------------------------------------------------- an experiment


def _config(experiment: Experiment, slot: int) -> tuple[dict[str, Any], Any]:
    """The experiment's standing result and configuration `slot` (1 the grid's first) of it, or 404."""
    result, rescore = experiment_result_current(experiment)
    if result is None or not 1 <= slot <= len(result["configs"]):
        raise Http404(f"experiment {experiment.pk} has no configuration {slot}")
    version = rescore.golden_version if rescore is not None else experiment.golden_version
    return result["configs"][slot - 1], golden_of(version)


def _slot_lists(
    experiment: Experiment, slot: int, query_id: str | None = None
) -> dict[tuple[int, str], ExperimentResult]:
    """The stored lists of the baseline (slot 0) and configuration `slot`: every query's, or one's."""
    rows = ExperimentResult.objects.filter(experiment=experiment, slot__in=[0, slot])
    if query_id is not None:
        rows = rows.filter(query_id=query_id)
    return {(row.slot, row.query_id): row for row in rows}


def _experiment_side(
    row: ExperimentResult | None, name: str, role: str, link: str, grades: dict[str, int]
) -> EvidenceList:
    return EvidenceList(
        name=name,
        role=role,
        link=link,
        ids=list(row.ids) if row else [],
        titles=list(row.titles) if row else [],
        grades=grades,
        error=(row.error if row is not None else "not searched in this configuration"),
    )


@require_GET
def experiment_config_queries(request: HttpRequest, experiment_id: int, slot: int) -> HttpResponse:
    """Each query searched by both the baseline and configuration `slot`: nDCG in each, the change and
    the overlap, the largest loss first; each opens its evidence."""
    experiment = access.get_experiment(request.user, experiment_id)
    config, golden = _config(experiment, slot)
    lists = _slot_lists(experiment, slot)
    holdout = set((experiment.split or {}).get("holdout", []))
    rows, overlaps = [], {}
    for query in golden.queries:
        base, mine = lists.get((0, query.id)), lists.get((slot, query.id))
        if base is None or mine is None:
            continue
        values = [ndcg_of(golden, query, row.ids, row.error) for row in (base, mine)]
        if base.error is None and mine.error is None:
            overlaps[query.id] = overlap(list(base.ids), list(mine.ids), k=golden.k)
        rows.append(
            {
                "id": query.id,
                "text": query.text,
                "stratum": query.stratum or "",
                "part": "held-out" if query.id in holdout else "tuning",
                "a_value": values[0],
                "b_value": values[1],
                "change_value": None if values[0] is None or values[1] is None else values[1] - values[0],
            }
        )
    with_rbo(rows, overlaps)
    choices = list_page(request, rows, picker_spec(rows))  # the compare page's picker: same filters, sorts
    choices.items = [
        {**compare_choice_shown(row), "overlap": query_shown(overlaps.get(row["id"]))}
        for row in choices.items
    ]
    context = {
        "experiment": experiment,
        "slot": slot,
        "config": config,
        "params": params_text(config["grid"]),
        "choices": choices,
        "overlap_note": note(golden.k),
    }
    return render(request, "evaluation/experiment_queries.html", context)


@require_GET
def experiment_query_evidence(request: HttpRequest, experiment_id: int, slot: int) -> HttpResponse:
    experiment = access.get_experiment(request.user, experiment_id)
    config, golden = _config(experiment, slot)
    query_id = _query_id(request)
    query = golden_query(golden, query_id)
    lists = _slot_lists(experiment, slot, query_id)
    if (0, query_id) not in lists and (slot, query_id) not in lists:
        raise Http404(f"experiment {experiment.pk} did not search {query_id!r}")
    queries_url = reverse("evaluation:experiment_config_queries", args=[experiment.pk, slot])
    fixed = params_text(experiment.fixed_params)
    a = _experiment_side(
        lists.get((0, query_id)),
        f"the baseline ({fixed})" if fixed else "the baseline (the target as it was)",
        "the baseline",
        reverse("evaluation:experiment_detail", args=[experiment.pk]),
        query.grades,
    )
    b = _experiment_side(
        lists.get((slot, query_id)),
        f"configuration {slot} ({params_text(config['grid'])})",
        f"configuration {slot}",
        queries_url,
        query.grades,
    )
    values = [ndcg_of(golden, query, side.ids, side.error) for side in (a, b)]
    context = evidence_context(
        query=query,
        a=a,
        b=b,
        k=golden.k,
        ndcg_change=None if values[0] is None or values[1] is None else values[1] - values[0],
        back=(queries_url, f"Experiment {experiment.pk}, configuration {slot}: each query"),
        where=f"as the experiment stored them (the top {golden.k})",
    )
    context["title"] = f"Experiment {experiment.pk}, configuration {slot}, query {query_id}"
    context["experiment"] = experiment
    return render(request, "evaluation/evidence.html", context)
