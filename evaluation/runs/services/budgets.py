"""A golden set's budgets for the drift gate: replaced whole, stored normalized."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from assay.drift import BudgetsError, load_budgets
from assay.storable import json_problem
from evaluation.runs.models import BudgetSet
from labeling.models import GoldenSet


@transaction.atomic
def budgets_set(*, golden_set: GoldenSet, data: Mapping[str, Any] | None, by: Any = None) -> BudgetSet:
    """Replace the set's budgets (nested or the older flat form; None = the defaults). Stored in the
    normalized nested form so a reader sees every effective threshold. Raises BudgetsError listing
    every bad key or value, and nothing is stored then."""
    budgets = load_budgets(data)
    stored = budgets.to_dict()
    unstorable = json_problem(stored, "budgets")  # a stratum named with a NUL: no database stores it
    if unstorable:
        raise BudgetsError([unstorable])
    row, _ = BudgetSet.objects.select_for_update().get_or_create(golden_set=golden_set)
    row.data = stored
    row.updated_by = by
    row.save()
    return row
