"""A golden set's evaluation pages: budgets (edit, download) and the baseline history.

Part of `evaluation.runs.views` (docs/architecture.md).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from assay.budgets import Budgets, load_budgets
from assay.drift import BudgetsError
from assay.jsonin import JsonInputError, json_loads
from evaluation.runs import selectors, services
from evaluation.runs.budgets_form import DEFAULTS_NOTE, budgets_from_post, budgets_grid, slice_names
from evaluation.runs.budgets_page import noise_panel, suggested_budgets
from evaluation.runs.views.access_helpers import get_set
from labeling.forms import UploadForm, form_errors
from labeling.models import GoldenSet

# ------------------------------------------------------------------------------------- budgets, baselines


def _slice_names(golden_set: GoldenSet, budgets: Budgets) -> dict[str, list[str]]:
    """The strata, traffic bands and failure modes the set's active queries have, and any the budgets
    name: one row of the budgets form each."""
    found = golden_set.queries.filter(status="active").values_list("stratum", "traffic_band", "failure_mode")
    rows = set(found.order_by().distinct())
    return slice_names(
        budgets,
        {
            "strata": {r[0] for r in rows},
            "traffic_bands": {r[1] for r in rows},
            "failure_modes": {r[2] for r in rows},
        },
    )


def _uploaded_budgets(request: HttpRequest) -> tuple[Any, list[str]]:
    """A budgets file sent with the upload form (or its JSON as the `budgets` field): the decoded JSON,
    or what is wrong with it."""
    if "budgets" in request.POST:
        text: str | bytes = request.POST["budgets"]
    else:
        form = UploadForm(request.POST, request.FILES)
        if not form.is_valid():
            return None, [f"budgets file: {form_errors(form)}"]
        text = form.cleaned_data["file"].read()
    try:
        return json_loads(text), []
    except JsonInputError as exc:
        return None, [f"budgets file: {exc}"]


@require_http_methods(["GET", "POST"])
def budgets_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's budgets as a form (metric x scope x warn/fail; evaluation.runs.budgets_form) beside the noise
    floor of a target's baseline configuration (`?target=`). "Fill in the suggestions" puts the suggested
    budgets in the form, saved only by "Save budgets"; the budgets file downloads (budgets.json) and
    uploads as it is."""
    golden_set = get_set(request, slug)
    stored = hasattr(golden_set, "budgets")
    budgets = selectors.budgets_get(golden_set=golden_set)
    names = _slice_names(golden_set, budgets)
    target_id = (request.POST if request.method == "POST" else request.GET).get("target") or None
    noise = noise_panel(golden_set=golden_set, budgets=budgets, target_id=target_id)
    grid = budgets_grid(budgets, names)
    problems: list[str] = []
    filled = False
    action = request.POST.get("action", "upload" if "budgets" in request.POST else "save")
    if request.method == "POST":
        data: Any = None
        if action == "upload":
            data, problems = _uploaded_budgets(request)
        elif action != "defaults":
            grid, data = budgets_from_post(request.POST, names)
            problems = list(grid.errors)
        if action == "suggest" and not problems:
            suggested, problems = suggested_budgets(noise, load_budgets(data))
            if suggested is not None:
                grid, filled = budgets_grid(suggested, slice_names(suggested, names)), True
        elif not problems:
            try:
                services.budgets_set(golden_set=golden_set, data=data, by=request.user)
            except BudgetsError as exc:
                problems = exc.problems
            else:
                messages.success(
                    request, f"Budgets of {golden_set.slug} saved; runs finishing from now use them."
                )
                url = reverse("evaluation:budgets", args=[golden_set.slug])
                return redirect(f"{url}?target={target_id}" if target_id else url)
    return render(
        request,
        "evaluation/runs/budgets.html",
        {
            "golden_set": golden_set,
            "grid": grid,
            "problems": problems,
            "anchors": grid.anchors,
            "stored": stored,
            "noise": noise,
            "filled": filled,
            "upload_form": UploadForm(),
            "defaults_note": DEFAULTS_NOTE,
        },
        status=422 if problems else 200,
    )


@require_GET
def budgets_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The set's budgets file (the stored budgets in full, or the defaults): what `assay gate --budgets`
    reads and the budgets page uploads."""
    golden_set = get_set(request, slug)
    text = json.dumps(selectors.budgets_get(golden_set=golden_set).to_dict(), indent=2) + "\n"
    response = HttpResponse(text, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="budgets-{golden_set.slug}.json"'
    return response


@require_GET
def baseline_list(request: HttpRequest, slug: str) -> HttpResponse:
    golden_set = get_set(request, slug)
    return render(
        request,
        "evaluation/runs/baselines.html",
        {"golden_set": golden_set, "baselines": list(selectors.baseline_list(golden_set=golden_set))},
    )
