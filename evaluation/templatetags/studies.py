"""The side-by-side studies a run page shows (docs/sxs.md, "The verdict on the run pages"): a tag, so the
run page's view (evaluation/views.py) needs no change to show them."""

from __future__ import annotations

from typing import Any

from django import template

from evaluation.studies.services.studies import run_studies

register = template.Library()


@register.simple_tag
def studies_of_run(run: Any) -> list[dict[str, Any]]:
    """The studies `run` is in, each with its verdict made from the answers as they stand now."""
    return run_studies(run)
