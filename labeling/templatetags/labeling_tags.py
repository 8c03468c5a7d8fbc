"""Role-aware bits for the shared templates (base.html nav, home.html), which no labeling view renders,
a rater's name as the reviewer's pages show it (marked when they no longer rate the set), and the filters
the agreement pages format their figures with (those of `display`)."""

from __future__ import annotations

from typing import Any

from django import template
from django.db.models import Count
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString

from labeling import roles, selectors
from labeling.models import Assignment
from labeling.templatetags.display import distribution, figure, interval, seconds

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
        selectors.rater_assignments(user)
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


@register.simple_tag(takes_context=True)
def rater_name(context: Any, name: str, removed: bool | None = None, kept: str = "work") -> SafeString:
    """A rater's name on a reviewer's page, marked "(no longer rates this set: work kept)" when they no
    longer rate the page's `golden_set` (`labeling.roles.raters_of`: taken off its raters list or out of
    the raters group): what they did stays and counts, and the reviewer sees whose it is. `removed`
    when the caller knows already (a column of roles, not names)."""
    if removed is None:
        golden_set = context.get("golden_set")
        removed = golden_set is not None and name not in roles.rater_names(golden_set)
    if not removed:
        return conditional_escape(name)
    return format_html(
        '{} <span class="muted no-longer-rates">(no longer rates this set: {} kept)</span>', name, kept
    )


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if hasattr(mapping, "get") else None


# The figures' formatters live with every other page formatter (templatetags/display.py); the agreement
# templates load them from here too.
for _filter in (figure, seconds, interval, distribution):
    register.filter(_filter.__name__, _filter)
