"""A number as the pages show it (display only): the core's `format_number` (4 decimals, never NaN) with
the metric table's display format (`assay.metric_table`), or UNDEFINED ("—") with the reason it is
undefined; a change's css by the metric's direction; an interval with its method and draws. The report,
compare, overlap, budgets and evidence pages all show their numbers through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html

from assay.metric_table import (
    BY_KEY,
    UNDEFINED,
    format_number,
)


@dataclass(frozen=True, slots=True)
class Num:
    """One number as shown: `format_number`'s text, or UNDEFINED with the reason it is undefined."""

    text: str
    why: str = ""
    css: str = ""

    @property
    def undefined(self) -> bool:
        return self.text == UNDEFINED

    def __html__(self) -> str:
        """`{{ n }}` in a template: the value, or a dash whose title says why (no include per cell:
        a 2,000-query report has thousands of cells)."""
        if self.undefined:
            return format_html('<span title="{}">{}</span>', self.why, UNDEFINED)
        return format_html('<span class="{}">{}</span>', self.css, self.text) if self.css else self.text

    def __str__(self) -> str:
        return self.text


def num(
    value: object, *, signed: bool = False, why: str = "no value", css: str = "", metric: str = ""
) -> Num:
    """`value` as the core's `format_number` shows it (with `metric`'s display format from the metric
    table), or UNDEFINED with `why`."""
    shown = BY_KEY.get(metric)
    text = shown.format(value, signed=signed) if shown is not None else format_number(value, signed=signed)
    if text == UNDEFINED:
        return Num(UNDEFINED, why)
    return Num(text, css=css)


def delta_css(metric: str, delta: float | None) -> str:
    """The css class of a change: better or worse by the metric table's direction, none when it rounds
    to no change."""
    if delta is None or abs(delta) < 5e-5:
        return ""
    better = delta > 0 if BY_KEY[metric].higher_is_better else delta < 0
    return "better" if better else "worse"


def interval_text(interval: Mapping[str, Any] | None, why: str, *, signed: bool = True) -> Num:
    """An interval as shown: of a change, with signs; of an absolute value (`signed=False`), without."""
    if not interval or interval.get("low") is None:
        return Num(UNDEFINED, why)
    method = "paired bootstrap of the per-query changes" if signed else "bootstrap over the queries"
    low, high = (format_number(interval[end], signed=signed) for end in ("low", "high"))
    draws = f"{interval['resamples']} resamples, seed {interval.get('seed')}"
    return Num(f"[{low}, {high}]", why=f"{interval['level']:.0%} {method} ({draws})")
