"""Experiment pages (docs/experiments.md, "In the app"): the list, the form that starts one (a target, a
golden version, a grid), the page (progress while it runs; then the configurations x metrics table,
sortable, with their tuning values, the line chart or heat map, the held-out confirmation with its
intervals, the optimism and the winner's strata), cancel, **Use this configuration** (any confirmed
configuration that beat the baseline) and **Revert**.

Who sees what is the runs' rule (`evaluation.runs.access`): those who review the experiment's golden set;
everyone else gets 404."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import conditional_escape
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.display import params_text
from assay.experiment import (
    DEFAULT_ALPHA,
    DEFAULT_COVERAGE_MARGIN,
    DEFAULT_SPLIT,
    DEFAULT_TOP,
    MAX_CONFIGS,
    RANKING_METRICS,
)
from assay.inputs import id_number
from assay.metric_table import format_number
from assay.sweep_charts import SWEEP_CHART, grid_axes, sweep_heat, sweep_line
from evaluation.experiments.access import experiments_for, get_experiment
from evaluation.experiments.models import Experiment, ExperimentAdoption
from evaluation.experiments.services.adopt import (
    adoptable_configurations,
    adoption_revert,
    adoption_runs,
    experiment_adopt,
)
from evaluation.experiments.services.coverage import (
    experiment_gaps,
    experiment_rescore,
    experiment_result_current,
    rescore_version,
)
from evaluation.experiments.services.experiments import (
    ExperimentError,
    experiment_cancel,
    experiment_create,
    experiment_echoes,
    no_winner_text,
)
from evaluation.runs import access
from evaluation.runs.action_words import GAPS_ACTIONS
from evaluation.runs.forms import VersionChoiceField, version_and_target_choices
from evaluation.runs.models import EvaluationRun, SearchTarget
from evaluation.runs.overlap_page import mean_cells, note
from evaluation.runs.services.unjudged import gaps_judge_offer
from evaluation.runs.views.access_helpers import settled
from evaluation.runs.views.runs import query_link, say
from golden_io.models import GoldenVersion
from labeling.roles import is_reviewer, reviews

EXAMPLE_GRID = '{"params": {"title_weight": [0.5, 1, 3, 6, 12], "min_should_match": [1, 2, 3, 4]}}'
METRIC_LABELS = {"ndcg": "nDCG@k", "mrr": "MRR", "precision_at_k": "P@k"}
# The table's sorts: name -> what a row is sorted by (None last whichever the direction).
SORTS = ("rank", "ndcg", "mrr", "precision_at_k", "empty_rate", "judged_at_k", "errors", "holdout",
         "holdout_judged", "rbo")  # fmt: skip


class ExperimentForm(forms.Form):
    golden_version = VersionChoiceField(queryset=GoldenVersion.objects.none(), label="Golden version")
    target = forms.ModelChoiceField(queryset=SearchTarget.objects.none(), label="Search target")
    grid = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": EXAMPLE_GRID}),
        label="Grid",
        help_text='{"params": {name: [values]}} (every combination) or {"configs": [{name: value}, ...]}; '
        "at most 500 configurations, each sent as request parameters over the target's own",
    )
    metric = forms.ChoiceField(choices=[(m, METRIC_LABELS[m]) for m in RANKING_METRICS], initial="ndcg")
    split = forms.FloatField(initial=DEFAULT_SPLIT, help_text="share of each stratum's queries that tune")
    top = forms.IntegerField(
        initial=DEFAULT_TOP, max_value=MAX_CONFIGS, help_text="configurations confirmed on the held-out part"
    )
    seed = forms.IntegerField(
        initial=0, min_value=-(2**31), max_value=2**31 - 1, help_text="the split's and the intervals' seed"
    )
    alpha = forms.FloatField(
        initial=DEFAULT_ALPHA,
        required=False,
        help_text="a winner needs a held-out gain whose Holm-adjusted p-value is below it",
    )
    coverage_margin = forms.FloatField(
        initial=DEFAULT_COVERAGE_MARGIN,
        required=False,
        label="Coverage margin",
        help_text="warn when the winner's judged@k is below the baseline's by more than this",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        version_and_target_choices(self, user)


@require_GET
def experiment_list(request: HttpRequest) -> HttpResponse:
    if not is_reviewer(request.user):
        raise Http404("nothing here")
    experiments = experiments_for(request.user).defer("result", "tuning", "split", "configs")[:200]
    return render(request, "evaluation/experiments/experiment_list.html", {"experiments": experiments})


@require_GET
def experiment_row(request: HttpRequest, experiment_id: int) -> HttpResponse:
    """One row of the experiment list, polled while the experiment is queued or running (htmx swaps the
    row; a settled one stops asking)."""
    experiment = get_experiment(request.user, experiment_id)
    return render(request, "evaluation/experiments/_experiment_row.html", {"e": experiment})


@require_http_methods(["GET", "POST"])
def experiment_new(request: HttpRequest) -> HttpResponse:
    if not is_reviewer(request.user):
        raise Http404("nothing here")
    initial = {k: request.GET[k] for k in ("golden_version", "target") if k in request.GET}
    form = ExperimentForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            experiment = experiment_create(
                golden_version=data["golden_version"],
                target=data["target"],
                grid=data["grid"],
                created_by=request.user,
                fraction=data["split"],
                seed=data["seed"],
                top=data["top"],
                metric=data["metric"],
                alpha=DEFAULT_ALPHA if data["alpha"] is None else data["alpha"],
                coverage_margin=(
                    DEFAULT_COVERAGE_MARGIN if data["coverage_margin"] is None else data["coverage_margin"]
                ),
            )
        except ExperimentError as exc:
            for problem in exc.problems:
                form.add_error(None, problem)
        else:
            messages.success(request, f"Experiment {experiment.pk} queued.")
            return redirect("evaluation:experiment_detail", experiment_id=experiment.pk)
    status = 422 if request.method == "POST" else 200
    return render(request, "evaluation/experiments/experiment_new.html", {"form": form}, status=status)


def _progress(experiment: Experiment) -> dict[str, Any]:
    final = experiment.status in Experiment.FINAL
    return {
        "status": experiment.status,
        "phase": experiment.get_phase_display(),
        "done": experiment.done if not final or experiment.status != "succeeded" else experiment.total,
        "total": experiment.total,
        "errors": experiment.errors,
        "percent": 100.0 if experiment.status == "succeeded" else experiment.percent,
        "final": final,
        "error_message": experiment.error_message,
        "echoes": experiment_echoes(experiment=experiment),
    }


@require_GET
def experiment_progress(request: HttpRequest, experiment_id: int) -> HttpResponse:
    """The page's progress bar, polled; once the experiment is final the page reloads with its result."""
    experiment = get_experiment(request.user, experiment_id)
    progress = _progress(experiment)
    response = render(
        request,
        "evaluation/experiments/experiment_progress.html",
        {"experiment": experiment, "progress": progress},
    )
    return settled(request, response, progress["final"])


def _cell(value: Any, *, signed: bool = False) -> str:
    return format_number(value, signed=signed)


def _interval(interval: dict[str, Any]) -> str:
    if not interval:
        return ""
    low, high = _cell(interval.get("low"), signed=True), _cell(interval.get("high"), signed=True)
    level = interval.get("level")
    return f"[{low}, {high}]" + (f" at {level:g}" if isinstance(level, int | float) else "")


# The table's columns of tuning values, in order.
_TABLE = ("ndcg", "mrr", "precision_at_k", "empty_rate", "judged_at_k")


def _is_winner(result: dict[str, Any], config: dict[str, Any]) -> bool:
    winner = result["winner"]
    return winner is not None and (config["grid"], config["rank"]) == (winner["grid"], winner["rank"])


def _rows(result: dict[str, Any], names: list[str], sort: str) -> list[dict[str, Any]]:
    """The configurations x metrics table's rows, sorted by `sort` (`-` first: descending)."""
    metric = result["metric"]
    rows = []
    for i, config in enumerate(result["configs"]):
        tuning, held = config["tuning"], config["holdout"]
        rows.append(
            {
                "index": i + 1,
                "values": [config["grid"].get(n, "") for n in names],
                "params": params_text(config["grid"]),
                "rank": config["rank"],
                "winner": _is_winner(result, config),
                "echo": config.get("same_as_baseline", False),
                "confirmed": held is not None,
                "keys": {
                    "rank": config["rank"],
                    **{m: tuning.get(m) for m in (*_TABLE, "errors")},
                    "holdout": held.get(metric) if held else None,
                    "holdout_judged": held.get("judged_at_k") if held else None,
                    "rbo": ((tuning.get("overlap") or {}).get("rbo") or {}).get("mean"),
                },
                # against the baseline's lists (docs/metrics.md, "Overlap")
                "overlap": mean_cells(tuning.get("overlap"), recorded="overlap" in tuning),
                "cells": [_cell(tuning.get(m)) for m in _TABLE],
                "errors": tuning.get("errors", 0),
                "holdout": _cell(held.get(metric)) if held else "",
                "holdout_judged": _cell(held.get("judged_at_k")) if held else "",
            }
        )
    name = sort.lstrip("-")
    if name not in SORTS:
        name, sort = "rank", "rank"
    descending = sort.startswith("-")
    known = [r for r in rows if r["keys"][name] is not None]
    unknown = [r for r in rows if r["keys"][name] is None]
    known.sort(key=lambda r: (r["keys"][name], r["index"]), reverse=descending)
    return known + unknown


def _confirmation(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out confirmation: the baseline, then each confirmed configuration (best tuning rank
    first) with its change against the baseline, the interval and both p-values."""
    metric = result["metric"]
    rows = [
        {"label": "baseline", "params": params_text(result["baseline"]["params"]) or "(the target's own)",
         "value": _cell(result["baseline"]["holdout"].get(metric)), "n": result["baseline"]["holdout"]["n"],
         "judged": _cell(result["baseline"]["holdout"].get("judged_at_k")),
         "delta": "", "interval": "", "p": "", "p_adjusted": "", "winner": False, "rank": ""}
    ]  # fmt: skip
    confirmed = sorted((c for c in result["configs"] if c["holdout"] is not None), key=lambda c: c["rank"])
    for config in confirmed:
        held = config["holdout"]
        change = held["change"]
        interval = change.get("interval") or {}
        rows.append(
            {
                "label": f"rank {config['rank']}",
                "rank": config["rank"],
                "params": params_text(config["grid"]),
                "value": _cell(held.get(metric)),
                "n": held["n"],
                "judged": _cell(held.get("judged_at_k")),
                "delta": _cell(change.get("delta"), signed=True),
                "interval": _interval(interval),
                "p": _cell(held.get("p_value")),
                "p_adjusted": _cell(held.get("p_adjusted")),
                "winner": _is_winner(result, config),
                "overlap": mean_cells(held.get("overlap"), recorded="overlap" in held),
            }
        )
    return rows


# A run's columns no page here reads (megabytes on a large set).
_HEAVY_RUN = ("report", "gate", "key_map", "keys")


def _adoptable(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The choices of the **Use this configuration** form: each confirmed configuration that beat the
    baseline, best tuning rank first, with its held-out change and p (Holm)."""
    return [
        {
            "rank": config["rank"],
            "text": f"rank {config['rank']}{' (the winner)' if _is_winner(result, config) else ''}: "
            f"{params_text(config['grid'])}, {_cell(config['holdout']['change'].get('delta'), signed=True)} "
            f"held out, p (Holm) {_cell(config['holdout'].get('p_adjusted'))}",
        }
        for config in adoptable_configurations(result)
    ]


def _adoptions(request: HttpRequest, experiment: Experiment) -> list[dict[str, Any]]:
    """The experiment's adoptions, newest first, each with its confirming run, the side-by-side studies
    on that run and the runs that sent the adopted params (those the user sees: `access.runs_for`)."""
    adoptions = list(
        experiment.adoptions.select_related("adopted_by", "reverted_by", "target", "run__target").defer(
            *(f"run__{name}" for name in _HEAVY_RUN)
        )
    )
    used = {a.pk: adoption_runs(a) for a in adoptions}
    visible = {run.pk: run for run in _named_runs(request, {pk for pks in used.values() for pk in pks})}
    # The studies are read through the run's relations: experiments never import studies.
    runs = EvaluationRun.objects.filter(pk__in=[a.run_id for a in adoptions if a.run_id is not None])
    studies: dict[int, list[Any]] = {
        run.pk: sorted(
            {*run.studies_as_a.all(), *run.studies_as_b.all()}, key=lambda s: (s.created, s.pk), reverse=True
        )
        for run in runs.only("pk").prefetch_related("studies_as_a", "studies_as_b")
    }
    return [
        {
            "adoption": a,
            "studies": studies.get(a.run_id, []) if a.run_id is not None else [],
            "used": [visible[pk] for pk in used[a.pk] if pk in visible],
        }
        for a in adoptions
    ]


def _verdict(result: dict[str, Any]) -> str:
    winner = result["winner"]
    return f"winner {params_text(winner['grid'])}" if winner else "no winner"


def _before_after(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out confirmation as the experiment found it and as re-scored, row by row (the same
    configurations: a re-score keeps the ranking)."""
    return [
        {"label": a["label"], "params": a["params"], **{f"{k}_before": b[k] for k in _COMPARED},
         **{f"{k}_after": a[k] for k in _COMPARED}}
        for b, a in zip(_confirmation(before), _confirmation(after), strict=True)
    ]  # fmt: skip


_COMPARED = ("value", "judged", "delta", "p_adjusted")


def _coverage(experiment: Experiment, result: dict[str, Any], may_manage: bool) -> dict[str, Any]:
    """The coverage card: the best's judged@k beside the baseline's (and the warning), how many unjudged
    top-k documents the baseline and the confirmed configurations hold, what the judge would be sent,
    and the version a re-score would use."""
    gaps = experiment_gaps(experiment=experiment)
    found: dict[str, Any] = {
        **result["coverage"],
        "rows": [
            {"part": words, "baseline": _cell(part["baseline"]), "best": _cell(part["best"]),
             "drop": _cell(part["drop"], signed=True)}
            for words, part in (("tuning", result["coverage"]["tuning"]),
                                ("held-out", result["coverage"]["holdout"]))
        ],
        "gaps": sum(len(row.documents) for row in gaps.rows),
        "gap_queries": len(gaps.rows),
        "rescore_version": rescore_version(experiment=experiment),
    }  # fmt: skip
    if may_manage and gaps.rows:
        found["judge_offer"] = gaps_judge_offer(gaps=gaps)
    return found


@require_GET
def experiment_detail(request: HttpRequest, experiment_id: int) -> HttpResponse:
    experiment = get_experiment(request.user, experiment_id)
    golden_set = experiment.golden_version.golden_set
    result, rescore = experiment_result_current(experiment)
    may_manage = reviews(request.user, golden_set)
    adoptions = _adoptions(request, experiment)
    context: dict[str, Any] = {
        "experiment": experiment,
        "golden_set": golden_set,
        "progress": _progress(experiment),
        "may_manage": may_manage,
        "rescore": rescore,
        "adoptions": adoptions,
        "standing": next((row for row in adoptions if row["adoption"].stands), None),
        "chart": SWEEP_CHART,
        "fixed": params_text(experiment.fixed_params),
    }
    if result is not None:
        names = [name for name, _ in grid_axes(experiment.grid)] or sorted(
            {n for c in result["configs"] for n in c["grid"]}
        )
        sort = request.GET.get("sort", "rank")
        best = result["best"]
        change = best["change"][result["metric"]]
        context.update(
            {
                "result": result,
                "metric_label": METRIC_LABELS.get(result["metric"], result["metric"]),
                "names": names,
                "rows": _rows(result, names, sort),
                "sort": sort,
                "sorts": SORTS,
                "confirmation": _confirmation(result),
                "overlap_note": note(result["k"]),
                "best": best,
                "has_winner": result["winner"] is not None,
                "adoptable": _adoptable(result) if may_manage else [],
                "no_winner": "" if result["winner"] is not None else no_winner_text(result),
                "best_params": params_text(best["grid"]),
                "tuning_gain": _cell(best["tuning_gain"], signed=True),
                "holdout_gain": _cell(best["holdout_gain"], signed=True),
                "optimism": _cell(result["optimism"], signed=True),
                "p_adjusted": _cell(best["p_adjusted"]),
                "interval": _interval(change.get("interval") or {}),
                "strata": [
                    {
                        **s,
                        "baseline": _cell(s["baseline"]),
                        "winner": _cell(s["winner"]),
                        "delta": _cell(s["delta"], signed=True),
                    }
                    for s in result.get("best_strata", [])
                ],
                "line": sweep_line(result, experiment.grid),
                "heat": sweep_heat(result, experiment.grid),
                "coverage": _coverage(experiment, result, may_manage),
            }
        )
        if rescore is not None and experiment.result is not None:
            context["before_after"] = _before_after(experiment.result, result)
            context["verdicts"] = (_verdict(experiment.result), _verdict(result))
    return render(request, "evaluation/experiments/experiment_detail.html", context)


@require_POST
def experiment_cancel_view(request: HttpRequest, experiment_id: int) -> HttpResponse:
    experiment = get_experiment(request.user, experiment_id)
    if not reviews(request.user, experiment.golden_version.golden_set):
        raise PermissionDenied("only the set's reviewers and admins cancel an experiment")
    if experiment_cancel(experiment=experiment, by=request.user):
        messages.success(request, f"Experiment {experiment.pk} cancelled.")
    else:
        messages.warning(request, f"Experiment {experiment.pk} had already finished ({experiment.status}).")
    return redirect("evaluation:experiment_detail", experiment_id=experiment.pk)


@require_POST
def experiment_adopt_view(request: HttpRequest, experiment_id: int) -> HttpResponse:
    """**Use this configuration**: the chosen configuration's params on the target (`rank`, the winner
    when not given), then a full run (its page next)."""
    experiment = get_experiment(request.user, experiment_id)
    given = request.POST.get("rank", "")
    rank = id_number(given) if given else None
    try:
        if given and rank is None:
            raise ExperimentError([f"rank: {given[:20]!r} is not a configuration's rank (1, 2, ...)"])
        adoption = experiment_adopt(
            experiment=experiment, by=request.user, rationale=request.POST.get("rationale", ""), rank=rank
        )
    except ExperimentError as exc:
        messages.error(request, "Not used: " + "; ".join(exc.problems))
        return redirect("evaluation:experiment_detail", experiment_id=experiment.pk)
    assert adoption.run is not None
    messages.success(
        request,
        f"{experiment.target.name} now sends {adoption.params_text}; {adoption.run.label} started with it. "
        "Promote it as the baseline through the usual review once it has finished; Revert on the "
        "experiment's page puts the params before back.",
    )
    return redirect("evaluation:run_detail", run_id=adoption.run.pk)


@require_POST
def adoption_revert_view(request: HttpRequest, experiment_id: int, adoption_id: int) -> HttpResponse:
    """**Revert**: the target's params before the adoption written back, recorded with the reason."""
    experiment = get_experiment(request.user, experiment_id)
    adoption = ExperimentAdoption.objects.filter(experiment=experiment, pk=adoption_id).first()
    if adoption is None:
        raise Http404("no such adoption of this experiment")
    try:
        reverted = adoption_revert(adoption=adoption, by=request.user, reason=request.POST.get("reason", ""))
    except ExperimentError as exc:
        messages.error(request, "Not reverted: " + "; ".join(exc.problems))
    else:
        messages.success(request, _revert_text(reverted, _run_labels(request, reverted.revert_runs)))
    return redirect(
        reverse("evaluation:experiment_detail", args=[experiment.pk]) + f"#adoption-{adoption.pk}"
    )


def _named_runs(request: HttpRequest, run_ids: Iterable[int]) -> QuerySet[EvaluationRun]:
    """Those of the runs the user sees, with what their labels read only."""
    runs = access.runs_for(request.user).filter(pk__in=list(run_ids))
    return runs.select_related("target").only(*EvaluationRun.LABEL_FIELDS)


def _run_labels(request: HttpRequest, run_ids: list[int]) -> list[str]:
    labels = {run.pk: run.label for run in _named_runs(request, run_ids)}
    return [labels[pk] for pk in run_ids if pk in labels]


def _revert_text(adoption: ExperimentAdoption, used: list[str]) -> str:
    """What a revert did, in words: what the target sends again and which runs sent the adopted params."""
    runs = "; ".join(used) if used else "none"
    return (
        f"{adoption.target.name} sends {adoption.before_text} again (as before adoption {adoption.pk}). "
        f"Runs that sent the adopted {adoption.params_text}: {runs}."
    )


def _managed(request: HttpRequest, experiment_id: int, what: str) -> Experiment:
    experiment = get_experiment(request.user, experiment_id)
    if not reviews(request.user, experiment.golden_version.golden_set):
        raise PermissionDenied(f"only the set's reviewers {what}")
    if experiment.status != Experiment.Status.SUCCEEDED:
        raise Http404("the experiment has not finished")
    return experiment


@require_POST
def experiment_gaps_view(request: HttpRequest, experiment_id: int, to: str) -> HttpResponse:
    """ "Queue the gaps for rating" (`to` "raters") and "Ask the judge" (`to` "judge"): the unjudged top-k
    documents of the baseline and the confirmed configurations (docs/experiments.md, "Coverage")."""
    experiment = _managed(request, experiment_id, "queue documents for rating or ask a judge")
    send, words = GAPS_ACTIONS[to]
    outcome = send(gaps=experiment_gaps(experiment=experiment), by=request.user)
    link = query_link(experiment.golden_version.golden_set.slug, outcome)
    version = experiment.golden_version.name
    say(request, words(outcome, version=version, link=link, escape=conditional_escape))
    return redirect("evaluation:experiment_detail", experiment_id=experiment.pk)


@require_POST
def experiment_rescore_view(request: HttpRequest, experiment_id: int) -> HttpResponse:
    """ "Re-score": the stored answers scored on the set's newest version, nothing searched."""
    experiment = _managed(request, experiment_id, "re-score an experiment")
    try:
        rescore = experiment_rescore(experiment=experiment, by=request.user)
    except ExperimentError as exc:
        messages.error(request, "Not re-scored: " + "; ".join(exc.problems))
    else:
        messages.success(
            request,
            f"Re-scored on {rescore.golden_version.name} from the stored answers, nothing searched: "
            f"{_verdict(experiment.result or {})} before, {_verdict(rescore.result)} now.",
        )
    return redirect("evaluation:experiment_detail", experiment_id=experiment.pk)
