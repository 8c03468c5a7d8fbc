"""A target's adapter choices, its database constraint and the target form follow assay.adapters'
registry (tests/assay/test_adapters_registry.py holds the command and the docs to it)."""

from __future__ import annotations

from assay.adapters import ADAPTER_CHOICES, ADAPTER_NAMES, ADAPTERS
from evaluation.models import SearchTarget
from evaluation.runs.forms import TargetForm


def test_the_target_models_choices_and_constraint_are_the_registry() -> None:
    field = SearchTarget._meta.get_field("adapter")
    assert list(field.choices or []) == [(kind.name, kind.label) for kind in ADAPTERS.values()]
    assert field.default == "http_json"
    constraint = next(c for c in SearchTarget._meta.constraints if c.name == "search_target_adapter_known")
    assert dict(constraint.condition.children)["adapter__in"] == ADAPTER_NAMES  # type: ignore[attr-defined]


def test_the_target_form_offers_the_registry() -> None:
    assert list(TargetForm.base_fields["adapter"].choices) == ADAPTER_CHOICES  # type: ignore[attr-defined]
