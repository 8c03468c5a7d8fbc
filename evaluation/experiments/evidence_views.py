"""An experiment's configuration opened onto its evidence (docs/experiments.md, "Evidence"): each query
searched by both the baseline and the configuration, with nDCG in each, the change and the overlap; and
one query's two stored lists side by side with their frozen labels, drawn by the evidence pages' one
helper (`evaluation.runs.evidence`). Who: those who review the experiment's set
(`evaluation.experiments.access`); everyone else gets 404.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from assay.display import params_text
from assay.overlap import overlap
from evaluation.experiments.access import get_experiment
from evaluation.experiments.models import Experiment, ExperimentResult
from evaluation.experiments.services.coverage import experiment_result_current
from evaluation.runs.compare_page import compare_choice_shown
from evaluation.runs.evidence import EvidenceList, evidence_context, evidence_query_id, golden_query, ndcg_of
from evaluation.runs.list_specs import picker_spec
from evaluation.runs.overlap_page import note, query_shown, with_rbo
from evaluation.runs.selectors import golden_of
from labeling.lists import list_page


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
    experiment = get_experiment(request.user, experiment_id)
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
    return render(request, "evaluation/experiments/experiment_queries.html", context)


@require_GET
def experiment_query_evidence(request: HttpRequest, experiment_id: int, slot: int) -> HttpResponse:
    experiment = get_experiment(request.user, experiment_id)
    config, golden = _config(experiment, slot)
    query_id = evidence_query_id(request)
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
    return render(request, "evaluation/runs/evidence.html", context)
