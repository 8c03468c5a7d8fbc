"""Role-aware bits for the shared templates (base.html nav, home.html), which no labeling view renders,
and the filters the agreement pages format their figures with."""

from __future__ import annotations

import math
from typing import Any

from django import template
from django.db.models import Count
from django.utils.html import format_html

from assay.labels.agreement import Undefined
from labeling import roles, selectors
from labeling.models import Assignment

register = template.Library()


@register.simple_tag
def user_roles(user: Any) -> dict[str, bool]:
    return roles.roles(user)


@register.simple_tag
def rater_summary(user: Any) -> dict[str, Any]:
    """Open and finished assignments and where to start, for a rater's home page."""
    if not roles.is_rater(user):
        return {}
    counts = dict(
        Assignment.objects.filter(rater=user)
        .exclude(status=Assignment.Status.REASSIGNED)
        .order_by()
        .values("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return {
        "open": counts.get(Assignment.Status.OPEN, 0),
        "done": counts.get(Assignment.Status.DONE, 0),
        "next": selectors.assignment_next(rater=user),
    }


@register.simple_tag
def reviewer_sets(user: Any) -> list[Any]:
    if not roles.is_reviewer(user):
        return []
    return list(selectors.golden_set_list(user=user))


@register.filter
def figure(value: Any, digits: int = 3) -> str:
    """A statistic for a page: the number, or "undefined: <reason>" (never 0 or NaN)."""
    if isinstance(value, Undefined):
        return format_html('<span class="undefined">undefined: {}</span>', value.reason)
    if value is None:
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        # agreement.py never returns one; if it ever did, the page must not show "nan" as a figure.
        return format_html('<span class="undefined">undefined: {}</span>', "not a finite number")
    # + 0.0 turns a rounded -0.0 (a kappa of -1e-17) into 0.0: "-0.000" reads as a real negative value.
    return f"{round(value, int(digits)) + 0.0:.{int(digits)}f}"


@register.filter
def seconds(value: Any) -> str:
    """Milliseconds as seconds with one decimal, or the undefined figure's reason."""
    if isinstance(value, Undefined) or value is None:
        return figure(value)
    return f"{float(value) / 1000:.1f} s"


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def interval(value: Any, digits: int = 3) -> str:
    """A (low, high) interval as "[low, high]", or the undefined figure's reason."""
    if isinstance(value, tuple) and len(value) == 2:
        return f"[{figure(value[0], digits)}, {figure(value[1], digits)}]"
    return figure(value)


@register.filter
def distribution(value: Any) -> str:
    """A grade distribution {grade: count} as "0: 3 · 1: 5 · ..."."""
    return " · ".join(f"{grade}: {count}" for grade, count in value.items())
