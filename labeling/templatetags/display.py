"""The one set of formatters every page uses (`{% load display %}`): params and stage toggles, grades in a
dispute, gate findings, metric numbers and thresholds (`assay.display`, whose rules the module docstring
lists), outbound URLs (`shown_url`), and the agreement figures (`figure`, `interval`, `seconds`,
`distribution`)."""

from __future__ import annotations

import math
from typing import Any

from django import template
from django.utils.html import format_html

from assay import display
from assay.labels.agreement import Undefined
from assay.metric_table import format_p_value
from assay.run_meta import redact_url
from labeling.selectors import progress

register = template.Library()


@register.filter
def shown_url(value: str) -> str:
    """An outbound URL as a page shows it (`assay.run_meta.redact_url`): no user info, query values as
    `***`, so a credential saved before the rule against it is not shown."""
    return redact_url(value)


@register.filter
def poll_ms(created: Any) -> int:
    """`run.created|poll_ms`: milliseconds until a row showing the progress of work created then asks
    again (often while the work is young: labeling.selectors.progress)."""
    return progress.poll_ms(created)


@register.filter
def params(value: Any) -> str:
    """`rewrite=true size=10` (params, stage toggles, overrides); `none` when empty."""
    return display.params_text(value)


@register.filter
def overrides(value: Any, target: Any) -> str:
    """`run.params|overrides:target_params`: each override with the target's own value."""
    return display.overrides_text(target, value)


@register.filter
def grades(value: Any) -> str:
    """A document's grades in a dispute, lowest first: `1 vs 3`."""
    return display.grades_text(value)


@register.filter
def finding(value: Any) -> str:
    """A gate finding (a dict with `scope` and `message`) as `message` without the repeated scope."""
    return display.finding_text(value.get("scope"), value.get("message", ""))


@register.filter
def number(value: Any, decimals: int = 4) -> str:
    return display.number(value, int(decimals))


@register.filter
def signed(value: Any, decimals: int = 4) -> str:
    return display.signed(value, int(decimals))


@register.filter
def threshold(value: Any) -> str:
    return display.threshold(value)


@register.filter
def p_value(value: Any) -> str:
    return format_p_value(value)


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
def interval(value: Any, estimate: Any = None) -> str:
    """A (low, high) interval as "[low, high]", or the undefined figure's reason. Given the estimate it is
    the interval of (`{{ x.interval|interval:x.value }}`), nothing when that estimate is undefined: the
    figure beside it already says why, and the same words twice in a row read as two problems."""
    if isinstance(estimate, Undefined):
        return ""
    if isinstance(value, tuple) and len(value) == 2:
        return f"[{figure(value[0])}, {figure(value[1])}]"
    return figure(value)


@register.filter
def defined(value: Any) -> bool:
    """Whether a figure has a value (not `Undefined`): `{% if x.value|defined %}`."""
    return not isinstance(value, Undefined)


@register.filter
def distribution(value: Any) -> str:
    """A grade distribution {grade: count} as "0: 3 · 1: 5 · ..."."""
    return " · ".join(f"{grade}: {count}" for grade, count in value.items())
