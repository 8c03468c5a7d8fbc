"""Calibration round pages: the list and start form, a round's page and its promotion
(docs/agreement.md, "Calibration rounds")."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assay.display import grades_text
from labeling import selectors, services
from labeling.forms import CalibrationRoundForm, problems_to_form
from labeling.models import CalibrationRound, GoldenSet
from labeling.views.access import back, get_round_for_reviewer, get_set_for_reviewer


def _round_url(round_: CalibrationRound) -> str:
    return reverse("labeling:calibration_round", kwargs={"slug": round_.golden_set.slug, "pk": round_.pk})


def _by_stratum(golden_set: GoldenSet, choices: dict[str, Any]) -> dict[str, Any]:
    """The query choices grouped by stratum (Django's grouped choices, each group a fieldset of the
    picker), in stratum order and, within one, as offered: the picker searches them and takes a whole
    stratum at once (static/js/picker.js) instead of a list of 86 to Ctrl-click through."""
    strata = dict(golden_set.queries.values_list("external_id", "stratum"))
    groups: dict[str, list[tuple[str, str]]] = {}
    for value, label in choices["queries"]:
        groups.setdefault(strata.get(value) or "(no stratum)", []).append((value, label))
    return {**choices, "queries": sorted(groups.items())}


@require_http_methods(["GET", "POST"])
def calibration_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's calibration rounds and the form that starts one (POST here)."""
    golden_set = get_set_for_reviewer(request, slug)
    choices = _by_stratum(golden_set, selectors.calibration_round_choices(golden_set=golden_set))
    form = CalibrationRoundForm(request.POST if request.method == "POST" else None, choices=choices)
    status = 200
    if request.method == "POST":
        problems: list[str] = []
        if form.is_valid():
            queries, raters, problems = selectors.calibration_round_resolve(
                golden_set=golden_set,
                external_ids=form.cleaned_data["queries"],
                usernames=form.cleaned_data["raters"],
            )
            if not problems:
                try:
                    started = services.calibration_round_start(
                        golden_set=golden_set,
                        name=form.cleaned_data["name"],
                        queries=queries,
                        raters=raters,
                        by=request.user,  # type: ignore[arg-type]
                    )
                except services.CalibrationError as exc:
                    problems = exc.problems
                else:
                    messages.success(
                        request,
                        f"Round {started.name!r} started: {len(raters)} raters × {len(queries)} quer"
                        f"{'y' if len(queries) == 1 else 'ies'}, in each rater's queue now.",
                    )
                    return back(_round_url(started))
        # Each problem beside the field it names ("raters: ..."), all of them in the summary at the top.
        problems_to_form(form, problems, {})
        status = 400
    return render(
        request,
        "labeling/calibration_list.html",
        {
            "golden_set": golden_set,
            "rounds": selectors.calibration_round_list(golden_set=golden_set),
            "form": form,
            "query_groups": choices["queries"],
            "chosen": set(request.POST.getlist("queries")),
        },
        status=status,
    )


@require_GET
def calibration_round(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    round_ = get_round_for_reviewer(request, slug, pk)
    return render(
        request,
        "labeling/calibration_round.html",
        {
            "golden_set": round_.golden_set,
            "round": round_,
            "page": selectors.calibration_round_get(round=round_),
            "scale": list(round_.golden_set.rubric.scale),
        },
    )


@require_POST
def calibration_promote(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    round_ = get_round_for_reviewer(request, slug, pk)
    try:
        result = services.calibration_round_promote(round=round_, by=request.user)  # type: ignore[arg-type]
    except services.CalibrationError as exc:
        for problem in exc.problems:
            messages.error(request, f"Not promoted: {problem}")
        return back(_round_url(round_))
    n = len(result.adjudications)
    messages.success(
        request,
        f"Promoted {n} median grade{'s' if n != 1 else ''} of round {round_.name!r} as adjudications: they"
        " are the final labels now.",
    )
    if result.ties:
        shown = "; ".join(f"{t.query_id}/{t.doc_id} ({grades_text(t.grades)})" for t in result.ties[:20])
        more = f" and {len(result.ties) - 20} more" if len(result.ties) > 20 else ""
        ties = f"{len(result.ties)} tie{'s' if len(result.ties) != 1 else ''}"
        messages.warning(request, f"{ties} left to a reviewer: {shown}{more}.")
    for note in result.skipped[:20]:
        messages.warning(request, f"Not promoted: {note}")
    return back(_round_url(round_))
